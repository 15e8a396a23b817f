"""Compression codecs for Kafka record batches: gzip, snappy, lz4 and zstd.

Kafka compresses a whole batch's records section (magic v2) or a wrapper message's
value (legacy magic v0/v1) with the codec whose id sits in the low three attribute
bits. This module turns codec ids into bytes both ways, writing exactly the framing
the Java client writes so Java consumers (and brokers re-validating batches) read it:

* gzip (1): a gzip member (RFC 1952), as ``java.util.zip.GZIPOutputStream`` writes.
  Reading accepts several concatenated members (``GZIPInputStream`` does too).
* snappy (2): the Java client wraps ``org.xerial.snappy.SnappyOutputStream``, i.e. the
  *xerial* framing: ``b"\\x82SNAPPY\\x00"`` + int32 version 1 + int32 compatible
  version 1, then chunks of [int32 big-endian compressed length][raw snappy block]
  each holding at most 32 KiB of input. Reading also accepts a bare raw snappy block
  (what some non-Java clients write; xerial's ``SnappyInputStream`` accepts it too).
* lz4 (3): one standard LZ4 frame with independent 64 KiB blocks and no content size
  or checksums, like Kafka's ``Lz4BlockOutputStream`` (which rejects dependent blocks
  on read). Legacy magic v0 wrappers carry a wrongly computed header checksum
  (KAFKA-3160); ``decompress(..., legacy_lz4_checksum=True)`` repairs it before reading.
* zstd (4): one zstd frame. Java's ``ZstdOutputStream`` writes frames without a
  content size, so reading streams when the size is unknown.

Decompression never allocates far beyond its output cap (``max_size``, default
:data:`DEFAULT_MAX_DECOMPRESSED_SIZE`): a decompression bomb fails with
:class:`~kafkalite.errors.CorruptRecordsError` once the output passes the cap.
Every codec failure is raised as a :mod:`kafkalite.errors` type, never as the
codec library's own exception.
"""

from __future__ import annotations

import struct
import threading
import zlib
from typing import Final

import lz4.frame as _lz4f
import snappy as _snappy
import zstandard as _zstd

from kafkalite.errors import ConfigError, CorruptRecordsError, UnsupportedCodecError

__all__ = [
    "CODEC_IDS",
    "CODEC_NAMES",
    "DEFAULT_LEVELS",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "GZIP",
    "LEVEL_RANGES",
    "LZ4",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "codec_id",
    "codec_name",
    "compress",
    "decompress",
    "validate_level",
]

NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4

CODEC_NAMES: Final[dict[int, str]] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS: Final[dict[str, int]] = {name: cid for cid, name in CODEC_NAMES.items()}

# KIP-390 (Kafka 3.8) compression levels: compression.gzip.level (-1 = zlib's default,
# i.e. 6, or 1..9), compression.lz4.level (1..17, default 9),
# compression.zstd.level (zstd's min level -131072 .. 22, default 3). Snappy has none.
DEFAULT_LEVELS: Final[dict[int, int]] = {GZIP: -1, LZ4: 9, ZSTD: 3}
LEVEL_RANGES: Final[dict[int, tuple[int, int]]] = {GZIP: (1, 9), LZ4: (1, 17), ZSTD: (-131072, 22)}

#: Largest decompressed output accepted for one batch (or legacy wrapper) by default.
#: Kafka batches are bounded by batch.size / max.request.size on the producer side, so
#: legitimate batches are far below this; it exists to stop decompression bombs.
DEFAULT_MAX_DECOMPRESSED_SIZE: Final = 256 * 1024 * 1024

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
# xerial's SnappyInputStream treats a chunk length equal to the first four magic bytes
# as the start of a concatenated stream's header.
_XERIAL_MAGIC_HEAD: Final = struct.unpack(">i", _XERIAL_MAGIC[:4])[0]
_XERIAL_BLOCK: Final = 32 * 1024  # SnappyOutputStream's default block size (Kafka keeps it)
_INT32_BE: Final = struct.Struct(">i")

_LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"
# lz4 output can be at most ~255x its input (each extra length byte adds 255); with this
# bound checked up front the one-shot decoder cannot exceed the cap.
_LZ4_MAX_RATIO: Final = 256
_GZIP_CHUNK: Final = 1 << 20
_ZSTD_CHUNK: Final = 1 << 20
# Streaming decompressors allocate the whole chunk they are asked for before writing
# into it: asking for 1 MiB at once made a 100-byte frame cost 1 MiB (found by
# tools/fuzz). Chunks start small and double with the output already produced.
_FIRST_CHUNK: Final = 64 * 1024
# A zstd frame's declared content size is trusted for a one-call decompression up to this
# many times the frame's length (record batches rarely compress 64:1; beyond, the chunked
# path gives the same bytes).
_ZSTD_ONE_CALL_RATIO: Final = 64


def _next_chunk(total: int, limit: int, largest: int) -> int:
    """How much to ask a streaming decompressor for next: about the output so far
    (geometric growth, so few calls), at least 64 KiB, at most ``largest``, and one
    byte past the limit so that an oversized stream is recognised."""
    return min(largest, max(_FIRST_CHUNK, total), limit - total + 1)


def codec_name(codec: int) -> str:
    """Kafka's name of a codec id (``compression.type`` values)."""
    try:
        return CODEC_NAMES[codec]
    except KeyError:
        raise UnsupportedCodecError(f"unknown compression codec id {codec}") from None


def codec_id(name: str | int) -> int:
    """The codec id for a ``compression.type`` name (``"lz4"``) or an id; validates."""
    if isinstance(name, int):
        codec_name(name)
        return name
    try:
        return CODEC_IDS[name.lower()]
    except KeyError:
        raise ConfigError(
            f"unknown compression.type {name!r}; expected one of {', '.join(CODEC_IDS)}"
        ) from None


def validate_level(codec: int, level: int | None) -> int | None:
    """Check a compression level for ``codec`` (Java's ranges); return the level to use.

    ``None`` means the codec's Kafka default. Raises :class:`ConfigError` naming the
    codec and the accepted range.
    """
    if codec not in CODEC_NAMES:
        raise UnsupportedCodecError(f"unknown compression codec id {codec}")
    if level is None or codec == NONE:
        return None
    if codec == SNAPPY:
        raise ConfigError("snappy has no compression levels")
    name = CODEC_NAMES[codec]
    if isinstance(level, bool) or not isinstance(level, int):
        raise ConfigError(f"{name} compression level must be an int, got {level!r}")
    lo, hi = LEVEL_RANGES[codec]
    if codec == GZIP and level == -1:
        return level
    if not lo <= level <= hi:
        extra = " (or -1 for the default)" if codec == GZIP else ""
        raise ConfigError(f"{name} compression level {level} is out of range [{lo}, {hi}]{extra}")
    return level


# ------------------------------------------------------------------ compression

_tls = threading.local()  # zstd contexts are not thread-safe; keep one per thread and level


def _zstd_compressor(level: int) -> _zstd.ZstdCompressor:
    cache: dict[int, _zstd.ZstdCompressor] | None = getattr(_tls, "zc", None)
    if cache is None:
        cache = _tls.zc = {}
    comp = cache.get(level)
    if comp is None:
        comp = cache[level] = _zstd.ZstdCompressor(level=level)
    return comp


def _zstd_decompressor() -> _zstd.ZstdDecompressor:
    dctx: _zstd.ZstdDecompressor | None = getattr(_tls, "zd", None)
    if dctx is None:
        dctx = _tls.zd = _zstd.ZstdDecompressor()
    return dctx


