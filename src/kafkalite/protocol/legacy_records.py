"""Reading legacy message sets (magic v0 and v1), into the same Record shape as v2.

Old brokers, and old log segments that were never rewritten, hold messages in the
pre-0.11 format. Each log entry is::

    offset: int64, message_size: int32,
    crc: uint32 (CRC-32 over magic..end), magic: int8, attributes: int8,
    [timestamp: int64, v1 only], key: int32 length + bytes (-1 = null),
    value: int32 length + bytes (-1 = null)

Attribute bits 0-2 are the codec; bit 3 (v1) the timestamp type. A compressed
message is a *wrapper*: its value is a compressed message set of inner messages. In
v1 the inner offsets are relative (0..n-1) and the wrapper's offset is that of the
last inner message; in v0 inner offsets are absolute. A v1 wrapper with log-append
time gives every inner message the wrapper's timestamp. v0 wrappers compressed with
lz4 carry the wrong frame header checksum of early clients, repaired on read.

This module only decodes: Kafka 4.x brokers no longer accept these formats from
producers.
"""

from __future__ import annotations

import struct
import zlib
from array import array
from collections.abc import Iterator
from typing import Final

from kafkalite.errors import CorruptRecordsError, UnsupportedCodecError
from kafkalite.protocol import compression as _compression
from kafkalite.protocol.record_types import (
    CODEC_MASK,
    CREATE_TIME,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_TIMESTAMP_TYPE,
    TIMESTAMP_TYPE_FLAG,
    Record,
    RecordColumns,
    RecordT,
)

__all__ = ["LegacyRecordBatch", "decode_message_set"]

Buffer = bytes | bytearray | memoryview
_ENTRY: Final = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")
_MIN_SIZE: Final = {0: 14, 1: 22}  # crc+magic+attrs(+timestamp)+key len+value len
#: One message: offset, timestamp, key, value.
_Entry = tuple[int, int, bytes | None, bytes | None]


class _Message:
    """One parsed legacy message (shallow; the value may be a compressed message set)."""

    __slots__ = ("attributes", "crc", "crc_ok", "key", "magic", "offset", "size", "timestamp", "value")

    def __init__(self, buf: Buffer, pos: int, end: int) -> None:
        if end - pos < LOG_OVERHEAD + 2:
            raise CorruptRecordsError(f"legacy message at byte {pos} is truncated")
        self.offset, self.size, self.crc, self.magic, self.attributes = _ENTRY.unpack_from(buf, pos)
        if self.magic not in (0, 1):
            raise CorruptRecordsError(f"legacy message at offset {self.offset} has magic {self.magic}")
        msg_end = pos + LOG_OVERHEAD + self.size
        if self.size < _MIN_SIZE[self.magic] or msg_end > end:
            raise CorruptRecordsError(
                f"legacy message at offset {self.offset} has invalid size {self.size}"
            )
        p = pos + 18
        if self.magic == 1:
            self.timestamp: int = _INT64.unpack_from(buf, p)[0]
            p += 8
        else:
            self.timestamp = -1
        self.key, p = _read_bytes(buf, p, msg_end, self.offset, "key")
        self.value, p = _read_bytes(buf, p, msg_end, self.offset, "value")
        if p != msg_end:
            raise CorruptRecordsError(
                f"legacy message at offset {self.offset} has {msg_end - p} bytes after its value"
            )
        self.crc_ok = zlib.crc32(memoryview(buf)[pos + 16 : msg_end]) == self.crc


def _read_bytes(buf: Buffer, p: int, end: int, offset: int, what: str) -> tuple[bytes | None, int]:
    if end - p < 4:
        raise CorruptRecordsError(f"legacy message at offset {offset}: {what} length is truncated")
    n = _INT32.unpack_from(buf, p)[0]
    p += 4
    if n < 0:
        return None, p
    if n > end - p:
        raise CorruptRecordsError(f"legacy message at offset {offset}: {what} of {n} bytes overruns the message")
    return bytes(buf[p : p + n]), p + n


