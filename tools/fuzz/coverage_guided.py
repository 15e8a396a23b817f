"""Coverage-guided fuzzing of the same targets with atheris (libFuzzer for Python).

    pip install atheris          # a wheel for CPython 3.11 on Linux x86_64
    python -m tools.fuzz.coverage_guided -runs=200000 -timeout=10 -rss_limit_mb=4096

Every kafkalite module is instrumented (branch coverage steers the mutations; the C
kernels run but are not instrumented). An input's first two bytes choose the target
(:func:`tools.fuzz.targets.all_targets`), the rest is the target's input; the corpus
starts from every target's valid seeds. The oracle is :func:`tools.fuzz.engine.run_case`
(typed errors only, CPU time, tracemalloc peak vs work): a finding raises, libFuzzer
stops and writes the input as ``crash-<sha1>``; run it again with
``python -m tools.fuzz.coverage_guided crash-<sha1>``. Arguments are libFuzzer's.
"""

from __future__ import annotations

import random
import struct
import sys
import tempfile
import zlib
from pathlib import Path

import atheris  # type: ignore[import-not-found]

with atheris.instrument_imports(include=["kafkalite"]):
    from tools.fuzz import engine
    from tools.fuzz.targets import all_targets

    TARGETS = all_targets()  # imports every message module: inside, to instrument them
    for _target in TARGETS:
        _ = _target.seeds
LIMITS = engine.Limits()


class Finding(AssertionError):
    """An input broke the oracle."""


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    (index,) = struct.unpack_from(">H", data)
    target = TARGETS[index % len(TARGETS)]
    body = data[2:]
    case = engine.run_case(target, body, False, random.Random(zlib.crc32(data)), LIMITS)
    if case.outcome.startswith("crash:"):
        raise Finding(f"{case.outcome} in {target.name}: {case.detail}")


def seed_corpus(directory: Path) -> None:
    """Every target's valid seeds, prefixed with the target's index."""
    for index, target in enumerate(TARGETS):
        for n, seed in enumerate(target.seeds):
            (directory / f"{index}-{n}").write_bytes(struct.pack(">H", index) + seed)


def main(argv: list[str]) -> None:
    engine.init_worker()
    args = list(argv)
    if not any(not a.startswith("-") for a in args[1:]):
        corpus = Path(tempfile.mkdtemp(prefix="kafkalite-corpus-"))
        seed_corpus(corpus)
        args.append(str(corpus))
    atheris.Setup(args, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