def _snappy_xerial(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    pack = _INT32_BE.pack
    comp = _snappy.compress
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = comp(view[start : start + _XERIAL_BLOCK])
        parts.append(pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def compress(codec: int, data: bytes | bytearray | memoryview, level: int | None = None) -> bytes:
    """Compress ``data`` with ``codec`` in the framing the Java client writes.

    ``level`` is validated with :func:`validate_level`; ``None`` means Kafka's default.
    """
    if codec == NONE:
        return bytes(data)
    level = validate_level(codec, level)
    if codec == LZ4:
        # Java uses lz4-java's fast compressor at the default level 9 and the HC
        # compressor otherwise (Lz4BlockOutputStream); LZ4F level 0 is the fast one.
        lz_level = 0 if level is None or level == DEFAULT_LEVELS[LZ4] else level
        compressed: bytes = _lz4f.compress(  # lz4 has no type information: it returns bytes
            data,
            compression_level=lz_level,
            block_size=_lz4f.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
        return compressed
    if codec == ZSTD:
        return _zstd_compressor(DEFAULT_LEVELS[ZSTD] if level is None else level).compress(data)
    if codec == GZIP:
        comp = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, 31)
        return comp.compress(data) + comp.flush()
    if codec == SNAPPY:
        return _snappy_xerial(data)
    raise UnsupportedCodecError(f"unknown compression codec id {codec}")


# ---------------------------------------------------------------- decompression


def _too_big(name: str, limit: int) -> CorruptRecordsError:
    return CorruptRecordsError(
        f"{name} data decompresses to more than {limit} bytes (the decompression limit); "
        "refusing it as corrupt or a decompression bomb"
    )


def _gunzip(data: bytes | bytearray | memoryview, limit: int) -> bytes:
    out: list[bytes] = []
    total = 0
    rest: bytes | bytearray | memoryview = data
    while True:
        d = zlib.decompressobj(47)  # 32 + 15: accept gzip (and zlib) headers
        while True:
            chunk = d.decompress(rest, _next_chunk(total, limit, _GZIP_CHUNK))
            total += len(chunk)
            if total > limit:
                raise _too_big("gzip", limit)
            out.append(chunk)
            rest = d.unconsumed_tail
            if d.eof or (not rest and len(chunk) == 0):
                break
        if not d.eof:
            raise CorruptRecordsError("gzip data is truncated (no end of stream)")
        rest = d.unused_data
        # GZIPInputStream reads a following member only if it starts with the gzip magic
        # and otherwise ignores trailing bytes; do the same.
        if len(rest) < 2 or bytes(rest[:2]) != b"\x1f\x8b":
            return b"".join(out)


def _snappy_raw_length(block: bytes | memoryview) -> int:
    """The uncompressed length stored in a raw snappy block's varint preamble."""
    result = 0
    for i in range(min(5, len(block))):
        b = block[i]
        result |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return result
    raise CorruptRecordsError("snappy block has a malformed length preamble")


def _unsnappy_block(block: memoryview, room: int, limit: int) -> bytes:
    if _snappy_raw_length(block) > room:
        raise _too_big("snappy", limit)
    try:
        plain: bytes = _snappy.uncompress(block)  # python-snappy has no type information
        return plain
    except Exception as exc:  # snappy.UncompressError and cramjam errors
        cause = exc.__cause__ or exc
        raise CorruptRecordsError(f"snappy data is corrupt: {cause!r}") from None


def _unsnappy(data: bytes | bytearray | memoryview, limit: int) -> bytes:
    view = memoryview(data)
    if view[:8].tobytes() != _XERIAL_MAGIC:
        return _unsnappy_block(view, limit, limit)
    if len(view) < 16:
        raise CorruptRecordsError("xerial snappy header is truncated")
    out: list[bytes] = []
    total = 0
    pos = 16  # magic (8) + version (4) + compatible version (4)
    end = len(view)
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordsError("xerial snappy chunk length is truncated")
        size = _INT32_BE.unpack_from(view, pos)[0]
        pos += 4
        if size == _XERIAL_MAGIC_HEAD and view[pos - 4 : pos + 4].tobytes() == _XERIAL_MAGIC:
            pos += 12  # a concatenated stream: skip the rest of its header
            continue
        if size < 0 or size > end - pos:
            raise CorruptRecordsError(
                f"xerial snappy chunk claims {size} bytes but {end - pos} remain"
            )
        chunk = _unsnappy_block(view[pos : pos + size], limit - total, limit)
        total += len(chunk)
        out.append(chunk)
        pos += size
    return b"".join(out)


def _xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 for short inputs (the lz4 frame descriptor checksum; at most 15 bytes)."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF
    n = len(data)
    pos = 0
    if n >= 16:  # not needed for frame descriptors; kept for completeness
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos : pos + 4], "little")
                x = (v[i] + lane * p2) & m
                v[i] = (((x << 13) | (x >> 19)) & m) * p1 & m
                pos += 4
        h = sum(((x << r) | (x >> (32 - r))) & m for x, r in zip(v, (1, 7, 12, 18))) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while pos + 4 <= n:
        h = (h + int.from_bytes(data[pos : pos + 4], "little") * p3) & m
        h = (((h << 17) | (h >> 15)) & m) * p4 & m
        pos += 4
    while pos < n:
        h = (h + data[pos] * p5) & m
        h = (((h << 11) | (h >> 21)) & m) * p1 & m
        pos += 1
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    h ^= h >> 16
    return h