class LegacyRecordBatch:
    """One legacy log entry (a plain message, or a compressed wrapper) viewed as a batch.

    Exposes the same attributes and methods as
    :class:`~kafkalite.protocol.records.RecordBatch` (``records_as``, ``records``,
    ``columns``, ``ensure_valid`` ...); producer fields are -1 and transactional/control
    are False (v0/v1 have neither). A wrapper's inner messages are decompressed once,
    when first needed.
    """

    __slots__ = ("_inner", "_msg", "size_in_bytes")

    partition_leader_epoch = -1
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    last_sequence = -1
    is_transactional = False
    is_control = False
    #: A log entry always holds a message: a plain one, or a wrapper of inner messages.
    is_empty = False
    delete_horizon_ms = None

    def __init__(self, buf: Buffer, pos: int = 0) -> None:
        self._msg = _Message(buf, pos, len(buf))
        self.size_in_bytes: int = LOG_OVERHEAD + self._msg.size
        self._inner: list[_Entry] | None = None

    @property
    def magic(self) -> int:
        return int(self._msg.magic)

    @property
    def crc(self) -> int:
        return int(self._msg.crc)

    @property
    def attributes(self) -> int:
        return int(self._msg.attributes)

    @property
    def compression(self) -> int:
        return int(self._msg.attributes & CODEC_MASK)

    @property
    def timestamp_type(self) -> int:
        if self._msg.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self._msg.attributes & TIMESTAMP_TYPE_FLAG else CREATE_TIME

    @property
    def base_timestamp(self) -> int:
        return int(self._msg.timestamp)

    @property
    def max_timestamp(self) -> int:
        return int(self._msg.timestamp)

    @property
    def last_offset(self) -> int:
        # A wrapper carries the offset of its last inner message (v0 and v1).
        return int(self._msg.offset)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def base_offset(self) -> int:
        """The first record's offset; a wrapper that cannot be decoded gives its own
        offset (decoding it raises the error)."""
        if self.compression == 0:
            return int(self._msg.offset)
        try:
            inner = self._entries(_compression.DEFAULT_MAX_DECOMPRESSED_SIZE)
        except (CorruptRecordsError, UnsupportedCodecError):
            return int(self._msg.offset)
        return inner[0][0] if inner else int(self._msg.offset)

    @property
    def record_count(self) -> int:
        return 1 if self.compression == 0 else len(self._entries(_compression.DEFAULT_MAX_DECOMPRESSED_SIZE))

    def is_valid(self) -> bool:
        return bool(self._msg.crc_ok)

    def ensure_valid(self) -> None:
        if not self._msg.crc_ok:
            raise CorruptRecordsError(
                f"legacy message at offset {self._msg.offset} is corrupt: CRC-32 mismatch "
                f"(stored {self._msg.crc})"
            )

    def _entries(self, max_size: int) -> list[_Entry]:
        """(offset, timestamp, key, value) of every message (decompressed, cached)."""
        msg = self._msg
        if self.compression == 0:
            return [(msg.offset, msg.timestamp, msg.key, msg.value)]
        if max_size != _compression.DEFAULT_MAX_DECOMPRESSED_SIZE:
            return _decode_wrapper(msg, max_size)
        if self._inner is None:
            self._inner = _decode_wrapper(msg, max_size)
        return self._inner

    def records_as(
        self,
        record_type: type[RecordT],
        topic: str | None = None,
        partition: int | None = None,
        *,
        extra: tuple[object, ...] = (),
        max_decompressed_size: int = _compression.DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> list[RecordT]:
        """Every message as a ``record_type`` tuple laid out as :class:`Record` (no
        headers, no leader epoch) followed by ``extra``, like
        :meth:`RecordBatch.records_as`."""
        ts_type = self.timestamp_type
        new = tuple.__new__
        return [new(record_type, (offset, timestamp, key, value, [], ts_type, topic, partition, None, *extra))
                for offset, timestamp, key, value in self._entries(max_decompressed_size)]

    def records(
        self,
        topic: str | None = None,
        partition: int | None = None,
        *,
        max_decompressed_size: int = _compression.DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> list[Record]:
        return self.records_as(Record, topic, partition, max_decompressed_size=max_decompressed_size)

    def columns(
        self, *, max_decompressed_size: int = _compression.DEFAULT_MAX_DECOMPRESSED_SIZE
    ) -> RecordColumns:
        """The messages as parallel arrays, like :meth:`RecordBatch.columns`, built in
        Python (only old brokers send these): keys and values are copied into a buffer
        of their own, which the positions index; there are no headers."""
        entries = self._entries(max_decompressed_size)
        buf = bytearray()
        offsets, timestamps = array("q"), array("q")
        key_starts, key_lengths, value_starts, value_lengths = array("i"), array("i"), array("i"), array("i")
        for offset, timestamp, key, value in entries:
            offsets.append(offset)
            timestamps.append(timestamp)
            for data, starts, lengths in ((key, key_starts, key_lengths), (value, value_starts, value_lengths)):
                starts.append(len(buf))
                if data is None:
                    lengths.append(-1)
                else:
                    lengths.append(len(data))
                    buf += data
        no_headers = array("i", bytes(4 * (len(entries) + 1)))  # every record: an empty range
        return RecordColumns(bytes(buf), offsets, timestamps, key_starts, key_lengths, value_starts,
                             value_lengths, no_headers, array("i"), array("i"), array("i"), array("i"),
                             self.timestamp_type)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def __repr__(self) -> str:
        return (
            f"LegacyRecordBatch(magic={self.magic}, offset={self.last_offset}, codec={self.compression}, "
            f"size={self.size_in_bytes})"
        )


def _decode_wrapper(msg: _Message, max_size: int) -> list[_Entry]:
    codec = msg.attributes & CODEC_MASK
    if codec == _compression.ZSTD or codec > _compression.ZSTD:
        # zstd needs magic v2 (KIP-110); ids above 4 are unknown.
        raise UnsupportedCodecError(
            f"legacy message at offset {msg.offset} uses compression codec id {codec}, "
            f"not valid for magic v{msg.magic}"
        )
    if msg.value is None:
        raise CorruptRecordsError(f"compressed legacy message at offset {msg.offset} has a null value")
    data = _compression.decompress(
        codec, msg.value, max_size=max_size, legacy_lz4_checksum=msg.magic == 0
    )
    inner = decode_message_set(data, expect_magic=msg.magic)
    if not inner:
        return []
    if msg.magic == 0:
        return [(m.offset, m.timestamp, m.key, m.value) for m in inner]
    # v1: inner offsets are relative; the wrapper holds the absolute offset of the last.
    # A wrapper with log-append time gives every inner message its own timestamp.
    base = msg.offset - inner[-1].offset
    if base < 0 or inner[0].offset < 0:
        # Offsets are never negative; these would also leave int64 (found by tools/fuzz).
        raise CorruptRecordsError(
            f"compressed legacy message at offset {msg.offset} has inner relative offsets "
            f"{inner[0].offset}..{inner[-1].offset} that do not fit it"
        )
    log_append = msg.attributes & TIMESTAMP_TYPE_FLAG
    return [(base + m.offset, msg.timestamp if log_append else m.timestamp, m.key, m.value) for m in inner]


def decode_message_set(data: Buffer, expect_magic: int) -> list[_Message]:
    """Parse the inner messages of a decompressed wrapper (all must be whole and valid)."""
    out: list[_Message] = []
    pos = 0
    end = len(data)
    while pos < end:
        m = _Message(data, pos, end)
        if m.magic != expect_magic:
            raise CorruptRecordsError(
                f"inner message at offset {m.offset} has magic {m.magic} inside a magic {expect_magic} wrapper"
            )
        if m.attributes & CODEC_MASK:
            raise CorruptRecordsError(f"inner message at offset {m.offset} is compressed again (nested)")
        if not m.crc_ok:
            raise CorruptRecordsError(f"inner message at offset {m.offset} is corrupt: CRC-32 mismatch")
        out.append(m)
        pos += LOG_OVERHEAD + m.size
    return out
