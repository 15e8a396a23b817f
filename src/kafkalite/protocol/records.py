"""Kafka record batches: reading what brokers send, and the public face of encoding.

A fetch response's records field is a run of batches, magic v2 ``RecordBatch``es and
possibly legacy v0/v1 message-set entries, whose last one may be cut short (a broker
stops at the fetch size limit mid-batch). :func:`iter_batches` walks such a buffer,
stopping quietly at a partial trailing batch, and yields lazy batch views:

* parsing a batch reads its 61-byte header only (one ``struct`` call);
* ``check_crcs`` (the consumer's ``check.crcs``) validates the CRC-32C over the
  batch's bytes, which is cheap (C) and does not decode records;
* records are decoded only by :meth:`RecordBatch.records` (one
  :class:`~kafkalite.protocol.record_types.Record` tuple per record) or
  :meth:`RecordBatch.columns` (parallel arrays, no object per record), both through
  the kernels of :mod:`kafkalite.protocol.record_codec`.

Encoding lives in :mod:`kafkalite.protocol.record_builder` and is re-exported here.
Errors are :class:`~kafkalite.errors.CorruptRecordsError` (malformed, CRC mismatch)
and :class:`~kafkalite.errors.UnsupportedCodecError`; callers add the topic and
partition with ``exc.with_context(topic=..., partition=...)``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final

from crc32c import crc32c

from kafkalite.errors import CorruptRecordsError, UnsupportedCodecError
from kafkalite.protocol import compression as _compression
from kafkalite.protocol.legacy_records import LegacyRecordBatch
from kafkalite.protocol.record_builder import (
    RecordBatchBuilder,
    build_control_batch,
    build_end_txn_marker,
    increment_sequence,
    rewrite_producer_state,
)
from kafkalite.protocol.record_codec import decode_records, decode_records_columnar
from kafkalite.protocol.record_types import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER,
    BATCH_OVERHEAD,
    CODEC_MASK,
    CONTROL_FLAG,
    CREATE_TIME,
    DELETE_HORIZON_FLAG,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    ControlRecord,
    ControlRecordType,
    Record,
    RecordColumns,
)

__all__ = [
    "Batch",
    "ControlRecord",
    "ControlRecordType",
    "LegacyRecordBatch",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "RecordColumns",
    "build_control_batch",
    "build_end_txn_marker",
    "increment_sequence",
    "iter_batches",
    "read_batches",
    "rewrite_producer_state",
]

Buffer = bytes | bytearray | memoryview
_HEAD: Final = struct.Struct(">qib")  # baseOffset, length, partitionLeaderEpoch-or-crc(hi), …
_LENGTH: Final = struct.Struct(">qi")
# The smallest legacy message: crc + magic + attributes + key length + value length.
_LEGACY_MIN_SIZE: Final = 14
_V2_MIN_LENGTH: Final = BATCH_OVERHEAD - LOG_OVERHEAD


class RecordBatch:
    """A lazy view of one magic v2 record batch inside a larger buffer.

    Header fields are attributes; records are decoded only on request.
    """

    __slots__ = (
        "_buf",
        "_pos",
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "record_count",
        "size_in_bytes",
    )

    def __init__(self, buf: Buffer, pos: int = 0) -> None:
        """View the batch starting at ``buf[pos]``; the whole batch must be present."""
        if len(buf) - pos < BATCH_OVERHEAD:
            raise CorruptRecordsError(
                f"record batch at byte {pos} is shorter than the {BATCH_OVERHEAD}-byte header"
            )
        (
            self.base_offset,
            length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = BATCH_HEADER.unpack_from(buf, pos)
        self.size_in_bytes: int = length + LOG_OVERHEAD
        if length < _V2_MIN_LENGTH or pos + self.size_in_bytes > len(buf):
            raise CorruptRecordsError(
                f"record batch at offset {self.base_offset} has invalid length {length}"
            )
        self._buf = buf
        self._pos = pos

    # -------------------------------------------------------------- header fields

    @property
    def compression(self) -> int:
        """Codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; others are unsupported)."""
        return int(self.attributes & CODEC_MASK)

    @property
    def timestamp_type(self) -> int:
        """0 = create time, 1 = log-append time (then every record's timestamp is max_timestamp)."""
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_FLAG else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the delete-horizon bit is set, base_timestamp holds it (KIP-534)."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG else None

    @property
    def last_offset(self) -> int:
        return int(self.base_offset + self.last_offset_delta)

    @property
    def next_offset(self) -> int:
        """The offset after this batch (where a consumer resumes)."""
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == -1:
            return -1
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    def buffer(self) -> memoryview:
        """The batch's bytes (a view, no copy)."""
        return memoryview(self._buf)[self._pos : self._pos + self.size_in_bytes]

    def is_valid(self) -> bool:
        """Whether the stored CRC-32C matches the batch's bytes."""
        start = self._pos + ATTRIBUTES_OFFSET
        return crc32c(memoryview(self._buf)[start : self._pos + self.size_in_bytes]) == self.crc

    def ensure_valid(self) -> None:
        """Raise :class:`CorruptRecordsError` if the CRC does not match."""
        if not self.is_valid():
            start = self._pos + ATTRIBUTES_OFFSET
            actual = crc32c(memoryview(self._buf)[start : self._pos + self.size_in_bytes])
            raise CorruptRecordsError(
                f"record batch at offset {self.base_offset} is corrupt: stored CRC-32C "
                f"{self.crc} != computed {actual}"
            )

    # -------------------------------------------------------------- records

    def _records_section(self, max_decompressed_size: int) -> tuple[Buffer, int, int]:
        start = self._pos + BATCH_OVERHEAD
        end = self._pos + self.size_in_bytes
        codec = self.attributes & CODEC_MASK
        if codec == 0:
            return self._buf, start, end
        if codec > _compression.ZSTD:
            raise UnsupportedCodecError(
                f"record batch at offset {self.base_offset} uses unknown compression codec id {codec}"
            )
        data = _compression.decompress(codec, memoryview(self._buf)[start:end], max_size=max_decompressed_size)
        return data, 0, len(data)

    def records(
        self,
        topic: str | None = None,
        partition: int | None = None,
        *,
        max_decompressed_size: int = _compression.DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> list[Record]:
        """Decode every record (decompressing first if needed).

        Records of control batches are :class:`ControlRecord` (with ``control_type``).
        ``topic``/``partition`` are stored in each record for the consumer.
        """
        count = self.record_count
        if count == 0:
            return []  # compaction can leave empty batches that keep producer state
        try:
            data, start, end = self._records_section(max_decompressed_size)
            epoch = self.partition_leader_epoch
            return decode_records(  # type: ignore[no-any-return]
                data,
                start,
                end,
                count,
                self.base_offset,
                self.base_timestamp,
                self.max_timestamp if self.attributes & TIMESTAMP_TYPE_FLAG else None,
                ControlRecord if self.attributes & CONTROL_FLAG else Record,
                (self.timestamp_type, topic, partition, epoch if epoch >= 0 else None),
            )
        except CorruptRecordsError as exc:
            raise CorruptRecordsError(f"record batch at offset {self.base_offset}: {exc.message}") from None

    def columns(
        self, *, max_decompressed_size: int = _compression.DEFAULT_MAX_DECOMPRESSED_SIZE
    ) -> RecordColumns:
        """Decode the records into parallel arrays (see :class:`RecordColumns`)."""
        try:
            data, start, end = self._records_section(max_decompressed_size)
            cols = decode_records_columnar(
                data,
                start,
                end,
                self.record_count,
                self.base_offset,
                self.base_timestamp,
                self.max_timestamp if self.attributes & TIMESTAMP_TYPE_FLAG else None,
            )
        except CorruptRecordsError as exc:
            raise CorruptRecordsError(f"record batch at offset {self.base_offset}: {exc.message}") from None
        return RecordColumns._make((data, *cols, self.timestamp_type))

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def __len__(self) -> int:
        return int(self.record_count)

    def __repr__(self) -> str:
        return (
            f"RecordBatch(offsets=[{self.base_offset}, {self.last_offset}], count={self.record_count}, "
            f"codec={self.compression}, producer_id={self.producer_id}, epoch={self.producer_epoch}, "
            f"sequence={self.base_sequence}, transactional={self.is_transactional}, "
            f"control={self.is_control}, size={self.size_in_bytes})"
        )


Batch = RecordBatch | LegacyRecordBatch


def _next_batch(buf: Buffer, pos: int, check_crcs: bool) -> Batch | None:
    """The batch at ``pos``, or None if the bytes left do not hold a whole one."""
    remaining = len(buf) - pos
    if remaining < LOG_OVERHEAD:
        return None
    base_offset, length = _LENGTH.unpack_from(buf, pos)
    if length < _LEGACY_MIN_SIZE:
        raise CorruptRecordsError(
            f"record batch at offset {base_offset} has length {length}, less than the minimum "
            f"{_LEGACY_MIN_SIZE}"
        )
    if remaining < LOG_OVERHEAD + length:
        return None  # a partial batch cut off by the fetch size limit
    magic = buf[pos + 16]
    batch: Batch
    if magic == 2:
        batch = RecordBatch(buf, pos)
    elif magic in (0, 1):
        batch = LegacyRecordBatch(buf, pos)
    else:
        raise CorruptRecordsError(f"record batch at offset {base_offset} has unknown magic {magic}")
    if check_crcs:
        batch.ensure_valid()
    return batch


def iter_batches(data: Buffer, *, check_crcs: bool = True) -> Iterator[Batch]:
    """Yield the batches in ``data``, stopping at a partial trailing batch.

    ``data`` is what a fetch response holds for one partition. With ``check_crcs``
    each batch's CRC is verified before it is yielded.
    """
    pos = 0
    while True:
        batch = _next_batch(data, pos, check_crcs)
        if batch is None:
            return
        yield batch
        pos += batch.size_in_bytes


def read_batches(data: Buffer, *, check_crcs: bool = True) -> tuple[list[Batch], int]:
    """All whole batches in ``data`` and the number of bytes they take.

    ``len(data) - consumed`` is the size of a partial trailing batch (0 if none); a
    consumer that gets no batch at all from a non-empty response knows the first
    batch is larger than its fetch size.
    """
    batches: list[Batch] = []
    pos = 0
    while True:
        batch = _next_batch(data, pos, check_crcs)
        if batch is None:
            return batches, pos
        batches.append(batch)
        pos += batch.size_in_bytes
