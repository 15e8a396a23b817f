"""Shared pieces of the ``kafkalite`` console tools: options, settings, output, errors.

Exit codes scripts can rely on: 0 success, 1 a Kafka error (broker refused, timeout,
some item failed), 2 a usage error (bad option, bad value, bad settings file),
130 interrupted (Ctrl-C) where interrupting is not the normal way to stop.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from kafkalite.errors import ConfigError, KafkaError

EXIT_OK, EXIT_KAFKA, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
ENV_BOOTSTRAP = "KAFKALITE_BOOTSTRAP_SERVERS"


class UsageError(Exception):
    """A bad option or value: one line on stderr, exit code 2."""


class ItemsFailed(Exception):
    """Some items failed and were already reported one line each: exit code 1."""


def common_options() -> argparse.ArgumentParser:
    """Options every subcommand takes (Kafka's names)."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("connection and output")
    g.add_argument("--bootstrap-server", metavar="HOST:PORT",
                   help=f"brokers to connect to (or bootstrap.servers in --command-config, or ${ENV_BOOTSTRAP})")
    g.add_argument("--command-config", metavar="FILE",
                   help="properties file with client settings (security.protocol, sasl.*, ssl.* ...)")
    g.add_argument("--json", action="store_true", help="machine-readable JSON output")
    g.add_argument("--timeout", type=float, metavar="SECONDS", default=None,
                   help="timeout of each request to the cluster (default: default.api.timeout.ms)")
    return p


def read_properties(path: str) -> dict[str, str]:
    """A Java ``.properties`` file: ``key=value`` / ``key: value`` lines, # and ! comments."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read --command-config {path}: {exc.strerror}") from None
    props: dict[str, str] = {}
    pending = ""
    for raw in lines:
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        for i, ch in enumerate(line):
            if ch in "=:" and (i == 0 or line[i - 1] != "\\"):
                props[line[:i].strip()] = line[i + 1:].strip()
                break
        else:
            props[line] = ""
    return props


def parse_key_values(items: Iterable[str] | None, what: str) -> dict[str, str]:
    """``["a=1", "b=2"]`` -> ``{"a": "1", "b": "2"}``; a missing '=' is a usage error."""
    out: dict[str, str] = {}
    for item in items or ():
        if "=" not in item:
            raise UsageError(f"{what} must be KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = value
    return out


def client_settings(args: argparse.Namespace, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Settings for a client from --command-config, then --bootstrap-server (or the env)."""
    settings: dict[str, Any] = {}
    if args.command_config:
        settings.update(read_properties(args.command_config))
    settings.update(extra or {})
    bootstrap = args.bootstrap_server or settings.get("bootstrap.servers") or os.environ.get(ENV_BOOTSTRAP)
    if not bootstrap:
        raise UsageError("--bootstrap-server is required (or bootstrap.servers in --command-config)")
    settings["bootstrap.servers"] = bootstrap
    return settings


def admin_client(args: argparse.Namespace) -> Any:
    from kafkalite import AdminClient
    from kafkalite.config import ADMIN, settings_for

    # A shared properties file may hold producer/consumer settings: the admin takes its own.
    settings = settings_for(ADMIN, client_settings(args))
    try:
        return AdminClient(settings)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


# ------------------------------------------------------------------ output


def emit_json(data: Any, out: TextIO | None = None) -> None:
    json.dump(data, out or sys.stdout, indent=2, sort_keys=False, default=str)
    (out or sys.stdout).write("\n")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], out: TextIO | None = None) -> None:
    """A plain left-aligned table (like kafka-consumer-groups' output)."""
    out = out or sys.stdout
    text_rows = [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in text_rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out.write(fmt.format(*headers).rstrip() + "\n")
    for row in text_rows:
        out.write(fmt.format(*row).rstrip() + "\n")


def error_line(message: str) -> None:
    sys.stderr.write(f"Error: {message}\n")


def report_failures(errors: Mapping[Any, KafkaError]) -> None:
    """One line per failed item; raises ItemsFailed if there were any."""
    for _key, err in errors.items():
        error_line(str(err))
    if errors:
        raise ItemsFailed()


class Progress:
    """Progress on stderr for long work, only when stderr is a terminal (or forced)."""

    def __init__(self, what: str, enabled: bool | None = None, every: int = 1000) -> None:
        self.what = what
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.every = every
        self.count = 0

    def step(self, n: int = 1) -> None:
        before = self.count
        self.count += n
        if self.enabled and before // self.every != self.count // self.every:
            sys.stderr.write(f"\r{self.what}: {self.count}")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.count >= self.every:
            sys.stderr.write("\n")
