"""Kafka record batches: reading what brokers send, and the public face of encoding.

A fetch response's records field is a run of batches, magic v2 ``RecordBatch``es and
possibly legacy v0/v1 message-set entries (:class:`LegacyRecordBatch`), whose last one
may be cut short (a broker stops at the fetch size limit mid-batch). This module is the
one place that reads them, for every reader (the consumer's ``poll()``, the share
consumer, the columnar ``poll_batches()`` behind the Spark connector):

* :func:`iter_batches` walks a partition's records bytes, stopping quietly at a partial
  trailing batch, and yields lazy batch views (v2 and legacy alike, with the same
  attributes and methods); parsing a v2 batch reads its 61-byte header only;
* ``check_crcs`` (the consumer's ``check.crcs``) validates each batch's CRC
  (``ensure_valid``: CRC-32C for v2, CRC-32 per legacy message) without decoding records;
* :class:`BatchFilter` decides which batches hold records for the application: control
  batches (transaction markers) never, empty batches (compaction) never, and with
  ``read_committed`` not those of aborted transactions (Java's ``CompletedFetch``);
* records are decoded (decompressing first) only by :meth:`RecordBatch.records_as` into
  any tuple type laid out as :class:`Record` (the consumer's ``ConsumerRecord``:
  one object per record, nothing else), :meth:`RecordBatch.records` (:class:`Record`,
  :class:`ControlRecord` for control batches) or :meth:`RecordBatch.columns` (parallel
  arrays, no object per record), through the kernels of
  :mod:`kafkalite.protocol.record_codec` (C when built, else the pure-Python reference);
* :func:`scan_end_offset` reads batch headers only: where the next fetch starts.

Encoding lives in :mod:`kafkalite.protocol.record_builder` and is re-exported here.
Errors are :class:`~kafkalite.errors.CorruptRecordsError` (malformed, CRC mismatch)
and :class:`~kafkalite.errors.UnsupportedCodecError`; callers add the topic and
partition with ``exc.with_context(topic=..., partition=...)``.

Example (what the consumer's ``poll()`` does with one partition's data)::

    keep = BatchFilter(aborted_transactions, read_committed=True)
    for batch in iter_batches(data, check_crcs=True):
        if keep(batch):
            out += batch.records_as(ConsumerRecord, "orders", 0)
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterable, Iterator
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
    RecordT,
)

__all__ = [
    "Batch",
    "BatchFilter",
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
    "scan_end_offset",
]

Buffer = bytes | bytearray | memoryview
_LENGTH: Final = struct.Struct(">qi")
_INT32: Final = struct.Struct(">i")
# The smallest legacy message: crc + magic + attributes + key length + value length.
_LEGACY_MIN_SIZE: Final = 14
_V2_MIN_LENGTH: Final = BATCH_OVERHEAD - LOG_OVERHEAD


class RecordBatch:
    """A lazy view of one magic v2 record batch inside a larger buffer.

    Header fields are attributes; records are decoded only on request
    (:meth:`records_as`, :meth:`records`, :meth:`columns`).
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
    # The header's fields, as BATCH_HEADER unpacks them.
    base_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

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
    def is_empty(self) -> bool:
        """No records: compaction can leave empty batches that keep producer state."""
        return self.record_count == 0

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

    def records_as(
        self,
        record_type: type[RecordT],
        topic: str | None = None,
        partition: int | None = None,
        *,
        extra: tuple[object, ...] = (),
        max_decompressed_size: int = _compression.DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> list[RecordT]:
        """Decode every record (decompressing first if needed) into ``record_type``.

        ``record_type`` is ``tuple`` or a tuple subclass without instance storage whose
        layout starts as :class:`Record`'s: ``(offset, timestamp, key, value, headers,
        timestamp_type, topic, partition, leader_epoch, *extra)``; one call into the
        record kernel builds them all (the consumer passes its ``ConsumerRecord``, the
        share consumer its ``ShareConsumerRecord`` with the delivery count in
        ``extra``). ``leader_epoch`` is None when the batch has none.
        """
        count = self.record_count
        if count == 0:
            return []  # compaction can leave empty batches that keep producer state
        attributes = self.attributes
        try:
            data, start, end = self._records_section(max_decompressed_size)
            log_append_time = self.max_timestamp if attributes & TIMESTAMP_TYPE_FLAG else None
            epoch = self.partition_leader_epoch
            return decode_records(
                data,
                start,
                end,
                count,
                self.base_offset,
                self.base_timestamp,
                log_append_time,
                record_type,
                (CREATE_TIME if log_append_time is None else LOG_APPEND_TIME, topic, partition,
                 epoch if epoch >= 0 else None, *extra),
            )
        except CorruptRecordsError as exc:
            raise CorruptRecordsError(f"record batch at offset {self.base_offset}: {exc.message}") from None

    def records(
        self,
        topic: str | None = None,
        partition: int | None = None,
        *,
        max_decompressed_size: int = _compression.DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> list[Record]:
        """Decode every record as :class:`Record` (:class:`ControlRecord`, with
        ``control_type``, in control batches); ``topic``/``partition`` are stored in each."""
        record_type = ControlRecord if self.attributes & CONTROL_FLAG else Record
        return self.records_as(record_type, topic, partition, max_decompressed_size=max_decompressed_size)

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


class BatchFilter:
    """Which batches hold records to hand to the application, batch after batch.

    Control batches (transaction markers, KRaft records) and empty batches never do.
    With ``read_committed``, neither do the transactional batches of aborted
    transactions, found as Java's ``CompletedFetch`` finds them: the fetch response's
    aborted transactions ``(producer_id, first_offset)``, ordered by first offset, mark
    a producer as aborted once a batch reaches its first offset, until that producer's
    ABORT marker (the broker already stops read_committed fetches at the last stable
    offset). Call it on the batches in log order; it keeps that state.

    Example::

        keep = BatchFilter([(7, 0)], read_committed=True)
        [b.base_offset for b in iter_batches(data) if keep(b)]
    """

    __slots__ = ("_aborted", "_aborted_pids", "read_committed")

    def __init__(self, aborted_transactions: Iterable[tuple[int, int]] | None = None, *,
                 read_committed: bool = False) -> None:
        self.read_committed = read_committed
        self._aborted: list[tuple[int, int]] = []
        if read_committed and aborted_transactions:
            self._aborted = [(first, pid) for pid, first in aborted_transactions]
            heapq.heapify(self._aborted)
        self._aborted_pids: set[int] = set()

    def __call__(self, batch: Batch) -> bool:
        """Whether ``batch`` holds records for the application."""
        if self.read_committed:
            aborted = self._aborted
            while aborted and aborted[0][0] <= batch.last_offset:
                self._aborted_pids.add(heapq.heappop(aborted)[1])
            if batch.is_control:
                if batch.producer_id in self._aborted_pids and _is_abort_marker(batch):
                    self._aborted_pids.discard(batch.producer_id)
                return False
            if batch.is_transactional and batch.producer_id in self._aborted_pids:
                return False
        elif batch.is_control:
            return False
        return not batch.is_empty


def _is_abort_marker(batch: Batch) -> bool:
    try:
        records = batch.records()
    except (CorruptRecordsError, UnsupportedCodecError):
        return False
    return bool(records) and records[0].control_type == ControlRecordType.ABORT


def scan_end_offset(data: Buffer, fetch_offset: int) -> tuple[int, int, int]:
    """(next offset after the last whole batch, bytes of whole batches, its leader epoch).

    Reads batch headers only (no CRC, no records): a consumer learns where its next
    fetch starts (and, KIP-320, the epoch of the last record fetched, the next fetch's
    ``LastFetchedEpoch``) before the data is decoded. The epoch is -1 when unknown
    (legacy message sets, no whole batch). A length too short for any batch stops the
    scan (decoding reports it).
    """
    pos, end, next_offset, epoch = 0, len(data), fetch_offset, -1
    while end - pos >= LOG_OVERHEAD:
        base, length = _LENGTH.unpack_from(data, pos)
        # Shorter than the smallest legacy message cannot even hold its magic byte: a
        # corrupt length (found by tools/fuzz).
        if length < _LEGACY_MIN_SIZE or pos + LOG_OVERHEAD + length > end:
            break
        if data[pos + 16] == 2 and length >= _V2_MIN_LENGTH:
            last = base + _INT32.unpack_from(data, pos + 23)[0]  # lastOffsetDelta
            epoch = _INT32.unpack_from(data, pos + 12)[0]  # partitionLeaderEpoch
        else:
            # Legacy message sets: a compressed wrapper's offset is its last inner offset.
            last = base
            epoch = -1
        if last + 1 > next_offset:
            next_offset = last + 1
        pos += LOG_OVERHEAD + length
    return next_offset, pos, epoch


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
