"""The Confluent wire format: what precedes a schema-encoded key or value.

::

    byte 0      magic byte, always 0
    bytes 1-4   schema id, a big-endian signed 32-bit integer (the registry's id)
    [Protobuf]  message indexes: the path of the message type inside its .proto file,
                as a count followed by the indexes, each a zig-zag varint; the common
                case [0] (the file's first message) is written as the single byte 0
    ...         the payload (Avro binary, Protobuf bytes, UTF-8 JSON)

Every decoding error is a :class:`~kafkalite.serialization.errors.WireFormatError`
naming what was wrong, never an ``IndexError``; index lists are bounded so a
corrupt count cannot make us allocate much.

>>> frame(7, b"payload")
b'\\x00\\x00\\x00\\x00\\x07payload'
>>> parse_header(b"\\x00\\x00\\x00\\x00\\x07payload")
(7, 5)
>>> encode_message_indexes([0]), encode_message_indexes([1, 0])
(b'\\x00', b'\\x04\\x02\\x00')
>>> decode_message_indexes(b"\\x04\\x02\\x00", 0)
([1, 0], 3)
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from kafkalite.serialization.errors import WireFormatError

MAGIC_BYTE = 0
HEADER_SIZE = 5
MAX_MESSAGE_INDEXES = 1024  # nesting depth of a message type: far beyond any real .proto

_HEADER = struct.Struct(">bi")


def frame(schema_id: int, payload: bytes, message_indexes: bytes = b"") -> bytes:
    """Magic byte + schema id (+ encoded Protobuf message indexes) + payload."""
    return _HEADER.pack(MAGIC_BYTE, schema_id) + message_indexes + payload


def parse_header(data: bytes | bytearray | memoryview | None, *, topic: str | None = None) -> tuple[int, int]:
    """Return ``(schema_id, payload_offset)``; raise WireFormatError on bad bytes."""
    if data is None:
        raise WireFormatError("expected Confluent-framed bytes, got None", topic=topic)
    if len(data) < HEADER_SIZE:
        raise WireFormatError(
            f"{len(data)} bytes are too short for the Confluent wire format (magic byte and "
            "4-byte schema id, at least 5 bytes)", topic=topic)
    magic, schema_id = _HEADER.unpack_from(data, 0)
    if magic != MAGIC_BYTE:
        raise WireFormatError(
            f"unknown magic byte {magic & 0xFF} (expected 0): not written by a Schema Registry "
            "serializer", topic=topic)
    return schema_id, HEADER_SIZE


def zigzag_varint(value: int) -> bytes:
    """A signed 32-bit value as a zig-zag varint (Java's ``ByteUtils.writeVarint``)."""
    n = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_zigzag_varint(data: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varint at ``pos``; return ``(value, next_pos)``."""
    result = 0
    shift = 0
    end = len(data)
    while True:
        if pos >= end:
            raise WireFormatError("truncated varint in the Protobuf message indexes")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 28:
            raise WireFormatError("varint longer than 5 bytes in the Protobuf message indexes")
    result &= 0xFFFFFFFF
    return (result >> 1) ^ -(result & 1), pos


def encode_message_indexes(indexes: Sequence[int]) -> bytes:
    """The Protobuf message-index list; ``[0]`` is the single byte 0."""
    if list(indexes) == [0]:
        return b"\x00"
    return zigzag_varint(len(indexes)) + b"".join(zigzag_varint(i) for i in indexes)


def decode_message_indexes(data: bytes | bytearray | memoryview, pos: int) -> tuple[list[int], int]:
    """Read a message-index list at ``pos``; return ``(indexes, next_pos)``."""
    count, pos = read_zigzag_varint(data, pos)
    if count == 0:
        return [0], pos
    if count < 0 or count > MAX_MESSAGE_INDEXES:
        raise WireFormatError(f"invalid Protobuf message-index count {count}")
    indexes = []
    for _ in range(count):
        index, pos = read_zigzag_varint(data, pos)
        if index < 0:
            raise WireFormatError(f"negative Protobuf message index {index}")
        indexes.append(index)
    return indexes, pos
