"""Encoding magic v2 record batches: the producer's batch builder and control batches.

A :class:`RecordBatchBuilder` appends records into one ``bytearray`` (the 61-byte
header is reserved up front and written by :meth:`~RecordBatchBuilder.build`), so a
batch costs one buffer however many records it holds. Size accounting follows the
Java client's ``MemoryRecordsBuilder``: the first record is always accepted; later
ones only while ``estimated size + record size <= batch size``, where the estimate
scales the uncompressed records by the expected compression ratio times 1.05
(``COMPRESSION_RATE_ESTIMATION_FACTOR``).

:func:`rewrite_producer_state` changes producer id/epoch/base sequence/transactional
flag of a built batch and recomputes only its CRC, for the idempotent producer when
KIP-360 bumps the epoch and in-flight batches get new sequences.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from crc32c import crc32c

from kafkalite.errors import CorruptRecordsError, InvalidArgumentError
from kafkalite.protocol import compression as _compression
from kafkalite.protocol.record_types import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER,
    BATCH_OVERHEAD,
    CONTROL_FLAG,
    CRC_OFFSET,
    CREATE_TIME,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    PRODUCER_ID_OFFSET,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    ControlRecordType,
)

if TYPE_CHECKING:
    from kafkalite.protocol._record_codec_py import BuilderBase
else:  # C when built (kafkalite._speedups), else the pure-Python reference
    from kafkalite.protocol.record_codec import BuilderBase

__all__ = [
    "COMPRESSION_RATE_ESTIMATION_FACTOR",
    "RecordBatchBuilder",
    "build_control_batch",
    "build_end_txn_marker",
    "builder_class",
    "increment_sequence",
    "rewrite_producer_state",
]

Buffer = bytes | bytearray | memoryview
Headers = Sequence[tuple[str, Buffer | None]]

#: Java's MemoryRecordsBuilder inflates the estimated compressed size by this factor.
COMPRESSION_RATE_ESTIMATION_FACTOR: Final = 1.05
_UINT32: Final = struct.Struct(">I")
_PRODUCER: Final = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence
_INT16: Final = struct.Struct(">h")
_INT32_MAX: Final = 0x7FFFFFFF


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` wrapping past int32 max to 0, as Kafka's sequences do."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


class RecordBatchBuilder(BuilderBase):
    """Builds one magic v2 record batch.

    Args:
        compression: codec id (``compression.NONE`` … ``ZSTD``).
        compression_level: codec level (validated; None = Kafka's default).
        batch_size: the soft limit ``try_append`` keeps to (``batch.size``).
        timestamp_type: 0 create time (producers) or 1 log-append time, which needs
            ``log_append_time`` (what a broker would stamp; used by tests).
        producer_id, producer_epoch, base_sequence: idempotence fields (-1 = none).
        transactional: sets the transactional attribute bit.
        control: sets the control attribute bit (see :func:`build_control_batch`).
        partition_leader_epoch, base_offset: header fields; producers leave them
            -1 and 0 (the broker assigns offsets).
        compression_ratio_estimate: the expected compressed/uncompressed ratio for
            size accounting (Java keeps one per topic and codec, starting at 1.0).
    """

    # _buf, _count, _base_timestamp, _max_timestamp, _limit, _ratio and _room are BuilderBase's.
    __slots__ = (
        "_attributes",
        "_base_offset",
        "_base_sequence",
        "_codec",
        "_level",
        "_log_append_time",
        "_partition_leader_epoch",
        "_producer_epoch",
        "_producer_id",
        "_sealed_size",
        "compression_ratio",
    )

    def __init__(
        self,
        *,
        compression: int = _compression.NONE,
        compression_level: int | None = None,
        batch_size: int = 16384,
        timestamp_type: int = CREATE_TIME,
        log_append_time: int | None = None,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        control: bool = False,
        partition_leader_epoch: int = -1,
        base_offset: int = 0,
        compression_ratio_estimate: float = 1.0,
    ) -> None:
        _compression.codec_name(compression)
        self._level = _compression.validate_level(compression, compression_level)
        if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise InvalidArgumentError(f"timestamp_type must be 0 (create) or 1 (log append), got {timestamp_type}")
        if timestamp_type == LOG_APPEND_TIME and log_append_time is None:
            raise InvalidArgumentError("a log-append-time batch needs log_append_time")
        self._codec = compression
        self._attributes = (
            compression
            | (TIMESTAMP_TYPE_FLAG if timestamp_type == LOG_APPEND_TIME else 0)
            | (TRANSACTIONAL_FLAG if transactional else 0)
            | (CONTROL_FLAG if control else 0)
        )
        self._log_append_time = log_append_time
        self._limit = batch_size
        self._room = sys.maxsize  # unbounded unless the producer reserves room (see room)
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._partition_leader_epoch = partition_leader_epoch
        self._base_offset = base_offset
        # Scale applied to uncompressed record bytes when estimating the batch size.
        self._ratio = (
            compression_ratio_estimate * COMPRESSION_RATE_ESTIMATION_FACTOR if compression else 1.0
        )
        self._buf = bytearray(BATCH_OVERHEAD)
        self._count = 0
        self._base_timestamp = 0
        self._max_timestamp = -1
        #: compressed / uncompressed size of the records section, set by build().
        self.compression_ratio = 1.0
        self._sealed_size = -1

    # ------------------------------------------------------------------ appending
    #
    # try_append(timestamp_ms, key, value, headers=None) -> index or -1 (batch full),
    # append(...) -> index (no size limit), estimated_size_in_bytes() and is_full()
    # come from BuilderBase (C when available; the producer's C append path writes
    # into the same buffer).

    def has_room_for(self, record_size: int) -> bool:
        """Whether a record of ``record_size`` encoded bytes would be accepted now."""
        return self._count == 0 or (self.estimated_size_in_bytes() + record_size <= self._limit
                                    and len(self._buf) + record_size <= self._room)

    # The room: how many buffer bytes (header included, records uncompressed) the batch
    # may hold, beyond which try_append refuses a record as if the batch were full. The
    # producer sets it to what it reserved of buffer.memory and grows it on demand, so
    # that a batch costs the memory it holds rather than batch.size up front, and a
    # compressed batch's uncompressed records are counted (they can be many times
    # batch.size). Unbounded unless set.

    @property
    def room(self) -> int:
        return self._room

    @room.setter
    def room(self, size: int) -> None:
        self._room = size

    def room_short_by(self, record_size: int) -> int:
        """How many more bytes of room a record of ``record_size`` encoded bytes needs, when
        room is what keeps it out; 0 when it fits or the batch is full (``batch.size``)."""
        if self._count == 0 or self.estimated_size_in_bytes() + record_size > self._limit:
            return 0
        return max(0, len(self._buf) + record_size - self._room)

    # ------------------------------------------------------------------ state

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def uncompressed_size_in_bytes(self) -> int:
        """Header plus uncompressed records so far (after :meth:`seal`: at sealing)."""
        if self._sealed_size >= 0:
            return self._sealed_size
        return len(self._buf)

    @property
    def base_timestamp(self) -> int:
        return self._base_timestamp

    @property
    def max_timestamp(self) -> int:
        return self._max_timestamp

    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, transactional: bool
    ) -> None:
        """Set idempotence/transaction fields before :meth:`build` (Java's ``setProducerState``)."""
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._attributes = (self._attributes & ~TRANSACTIONAL_FLAG) | (
            TRANSACTIONAL_FLAG if transactional else 0
        )

    # ------------------------------------------------------------------ building

    def build(self) -> bytes:
        """Return the finished batch bytes (``b""`` if no record was appended).

        Compresses the records section when a codec is set. The builder stays usable:
        appending more and building again gives a larger batch.
        """
        count = self._count
        if count == 0:
            return b""
        buf = self._buf
        max_ts = self._max_timestamp if self._log_append_time is None else self._log_append_time
        if self._codec == _compression.NONE:
            BATCH_HEADER.pack_into(
                buf, 0, self._base_offset, len(buf) - LOG_OVERHEAD, self._partition_leader_epoch, 2, 0,
                self._attributes, count - 1, self._base_timestamp, max_ts, self._producer_id,
                self._producer_epoch, self._base_sequence, count,
            )  # fmt: skip
            _UINT32.pack_into(buf, CRC_OFFSET, crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]))
            self.compression_ratio = 1.0
            return bytes(buf)
        body = _compression.compress(self._codec, memoryview(buf)[BATCH_OVERHEAD:], self._level)
        self.compression_ratio = len(body) / max(1, len(buf) - BATCH_OVERHEAD)
        header = bytearray(BATCH_OVERHEAD)
        BATCH_HEADER.pack_into(
            header, 0, self._base_offset, BATCH_OVERHEAD + len(body) - LOG_OVERHEAD,
            self._partition_leader_epoch, 2, 0, self._attributes, count - 1, self._base_timestamp,
            max_ts, self._producer_id, self._producer_epoch, self._base_sequence, count,
        )  # fmt: skip
        crc = crc32c(body, crc32c(memoryview(header)[ATTRIBUTES_OFFSET:]))
        _UINT32.pack_into(header, CRC_OFFSET, crc)
        return bytes(header) + body


    def seal(self) -> bytes:
        """Build the batch one last time and let go of the record buffer.

        The producer seals a batch when it first sends it: from then on it keeps only
        the returned bytes (a retry rewrites their header), so a batch in flight holds
        one copy of its records instead of two and ``buffer.memory`` bounds what is
        resident. Appending or building afterwards raises (the buffer is gone).
        """
        data = self.build()
        self.discard_records()
        return data

    def discard_records(self) -> None:
        """Let go of the record buffer (record count and sizes stay readable); appending
        or building afterwards raises. For a batch settled without being sent."""
        if self._sealed_size < 0:
            self._sealed_size = len(self._buf)
            del self._buf


