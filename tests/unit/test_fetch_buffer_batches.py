"""CompletedFetch.take_batches: the columnar (Spark) path's view of a fetch (no broker).

The same filtering as take() (control batches, aborted transactions, batches before
the fetch offset, corruption after the good batches), but whole undecoded batches.
"""

from __future__ import annotations

import pytest

from kafkalite.consumer.fetch_buffer import CompletedFetch
from kafkalite.errors import CorruptRecordsError, IllegalStateError
from kafkalite.protocol import compression
from kafkalite.protocol.record_builder import RecordBatchBuilder, build_end_txn_marker
from kafkalite.protocol.records import Batch, RecordBatch
from kafkalite.types import ConsumerRecord, TopicPartition

TP = TopicPartition("t", 3)


def batch(base: int, n: int, *, pid: int = -1, txn: bool = False, codec: int = compression.NONE) -> bytes:
    b = RecordBatchBuilder(compression=codec, base_offset=base, producer_id=pid,
                           producer_epoch=0 if pid >= 0 else -1, base_sequence=0 if pid >= 0 else -1,
                           transactional=txn)
    for i in range(n):
        b.append(1000 + base + i, f"k{base + i}".encode(), f"v{base + i}".encode(), [("h", b"%d" % i)])
    return b.build()


def marker(offset: int, pid: int, commit: bool) -> bytes:
    return build_end_txn_marker(commit, producer_id=pid, producer_epoch=0, timestamp_ms=2000, base_offset=offset)


def offsets_of(batches: list[Batch]) -> list[int]:
    out: list[int] = []
    for b in batches:
        assert isinstance(b, RecordBatch)
        out.extend(b.columns().offsets)
    return out


def test_hands_out_whole_batches_and_moves_past_them() -> None:
    data = batch(0, 5) + batch(5, 5, codec=compression.LZ4)
    fetch = CompletedFetch(TP, 0, 0, memoryview(data))
    out: list[Batch] = []
    assert fetch.take_batches(out) == 2
    assert offsets_of(out) == list(range(10))
    assert fetch.next_offset == 10 and fetch.exhausted
    cols = out[1].columns()  # type: ignore[union-attr]
    first = cols.value_starts[0]
    assert bytes(cols.buffer[first:first + cols.value_lengths[0]]) == b"v5"
    assert fetch.take_batches(out) == 0 and len(out) == 2


def test_batches_wholly_before_the_fetch_offset_are_skipped_the_straddling_one_kept() -> None:
    data = batch(0, 4) + batch(4, 4) + batch(8, 4)
    fetch = CompletedFetch(TP, 0, 6, memoryview(data))
    out: list[Batch] = []
    fetch.take_batches(out)
    # The caller trims offsets 4 and 5 itself (documented): the batch is handed out whole.
    assert offsets_of(out) == list(range(4, 12))
    assert fetch.next_offset == 12


def test_control_and_aborted_batches_are_left_out() -> None:
    data = (batch(0, 2, pid=7, txn=True) + batch(2, 2, pid=8, txn=True) + marker(4, 7, commit=False)
            + marker(5, 8, commit=True) + batch(6, 1, pid=7, txn=True) + marker(7, 7, commit=True))
    rc = CompletedFetch(TP, 0, 0, memoryview(data), aborted=[(7, 0)], read_committed=True)
    out: list[Batch] = []
    rc.take_batches(out)
    assert offsets_of(out) == [2, 3, 6] and rc.next_offset == 8
    ru = CompletedFetch(TP, 0, 0, memoryview(data), aborted=[(7, 0)], read_committed=False)
    out = []
    ru.take_batches(out)
    assert offsets_of(out) == [0, 1, 2, 3, 6] and ru.next_offset == 8


def test_corrupt_batch_raises_after_the_good_batches() -> None:
    bad = bytearray(batch(2, 2))
    bad[-1] ^= 0xFF
    fetch = CompletedFetch(TP, 0, 0, memoryview(batch(0, 2) + bytes(bad)))
    out: list[Batch] = []
    assert fetch.take_batches(out) == 1 and fetch.next_offset == 2
    with pytest.raises(CorruptRecordsError) as info:
        fetch.take_batches(out)
    assert info.value.partition == 3 and "2" in str(info.value)
    assert not fetch.exhausted


def test_cannot_follow_a_partial_take() -> None:
    fetch = CompletedFetch(TP, 0, 0, memoryview(batch(0, 5)))
    recs: list[ConsumerRecord] = []
    fetch.take(2, recs)
    with pytest.raises(IllegalStateError, match="take_batches"):
        fetch.take_batches([])
