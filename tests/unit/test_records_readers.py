"""One record decode for every reader (no broker).

The consumer's poll() (``CompletedFetch``), the share consumer (``ShareCompletedFetch``)
and the columnar path behind Spark (``take_batches`` + ``columns()``) all read a
partition's bytes through :mod:`kafkalite.protocol.records`: the same batches, the
same filtering (control batches, empty batches, aborted transactions under
read_committed) and the same records, v2 of every codec and legacy v0/v1 message sets
alike, with the C kernels and with the pure-Python reference.
"""

from __future__ import annotations

from typing import Any

import pytest
from crc32c import crc32c

from kafkalite.consumer.fetch_buffer import CompletedFetch
from kafkalite.errors import CorruptRecordsError
from kafkalite.protocol import compression, record_builder, records
from kafkalite.protocol.record_codec import c_impl, python_impl
from kafkalite.protocol.record_types import ControlRecordType
from kafkalite.protocol.records import (
    Batch,
    BatchFilter,
    Record,
    RecordBatchBuilder,
    build_control_batch,
    build_end_txn_marker,
    iter_batches,
)
from kafkalite.share.completed_fetch import ShareCompletedFetch
from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord
from kafkalite.types import ConsumerRecord, TopicPartition
from tests.unit.test_records_legacy import message

IMPLS = ["python"] + (["c"] if c_impl is not None else [])
TP = TopicPartition("t", 2)


@pytest.fixture(params=IMPLS, autouse=True)
def impl(request: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every reader decodes through ``records``: switching its kernels switches them all."""
    mod = python_impl if request.param == "python" else c_impl
    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[3])
        return mod.decode_records(*args, **kwargs)

    monkeypatch.setattr(records, "decode_records", counted)
    monkeypatch.setattr(records, "decode_records_columnar", mod.decode_records_columnar)
    builder = record_builder.builder_class(mod.BuilderBase)
    monkeypatch.setitem(globals(), "RecordBatchBuilder", builder)
    return calls


def v2(base: int, n: int, *, codec: int = 0, pid: int = -1, txn: bool = False, epoch: int = -1,
       log_append_time: int | None = None) -> bytes:
    b = RecordBatchBuilder(compression=codec, base_offset=base, producer_id=pid,
                           producer_epoch=0 if pid >= 0 else -1, base_sequence=0 if pid >= 0 else -1,
                           transactional=txn, partition_leader_epoch=epoch,
                           timestamp_type=1 if log_append_time is not None else 0,
                           log_append_time=log_append_time)
    for i in range(n):
        o = base + i
        b.append(1000 + o, b"k%d" % o if o % 3 else None, b"v%d" % o, [("h", b"%d" % o)] if o % 2 else None)
    return bytes(b.build())


def marker(offset: int, pid: int, commit: bool) -> bytes:
    return bytes(build_end_txn_marker(commit, producer_id=pid, producer_epoch=0, timestamp_ms=5,
                                      base_offset=offset))


def legacy_wrapper(last_offset: int, n: int, codec: int = compression.GZIP) -> bytes:
    inner = b"".join(message(i, 1, b"lk%d" % i, b"lv%d" % i, timestamp=700 + i) for i in range(n))
    return message(last_offset, 1, None, compression.compress(codec, inner), attributes=codec, timestamp=0)


def empty_batch(offset: int) -> bytes:
    """The header of a batch whose records compaction removed (record count 0)."""
    empty = bytearray(v2(offset, 1)[:61])
    empty[8:12] = (61 - 12).to_bytes(4, "big")
    empty[57:61] = (0).to_bytes(4, "big")
    empty[17:21] = crc32c(bytes(empty[21:])).to_bytes(4, "big")
    return bytes(empty)


def log() -> bytes:
    """A partition's log as an old-then-new cluster might serve it: legacy v0/v1
    messages, v2 batches of every codec (a leader epoch, log-append time), an empty
    batch left by compaction, a committed and an aborted transaction with markers, and
    a KRaft-style control batch."""
    return (message(0, 0, b"a", b"v0") + message(1, 1, None, b"v1", timestamp=900)
            + legacy_wrapper(4, 3)
            + v2(5, 3, epoch=4) + v2(8, 3, codec=compression.LZ4, epoch=4)
            + v2(11, 3, codec=compression.ZSTD, log_append_time=4242)
            + empty_batch(14)
            + v2(15, 2, pid=7, txn=True) + v2(17, 2, pid=8, txn=True)
            + marker(19, 7, commit=False) + marker(20, 8, commit=True)
            + v2(21, 2, pid=7, txn=True) + marker(23, 7, commit=True)
            + bytes(build_control_batch(ControlRecordType.LEADER_CHANGE, b"\x00\x00", timestamp_ms=1,
                                        base_offset=24))
            + v2(25, 2, codec=compression.SNAPPY))


def rows_of(batch: Batch) -> list[tuple[Any, ...]]:
    """A batch's columns read back as (offset, timestamp, key, value, headers, ts type)."""
    cols = batch.columns()
    buf = bytes(cols.buffer)

    def cut(starts: Any, lengths: Any, j: int) -> bytes | None:
        return None if lengths[j] < 0 else buf[starts[j]:starts[j] + lengths[j]]

    rows = []
    for i, offset in enumerate(cols.offsets):
        headers = [(buf[cols.header_key_starts[h]:cols.header_key_starts[h] + cols.header_key_lengths[h]].decode(),
                    cut(cols.header_value_starts, cols.header_value_lengths, h))
                   for h in range(cols.header_offsets[i], cols.header_offsets[i + 1])]
        rows.append((offset, cols.timestamps[i], cut(cols.key_starts, cols.key_lengths, i),
                     cut(cols.value_starts, cols.value_lengths, i), headers, cols.timestamp_type))
    return rows


ABORTED = [(7, 15)]  # producer 7's transaction from offset 15 was aborted
COMMITTED_OFFSETS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17, 18, 21, 22, 25, 26]
ALL_OFFSETS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17, 18, 21, 22, 25, 26]


