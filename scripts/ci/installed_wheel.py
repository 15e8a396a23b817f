"""Checks an installed kafkalite (a wheel, or a build of the sdist) as a user has it.

    python installed_wheel.py round-trip BOOTSTRAP
        the package comes from the venv's site-packages, its C kernels are active, and
        20,000 records make a produce/consume round trip through the broker at BOOTSTRAP
        (scripts/ci/wheel_check.sh starts one with `python -m kafkalite.testing up`);
    python installed_wheel.py unit PROJECT_DIR [--set short|all]
        the same two checks, then the unit tests of PROJECT_DIR (a checkout or an
        unpacked sdist) against the installed package: `short` (SHORT_TESTS below:
        needs pytest and hypothesis, no extra) or `all` (tests/unit: needs
        kafkalite[dev]). cibuildwheel's test-command runs it for each wheel
        (pyproject.toml).

Each check prints ``PASSED name`` or ``FAILED name: why``, then pytest's own report; the
last line of `round-trip` is ``N passed, N failed``. The exit code is non-zero if any
check failed. Run it from outside the checkout (cibuildwheel does), so that `kafkalite`
can only come from the installed package.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path

RECORDS = 20_000

# The short set: every test here needs pytest and hypothesis only (no extra), no broker.
# The C kernels against the pure-Python reference, the codecs and record readers, fuzzed
# batches, the kernel notice, `--version` and `doctor`; and the checks that read what an
# sdist must carry besides the package: docs/architecture.md, the protocol generators and
# their specs in tools/, the C sources.
SHORT_TESTS = [
    "tests/unit/test_records_codec.py",
    "tests/unit/test_records_gc.py",
    "tests/unit/test_producer_append_kernel.py",
    "tests/unit/test_records.py",
    "tests/unit/test_records_legacy.py",
    "tests/unit/test_records_readers.py",
    "tests/unit/test_fuzz_records.py",
    "tests/unit/test_compression.py",
    "tests/unit/test_producer_partitioner.py",
    "tests/unit/test_consumer_record.py",
    "tests/unit/test_kernel_notice.py",
    "tests/unit/test_version_and_doctor.py",
    "tests/unit/test_architecture.py",
    "tests/unit/test_layering.py",
    "tests/unit/test_generated_protocol.py",
    "tests/unit/test_errors.py",
    "tests/unit/test_packaging_metadata.py",
]
TEST_SETS = {"short": SHORT_TESTS, "all": ["tests/unit"]}


def check_installed_from_the_venv() -> None:
    import kafkalite._speedups

    import kafkalite

    site = Path(sysconfig.get_paths()["platlib"]).resolve()
    for module in (kafkalite, kafkalite._speedups):
        where = Path(module.__file__ or "").resolve()
        assert site in where.parents, f"{module.__name__} imported from {where}, not {site}"


def check_c_kernels_active() -> None:
    from kafkalite.producer import append_kernel
    from kafkalite.protocol import record_codec

    assert record_codec.IMPLEMENTATION == "c", (
        f"record kernels: {record_codec.IMPLEMENTATION} ({record_codec.c_import_error})")
    assert append_kernel.IMPLEMENTATION == "c", f"append kernel: {append_kernel.IMPLEMENTATION}"


def check_produce_consume_round_trip(bootstrap: str) -> None:
    from kafkalite import AdminClient, Consumer, NewTopic, Producer, TopicPartition

    topic = f"wheel-check-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    sent = {(f"key-{i % 97}".encode(), f"value-{i}".encode()) for i in range(RECORDS)}
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        futures = [producer.send(topic, value=value, key=key, headers=[("h", b"1")])
                   for key, value in sent]
        producer.flush(timeout=60)
        offsets = [future.result(timeout=60).offset for future in futures]
    assert len(offsets) == RECORDS
    received: set[tuple[bytes | None, bytes | None]] = set()
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(3)])
        deadline = time.monotonic() + 120
        while len(received) < RECORDS and time.monotonic() < deadline:
            for record in consumer.poll(timeout=1.0):
                assert record.headers == [("h", b"1")], record.headers
                received.add((record.key, record.value))
    assert received == sent, f"sent {len(sent)} records, read back {len(received)} matching"


def run_checks(checks: list[tuple[str, Callable[[], None]]]) -> tuple[int, int]:
    passed = failed = 0
    for name, check in checks:
        started = time.monotonic()
        try:
            check()
        except Exception as exc:
            failed += 1
            traceback.print_exc()
            print(f"FAILED installed_wheel.py::{name}: {exc}", flush=True)
        else:
            passed += 1
            print(f"PASSED installed_wheel.py::{name} ({time.monotonic() - started:.1f} s)",
                  flush=True)
    return passed, failed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    round_trip = sub.add_parser("round-trip")
    round_trip.add_argument("bootstrap")
    unit = sub.add_parser("unit")
    unit.add_argument("project", type=Path)
    unit.add_argument("--set", choices=sorted(TEST_SETS), default="all")
    args = parser.parse_args(argv)

    checks: list[tuple[str, Callable[[], None]]] = [
        ("installed_from_the_venv", check_installed_from_the_venv),
        ("c_kernels_active", check_c_kernels_active),
    ]
    if args.command == "round-trip":
        checks.append(("produce_consume_round_trip",
                       lambda: check_produce_consume_round_trip(args.bootstrap)))
        passed, failed = run_checks(checks)
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0

    passed, failed = run_checks(checks)
    if failed:
        return 1
    import pytest

    project = args.project.resolve()
    paths = [str(project / path) for path in TEST_SETS[args.set]]
    # kafkalite is imported already (the checks above): pytest cannot rewrite its asserts,
    # and need not (they are the library's, not the tests').
    return int(pytest.main(["-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
                            "--rootdir", str(project), *paths]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
