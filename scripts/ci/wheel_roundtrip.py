"""Checks an installed kafkalite wheel: run by scripts/ci/wheel_check.sh in a fresh venv.

    python wheel_roundtrip.py BOOTSTRAP

Each check prints ``PASSED name`` or ``FAILED name: why``; the last line is pytest's
``N passed, N failed`` and the exit code is 1 if any failed. Run from outside the
checkout, so ``kafkalite`` can only come from the venv's site-packages.
"""

from __future__ import annotations

import sys
import sysconfig
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path

RECORDS = 20_000


def check_installed_from_the_venv() -> None:
    import kafkalite
    import kafkalite._speedups

    site = Path(sysconfig.get_paths()["platlib"]).resolve()
    for module in (kafkalite, kafkalite._speedups):
        where = Path(module.__file__ or "").resolve()
        assert site in where.parents, f"{module.__name__} imported from {where}, not {site}"


def check_c_kernels_active() -> None:
    from kafkalite.producer import append_kernel
    from kafkalite.protocol import record_codec

    assert record_codec.IMPLEMENTATION == "c", f"record kernels: {record_codec.IMPLEMENTATION}"
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


def main(argv: list[str]) -> int:
    bootstrap = argv[1]
    checks: list[tuple[str, Callable[[], None]]] = [
        ("installed_from_the_venv", check_installed_from_the_venv),
        ("c_kernels_active", check_c_kernels_active),
        ("produce_consume_round_trip", lambda: check_produce_consume_round_trip(bootstrap)),
    ]
    passed = failed = 0
    for name, check in checks:
        started = time.monotonic()
        try:
            check()
        except Exception as exc:
            failed += 1
            traceback.print_exc()
            print(f"FAILED wheel_roundtrip.py::{name}: {exc}", flush=True)
        else:
            passed += 1
            print(f"PASSED wheel_roundtrip.py::{name} ({time.monotonic() - started:.1f} s)",
                  flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
