"""Byte-level mutations for the decoder fuzzer (no coverage feedback, so they aim at what
breaks binary decoders: length and count fields, varints, truncation, splices).

Every mutation takes the bytes and a ``random.Random`` and returns new bytes; the same
generator state always gives the same result, so an input is reproducible from the
seed that made it (``python -m tools.fuzz --replay SEED:INDEX``).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence

# Values that sit on the edges decoders get wrong: signs, int16/int32 limits, lengths of
# "nothing", "one", "everything", and the null markers (-1) of Kafka's nullable types.
INTERESTING: dict[int, tuple[int, ...]] = {
    1: (0, 1, 0x7F, 0x80, 0xFE, 0xFF),
    2: (0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF),
    4: (0, 1, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF),
    8: (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000,
        0xFFFFFFFFFFFFFFFF),
}
# Unsigned varints (compact lengths, record fields) of interesting sizes, and overlong ones.
VARINTS: tuple[bytes, ...] = (
    b"\x00", b"\x01", b"\x7f", b"\x80\x01", b"\xff\x7f", b"\xff\xff\x03", b"\xfe\xff\xff\xff\x0f",
    b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\x80" * 11, b"\xff" * 6,
)
Mutation = Callable[[bytearray, random.Random, Sequence[bytes]], None]


def _pos(data: bytearray, rng: random.Random, width: int = 1) -> int:
    return rng.randrange(0, max(1, len(data) - width + 1))


def flip_bit(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    if data:
        data[_pos(data, rng)] ^= 1 << rng.randrange(8)


def random_byte(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    if data:
        data[_pos(data, rng)] = rng.randrange(256)


def interesting_int(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    width = rng.choice((1, 2, 4, 4, 4, 8))
    if len(data) < width:
        return
    value = rng.choice(INTERESTING[width])
    pos = _pos(data, rng, width)
    data[pos:pos + width] = value.to_bytes(width, "big")


def arithmetic(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    """Nudge a big-endian int16/int32 by a little: off-by-one lengths and counts."""
    width = rng.choice((2, 4))
    if len(data) < width:
        return
    pos = _pos(data, rng, width)
    fmt = ">h" if width == 2 else ">i"
    (value,) = struct.unpack_from(fmt, data, pos)
    value += rng.choice((-3, -2, -1, 1, 2, 3, 16, -16))
    limit = 1 << (8 * width - 1)
    value = (value + limit) % (2 * limit) - limit
    struct.pack_into(fmt, data, pos, value)


def varint(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    """Replace one byte, or one existing varint-looking run, with an interesting varint."""
    pos = _pos(data, rng)
    end = pos + 1
    while end < len(data) and data[end - 1] >= 0x80 and end - pos < 10:
        end += 1
    data[pos:end] = rng.choice(VARINTS)


def insert(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    n = rng.choice((1, 1, 2, 4, 8, 32))
    pos = rng.randrange(0, len(data) + 1)
    data[pos:pos] = bytes(rng.randrange(256) for _ in range(n))


def delete(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    if data:
        pos = _pos(data, rng)
        del data[pos:pos + rng.choice((1, 1, 2, 4, 8, 64))]


def duplicate(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    """Copy a chunk elsewhere: repeated array elements, doubled batches."""
    if not data:
        return
    start = _pos(data, rng)
    chunk = bytes(data[start:start + rng.randrange(1, 65)])
    pos = rng.randrange(0, len(data) + 1)
    if rng.random() < 0.5:
        data[pos:pos] = chunk
    else:
        data[pos:pos + len(chunk)] = chunk


def splice(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    """Head of this input, tail of another valid one (same target)."""
    if not others:
        return
    other = rng.choice(others)
    cut_here = rng.randrange(0, len(data) + 1)
    cut_there = rng.randrange(0, len(other) + 1)
    data[cut_here:] = other[cut_there:]


def truncate(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    if data:
        del data[rng.randrange(0, len(data)):]


def zero_run(data: bytearray, rng: random.Random, others: Sequence[bytes]) -> None:
    if data:
        pos = _pos(data, rng)
        n = rng.choice((2, 4, 8, 16))
        data[pos:pos + n] = b"\x00" * len(data[pos:pos + n])


MUTATIONS: tuple[Mutation, ...] = (
    flip_bit, random_byte, interesting_int, interesting_int, interesting_int, arithmetic, arithmetic,
    varint, varint, insert, delete, duplicate, splice, truncate, zero_run,
)


def mutate(seed: bytes, rng: random.Random, others: Sequence[bytes] = (), max_size: int = 1 << 16) -> bytes:
    """1 to 8 stacked mutations of ``seed`` (fewer more often), at most ``max_size`` bytes."""
    data = bytearray(seed)
    count = 1
    while count < 8 and rng.random() < 0.5:
        count += 1
    for _ in range(count):
        rng.choice(MUTATIONS)(data, rng, others)
    return bytes(data[:max_size])
