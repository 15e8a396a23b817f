"""Pure-Python per-record kernels (the reference implementation).

Import these through :mod:`kafkalite.protocol.record_codec`, which picks the C
implementation (:mod:`kafkalite._speedups`) when it is available. Both implementations
must give identical results for every input, including malformed input (they raise
:class:`~kafkalite.errors.CorruptRecordsError` in the same cases); the test suite
checks this with property tests.

Record layout (magic v2, Kafka's ``DefaultRecord``)::

    length: varint             (bytes after this field)
    attributes: int8           (unused, written as 0)
    timestampDelta: varlong
    offsetDelta: varint
    keyLength: varint, key     (-1 = null)
    valueLength: varint, value (-1 = null)
    headersCount: varint
      headerKeyLength: varint, headerKey (UTF-8)
      headerValueLength: varint, headerValue (-1 = null)

Varints are zigzag encoded (protobuf style). Decoding follows Java's ``ByteUtils``:
a varint may take at most 5 bytes (varlong 10) and the bits that overflow 32 (64)
are dropped, as Java does. Key/value lengths below -1 read as null, as Java's
``Utils.readBytes`` does.

Speed notes (this is the hot path): small varints come from precomputed tables,
globals are bound as default arguments (local lookups), a record of less than 512 bytes
of key and value is written with one ``bytes.join`` and two ``bytearray +=`` (larger
ones piece by piece, not copied twice), and records are read inline with bytes
indexing and slicing only (one- and two-byte varints by table, no call per field).
What is left of the cost per record in pure Python is mostly the interpreter's and the
allocator's: the record tuple, its headers list and its value bytes, and the cyclic
GC, which tracks the first two (the C kernels untrack them).
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from typing import Any

from kafkalite.errors import CorruptRecordsError, InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "BuilderBase",
    "decode_records",
    "decode_records_columnar",
    "decode_varint",
    "decode_varlong",
    "encode_record_into",
    "encode_varint",
    "encode_varlong",
    "murmur2",
    "record_size",
]

Buffer = bytes | bytearray | memoryview
Headers = Sequence[tuple[str, Buffer | None]]

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_TABLE = 1 << 13  # varints precomputed for 0 <= n < 8192 (covers most lengths/deltas)


def _uvarint(u: int) -> bytes:
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


# _POS[n] is the zigzag varint of n >= 0 (i.e. the unsigned varint of 2n).
_POS: tuple[bytes, ...] = tuple(_uvarint(n << 1) for n in range(_TABLE))
# _ZZ[u] is the zigzag decoding of u < 2**14: one- and two-byte varints (whose 7-bit
# groups the decoder reassembles) decode by lookup.
_ZZ: tuple[int, ...] = tuple((u >> 1) ^ -(u & 1) for u in range(1 << 14))
# _ZZ2[b | c << 8] is the zigzag decoding of the two-byte varint b, c (b >= 0x80 > c):
# the decoder's second byte costs one lookup instead of a mask, a shift and an or.
_ZZ2: tuple[int, ...] = tuple(_ZZ[(i & 0x7F) | (i >> 8 << 7)] if i & 0x80 else 0 for i in range(1 << 15))
_NULL = b"\x01"  # zigzag(-1)
_ZERO = b"\x00"


def encode_varint(value: int) -> bytes:
    """Zigzag varint of a signed 32-bit int (Kafka's ``ByteUtils.writeVarint``)."""
    if 0 <= value < _TABLE:
        return _POS[value]
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise InvalidArgumentError(f"varint out of int32 range: {value}")
    return _uvarint(((value << 1) ^ (value >> 31)) & _M32)


def encode_varlong(value: int) -> bytes:
    """Zigzag varint of a signed 64-bit int (``ByteUtils.writeVarlong``)."""
    if 0 <= value < _TABLE:
        return _POS[value]
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise InvalidArgumentError(f"varlong out of int64 range: {value}")
    return _uvarint(((value << 1) ^ (value >> 63)) & _M64)


def _corrupt(what: str) -> CorruptRecordsError:
    return CorruptRecordsError(f"malformed record: {what}")


def decode_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a zigzag varint (at most 5 bytes) at ``pos``; return ``(value, next_pos)``."""
    if pos < 0:
        raise _corrupt("negative position")
    u = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise _corrupt("varint runs past the end of the data")
        b = buf[pos]
        pos += 1
        if b < 0x80:
            u = (u | (b << shift)) & _M32
            return (u >> 1) ^ -(u & 1), pos
        u |= (b & 0x7F) << shift
        shift += 7
        if shift > 28:
            raise _corrupt("varint is longer than 5 bytes")


def decode_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a zigzag varlong (at most 10 bytes) at ``pos``; return ``(value, next_pos)``."""
    if pos < 0:
        raise _corrupt("negative position")
    u = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise _corrupt("varlong runs past the end of the data")
        b = buf[pos]
        pos += 1
        if b < 0x80:
            u = (u | (b << shift)) & _M64
            return (u >> 1) ^ -(u & 1), pos
        u |= (b & 0x7F) << shift
        shift += 7
        if shift > 63:
            raise _corrupt("varlong is longer than 10 bytes")


def _encode_headers(headers: Headers, pos_tbl: tuple[bytes, ...] = _POS) -> bytes:
    parts: list[Buffer] = [pos_tbl[len(headers)] if len(headers) < _TABLE else encode_varint(len(headers))]
    append = parts.append
    for hkey, hval in headers:
        # str keys are UTF-8 (Java's String); bytes-like keys are taken as they are.
        kb = hkey.encode("utf-8") if isinstance(hkey, str) else memoryview(hkey)
        n = len(kb)
        append(pos_tbl[n] if n < _TABLE else encode_varint(n))
        append(kb)
        if hval is None:
            append(_NULL)
        else:
            n = len(hval)
            append(pos_tbl[n] if n < _TABLE else encode_varint(n))
            append(hval)
    return b"".join(parts)


# Varints of offset deltas at or above _TABLE (batches of more than 8192 records, e.g.
# 100-byte records in a 1 MB batch), made once each; bounded (deltas are below a batch's
# record count, but the cache must not grow without limit on odd input).
_LARGE_DELTAS: dict[int, bytes] = {}
_LARGE_DELTAS_MAX = 1 << 16
# Records whose key and value take fewer bytes than this are joined into one piece and
# appended once (copying them twice costs less than three appends); larger ones are
# appended piece by piece.
_JOIN_BELOW = 512


def encode_record_into(
    buf: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: Buffer | None,
    value: Buffer | None,
    headers: Headers | None,
    _tbl: tuple[bytes, ...] = _POS,
    _n: int = _TABLE,
    _large: dict[int, bytes] = _LARGE_DELTAS,
) -> int:
    """Append one v2 record to ``buf``; return the number of bytes written.

    ``key``/``value`` may be ``None`` (null, distinct from ``b""``); ``headers`` is a
    sequence of ``(str key, bytes | None value)`` pairs (duplicates allowed) or None.
    """
    ts = _tbl[timestamp_delta] if 0 <= timestamp_delta < _n else encode_varlong(timestamp_delta)
    if 0 <= offset_delta < _n:
        od = _tbl[offset_delta]
    else:
        od = _large.get(offset_delta)  # type: ignore[assignment]
        if od is None:
            od = encode_varint(offset_delta)
            if offset_delta >= 0 and len(_large) < _LARGE_DELTAS_MAX:
                _large[offset_delta] = od
    if key is None:
        kh = _NULL
        kl = 0
        key = b""
    else:
        kl = len(key)
        kh = _tbl[kl] if kl < _n else encode_varint(kl)
    if value is None:
        vh = _NULL
        vl = 0
        value = b""
    else:
        vl = len(value)
        vh = _tbl[vl] if vl < _n else encode_varint(vl)
    hb = _encode_headers(headers) if headers else _ZERO
    old = len(buf)
    if kl + vl < _JOIN_BELOW:
        # The record after its length in one join (its size is the join's length):
        # a str key or value raises TypeError here, before anything is written.
        rec = b"".join((_ZERO, ts, od, kh, key, vh, value, hb))
        body = len(rec)
        lh = _tbl[body] if body < _n else encode_varint(body)
        if old + body + 5 >= buf.__alloc__():
            _grow(buf, old, body)
        buf += lh
        buf += rec
        return len(lh) + body
    body = 1 + len(ts) + len(od) + len(kh) + kl + len(vh) + vl + len(hb)
    lh = _tbl[body] if body < _n else encode_varint(body)
    if old + body + 5 >= buf.__alloc__():
        _grow(buf, old, body)
    try:
        buf += b"".join((lh, _ZERO, ts, od, kh))
        buf += key
        buf += vh
        buf += value
    except TypeError:
        del buf[old:]  # never leave half a record behind (e.g. a str key)
        raise
    buf += hb
    return len(lh) + body


def _grow(buf: bytearray, size: int, record: int) -> None:
    # CPython grows a bytearray by 1/8 per resize, so a batch appended record by record
    # would be copied ~8 times; grow by half instead (a later shrink to at least half
    # the allocation keeps the memory).
    buf += bytes((size + record) // 2 + record + 64)
    del buf[size:]


def _varint_size(value: int) -> int:
    u = ((value << 1) ^ (value >> 63)) & _M64
    size = 1
    while u >= 0x80:
        u >>= 7
        size += 1
    return size


def record_size(
    offset_delta: int,
    timestamp_delta: int,
    key: Buffer | None,
    value: Buffer | None,
    headers: Headers | None,
) -> int:
    """Bytes :func:`encode_record_into` would write for this record (Java's ``sizeInBytes``)."""
    body = 1 + _varint_size(timestamp_delta) + _varint_size(offset_delta)
    body += 1 if key is None else _varint_size(len(key)) + len(key)
    body += 1 if value is None else _varint_size(len(value)) + len(value)
    if headers:
        body += len(_encode_headers(headers))
    else:
        body += 1
    return _varint_size(body) + body


def _check_count(count: int, start: int, end: int) -> None:
    # Each record takes at least 7 bytes; refuse counts the data cannot hold before
    # allocating anything proportional to the count.
    if count < 0:
        raise CorruptRecordsError(f"invalid record count {count} in batch")
    if count * 7 > end - start:
        raise CorruptRecordsError(
            f"batch claims {count} records but its {end - start} bytes of records hold at most "
            f"{(end - start) // 7}"
        )


def _as_bytes(buf: Buffer, start: int, end: int) -> tuple[bytes, int, int]:
    if start < 0 or end > len(buf) or start > end:
        raise CorruptRecordsError(f"record range [{start}, {end}) is outside the {len(buf)}-byte buffer")
    if type(buf) is bytes and end == len(buf):
        return buf, start, end
    return bytes(buf[start:end]), 0, end - start


def decode_records(
    buf: Buffer,
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None = None,
    record_type: type[tuple[Any, ...]] = tuple,
    extra: tuple[Any, ...] = (),
) -> list[Any]:
    """Decode ``count`` records from ``buf[start:end]`` (a batch's records section).

    Returns a list of ``record_type`` tuples ``(offset, timestamp, key, value, headers,
    *extra)``: ``record_type`` is ``tuple`` or a tuple subclass such as a NamedTuple
    (with no instance dict), ``extra`` holds per-batch constants appended to each
    record. When ``log_append_time`` is not None every timestamp is that value (Kafka's
    LOG_APPEND_TIME batches). Raises :class:`CorruptRecordsError` if the bytes do not
    hold exactly ``count`` well-formed records.
    """
    if record_type is not tuple and not (isinstance(record_type, type) and issubclass(record_type, tuple)):
        raise InvalidArgumentTypeError("record_type must be tuple or a tuple subclass without __dict__")
    data, pos, end = _as_bytes(buf, start, end)
    _check_count(count, pos, end)
    zz = _ZZ  # zigzag decoding of one- and two-byte varints, by table
    zz2 = _ZZ2
    rv = decode_varint
    rvl = decode_varlong
    new = tuple.__new__
    lat = log_append_time
    # How each record tuple is made: 0 plain, 1 with four extra fields (the consumer's
    # ConsumerRecord: one tuple, then the instance), 2 any other extra (concatenated).
    shape = 0 if not extra and record_type is tuple else 1 if len(extra) == 4 else 2
    e0, e1, e2, e3 = extra if shape == 1 else (None, None, None, None)
    out: list[Any] = []
    append = out.append
    i = 0
    # Every varint below is read inline when it takes one or two bytes (lengths up to
    # 8191, deltas up to +-8191): a function call per field would triple the cost. The
    # second byte is read once (into c); a null key (0x01, the common case) is one test.
    try:
        for i in range(count):  # noqa: B007 (i names the record an IndexError stopped at)
            # record length
            b = data[pos]
            if b < 0x80:
                length = zz[b]
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                length = zz2[b | c << 8]
                pos += 2
            else:
                length, pos = rv(data, pos)
            # A length below 6 or past the batch is caught by the test of the fields'
            # end against rec_end below (or reading past the data): not tested here.
            rec_end = pos + length
            # the attributes byte (ignored), then the timestamp delta
            b = data[pos + 1]
            if b < 0x80:
                ts = base_timestamp + zz[b]
                pos += 2
            elif (c := data[pos + 2]) < 0x80:
                ts = base_timestamp + zz2[b | c << 8]
                pos += 3
            else:
                tsd, pos = rvl(data, pos + 1)
                ts = base_timestamp + tsd
            if lat is not None:
                ts = lat
            # offset delta
            b = data[pos]
            if b < 0x80:
                off = base_offset + zz[b]
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                off = base_offset + zz2[b | c << 8]
                pos += 2
            else:
                od, pos = rv(data, pos)
                off = base_offset + od
            # key
            b = data[pos]
            if b == 1:  # zigzag -1: null
                key = None
                pos += 1
            else:
                if b < 0x80:
                    n = zz[b]
                    pos += 1
                elif (c := data[pos + 1]) < 0x80:
                    n = zz2[b | c << 8]
                    pos += 2
                else:
                    n, pos = rv(data, pos)
                key = None if n < 0 else data[pos : (pos := pos + n)]
            # value
            b = data[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                n = zz2[b | c << 8]
                pos += 2
            else:
                n, pos = rv(data, pos)
            value = None if n < 0 else data[pos : (pos := pos + n)]  # the slice starts at the old pos
            # headers
            if data[pos] == 0:
                headers: list[tuple[str, bytes | None]] = []
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, rec_end)
            if pos != rec_end:
                raise _record_end_error(length, rec_end, pos, end)
            if shape == 1:
                append(new(record_type, (off, ts, key, value, headers, e0, e1, e2, e3)))
            elif shape == 0:
                append((off, ts, key, value, headers))
            else:
                # Concatenation builds the tuple at once; (..., *extra) goes through a list.
                append(new(record_type, (off, ts, key, value, headers) + extra))  # noqa: RUF005
    except IndexError:
        raise _corrupt(f"record {i} runs past the end of the batch") from None
    if pos != end:
        raise CorruptRecordsError(
            f"incorrect declared batch size: {end - pos} bytes remain after {count} records"
        )
    return out


def _record_end_error(length: int, rec_end: int, pos: int, end: int) -> CorruptRecordsError:
    if length < 6 or rec_end > end:
        return _record_size_error(length, end - (rec_end - length))
    return _corrupt(f"record length says {length} bytes but its fields take {pos - rec_end + length}")


def _record_size_error(length: int, remaining: int) -> CorruptRecordsError:
    if length < 6:
        return _corrupt(f"invalid record length {length}")
    return _corrupt(f"record length {length} exceeds the {remaining} bytes left in the batch")


def _decode_headers(data: bytes, pos: int, rec_end: int,
                    zz: tuple[int, ...] = _ZZ) -> tuple[list[tuple[str, bytes | None]], int]:
    # One-byte varints (header counts and sizes below 64) are read inline, as in
    # decode_records; reading past the data raises IndexError there too (its caller
    # turns it into CorruptRecordsError).
    b = data[pos]
    if b < 0x80:
        count = zz[b]
        pos += 1
    else:
        count, pos = decode_varint(data, pos)
    if count < 0:
        raise _corrupt(f"invalid header count {count}")
    if count * 2 > rec_end - pos:
        raise _corrupt(f"header count {count} exceeds what the record's remaining bytes can hold")
    headers: list[tuple[str, bytes | None]] = []
    append = headers.append
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            n = zz[b]
            pos += 1
        else:
            n, pos = decode_varint(data, pos)
        if n < 0:
            raise _corrupt(f"invalid negative header key size {n}")
        end = pos + n
        if end > rec_end:
            raise _corrupt("header key runs past the end of the record")
        # Java decodes header keys with replacement of malformed UTF-8; so do we.
        hkey = data[pos:end].decode("utf-8", "replace")
        b = data[end]
        if b < 0x80:
            n = zz[b]
            pos = end + 1
        else:
            n, pos = decode_varint(data, end)
        if n < 0:
            hval = None
        else:
            end = pos + n
            if end > rec_end:
                raise _corrupt("header value runs past the end of the record")
            hval = data[pos:end]
            pos = end
        append((hkey, hval))
    return headers, pos


def decode_records_columnar(
    buf: Buffer,
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None = None,
) -> tuple[array[int], ...]:
    """Decode records into parallel arrays, with no Python object per record.

    Returns 11 arrays: ``offsets`` and ``timestamps`` (``'q'``); ``key_starts``,
    ``key_lengths``, ``value_starts``, ``value_lengths`` (``'i'``, positions in ``buf``,
    length -1 for null); ``header_offsets`` (``'i'``, ``count + 1`` entries: record i's
    headers are entries ``header_offsets[i]:header_offsets[i+1]`` of the header arrays,
    the layout of an Arrow list column); ``header_key_starts``, ``header_key_lengths``,
    ``header_value_starts``, ``header_value_lengths`` (``'i'``, value length -1 = null).
    Validation is the same as :func:`decode_records`.
    """
    if start < 0 or end > len(buf) or start > end:
        raise CorruptRecordsError(f"record range [{start}, {end}) is outside the {len(buf)}-byte buffer")
    _check_count(count, start, end)
    data = buf
    rv = decode_varint
    rvl = decode_varlong
    offsets: list[int] = []
    timestamps: list[int] = []
    ks: list[int] = []
    kls: list[int] = []
    vs: list[int] = []
    vls: list[int] = []
    hoffs = [0]
    hks: list[int] = []
    hkls: list[int] = []
    hvs: list[int] = []
    hvls: list[int] = []
    pos = start
    i = 0
    while i < count:
        length, pos = rv(data, pos) if pos < end else _past_end(i)
        rec_end = pos + length
        if length < 6 or rec_end > end:
            raise _record_size_error(length, end - pos)
        tsd, pos = rvl(data, pos + 1)
        od, pos = rv(data, pos)
        timestamps.append(base_timestamp + tsd if log_append_time is None else log_append_time)
        offsets.append(base_offset + od)
        n, pos = rv(data, pos)
        ks.append(pos)
        kls.append(n if n >= 0 else -1)
        if n > 0:
            pos += n
        n, pos = rv(data, pos)
        vs.append(pos)
        vls.append(n if n >= 0 else -1)
        if n > 0:
            pos += n
        if pos >= rec_end:
            raise _corrupt(f"record {i} runs past the end of its length")
        nh, pos = rv(data, pos)
        if nh < 0:
            raise _corrupt(f"invalid header count {nh}")
        if nh * 2 > rec_end - pos:
            raise _corrupt(f"header count {nh} exceeds what the record's remaining bytes can hold")
        for _ in range(nh):
            n, pos = rv(data, pos)
            if n < 0:
                raise _corrupt(f"invalid negative header key size {n}")
            if pos + n > rec_end:
                raise _corrupt("header key runs past the end of the record")
            hks.append(pos)
            hkls.append(n)
            pos += n
            n, pos = rv(data, pos)
            hvs.append(pos)
            if n < 0:
                hvls.append(-1)
            else:
                if pos + n > rec_end:
                    raise _corrupt("header value runs past the end of the record")
                hvls.append(n)
                pos += n
        hoffs.append(len(hks))
        if pos != rec_end:
            raise _corrupt(f"record length says {length} bytes but its fields take {pos - rec_end + length}")
        i += 1
    if pos != end:
        raise CorruptRecordsError(
            f"incorrect declared batch size: {end - pos} bytes remain after {count} records"
        )
    try:
        return (
            array("q", offsets),
            array("q", timestamps),
            array("i", ks),
            array("i", kls),
            array("i", vs),
            array("i", vls),
            array("i", hoffs),
            array("i", hks),
            array("i", hkls),
            array("i", hvs),
            array("i", hvls),
        )
    except OverflowError:
        raise _corrupt("offset or timestamp overflows int64") from None


def _past_end(i: int) -> tuple[int, int]:
    raise _corrupt(f"record {i} runs past the end of the batch")


_U32S: dict[int, struct.Struct] = {}


def murmur2(data: Buffer) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c) as a signed 32-bit int.

    The default partitioner uses ``(murmur2(key) & 0x7fffffff) % num_partitions``.
    """
    length = len(data)
    m = 0x5BD1E995
    mask = _M32
    h = (0x9747B28C ^ length) & mask
    nwords = length >> 2
    if nwords:
        unpack = _U32S.get(nwords)
        if unpack is None:
            unpack = struct.Struct(f"<{nwords}I")
            if len(_U32S) < 256:
                _U32S[nwords] = unpack
        for k in unpack.unpack_from(data):
            k = (k * m) & mask
            k ^= k >> 24
            h = ((h * m) & mask) ^ ((k * m) & mask)
    tail = length & 3
    i4 = length & ~3
    if tail:
        if tail == 3:
            h ^= data[i4 + 2] << 16
        if tail >= 2:
            h ^= data[i4 + 1] << 8
        h ^= data[i4]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


_BATCH_OVERHEAD = 61


class BuilderBase:
    """The record buffer of :class:`~kafkalite.protocol.record_builder.RecordBatchBuilder`.

    ``_buf`` is the batch (61 header bytes reserved, then records); ``try_append``
    encodes one record into it unless that would take the batch over ``_limit``
    (the estimated size scales the records by ``_ratio``, the expected compression
    ratio) or the buffer over ``_room``, the bytes the producer reserved of
    ``buffer.memory`` for it (unbounded unless set). The C ``BuilderBase`` (kafkalite._speedups) has the same fields and
    methods; the producer's C append path writes into it directly.
    """

    __slots__ = ("_base_timestamp", "_buf", "_count", "_limit", "_max_timestamp", "_ratio", "_room")

    def __init__(self) -> None:
        self._buf = bytearray(_BATCH_OVERHEAD)
        self._count = 0
        self._base_timestamp = 0
        self._max_timestamp = -1
        self._limit = 16384
        self._ratio = 1.0
        self._room = sys.maxsize

    def try_append(self, timestamp_ms: int, key: Buffer | None, value: Buffer | None,
                   headers: Headers | None = None) -> int:
        """Append a record if it fits; return its index in the batch, or -1 if full.

        The first record is always accepted, however big (as Kafka does, so one large
        record still gets sent; the producer checks ``max.request.size`` itself).
        """
        buf = self._buf
        n = self._count
        if n == 0:
            encode_record_into(buf, 0, 0, key, value, headers)
            self._base_timestamp = timestamp_ms
            self._max_timestamp = timestamp_ms
            self._count = 1
            return 0
        before = len(buf)
        written = encode_record_into(buf, n, timestamp_ms - self._base_timestamp, key, value, headers)
        ratio = self._ratio
        estimate = before if ratio == 1.0 else _BATCH_OVERHEAD + int((before - _BATCH_OVERHEAD) * ratio)
        if estimate + written > self._limit or before + written > self._room:
            del buf[before:]  # undo: the record goes to the next batch (or more room)
            return -1
        if timestamp_ms > self._max_timestamp:
            self._max_timestamp = timestamp_ms
        self._count = n + 1
        return n

    def append(self, timestamp_ms: int, key: Buffer | None, value: Buffer | None,
               headers: Headers | None = None) -> int:
        """Append a record regardless of the size limit; return its index."""
        n = self._count
        encode_record_into(self._buf, n, 0 if n == 0 else timestamp_ms - self._base_timestamp, key, value, headers)
        if n == 0:
            self._base_timestamp = timestamp_ms
            self._max_timestamp = timestamp_ms
        elif timestamp_ms > self._max_timestamp:
            self._max_timestamp = timestamp_ms
        self._count = n + 1
        return n

    def estimated_size_in_bytes(self) -> int:
        """The size the built batch is expected to have (compression estimated)."""
        size = len(self._buf)
        if self._ratio == 1.0:
            return size
        return _BATCH_OVERHEAD + int((size - _BATCH_OVERHEAD) * self._ratio)

    def is_full(self) -> bool:
        """True once the estimate reaches the batch size (Java's ``isFull``)."""
        # estimated_size_in_bytes() inline: the sticky partitioner asks once per record.
        if self._count == 0:
            return False
        size = len(self._buf)
        ratio = self._ratio
        if ratio != 1.0:
            size = _BATCH_OVERHEAD + int((size - _BATCH_OVERHEAD) * ratio)
        return size >= self._limit
