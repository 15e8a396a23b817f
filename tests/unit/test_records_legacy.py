"""Legacy message sets (magic v0 and v1), built by hand from the Kafka protocol docs:

    offset int64, message_size int32, crc int32 (CRC-32 of magic..end), magic int8,
    attributes int8, [timestamp int64 (v1)], key bytes (int32 length, -1 null),
    value bytes

A compressed message is a wrapper whose value is a compressed message set; v1 inner
offsets are relative and the wrapper holds the last inner message's absolute offset.
"""

from __future__ import annotations

import struct
import zlib

import pytest

from kafkalite.errors import CorruptRecordsError, UnsupportedCodecError
from kafkalite.protocol import compression
from kafkalite.protocol.legacy_records import LegacyRecordBatch
from kafkalite.protocol.records import Record, RecordBatchBuilder, iter_batches, read_batches


def _bytes(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def message(
    offset: int,
    magic: int,
    key: bytes | None,
    value: bytes | None,
    *,
    attributes: int = 0,
    timestamp: int = -1,
    bad_crc: bool = False,
) -> bytes:
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += _bytes(key) + _bytes(value)
    crc = zlib.crc32(body) ^ (1 if bad_crc else 0)
    msg = struct.pack(">I", crc) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def test_v0_plain_messages():
    data = message(10, 0, b"k", b"v") + message(11, 0, None, b"") + message(12, 0, b"", None)
    batches = list(iter_batches(data))
    assert [b.magic for b in batches] == [0, 0, 0]
    recs = [r for b in batches for r in b.records("t", 1)]
    assert recs == [
        Record(10, -1, b"k", b"v", [], -1, "t", 1),
        Record(11, -1, None, b"", [], -1, "t", 1),
        Record(12, -1, b"", None, [], -1, "t", 1),
    ]
    b = batches[0]
    assert (b.base_offset, b.last_offset, b.next_offset, b.record_count) == (10, 10, 11, 1)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.partition_leader_epoch) == (
        -1,
        -1,
        -1,
        -1,
    )
    assert not b.is_transactional and not b.is_control and b.timestamp_type == -1
    assert isinstance(b, LegacyRecordBatch)


def test_v1_plain_messages_with_timestamps():
    data = message(0, 1, b"a", b"1", timestamp=1000) + message(
        1, 1, b"b", b"2", attributes=0x08, timestamp=2000
    )
    recs = [r for b in iter_batches(data) for r in b.records()]
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in recs] == [(0, 1000, 0), (1, 2000, 1)]


@pytest.mark.parametrize("codec", [1, 2, 3])
def test_v1_compressed_wrapper_relative_offsets(codec):
    inner = b"".join(message(i, 1, b"k%d" % i, b"v%d" % i, timestamp=500 + i) for i in range(3))
    wrapper = message(
        102, 1, None, compression.compress(codec, inner), attributes=codec, timestamp=502
    )
    (batch,) = list(iter_batches(wrapper))
    assert batch.compression == codec
    recs = batch.records()
    assert [(r.offset, r.timestamp, r.key, r.value) for r in recs] == [
        (100, 500, b"k0", b"v0"),
        (101, 501, b"k1", b"v1"),
        (102, 502, b"k2", b"v2"),
    ]
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (100, 102, 3)


def test_v1_wrapper_with_log_append_time_overrides_inner_timestamps():
    inner = b"".join(message(i, 1, None, b"v", timestamp=5) for i in range(2))
    wrapper = message(
        9, 1, None, compression.compress(1, inner), attributes=1 | 0x08, timestamp=777
    )
    recs = next(iter_batches(wrapper)).records()
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in recs] == [(8, 777, 1), (9, 777, 1)]


def test_v0_compressed_wrapper_absolute_offsets_and_broken_lz4_checksum():
    inner = b"".join(message(50 + i, 0, None, b"x%d" % i) for i in range(2))
    frame = bytearray(compression.compress(3, inner))
    frame[6] = (frame[6] + 1) & 0xFF  # early clients' wrong header checksum for magic v0
    wrapper = message(51, 0, None, bytes(frame), attributes=3)
    recs = next(iter_batches(wrapper)).records()
    assert [(r.offset, r.value) for r in recs] == [(50, b"x0"), (51, b"x1")]


