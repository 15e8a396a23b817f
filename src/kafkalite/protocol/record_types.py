"""Shapes shared by the record batch encoder and decoders.

:class:`Record` is what decoding a batch yields (one per record), for every message
format (v2 batches and legacy v0/v1 message sets). It is a NamedTuple on purpose:
the decode kernels (pure Python and C) build it directly as a tuple, so there is no
second object per record, and the consumer can hand it to users as is.
"""

from __future__ import annotations

import struct
from array import array
from enum import IntEnum
from typing import Any, Final, NamedTuple, TypeVar

__all__ = [
    "BATCH_HEADER",
    "BATCH_OVERHEAD",
    "CONTROL_FLAG",
    "CREATE_TIME",
    "DELETE_HORIZON_FLAG",
    "LOG_APPEND_TIME",
    "LOG_OVERHEAD",
    "NO_TIMESTAMP_TYPE",
    "TIMESTAMP_TYPE_FLAG",
    "TRANSACTIONAL_FLAG",
    "ControlRecord",
    "ControlRecordType",
    "Record",
    "RecordColumns",
    "RecordT",
]

# Timestamp types (Java's TimestampType ids). Legacy v0 records have no timestamp.
NO_TIMESTAMP_TYPE: Final = -1
CREATE_TIME: Final = 0
LOG_APPEND_TIME: Final = 1

# v2 batch attribute bits (DefaultRecordBatch): codec in bits 0-2.
CODEC_MASK: Final = 0x07
TIMESTAMP_TYPE_FLAG: Final = 0x08
TRANSACTIONAL_FLAG: Final = 0x10
CONTROL_FLAG: Final = 0x20
DELETE_HORIZON_FLAG: Final = 0x40

#: offset (int64) + length (int32): the part of every batch/message outside its length.
LOG_OVERHEAD: Final = 12

#: The 61-byte v2 batch header: baseOffset, batchLength, partitionLeaderEpoch, magic,
#: crc (uint32), attributes, lastOffsetDelta, baseTimestamp, maxTimestamp, producerId,
#: producerEpoch, baseSequence, recordsCount.
BATCH_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
BATCH_OVERHEAD: Final = BATCH_HEADER.size  # 61
CRC_OFFSET: Final = 17
ATTRIBUTES_OFFSET: Final = 21  # the CRC-32C covers attributes .. end of batch
PRODUCER_ID_OFFSET: Final = 43
BASE_SEQUENCE_OFFSET: Final = 53


#: What a batch's records are decoded into (``RecordBatch.records_as``): ``tuple``, or a
#: tuple subclass without instance storage laid out as :class:`Record`.
RecordT = TypeVar("RecordT", bound=tuple[Any, ...])


class ControlRecordType(IntEnum):
    """Control record types (the int16 in a control record's key, after its version)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


class Record(NamedTuple):
    """One decoded record.

    ``key``/``value`` are ``None`` for null (distinct from ``b""``). ``headers`` is a
    list of ``(str, bytes | None)`` in wire order, duplicates kept. ``timestamp_type``
    is 0 (create time), 1 (log-append time: the broker's time, the same for the whole
    batch) or -1 (legacy v0, no timestamp; ``timestamp`` is then -1). ``topic`` and
    ``partition`` are filled when the caller passes them to ``records()``;
    ``leader_epoch`` is the batch's partition leader epoch, or None when unknown.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp_type: int = CREATE_TIME
    topic: str | None = None
    partition: int | None = None
    leader_epoch: int | None = None

    @property
    def control_type(self) -> int | None:
        """The control record type; None for ordinary data records."""
        return None


class ControlRecord(Record):
    """A record of a control batch (transaction marker, KRaft record), never user data.

    Its key is int16 version + int16 type; for ABORT/COMMIT markers its value is
    int16 version + int32 coordinator epoch (Kafka's ``EndTransactionMarker``).
    """

    __slots__ = ()

    @property
    def control_type(self) -> int | None:
        """The control type (see :class:`ControlRecordType`); -1 if the key is unreadable."""
        key = self.key
        if key is None or len(key) < 4 or key[0] & 0x80:  # negative version: invalid
            return -1
        return int.from_bytes(key[2:4], "big", signed=True)

    @property
    def coordinator_epoch(self) -> int | None:
        """For transaction markers, the coordinator epoch in the value; else None."""
        value = self.value
        if self.control_type not in (0, 1) or value is None or len(value) < 6:
            return None
        return int.from_bytes(value[2:6], "big", signed=True)


class RecordColumns(NamedTuple):
    """A batch's records as parallel arrays (see ``decode_records_columnar``).

    Positions index ``buffer`` (the decompressed records, or the batch bytes; for a
    legacy message set, a buffer of its keys and values); lengths of -1 mean null. Header arrays are flattened with ``header_offsets``
    (``record_count + 1`` entries) saying where each record's headers start, the
    layout of an Arrow list column.
    """

    buffer: bytes | bytearray | memoryview
    offsets: array[int]
    timestamps: array[int]
    key_starts: array[int]
    key_lengths: array[int]
    value_starts: array[int]
    value_lengths: array[int]
    header_offsets: array[int]
    header_key_starts: array[int]
    header_key_lengths: array[int]
    header_value_starts: array[int]
    header_value_lengths: array[int]
    timestamp_type: int
