"""Wire primitives shared by the generated message code.

Kafka's protocol is big-endian fixed-width integers plus, in "flexible" versions
(KIP-482), unsigned varints for lengths ("compact" strings, bytes and arrays, stored as
length + 1 so that 0 means null) and a trailing section of tagged fields.

Decoders take a ``memoryview`` (or bytes) and a position and return ``(value, new_pos)``;
they never trust a length: every length is checked against the bytes that remain, so a
malformed frame raises :class:`~kafkalite.errors.ProtocolError` instead of allocating or
reading past the end. Encoders append to a ``bytearray``.

The generated modules in ``protocol/messages`` inline the fixed-width cases with
precompiled ``struct.Struct`` objects; the helpers here cover the variable-length ones.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kafkalite.errors import ProtocolError, ProtocolLimitError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)

_STRUCT_CACHE: dict[str, struct.Struct] = {}


def fixed(fmt: str) -> struct.Struct:
    """A cached ``struct.Struct`` for a run of fixed-width fields (used by generated code)."""
    s = _STRUCT_CACHE.get(fmt)
    if s is None:
        s = _STRUCT_CACHE[fmt] = struct.Struct(fmt)
    return s


class Truncated(ProtocolError):
    """The buffer ended in the middle of a field."""


def truncated(what: str, pos: int, need: int, have: int) -> Truncated:
    return Truncated(f"truncated {what} at byte {pos}: needs {need} bytes, {have} remain")


# ---------------------------------------------------------------- varints


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """Read an unsigned LEB128 varint (at most 5 bytes for the 32-bit values Kafka uses)."""
    try:
        b = buf[pos]
    except IndexError:
        raise truncated("varint", pos, 1, 0) from None
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    start = pos
    pos += 1
    while True:
        try:
            b = buf[pos]
        except IndexError:
            raise truncated("varint", start, pos - start + 1, pos - start) from None
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtocolError(f"varint at byte {start} is longer than 10 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` (>= 0) as an unsigned varint."""
    if value < 0x80:
        out.append(value)
        return
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf: Any, pos: int) -> tuple[int, int]:
    """Read a zig-zag encoded signed varint."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    """Append a signed value as a zig-zag varint (64-bit range)."""
    write_uvarint(out, (value << 1) ^ (value >> 63))


# ---------------------------------------------------------------- strings and bytes


def _take(buf: Any, pos: int, length: int, what: str) -> int:
    end = pos + length
    if end > len(buf):
        raise truncated(what, pos, length, len(buf) - pos)
    return end


def read_string(buf: Any, pos: int) -> tuple[str, int]:
    (n,) = INT16.unpack_from(buf, pos) if pos + 2 <= len(buf) else _short(buf, pos, 2, "string length")
    pos += 2
    if n < 0:
        raise ProtocolError(f"null string at byte {pos - 2} where a value is required")
    end = _take(buf, pos, n, "string")
    return _utf8(buf, pos, end), end


def read_nullable_string(buf: Any, pos: int) -> tuple[str | None, int]:
    (n,) = INT16.unpack_from(buf, pos) if pos + 2 <= len(buf) else _short(buf, pos, 2, "string length")
    pos += 2
    if n < 0:
        return None, pos
    end = _take(buf, pos, n, "string")
    return _utf8(buf, pos, end), end


def read_compact_string(buf: Any, pos: int) -> tuple[str, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise ProtocolError(f"null compact string at byte {pos - 1} where a value is required")
    end = _take(buf, pos, n - 1, "compact string")
    return _utf8(buf, pos, end), end


def read_compact_nullable_string(buf: Any, pos: int) -> tuple[str | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1, "compact string")
    return _utf8(buf, pos, end), end


def _utf8(buf: Any, start: int, end: int) -> str:
    try:
        return str(buf[start:end], "utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"invalid UTF-8 in string at byte {start}: {exc.reason}") from None


def read_bytes(buf: Any, pos: int) -> tuple[bytes, int]:
    value, pos = read_nullable_bytes(buf, pos)
    if value is None:
        raise ProtocolError(f"null bytes at byte {pos - 4} where a value is required")
    return value, pos


def read_nullable_bytes(buf: Any, pos: int) -> tuple[bytes | None, int]:
    (n,) = INT32.unpack_from(buf, pos) if pos + 4 <= len(buf) else _short(buf, pos, 4, "bytes length")
    pos += 4
    if n < 0:
        return None, pos
    end = _take(buf, pos, n, "bytes")
    return bytes(buf[pos:end]), end


def read_compact_bytes(buf: Any, pos: int) -> tuple[bytes, int]:
    value, pos = read_compact_nullable_bytes(buf, pos)
    if value is None:
        raise ProtocolError(f"null compact bytes at byte {pos - 1} where a value is required")
    return value, pos


def read_compact_nullable_bytes(buf: Any, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1, "compact bytes")
    return bytes(buf[pos:end]), end


def read_records(buf: Any, pos: int) -> tuple[Any, int]:
    """Record data (nullable, int32 length): a zero-copy slice of the input buffer."""
    (n,) = INT32.unpack_from(buf, pos) if pos + 4 <= len(buf) else _short(buf, pos, 4, "records length")
    pos += 4
    if n < 0:
        return None, pos
    end = _take(buf, pos, n, "records")
    return buf[pos:end], end


def read_compact_records(buf: Any, pos: int) -> tuple[Any, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1, "records")
    return buf[pos:end], end


# Topic ids repeat in every Produce/Fetch response: building a uuid.UUID (a Python
# __init__ with checks) each time showed up in profiles, so decoded ids are shared.
_UUIDS: dict[bytes, uuid.UUID] = {}
_UUIDS_MAX = 4096


def read_uuid(buf: Any, pos: int) -> tuple[uuid.UUID, int]:
    end = _take(buf, pos, 16, "uuid")
    raw = bytes(buf[pos:end])
    value = _UUIDS.get(raw)
    if value is None:
        if len(_UUIDS) >= _UUIDS_MAX:
            _UUIDS.clear()
        value = _UUIDS[raw] = uuid.UUID(bytes=raw)
    return value, end


#: The most items an array may claim, and the most tagged fields a section may: what
#: Kafka 4.4's generated readers accept (more is refused before anything is allocated).
MAX_ARRAY_ITEMS = 1_000_000
MAX_TAGGED_FIELDS = 10_000


def _too_many_items(n: int, start: int) -> ProtocolLimitError:
    return ProtocolLimitError(f"array at byte {start} claims {n} items, more than the "
                              f"{MAX_ARRAY_ITEMS:,} Kafka allows (4.4+ brokers refuse it too)")


def read_tagged_count(buf: Any, pos: int) -> tuple[int, int]:
    """The number of tagged fields of a section, refused past :data:`MAX_TAGGED_FIELDS`."""
    start = pos
    count, pos = read_uvarint(buf, pos)
    if count > MAX_TAGGED_FIELDS:
        raise ProtocolLimitError(f"tagged-field section at byte {start} claims {count} fields, more than the "
                                 f"{MAX_TAGGED_FIELDS:,} Kafka allows (4.4+ brokers refuse it too)")
    return count, pos


def _short(buf: Any, pos: int, need: int, what: str) -> Any:
    raise truncated(what, pos, need, max(0, len(buf) - pos))


def unpack_array(code: str, n: int, buf: Any, pos: int) -> list[Any]:
    """``n`` big-endian values of struct ``code`` (an array of a fixed-width type).

    The format goes through :func:`struct.unpack_from`, whose cache of compiled formats
    is bounded; :func:`fixed` caches forever, which for a format per distinct ``n`` was
    a slow leak (found by tools/fuzz).
    """
    return list(struct.unpack_from(f">{n}{code}", buf, pos))


_FEW_FORMATS = {code: [struct.Struct(f">{n}{code}") for n in range(9)] for code in "bhHiIqd?"}


def read_fixed_array(buf: Any, pos: int, code: str, size: int, compact: bool) -> tuple[list[Any] | None, int]:
    """An array of a fixed-width type (struct ``code``, ``size`` bytes each) with its
    length (compact: uvarint n+1; else int32), in one call: None for a null array.

    The generated decoders' one reader for such arrays (replica lists, partition
    indexes, offsets): a Metadata answer has three per partition, and reading the
    length and the items in two calls each, with a format string made per call, cost
    about half of decoding one (10,000 partitions, issue 15). Up to 8 items use
    formats made once; longer arrays go through :func:`unpack_array`.
    """
    start = pos
    if compact:
        try:
            b = buf[pos]
        except IndexError:
            raise truncated("array length", pos, 1, 0) from None
        if b < 0x80:
            n = b - 1
            pos += 1
        else:
            n, pos = read_uvarint(buf, pos)
            n -= 1
    else:
        (n,) = INT32.unpack_from(buf, pos) if pos + 4 <= len(buf) else _short(buf, pos, 4, "array length")
        pos += 4
    if n < 0:
        return None, pos
    if n > MAX_ARRAY_ITEMS:
        raise _too_many_items(n, start)
    end = pos + n * size
    if end > len(buf):
        raise ProtocolError(f"array at byte {start} claims {n} items but only {len(buf) - pos} bytes remain")
    if n <= 8:
        return list(_FEW_FORMATS[code][n].unpack_from(buf, pos)), end
    return unpack_array(code, n, buf, pos), end


def read_array_length(buf: Any, pos: int, min_item_size: int = 1) -> tuple[int, int]:
    """Read an int32 array length (-1 = null); reject counts the remaining bytes can't hold."""
    (n,) = INT32.unpack_from(buf, pos) if pos + 4 <= len(buf) else _short(buf, pos, 4, "array length")
    pos += 4
    if n > MAX_ARRAY_ITEMS:
        raise _too_many_items(n, pos - 4)
    if n > (len(buf) - pos) // max(min_item_size, 1):
        raise ProtocolError(f"array at byte {pos - 4} claims {n} items but only {len(buf) - pos} bytes remain")
    return n, pos


