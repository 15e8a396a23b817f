"""Record batch v2: builder and decoder round trips, size accounting, rewriting,
control batches, partial trailing batches and CRC checks (both kernel implementations)."""

from __future__ import annotations

import struct

import pytest

from kafkalite.errors import (
    ConfigError,
    CorruptRecordsError,
    InvalidArgumentError,
    KafkaError,
    UnsupportedCodecError,
)
from kafkalite.protocol import compression, record_builder, records
from kafkalite.protocol.record_codec import c_impl, python_impl
from kafkalite.protocol.records import (
    ControlRecord,
    ControlRecordType,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    build_control_batch,
    build_end_txn_marker,
    iter_batches,
    read_batches,
    rewrite_producer_state,
)

IMPLS = ["python"] + (["c"] if c_impl is not None else [])


@pytest.fixture(params=IMPLS, autouse=True)
def impl(request, monkeypatch):
    """Run every test with the pure-Python kernels and with the C kernels."""
    mod = python_impl if request.param == "python" else c_impl
    monkeypatch.setattr(records, "decode_records", mod.decode_records)
    monkeypatch.setattr(records, "decode_records_columnar", mod.decode_records_columnar)
    builder = record_builder.builder_class(mod.BuilderBase)
    monkeypatch.setattr(record_builder, "RecordBatchBuilder", builder)
    monkeypatch.setattr(records, "RecordBatchBuilder", builder)
    monkeypatch.setitem(globals(), "RecordBatchBuilder", builder)
    return request.param


SAMPLE = [
    (1_700_000_000_000, b"k0", b"v0", None),
    (1_700_000_000_005, None, b"value-without-key", [("trace", b"abc")]),
    (1_700_000_000_001, b"", b"", []),  # empty key and value are not null
    (1_700_000_000_002, b"k3", None, [("dup", b"1"), ("dup", None), ("ключ", b"")]),  # tombstone
    (1_699_999_999_000, b"\x00\xff" * 300, b"x" * 10_000, [("h" * 200, b"y" * 300)]),
]


def build(codec=0, level=None, items=SAMPLE, **kwargs) -> bytes:
    b = RecordBatchBuilder(compression=codec, compression_level=level, batch_size=1 << 30, **kwargs)
    for ts, k, v, h in items:
        assert b.try_append(ts, k, v, h) >= 0
    return b.build()


def expected_headers(h):
    return [] if not h else [(k, v) for k, v in h]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_round_trip_every_field(codec):
    data = build(
        codec,
        producer_id=123456789012,
        producer_epoch=7,
        base_sequence=42,
        transactional=True,
        partition_leader_epoch=3,
        base_offset=1000,
    )
    (batch,) = list(iter_batches(data))
    assert isinstance(batch, RecordBatch)
    assert batch.magic == 2
    assert batch.compression == codec
    assert batch.base_offset == 1000
    assert batch.last_offset == 1000 + len(SAMPLE) - 1
    assert batch.next_offset == batch.last_offset + 1
    assert batch.record_count == len(SAMPLE) == len(batch)
    assert batch.size_in_bytes == len(data)
    assert batch.producer_id == 123456789012
    assert batch.producer_epoch == 7
    assert batch.base_sequence == 42
    assert batch.last_sequence == 42 + len(SAMPLE) - 1
    assert batch.is_transactional and not batch.is_control
    assert batch.partition_leader_epoch == 3
    assert batch.timestamp_type == 0
    assert batch.base_timestamp == SAMPLE[0][0]
    assert batch.max_timestamp == max(s[0] for s in SAMPLE)
    assert batch.is_valid()
    recs = batch.records("orders", 4)
    assert [r.offset for r in recs] == list(range(1000, 1000 + len(SAMPLE)))
    for r, (ts, k, v, h) in zip(recs, SAMPLE):
        assert type(r) is Record
        assert (r.timestamp, r.key, r.value, r.headers) == (ts, k, v, expected_headers(h))
        assert (r.topic, r.partition, r.leader_epoch, r.timestamp_type) == ("orders", 4, 3, 0)
        assert r.control_type is None
    assert recs[2].key == b"" and recs[1].key is None
    assert recs[2].value == b"" and recs[3].value is None


@pytest.mark.parametrize(
    ("codec", "level"), [(1, 1), (1, 9), (1, -1), (3, 1), (3, 17), (4, -5), (4, 1), (4, 22)]
)
def test_compression_levels_round_trip(codec, level):
    data = build(codec, level)
    assert [r.value for r in RecordBatch(data).records()] == [s[2] for s in SAMPLE]


def test_log_append_time_applies_max_timestamp_to_every_record():
    data = build(timestamp_type=1, log_append_time=1_800_000_000_000)
    batch = RecordBatch(data)
    assert batch.timestamp_type == 1
    assert batch.max_timestamp == 1_800_000_000_000
    recs = batch.records()
    assert {r.timestamp for r in recs} == {1_800_000_000_000}
    assert {r.timestamp_type for r in recs} == {1}
    cols = batch.columns()
    assert list(cols.timestamps) == [1_800_000_000_000] * len(SAMPLE)


