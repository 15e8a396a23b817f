"""CompletedFetch: lazy decoding, slicing, read_committed filtering, corruption (no broker)."""

from __future__ import annotations

import pytest

from kafkalite.consumer.fetch_buffer import CompletedFetch, FetchBuffer, scan_end_offset
from kafkalite.errors import CorruptRecordsError
from kafkalite.protocol import compression
from kafkalite.protocol.record_builder import RecordBatchBuilder, build_end_txn_marker
from kafkalite.types import ConsumerRecord, TopicPartition

TP = TopicPartition("t", 3)


def batch(base: int, n: int, *, pid: int = -1, txn: bool = False, codec: int = compression.NONE,
          start: int = 0) -> bytes:
    b = RecordBatchBuilder(compression=codec, base_offset=base, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                           base_sequence=0 if pid >= 0 else -1, transactional=txn)
    for i in range(n):
        b.append(1000 + i, f"k{start + i}".encode(), f"v{start + i}".encode())
    return b.build()


def marker(offset: int, pid: int, commit: bool) -> bytes:
    return build_end_txn_marker(commit, producer_id=pid, producer_epoch=0, timestamp_ms=2000, base_offset=offset)


def drain(fetch: CompletedFetch, step: int = 1000) -> list[ConsumerRecord]:
    out: list[ConsumerRecord] = []
    while fetch.take(step, out):
        pass
    return out


def test_takes_in_slices_and_tracks_the_position() -> None:
    data = batch(0, 5) + batch(5, 5, start=5)
    fetch = CompletedFetch(TP, 0, 0, memoryview(data))
    assert fetch.end_offset == 10 and fetch.bytes == len(data)
    out: list[ConsumerRecord] = []
    assert fetch.take(3, out) == 3 and fetch.next_offset == 3
    assert fetch.take(4, out) == 4 and fetch.next_offset == 7
    assert fetch.take(100, out) == 3 and fetch.next_offset == 10
    assert fetch.take(100, out) == 0 and fetch.exhausted
    assert [r.offset for r in out] == list(range(10))
    assert all(type(r) is ConsumerRecord and r.topic == "t" and r.partition == 3 for r in out)
    assert out[4].value == b"v4" and out[4].key == b"k4"


def test_records_before_the_fetch_offset_are_skipped() -> None:
    data = batch(0, 10, codec=compression.LZ4)  # a compressed batch starting before the fetch offset
    fetch = CompletedFetch(TP, 0, 6, memoryview(data))
    assert [r.offset for r in drain(fetch)] == [6, 7, 8, 9]


def test_partial_trailing_batch_is_left_for_the_next_fetch() -> None:
    full = batch(0, 3)
    cut = batch(3, 3)[:-5]
    fetch = CompletedFetch(TP, 0, 0, memoryview(full + cut))
    assert fetch.end_offset == 3
    assert [r.offset for r in drain(fetch)] == [0, 1, 2]
    assert fetch.next_offset == 3


def test_control_batches_never_surface_even_read_uncommitted() -> None:
    data = batch(0, 2, pid=7, txn=True) + marker(2, 7, commit=True) + batch(3, 1)
    fetch = CompletedFetch(TP, 0, 0, memoryview(data))
    assert [r.offset for r in drain(fetch)] == [0, 1, 3]
    assert fetch.next_offset == 4


def test_read_committed_drops_aborted_transactions() -> None:
    # pid 7 aborts [0, 2), pid 8 commits [2, 4), pid 7 then commits [6, 7)
    data = (batch(0, 2, pid=7, txn=True) + batch(2, 2, pid=8, txn=True, start=2) + marker(4, 7, commit=False)
            + marker(5, 8, commit=True) + batch(6, 1, pid=7, txn=True, start=6) + marker(7, 7, commit=True))
    rc = CompletedFetch(TP, 0, 0, memoryview(data), aborted=[(7, 0)], read_committed=True)
    assert [r.offset for r in drain(rc)] == [2, 3, 6]
    assert rc.next_offset == 8
    ru = CompletedFetch(TP, 0, 0, memoryview(data), aborted=[(7, 0)], read_committed=False)
    assert [r.offset for r in drain(ru)] == [0, 1, 2, 3, 6]


def test_corrupt_batch_raises_after_the_good_records_with_partition_and_offset() -> None:
    good = batch(0, 2)
    bad = bytearray(batch(2, 2, start=2))
    bad[-1] ^= 0xFF
    fetch = CompletedFetch(TP, 0, 0, memoryview(good + bytes(bad)))
    out: list[ConsumerRecord] = []
    assert fetch.take(100, out) == 2
    with pytest.raises(CorruptRecordsError) as info:
        fetch.take(100, out)
    assert info.value.topic == "t" and info.value.partition == 3 and "2" in str(info.value)
    with pytest.raises(CorruptRecordsError):  # keeps raising until the application seeks
        fetch.take(100, out)
    assert not fetch.exhausted


def test_scan_end_offset_reads_headers_only() -> None:
    data = batch(10, 4) + batch(14, 1)
    assert scan_end_offset(data, 10) == (15, len(data), -1)  # producers leave the epoch unset
    stamped = RecordBatchBuilder(base_offset=15, partition_leader_epoch=7)
    stamped.append(1000, b"k", b"v")
    # KIP-320: the last whole batch's leader epoch is the next fetch's LastFetchedEpoch.
    assert scan_end_offset(data + stamped.build(), 10) == (16, len(data) + len(stamped.build()), 7)
    assert scan_end_offset(data[:20], 10) == (10, 0, -1)


def test_buffer_counts_per_partition() -> None:
    buf = FetchBuffer()
    other = TopicPartition("t", 4)
    a = CompletedFetch(TP, 0, 0, memoryview(batch(0, 1)))
    b = CompletedFetch(TP, 0, 1, memoryview(batch(1, 1)))
    c = CompletedFetch(other, 0, 0, memoryview(batch(0, 1)))
    for f in (a, b, c):
        buf.add(f)
    assert buf.buffered(TP) == 2 and buf.last_for(TP) is b and buf.peek() is a
    buf.pop(a)
    assert buf.buffered(TP) == 1 and buf.peek() is b
    buf.drop(lambda f: f.tp != TP)
    assert buf.buffered(TP) == 0 and buf.buffered(other) == 1 and len(buf) == 1
