"""Compression codecs: framing as the Java client writes it, levels, bounded output."""

from __future__ import annotations

import gzip
import os
import struct
import tracemalloc
import zlib

import lz4.frame
import pytest
import snappy
import zstandard

from kafkalite.errors import ConfigError, CorruptRecordsError, UnsupportedCodecError
from kafkalite.protocol import compression as c

DATA = [b"", b"a", b"hello kafka " * 1000, os.urandom(70_000), bytes(range(256)) * 600]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("data", DATA, ids=lambda d: str(len(d)))
def test_round_trip(codec, data):
    out = c.compress(codec, data)
    assert c.decompress(codec, out) == data
    assert c.decompress(codec, memoryview(out)) == data
    assert c.compress(codec, memoryview(bytearray(data))) == out


@pytest.mark.parametrize(
    ("codec", "levels"),
    [(1, [-1, 1, 5, 9]), (3, [1, 3, 9, 12, 17]), (4, [-131072, -1, 1, 3, 19, 22])],
)
def test_levels(codec, levels):
    data = DATA[2] + DATA[4]
    for level in levels:
        assert c.decompress(codec, c.compress(codec, data, level)) == data


@pytest.mark.parametrize(
    ("codec", "level"),
    [(1, 0), (1, 10), (1, -2), (3, 0), (3, 18), (4, 23), (4, -131073), (2, 1), (1, "6")],
)
def test_invalid_levels(codec, level):
    with pytest.raises(ConfigError):
        c.validate_level(codec, level)


def test_level_defaults_and_names():
    assert c.DEFAULT_LEVELS == {1: -1, 3: 9, 4: 3}
    assert c.validate_level(0, 5) is None
    assert c.codec_id("LZ4") == 3 and c.codec_id(4) == 4 and c.codec_name(2) == "snappy"
    with pytest.raises(ConfigError, match="did|expected"):
        c.codec_id("brotli")
    for bad in (5, 6, 7, -1):
        with pytest.raises(UnsupportedCodecError):
            c.compress(bad, b"x")
        with pytest.raises(UnsupportedCodecError):
            c.decompress(bad, b"x")


def test_gzip_is_a_gzip_member_and_reads_concatenated_members():
    out = c.compress(1, b"abc")
    assert out[:2] == b"\x1f\x8b" and gzip.decompress(out) == b"abc"
    assert c.decompress(1, gzip.compress(b"one") + gzip.compress(b"two")) == b"onetwo"
    assert (
        c.decompress(1, gzip.compress(b"x") + b"\x00\x00trailing") == b"x"
    )  # GZIPInputStream ignores it


def test_snappy_writes_xerial_framing_and_reads_both():
    data = DATA[2] * 3  # > 32 KiB: several xerial chunks
    out = c.compress(2, data)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    first = struct.unpack(">i", out[16:20])[0]
    assert snappy.uncompress(out[20 : 20 + first]) == data[: 32 * 1024]
    assert c.decompress(2, snappy.compress(data)) == data  # raw snappy
    # A concatenated xerial stream (a second header mid-stream) is read through.
    assert c.decompress(2, out + c.compress(2, b"tail")[0:]) == data + b"tail"


def test_lz4_frame_like_kafka():
    out = c.compress(3, DATA[3] * 2)
    assert out[:4] == b"\x04\x22\x4d\x18"
    flg, bd = out[4], out[5]
    assert flg >> 6 == 1 and flg & 0x20  # version 1, independent blocks
    assert not flg & 0x08 and not flg & 0x04 and not flg & 0x10  # no size, no checksums
    assert (bd >> 4) & 7 == 4  # 64 KiB blocks
    assert lz4.frame.decompress(out) == DATA[3] * 2


def test_lz4_legacy_broken_header_checksum():
    good = c.compress(3, b"legacy lz4 payload" * 10)
    broken = bytearray(good)
    broken[6] ^= 0xFF  # what Kafka 0.8-0.9 clients wrote for magic v0
    with pytest.raises(CorruptRecordsError, match="lz4"):
        c.decompress(3, bytes(broken))
    assert c.decompress(3, bytes(broken), legacy_lz4_checksum=True) == b"legacy lz4 payload" * 10


def test_zstd_frames_with_and_without_content_size():
    data = DATA[2]
    streaming = zstandard.ZstdCompressor(write_content_size=False)
    obj = streaming.compressobj()
    framed = obj.compress(data) + obj.flush()
    assert zstandard.frame_content_size(framed) == -1
    assert c.decompress(4, framed) == data
    assert c.decompress(4, framed + framed) == data * 2  # concatenated frames, as zstd-jni reads


def test_a_zstd_frame_declaring_more_than_it_can_hold_costs_what_it_holds():
    # 14 bytes declaring 40 MiB of content (then a 5-byte raw block): a one-call
    # decompression allocated the declared 40 MiB before finding the lie (tools/fuzz,
    # on a fetch response). Chunked, it costs what the frame really decodes to.
    frame = b"\x28\xb5\x2f\xfd" + bytes([0x80, 0x00]) + struct.pack("<I", 40 << 20) + bytes([0x29, 0, 0]) + b"hello"
    assert zstandard.frame_content_size(frame) == 40 << 20
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordsError, match="zstd data is corrupt"):
            c.decompress(4, frame)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    # A real, highly compressible frame that declares its size still decodes, either path.
    for data in (b"\x00" * 5_000_000, DATA[2]):
        assert c.decompress(4, zstandard.ZstdCompressor(write_content_size=True).compress(data)) == data


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_bombs_are_refused(codec):
    bomb = c.compress(codec, b"\x00" * 20_000_000)
    with pytest.raises(CorruptRecordsError, match="decompression limit"):
        c.decompress(codec, bomb, max_size=1_000_000)
    assert len(c.decompress(codec, bomb, max_size=20_000_000)) == 20_000_000


def test_zstd_bomb_without_content_size():
    obj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    bomb = obj.compress(b"\x00" * 50_000_000) + obj.flush()
    with pytest.raises(CorruptRecordsError, match="decompression limit"):
        c.decompress(4, bomb, max_size=1_000_000)


def test_uncompressed_limit():
    with pytest.raises(CorruptRecordsError):
        c.decompress(0, b"abc", max_size=2)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_and_truncation_raise_typed_errors(codec):
    out = c.compress(codec, DATA[2])
    for bad in (
        b"",
        b"garbage",
        out[: len(out) // 2],
        out[:-1],
        b"\x82SNAPPY\x00" + b"\x00" * 8 + b"\xff" * 4,
    ):
        try:
            c.decompress(codec, bad)
        except CorruptRecordsError:
            pass  # the only acceptable failure
    with pytest.raises(CorruptRecordsError):
        c.decompress(codec, out[: len(out) // 2])


def test_gzip_truncated():
    with pytest.raises(CorruptRecordsError, match="truncated"):
        c.decompress(1, zlib.compressobj(6, zlib.DEFLATED, 31).compress(b"abc" * 1000))