@pytest.mark.parametrize("codec", [0, 3])
def test_columns_match_records(codec):
    batch = RecordBatch(build(codec))
    recs = batch.records()
    cols = batch.columns()
    buf = bytes(cols.buffer)
    assert list(cols.offsets) == [r.offset for r in recs]
    assert list(cols.timestamps) == [r.timestamp for r in recs]
    for i, r in enumerate(recs):
        kl, vl = cols.key_lengths[i], cols.value_lengths[i]
        assert (None if kl < 0 else buf[cols.key_starts[i] : cols.key_starts[i] + kl]) == r.key
        assert (
            None if vl < 0 else buf[cols.value_starts[i] : cols.value_starts[i] + vl]
        ) == r.value
        hs = []
        for j in range(cols.header_offsets[i], cols.header_offsets[i + 1]):
            k = buf[
                cols.header_key_starts[j] : cols.header_key_starts[j] + cols.header_key_lengths[j]
            ]
            hl = cols.header_value_lengths[j]
            hs.append(
                (
                    k.decode(),
                    None
                    if hl < 0
                    else buf[cols.header_value_starts[j] : cols.header_value_starts[j] + hl],
                )
            )
        assert hs == r.headers
    assert len(cols.header_offsets) == len(recs) + 1


def test_try_append_respects_batch_size_but_always_takes_the_first():
    b = RecordBatchBuilder(batch_size=300)
    assert b.try_append(0, None, b"x" * 1000) == 0  # first record always fits
    assert b.try_append(0, None, b"y") == -1
    assert b.record_count == 1
    b = RecordBatchBuilder(batch_size=400)
    indexes = [b.try_append(i, b"k", b"v" * 50) for i in range(10)]
    n = indexes.index(-1)
    assert indexes[:n] == list(range(n)) and n > 1
    assert b.uncompressed_size_in_bytes <= 400
    before = b.uncompressed_size_in_bytes
    assert b.try_append(0, b"k", b"v" * 50) == -1
    assert b.uncompressed_size_in_bytes == before  # rejected record left no trace
    recs = RecordBatch(b.build()).records()
    assert [r.offset for r in recs] == list(range(n))
    assert not b.has_room_for(60)  # the rejected record's size (about 58 bytes) does not fit


def test_compressed_size_estimate_uses_ratio_like_java():
    # With an expected ratio of 0.5 roughly twice as many records fit the same batch.size.
    plain = RecordBatchBuilder(compression=3, batch_size=2000)
    cheap = RecordBatchBuilder(compression=3, batch_size=2000, compression_ratio_estimate=0.5)
    n_plain = sum(plain.try_append(0, None, b"a" * 100) >= 0 for _ in range(100))
    n_cheap = sum(cheap.try_append(0, None, b"a" * 100) >= 0 for _ in range(100))
    assert n_cheap > 1.7 * n_plain
    cheap.build()
    assert 0 < cheap.compression_ratio < 0.5


def test_empty_builder_builds_nothing():
    assert RecordBatchBuilder().build() == b""


def test_rewrite_producer_state_only_touches_header_and_crc():
    data = build(3, producer_id=1, producer_epoch=0, base_sequence=0)
    new = rewrite_producer_state(data, 77, 5, 1000, transactional=True)
    assert len(new) == len(data) and new[61:] == data[61:]
    batch = RecordBatch(new)
    batch.ensure_valid()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 5, 1000)
    assert batch.is_transactional and batch.compression == 3
    assert [r.value for r in batch.records()] == [s[2] for s in SAMPLE]
    back = rewrite_producer_state(new, 1, 0, 0, transactional=False)
    assert back == data
    with pytest.raises(CorruptRecordsError):
        rewrite_producer_state(data + b"x", 1, 1, 1)


def test_sequence_wraps_like_java():
    data = build(base_sequence=2**31 - 2, producer_id=1, producer_epoch=0)
    assert RecordBatch(data).last_sequence == len(SAMPLE) - 3
    assert record_builder.increment_sequence(2**31 - 1, 1) == 0


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_markers(commit):
    data = build_end_txn_marker(
        commit, producer_id=9, producer_epoch=2, coordinator_epoch=17, timestamp_ms=55
    )
    batch = RecordBatch(data)
    assert batch.is_control and batch.is_transactional
    (rec,) = batch.records()
    assert isinstance(rec, ControlRecord)
    assert rec.control_type == (ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)
    assert rec.coordinator_epoch == 17
    assert rec.key == struct.pack(">hh", 0, int(rec.control_type))
    assert rec.value == struct.pack(">hi", 0, 17)


def test_other_control_batches():
    data = build_control_batch(
        ControlRecordType.LEADER_CHANGE, b"\x00\x00", timestamp_ms=1, transactional=False
    )
    (rec,) = RecordBatch(data).records()
    assert rec.control_type == 2 and rec.coordinator_epoch is None
    assert ControlRecord(0, 0, b"\xff\xff\x00\x01", None, []).control_type == -1