def expected(read_committed: bool) -> list[tuple[Any, ...]]:
    """What every reader must return: (offset, timestamp, key, value, headers, ts type, epoch)."""
    keep = BatchFilter(ABORTED, read_committed=read_committed)
    out = []
    for batch in iter_batches(log()):
        if keep(batch):
            out += [(r.offset, r.timestamp, r.key, r.value, r.headers, r.timestamp_type, r.leader_epoch)
                    for r in batch.records("t", 2)]
    return out


@pytest.mark.parametrize("read_committed", [False, True])
def test_filter_passes_over_control_empty_and_aborted_batches(read_committed: bool) -> None:
    rows = expected(read_committed)
    assert [r[0] for r in rows] == (COMMITTED_OFFSETS if read_committed else ALL_OFFSETS)
    by_offset = {r[0]: r for r in rows}
    assert by_offset[0][5] == -1 and by_offset[1][5] == 0  # v0 has no timestamp type
    assert by_offset[2][1:4] == (700, b"lk0", b"lv0")  # a legacy wrapper's inner messages
    assert by_offset[5][6] == 4 and by_offset[2][6] is None  # the batch's leader epoch, if any
    assert by_offset[12][1] == 4242 and by_offset[12][5] == 1  # log-append time
    assert by_offset[6][4] == [] and by_offset[7][4] == [("h", b"7")]  # headers on odd offsets


def test_an_abort_marker_ends_the_producers_aborted_transaction_only() -> None:
    keep = BatchFilter(ABORTED, read_committed=True)
    kept = {b.base_offset for b in iter_batches(log()) if keep(b)}
    assert 15 not in kept  # aborted
    assert 21 in kept  # the same producer's next transaction, after its ABORT marker
    assert 17 in kept  # another producer's committed transaction
    assert not {19, 20, 23, 24} & kept  # markers and control batches
    assert 14 not in kept  # the empty batch


def test_poll_share_and_columns_read_the_same_records(impl: list[int]) -> None:
    want = expected(read_committed=False)
    data = log()

    fetch = CompletedFetch(TP, 0, 0, memoryview(data))
    polled: list[ConsumerRecord] = []
    while fetch.take(4, polled):
        pass
    assert all(type(r) is ConsumerRecord for r in polled)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers, r.timestamp_type, r.leader_epoch)
            for r in polled] == want
    assert {(r.topic, r.partition) for r in polled} == {("t", 2)}
    assert fetch.next_offset == 27

    gaps: dict[int, AcknowledgeType] = {}
    share = ShareCompletedFetch(TP, 1, data, [(0, 26, 3)])
    shared: list[ShareConsumerRecord] = []
    while share.take(5, shared, gaps.__setitem__):
        pass
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers, r.timestamp_type, r.leader_epoch)
            for r in shared] == want
    assert {r.delivery_count for r in shared} == {3}
    assert [(r.serialized_key_size, r.serialized_value_size) for r in shared[:2]] == [(1, 2), (-1, 2)]
    assert sorted(gaps) == [14, 19, 20, 23, 24] and set(gaps.values()) == {AcknowledgeType.GAP}

    columnar = CompletedFetch(TP, 0, 0, memoryview(data))
    batches: list[Batch] = []
    columnar.take_batches(batches)
    rows = [row for b in batches for row in rows_of(b)]
    assert rows == [w[:6] for w in want]
    # The v2 batches were decoded by the kernels behind ``records``, by every reader.
    assert impl.count(3) >= 3 * 2


def test_read_committed_poll_leaves_out_aborted_records() -> None:
    fetch = CompletedFetch(TP, 0, 0, memoryview(log()), aborted=ABORTED, read_committed=True)
    out: list[ConsumerRecord] = []
    while fetch.take(100, out):
        pass
    assert [r.offset for r in out] == COMMITTED_OFFSETS
    columnar = CompletedFetch(TP, 0, 0, memoryview(log()), aborted=ABORTED, read_committed=True)
    batches: list[Batch] = []
    columnar.take_batches(batches)
    assert [o for b in batches for o in b.columns().offsets] == COMMITTED_OFFSETS