def read_compact_array_length(buf: Any, pos: int, min_item_size: int = 1) -> tuple[int, int]:
    """Read a compact array length (uvarint n+1, 0 = null) returning n (-1 for null)."""
    start = pos
    n, pos = read_uvarint(buf, pos)
    n -= 1
    if n > MAX_ARRAY_ITEMS:
        raise _too_many_items(n, start)
    if n > (len(buf) - pos) // max(min_item_size, 1):
        raise ProtocolError(f"array at byte {start} claims {n} items but only {len(buf) - pos} bytes remain")
    return n, pos


def write_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    data = value.encode()
    out += INT16.pack(len(data))
    out += data


def write_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    data = value.encode()
    write_uvarint(out, len(data) + 1)
    out += data


def write_bytes(out: bytearray, value: Any) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def write_compact_bytes(out: bytearray, value: Any) -> None:
    if value is None:
        out.append(0)
        return
    write_uvarint(out, len(value) + 1)
    out += value


def skip_tagged_fields(buf: Any, pos: int) -> tuple[dict[int, bytes] | None, int]:
    """Read a tagged-field section we have no fields for; returns the raw values (or None)."""
    count, pos = read_tagged_count(buf, pos)
    if count == 0:
        return None, pos
    unknown: dict[int, bytes] = {}
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = _take(buf, pos, size, "tagged field")
        unknown[tag] = bytes(buf[pos:end])
        pos = end
    return unknown, pos


class Struct:
    """Base of every generated message and struct: equality and repr over ``__slots__``."""

    __slots__ = ()

    def _fields(self) -> tuple[str, ...]:
        return type(self).__slots__

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(
            _norm(getattr(self, f)) == _norm(getattr(other, f))
            for f in self._fields()
            if f != "unknown_tagged_fields"
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value: unhashable (typeshed types __hash__ as a method)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields() if f != "unknown_tagged_fields")
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """A plain-dict view (nested structs and lists converted), for logging and tests."""
        return {f: _to_plain(getattr(self, f)) for f in self._fields() if f != "unknown_tagged_fields"}


def _norm(value: Any) -> Any:
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value


def _to_plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list):
        return [_to_plain(v) for v in value]
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value