def test_several_batches_and_partial_trailing_batch():
    a = build(0, base_offset=0)
    b = build(4, base_offset=5)
    c = build_end_txn_marker(True, producer_id=1, producer_epoch=0, timestamp_ms=0, base_offset=10)
    full = a + b + c
    for cut in range(len(c)):
        data = a + b + c[:cut]
        batches, consumed = read_batches(data)
        assert len(batches) == 2 and consumed == len(a) + len(b)
        assert [x.base_offset for x in iter_batches(data)] == [0, 5]
    batches, consumed = read_batches(full)
    assert [x.base_offset for x in batches] == [0, 5, 10] and consumed == len(full)
    assert read_batches(b"") == ([], 0)
    assert read_batches(a[:20]) == ([], 0)  # first batch larger than what was fetched
    # A memoryview over a larger buffer works the same.
    view = memoryview(b"\x00" * 3 + full)[3:]
    assert [len(x.records()) for x in iter_batches(view)] == [5, 5, 1]


@pytest.mark.parametrize("codec", [0, 2])
def test_crc_mismatch_raises(codec):
    data = bytearray(build(codec))
    data[-1] ^= 0x01
    with pytest.raises(CorruptRecordsError, match="CRC"):
        list(iter_batches(bytes(data)))
    # Without check.crcs the header still parses (records may then fail or succeed).
    (batch,) = list(iter_batches(bytes(data), check_crcs=False))
    assert not batch.is_valid()


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_id(codec):
    data = bytearray(build(0))
    data[22] = (data[22] & ~0x07) | codec  # attributes low byte
    (batch,) = list(iter_batches(bytes(data), check_crcs=False))
    with pytest.raises(UnsupportedCodecError, match=f"codec id {codec}"):
        batch.records()
    with pytest.raises(UnsupportedCodecError):
        compression.decompress(codec, b"abc")


def test_bad_batch_length_and_magic():
    data = bytearray(build(0))
    bad = bytearray(data)
    bad[8:12] = struct.pack(">i", 3)
    with pytest.raises(CorruptRecordsError, match="length 3"):
        list(iter_batches(bytes(bad)))
    bad = bytearray(data)
    bad[16] = 3
    with pytest.raises(CorruptRecordsError, match="magic 3"):
        list(iter_batches(bytes(bad)))


def test_record_count_lies_are_rejected_without_allocating():
    data = bytearray(build(0))
    data[57:61] = struct.pack(">i", 2**31 - 1)
    batch = RecordBatch(bytes(data))
    with pytest.raises(CorruptRecordsError, match="claims"):
        batch.records()
    with pytest.raises(CorruptRecordsError, match="claims"):
        batch.columns()
    data[57:61] = struct.pack(">i", -1)
    with pytest.raises(CorruptRecordsError):
        RecordBatch(bytes(data)).records()
    data[57:61] = struct.pack(">i", len(SAMPLE) - 1)  # bytes left over
    with pytest.raises(CorruptRecordsError, match="remain"):
        RecordBatch(bytes(data)).records()


def test_decompression_bomb_is_bounded():
    b = RecordBatchBuilder(compression=4, batch_size=1 << 30)
    b.append(0, None, b"\x00" * 5_000_000)
    batch = RecordBatch(b.build())
    with pytest.raises(CorruptRecordsError, match="decompression limit"):
        batch.records(max_decompressed_size=1_000_000)
    assert len(batch.records()[0].value) == 5_000_000


def test_errors_carry_context():
    data = bytearray(build(0))
    data[-1] ^= 1
    with pytest.raises(KafkaError) as info:
        list(iter_batches(bytes(data)))
    err = info.value.with_context(topic="t", partition=2)
    assert "topic 't' partition 2" in str(err) and "offset 0" in str(err)


def test_builder_validates_arguments():
    with pytest.raises(UnsupportedCodecError):
        RecordBatchBuilder(compression=9)
    with pytest.raises(ConfigError, match="compression level"):
        RecordBatchBuilder(compression=1, compression_level=10)
    with pytest.raises(InvalidArgumentError, match="needs log_append_time"):
        RecordBatchBuilder(timestamp_type=1)


def test_set_producer_state_before_build():
    b = RecordBatchBuilder()
    b.append(5, b"k", b"v")
    b.set_producer_state(3, 4, 5, True)
    batch = RecordBatch(b.build())
    assert (
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.is_transactional,
    ) == (3, 4, 5, True)


def test_empty_batch_left_by_compaction():
    data = bytearray(build(0, items=SAMPLE[:1]))
    # An empty batch keeps its header (producer state) with recordsCount 0.
    empty = bytearray(data[:61])
    empty[8:12] = struct.pack(">i", 49)
    empty[57:61] = struct.pack(">i", 0)
    from crc32c import crc32c

    empty[17:21] = struct.pack(">I", crc32c(bytes(empty[21:])))
    (batch,) = list(iter_batches(bytes(empty)))
    assert batch.records() == [] and batch.record_count == 0
    cols = batch.columns()
    assert len(cols.offsets) == 0 and list(cols.header_offsets) == [0]