def test_records_as_builds_the_callers_type_with_the_records_fields() -> None:
    for batch in iter_batches(log()):
        as_consumer = batch.records_as(ConsumerRecord, "t", 2)
        plain = batch.records("t", 2)
        assert all(type(r) is ConsumerRecord for r in as_consumer)
        assert [tuple(r) for r in as_consumer] == [tuple(r) for r in plain]
        assert [tuple(r) for r in batch.records_as(tuple, "t", 2)] == [tuple(r) for r in plain]
        assert all(type(r) is Record for r in plain) or batch.is_control


def test_legacy_columns_hold_the_messages() -> None:
    (plain,) = iter_batches(message(3, 0, None, b"only"))
    cols = plain.columns()
    assert (list(cols.offsets), list(cols.timestamps), cols.timestamp_type) == ([3], [-1], -1)
    assert list(cols.key_lengths) == [-1] and bytes(cols.buffer)[cols.value_starts[0]:] == b"only"
    assert list(cols.header_offsets) == [0, 0] and not cols.header_key_starts
    (wrapper,) = iter_batches(legacy_wrapper(9, 2, compression.SNAPPY))
    cols = wrapper.columns()
    assert (list(cols.offsets), list(cols.timestamps), cols.timestamp_type) == ([8, 9], [700, 701], 0)
    values = [bytes(cols.buffer)[s:s + n] for s, n in zip(cols.value_starts, cols.value_lengths)]
    assert values == [b"lv0", b"lv1"] and list(cols.header_offsets) == [0, 0, 0]


def test_a_corrupt_legacy_wrapper_fails_the_fetch_naming_partition_and_offset() -> None:
    bad = bytearray(legacy_wrapper(4, 3))
    bad[-5] ^= 0xFF  # inside the gzip stream: the wrapper's own CRC is checked on the whole message
    good = message(0, 1, None, b"first", timestamp=1)
    fetch = CompletedFetch(TP, 0, 0, memoryview(good + bytes(bad)), check_crcs=False)
    out: list[ConsumerRecord] = []
    assert fetch.take(10, out) == 1 and out[0].value == b"first"
    for _ in range(2):  # keeps failing until the application seeks past it
        with pytest.raises(CorruptRecordsError) as info:
            fetch.take(10, out)
        assert (info.value.topic, info.value.partition) == ("t", 2)
        assert info.value.context["offset"] == 4
        assert "seek past offset 4" in str(info.value)


def test_share_rejects_only_the_acquired_records_of_a_corrupt_batch() -> None:
    bad = bytearray(v2(3, 3))
    bad[-1] ^= 0xFF
    data = v2(0, 3) + bytes(bad) + v2(6, 2)
    acks: dict[int, AcknowledgeType] = {}
    fetch = ShareCompletedFetch(TP, 1, data, [(0, 7, 1)])
    out: list[ShareConsumerRecord] = []
    assert fetch.take(100, out, acks.__setitem__) == 3
    with pytest.raises(CorruptRecordsError):
        fetch.take(100, out, acks.__setitem__)
    assert fetch.take(100, out, acks.__setitem__) == 2
    assert [r.offset for r in out] == [0, 1, 2, 6, 7]
    assert acks == {3: AcknowledgeType.REJECT, 4: AcknowledgeType.REJECT, 5: AcknowledgeType.REJECT}


@pytest.mark.timeout(60)
def test_share_rejects_a_corrupt_batch_claiming_two_billion_offsets_by_its_acquired_records() -> None:
    # Found by tools/fuzz (share target): the rejected offsets come from the acquired
    # ranges, not from walking the batch's claimed span.
    bad = bytearray(v2(0, 3))
    bad[23:27] = (0x7FFFFFFF).to_bytes(4, "big")  # lastOffsetDelta; the stored CRC no longer matches
    acks: dict[int, AcknowledgeType] = {}
    fetch = ShareCompletedFetch(TP, 1, bytes(bad) + v2(3, 1), [(0, 3, 1)])
    out: list[ShareConsumerRecord] = []
    with pytest.raises(CorruptRecordsError, match="offset 0"):
        fetch.take(100, out, acks.__setitem__)
    assert acks == {0: AcknowledgeType.REJECT, 1: AcknowledgeType.REJECT, 2: AcknowledgeType.REJECT,
                    3: AcknowledgeType.REJECT}
    assert fetch.take(100, out, acks.__setitem__) == 0 and fetch.exhausted


def test_share_records_are_built_by_the_decoder_with_their_ranges_delivery_counts() -> None:
    data = v2(0, 6) + v2(6, 2)
    fetch = ShareCompletedFetch(TP, 1, data, [(1, 2, 1), (3, 6, 4)])
    out: list[ShareConsumerRecord] = []
    gaps: dict[int, AcknowledgeType] = {}
    assert fetch.take(100, out, gaps.__setitem__) == 6
    assert [(r.offset, r.delivery_count) for r in out] == [(1, 1), (2, 1), (3, 4), (4, 4), (5, 4), (6, 4)]
    assert all(type(r) is ShareConsumerRecord for r in out) and not gaps
    assert [(r.serialized_key_size, r.serialized_value_size) for r in out[:3]] == [(2, 2), (2, 2), (-1, 2)]