def _fix_lz4_header_checksum(data: bytes | bytearray | memoryview) -> bytes:
    """Rewrite the HC byte of an lz4 frame written by Kafka < 0.10 for magic v0.

    Those clients hashed the magic number along with the descriptor; Kafka reads such
    frames with ``ignoreFlagDescriptorChecksum`` and we recompute the right byte instead.
    """
    buf = bytearray(data)
    if len(buf) < 7 or bytes(buf[:4]) != _LZ4_MAGIC:
        return bytes(buf)
    desc_end = 6 + (8 if buf[4] & 0x08 else 0) + (4 if buf[4] & 0x01 else 0)
    if len(buf) <= desc_end:
        return bytes(buf)
    buf[desc_end] = (_xxh32(bytes(buf[4:desc_end])) >> 8) & 0xFF
    return bytes(buf)


def _unlz4(data: bytes | bytearray | memoryview, limit: int) -> bytes:
    try:
        if len(data) * _LZ4_MAX_RATIO + 65536 <= limit:
            # Bounded by the lz4 ratio limit: one call, no chunking needed.
            whole: bytes = _lz4f.decompress(data)  # lz4 has no type information
            return whole
        dec = _lz4f.LZ4FrameDecompressor()
        out: list[bytes] = []
        total = 0
        chunk = dec.decompress(data, max_length=_next_chunk(0, limit, _GZIP_CHUNK))
        while True:
            total += len(chunk)
            if total > limit:
                raise _too_big("lz4", limit)
            out.append(chunk)
            if dec.eof or dec.needs_input:
                break
            chunk = dec.decompress(b"", max_length=_next_chunk(total, limit, _GZIP_CHUNK))
        if not dec.eof:
            raise CorruptRecordsError("lz4 frame is truncated (no end mark)")
        return b"".join(out)
    except CorruptRecordsError:
        raise
    except Exception as exc:  # lz4 raises RuntimeError for corrupt frames
        raise CorruptRecordsError(f"lz4 data is corrupt: {exc}") from None


def _unzstd(data: bytes | bytearray | memoryview, limit: int) -> bytes:
    dctx = _zstd_decompressor()
    try:
        size = _zstd.frame_content_size(data)
        if size > limit:
            raise _too_big("zstd", limit)
        if 0 <= size <= max(_FIRST_CHUNK, _ZSTD_ONE_CALL_RATIO * len(data)):
            # The frame declares its size (librdkafka and python writers): one call,
            # which allocates that size before decoding a byte.
            return dctx.decompress(data, max_output_size=limit)
        # Unknown size (Java's streaming ZstdOutputStream), or a declared size the input
        # is unlikely to hold (a 153-byte frame declaring 42 MB cost 42 MB, found by
        # tools/fuzz): read in chunks that grow with the output really produced.
        out: list[bytes] = []
        total = 0
        with dctx.stream_reader(data, read_across_frames=True) as reader:
            while True:
                chunk = reader.read(_next_chunk(total, limit, _ZSTD_CHUNK))
                if not chunk:
                    break
                total += len(chunk)
                if total > limit:
                    raise _too_big("zstd", limit)
                out.append(chunk)
        return b"".join(out)
    except CorruptRecordsError:
        raise
    except Exception as exc:  # zstandard.ZstdError and friends
        raise CorruptRecordsError(f"zstd data is corrupt: {exc}") from None


def decompress(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    legacy_lz4_checksum: bool = False,
) -> bytes:
    """Decompress ``data`` written with ``codec``; output capped at ``max_size`` bytes.

    Raises :class:`UnsupportedCodecError` for an unknown codec id and
    :class:`CorruptRecordsError` (saying which codec and what is wrong) for malformed
    or oversized data. ``legacy_lz4_checksum`` repairs the broken lz4 header checksum
    of magic v0 message sets.
    """
    if codec == LZ4:
        if legacy_lz4_checksum:
            data = _fix_lz4_header_checksum(data)
        return _unlz4(data, max_size)
    if codec == ZSTD:
        return _unzstd(data, max_size)
    if codec == SNAPPY:
        return _unsnappy(data, max_size)
    if codec == GZIP:
        try:
            return _gunzip(data, max_size)
        except zlib.error as exc:
            raise CorruptRecordsError(f"gzip data is corrupt: {exc}") from None
    if codec == NONE:
        if len(data) > max_size:
            raise _too_big("uncompressed", max_size)
        return bytes(data)
    raise UnsupportedCodecError(f"unknown compression codec id {codec}")
