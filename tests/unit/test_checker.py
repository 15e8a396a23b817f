"""The delivery checker as a plain object: producers' outcomes and reads fed by hand."""

from __future__ import annotations

import tracemalloc

import pytest

from kafkalite.testing.checker import Checker, make_id, parse_id
from kafkalite.types import TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _acked(checker: Checker, n: int, partition: int = 0, name: str = "p") -> tuple[list[bytes], object]:
    history = checker.producer(name)
    ids = []
    for i in range(n):
        rid = history.next_id()
        history.acked(rid, "t", partition, i)
        ids.append(rid)
    return ids, history


def _read(checker: Checker, ids: list[bytes], partition: int = 0) -> None:
    for offset, rid in enumerate(ids):
        checker.observe("t", partition, offset, b"payload", [("other", b"x"), (Checker.header(rid))])


def test_ids_round_trip_in_headers_and_values() -> None:
    assert parse_id(make_id(3, 12345)) == (3, 12345)
    assert parse_id(Checker.value(make_id(1, 2), b"rest|with|bars")) == (1, 2)
    for bad in (None, b"", b"plain value", b"1:x", b":5", b"a:1"):
        assert parse_id(bad) is None


def test_a_clean_run_is_ok() -> None:
    checker = Checker()
    ids, _ = _acked(checker, 50)
    _read(checker, ids)
    report = checker.report()
    assert report.ok and report.partitions[T0].read == 50 and report.partitions[T0].acked == 50
    assert "delivery check: OK" in str(report)


def test_each_kind_of_problem_is_counted_where_it_happened() -> None:
    checker = Checker()
    ids, _ = _acked(checker, 10)
    other, _ = _acked(checker, 4, partition=1, name="q")
    # partition 0: record 3 lost, record 5 read twice, 8 before 7; an id-less record.
    order = [ids[i] for i in (0, 1, 2, 4, 5, 5, 6, 8, 7, 9)]
    _read(checker, order)
    checker.observe("t", 0, 99, b"no id here", None)
    _read(checker, other, partition=1)
    report = checker.report()
    p0, p1 = report.partitions[T0], report.partitions[T1]
    assert (p0.lost, p0.duplicated, p0.reordered, p0.unexpected) == (1, 1, 1, 1)
    assert p1.problems == 0 and p1.read == 4
    assert not report.ok and report.total.problems == 4
    assert report.examples["lost"] == ["p:3 (acked at t-0@3)"]
    assert "p:7 after p:8" in report.examples["reordered"][0]
    assert "PROBLEMS" in str(report)


def test_transactions_committed_aborted_and_unknown() -> None:
    checker = Checker()
    history = checker.producer("tx")
    history.begin_transaction()
    committed = [history.next_id() for _ in range(3)]
    for i, rid in enumerate(committed):
        history.acked(rid, "t", 0, i)
    history.commit_transaction()
    history.begin_transaction()
    aborted = [history.next_id() for _ in range(2)]
    for i, rid in enumerate(aborted):
        history.acked(rid, "t", 0, 3 + i)
    history.abort_transaction()
    history.begin_transaction()
    unknown = [history.next_id() for _ in range(2)]
    for i, rid in enumerate(unknown):
        history.acked(rid, "t", 0, 6 + i)
    history.commit_transaction(outcome_known=False)
    # A read_committed reader that (wrongly) sees one aborted record, and one of the unknown.
    _read(checker, [*committed, aborted[0], unknown[1]])
    report = checker.report()
    p0 = report.partitions[T0]
    assert (p0.acked, p0.lost, p0.aborted_visible) == (3, 0, 1)
    assert (p0.ambiguous, p0.ambiguous_read) == (2, 1)
    with pytest.raises(RuntimeError, match="no open transaction"):
        history.abort_transaction()


def test_ambiguous_sends_are_never_lost_and_unknown_ids_are_unexpected() -> None:
    checker = Checker()
    history = checker.producer()
    first, second = history.next_id(), history.next_id()
    history.failed(first)                    # a timeout: may or may not be written
    history.failed(second, definite=True)    # refused before writing
    checker.observe("t", 0, 0, Checker.value(first))
    checker.observe("t", 0, 1, Checker.value(make_id(0, 99)))  # never handed out
    checker.observe("t", 0, 2, Checker.value(make_id(7, 0)))   # no such producer
    report = checker.report()
    p0 = report.partitions[T0]
    assert (p0.lost, p0.ambiguous, p0.ambiguous_read, p0.unexpected) == (0, 1, 1, 2)


def test_callbacks_record_the_outcome() -> None:
    from kafkalite.errors import KafkaTimeoutError
    from kafkalite.types import RecordMetadata

    checker = Checker()
    history = checker.producer()
    ok, bad = history.next_id(), history.next_id()
    history.callback(ok)(RecordMetadata("t", 1, 42, 0), None)
    history.callback(bad)(None, KafkaTimeoutError("no answer"))  # type: ignore[arg-type]
    checker.observe("t", 1, 42, None, [Checker.header(ok)])
    report = checker.report()
    assert report.partitions[T1].acked == 1 and report.ok
    assert report.total.ambiguous == 1


def test_memory_per_record_is_small() -> None:
    checker = Checker()
    history = checker.producer()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(50_000):
            rid = history.next_id()
            history.acked(rid, "t", i % 3, i)
        for i in range(50_000):
            checker.observe("t", i % 3, i, None, [(Checker.header(make_id(0, i)))])
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held / 50_000 < 24  # bytes per record: status, partition, offset, seen
    assert checker.report().ok
