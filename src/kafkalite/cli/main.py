"""``kafkalite``: console tools for Kafka, with the option names of Kafka's own tools.

Subcommands: ``topics``, ``configs``, ``groups``, ``acls``, ``produce``, ``consume``.
Run ``kafkalite SUBCOMMAND --help`` for each. See docs/cli.md.

Example::

    kafkalite topics --bootstrap-server 127.0.0.1:9092 --create --topic orders --partitions 6
    kafkalite topics --bootstrap-server 127.0.0.1:9092 --describe --topic orders --json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from kafkalite.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_KAFKA,
    EXIT_OK,
    EXIT_USAGE,
    ItemsFailed,
    UsageError,
    common_options,
    error_line,
)
from kafkalite.errors import ConfigError, KafkaError


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors raise (so main() decides the exit code and message)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    from kafkalite import __version__
    from kafkalite.cli import acls, configs, consume, groups, produce, topics

    parser = _Parser(prog="kafkalite", description="Console tools for Apache Kafka (kafkalite).")
    parser.add_argument("--version", action="version", version=f"kafkalite {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    common = common_options()
    for module in (topics, configs, groups, acls, produce, consume):
        module.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (also used by the console script)."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        code = args.handler(args)
        return EXIT_OK if code is None else int(code)
    except UsageError as exc:
        error_line(str(exc))
        return EXIT_USAGE
    except ConfigError as exc:
        error_line(str(exc))
        return EXIT_USAGE
    except ItemsFailed:
        return EXIT_KAFKA
    except KafkaError as exc:
        error_line(str(exc))
        return EXIT_KAFKA
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `kafkalite ... | head`: the reader went away; that is not our error.
        try:
            sys.stdout = open("/dev/null", "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