def test_mixed_legacy_and_v2_with_partial_tail():
    b = RecordBatchBuilder(base_offset=3)
    b.append(1, b"k", b"v2")
    v2 = b.build()
    data = (
        message(1, 0, None, b"a")
        + message(2, 1, None, b"b", timestamp=7)
        + v2
        + message(4, 1, None, b"c")[:-3]
    )
    batches, consumed = read_batches(data)
    assert [x.magic for x in batches] == [0, 1, 2]
    assert consumed == len(data) - len(message(4, 1, None, b"c")) + 3
    assert [r.offset for x in batches for r in x.records()] == [1, 2, 3]


def test_crc_checks():
    data = message(0, 1, b"k", b"v", timestamp=1, bad_crc=True)
    with pytest.raises(CorruptRecordsError, match="CRC"):
        list(iter_batches(data))
    (batch,) = list(iter_batches(data, check_crcs=False))
    assert not batch.is_valid()
    inner = message(0, 1, None, b"v", timestamp=1, bad_crc=True)
    wrapper = message(0, 1, None, compression.compress(1, inner), attributes=1, timestamp=1)
    with pytest.raises(CorruptRecordsError, match="inner message"):
        next(iter_batches(wrapper)).records()


def test_malformed_legacy_messages():
    good = message(0, 1, b"key", b"value", timestamp=1)
    body = bytearray(good)
    body[26:30] = struct.pack(">i", 1000)  # key length overruns the message
    with pytest.raises(CorruptRecordsError):
        list(iter_batches(bytes(body), check_crcs=False))
    nested = message(
        0,
        1,
        None,
        compression.compress(1, message(0, 1, None, b"x", attributes=1, timestamp=0)),
        attributes=1,
        timestamp=0,
    )
    with pytest.raises(CorruptRecordsError):
        next(iter_batches(nested)).records()
    zstd_wrapper = message(
        0,
        1,
        None,
        compression.compress(4, message(0, 1, None, b"x", timestamp=0)),
        attributes=4,
        timestamp=0,
    )
    with pytest.raises(UnsupportedCodecError):
        next(iter_batches(zstd_wrapper)).records()
    mismatched = message(
        0, 1, None, compression.compress(1, message(0, 0, None, b"x")), attributes=1, timestamp=0
    )
    with pytest.raises(CorruptRecordsError, match="magic"):
        next(iter_batches(mismatched)).records()
    truncated_inner = message(
        0,
        1,
        None,
        compression.compress(1, message(0, 1, None, b"x", timestamp=0)[:-2]),
        attributes=1,
        timestamp=0,
    )
    with pytest.raises(CorruptRecordsError):
        next(iter_batches(truncated_inner)).records()
    with pytest.raises(CorruptRecordsError):
        list(iter_batches(struct.pack(">qi", 0, 5) + b"\x00" * 5))  # below the minimum size


@pytest.mark.parametrize("wrapper_offset, inner_offsets", [(1, range(3)), (-(2**63), range(2)), (5, range(-1, 2))])
def test_v1_wrapper_whose_inner_offsets_do_not_fit_it_is_corrupt(wrapper_offset, inner_offsets):
    # 1 - 2 = -1 for the first record; -2**63 - 1 leaves int64 (tools/fuzz found the
    # OverflowError from columns()); a negative relative offset is never written.
    inner = b"".join(message(i, 1, None, b"v", timestamp=5) for i in inner_offsets)
    wrapper = message(wrapper_offset, 1, None, compression.compress(1, inner), attributes=1, timestamp=9)
    (batch,) = list(iter_batches(wrapper))
    for read in (batch.records, batch.columns):
        with pytest.raises(CorruptRecordsError, match=f"offset {wrapper_offset} has inner relative offsets"):
            read()