_BUILDER_CLASSES: dict[type, type[RecordBatchBuilder]] = {}


def builder_class(base: type) -> type[RecordBatchBuilder]:
    """:class:`RecordBatchBuilder` on another ``BuilderBase`` (``record_codec.python_impl``'s
    or ``c_impl``'s), so tests can build the same batches with both kernels."""
    if base is BuilderBase:
        return RecordBatchBuilder
    cls = _BUILDER_CLASSES.get(base)
    if cls is None:
        names = {"__dict__", "__weakref__", *RecordBatchBuilder.__slots__}
        ns = {k: v for k, v in RecordBatchBuilder.__dict__.items() if k not in names}
        cls = _BUILDER_CLASSES[base] = type("RecordBatchBuilder", (base,), ns)
    return cls


# ------------------------------------------------------------------ rewriting


def rewrite_producer_state(
    batch: Buffer,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool | None = None,
) -> bytes:
    """Return ``batch`` with new producer id/epoch/base sequence (and optionally the
    transactional flag), recomputing only the CRC; records are not re-encoded.

    ``batch`` must be exactly one v2 batch (as :meth:`RecordBatchBuilder.build`
    returns). Raises :class:`CorruptRecordsError` otherwise.
    """
    buf = bytearray(batch)
    if len(buf) < BATCH_OVERHEAD or buf[16] != 2:
        raise CorruptRecordsError("rewrite_producer_state needs one magic v2 record batch")
    if int.from_bytes(buf[8:12], "big", signed=True) + LOG_OVERHEAD != len(buf):
        raise CorruptRecordsError("rewrite_producer_state: batch length does not match the buffer")
    _PRODUCER.pack_into(buf, PRODUCER_ID_OFFSET, producer_id, producer_epoch, base_sequence)
    if transactional is not None:
        attrs = _INT16.unpack_from(buf, ATTRIBUTES_OFFSET)[0]
        attrs = (attrs & ~TRANSACTIONAL_FLAG) | (TRANSACTIONAL_FLAG if transactional else 0)
        _INT16.pack_into(buf, ATTRIBUTES_OFFSET, attrs)
    _UINT32.pack_into(buf, CRC_OFFSET, crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]))
    return bytes(buf)


# ------------------------------------------------------------------ control batches


def build_control_batch(
    control_type: int,
    value: bytes | None,
    *,
    timestamp_ms: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
    transactional: bool = True,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A control batch holding one control record: key = int16 version 0 + int16 type."""
    builder = RecordBatchBuilder(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=transactional,
        control=True,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
    )
    builder.append(timestamp_ms, struct.pack(">hh", 0, control_type), value)
    return builder.build()


def build_end_txn_marker(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    timestamp_ms: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A COMMIT or ABORT transaction marker batch, as a transaction coordinator writes it.

    The value is Kafka's ``EndTransactionMarker`` v0: int16 version 0 + int32
    coordinator epoch.
    """
    return build_control_batch(
        ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
        struct.pack(">hi", 0, coordinator_epoch),
        timestamp_ms=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
    )


