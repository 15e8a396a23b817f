"""Valid encodings the fuzzer mutates: messages sampled from Kafka's JSON specs (through
the generator's own spec model, so every field of every version appears), and record
batches of every format (v2 with each codec, control batches, legacy v0/v1 with
compressed wrappers).

Seeds are deterministic per target name (``zlib.crc32`` of it seeds the sampler), so a
fuzz input is reproducible from the run's seed and its index alone.
"""

from __future__ import annotations

import importlib
import random
import struct
import uuid
import zlib
from functools import cache
from typing import Any

from kafkalite.protocol import compression
from kafkalite.protocol.record_builder import RecordBatchBuilder, build_end_txn_marker
from tools import generate as gen

_INT_BITS = {"int8": 7, "int16": 15, "uint16": 16, "int32": 31, "uint32": 32, "int64": 63}
SEEDS_PER_TARGET = 4


@cache
def specs() -> list[gen.MessageSpec]:
    """Every response and data spec the client decodes (requests are what it encodes)."""
    return [s for s in (gen.load_spec(p) for p in sorted(gen.SPEC_DIR.glob("*.json")))
            if s.kind in ("response", "data")]


def message_class(spec: gen.MessageSpec) -> Any:
    module = importlib.import_module(f"kafkalite.protocol.messages.{gen.module_name(spec)}")
    return getattr(module, spec.name), module


def _scalar(t: str, rng: random.Random, nullable: bool) -> Any:
    if nullable and rng.random() < 0.2:
        return None
    if t in _INT_BITS:
        bits = _INT_BITS[t]
        if rng.random() < 0.5:
            return rng.choice((0, 1, -1 if not t.startswith("u") else 2))
        low = 0 if t.startswith("u") else -(1 << bits)
        return rng.randrange(low, 1 << bits)
    if t == "float64":
        return rng.choice((0.0, 0.5, -1.25, 1e300))
    if t == "bool":
        return rng.random() < 0.5
    if t == "string":
        return rng.choice(("", "a", "orders", "topic-ü", "x" * rng.randrange(2, 80)))
    if t in ("bytes", "records"):
        if t == "records" and rng.random() < 0.5:
            return rng.choice(record_seeds())
        return bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 5, 40))))
    if t == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(f"unknown scalar type {t}")


def _sample(module: Any, fields: list[gen.Field], cls_name: str, version: int, rng: random.Random,
            depth: int = 0, wide: bool = False) -> Any:
    obj = getattr(module, cls_name)()
    for f in fields:
        if version not in f.versions:
            continue
        nullable = version in f.nullable
        value: Any
        if f.is_array:
            if nullable and rng.random() < 0.15:
                value = None
            else:
                n = rng.choice((0, 1, 1, 2, 3)) if depth < 3 else 0
                if wide and depth == 0:
                    n = rng.randrange(20, 60)  # one big seed: memory figures need size
                if f.struct is not None:
                    value = [_sample(module, f.struct.fields, f.struct.cls, version, rng, depth + 1)
                             for _ in range(n)]
                else:
                    value = [_scalar(f.elem, rng, False) for _ in range(n)]
        elif f.struct is not None:
            if nullable and rng.random() < 0.25:
                value = None
            else:
                value = _sample(module, f.struct.fields, f.struct.cls, version, rng, depth + 1)
        else:
            value = _scalar(f.type, rng, nullable)
        setattr(obj, f.attr, value)
    return obj


def message_seeds(spec: gen.MessageSpec, version: int, count: int = SEEDS_PER_TARGET) -> list[bytes]:
    """``count`` valid encodings of ``spec`` at ``version`` (the first one all defaults)."""
    cls, module = message_class(spec)
    rng = random.Random(zlib.crc32(f"{spec.name}:{version}".encode()))
    out = [cls().encode(version)]
    for _ in range(count - 2):
        out.append(_sample(module, spec.fields, spec.name, version, rng).encode(version))
    out.append(_sample(module, spec.fields, spec.name, version, rng, wide=True).encode(version))
    return out


# ---------------------------------------------------------------- record batches


def _legacy_message(magic: int, offset: int, key: bytes | None, value: bytes | None,
                    attributes: int = 0, timestamp: int = 1_700_000_000_000) -> bytes:
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def _legacy_sets() -> list[bytes]:
    out = []
    for magic in (0, 1):
        plain = b"".join(_legacy_message(magic, i, b"k%d" % i if i % 2 else None, b"v" * i) for i in range(3))
        out.append(plain)
        for codec in (compression.GZIP, compression.SNAPPY, compression.LZ4):
            inner = b"".join(_legacy_message(magic, i, b"k", b"value-%d" % i)
                             for i in range(3))
            wrapped = compression.compress(codec, inner)
            out.append(_legacy_message(magic, 2, None, wrapped, attributes=codec))
    return out


@cache
def record_seeds() -> list[bytes]:
    """Whole record data as a Fetch response carries it: v2 batches of each codec (keys,
    null values, headers, control batches), and legacy v0/v1 message sets."""
    rng = random.Random(20240613)
    out = []
    for codec in range(5):
        for transactional in (False, True):
            b = RecordBatchBuilder(compression=codec, producer_id=7 if transactional else -1,
                                   producer_epoch=0 if transactional else -1,
                                   base_sequence=0 if transactional else -1, transactional=transactional,
                                   base_offset=rng.randrange(0, 1000), partition_leader_epoch=3)
            for i in range(rng.randrange(1, 6)):
                headers = [("h", b"x"), ("n", None)] if i % 2 else None
                b.append(1_700_000_000_000 + i, None if i == 2 else b"key%d" % i, b"value" * i, headers)
            out.append(b.build())
    out.append(build_end_txn_marker(True, producer_id=7, producer_epoch=0, timestamp_ms=5, base_offset=9))
    out.append(build_end_txn_marker(False, producer_id=7, producer_epoch=0, timestamp_ms=5, base_offset=12))
    log_append = RecordBatchBuilder(timestamp_type=1, log_append_time=1_700_000_000_999)
    log_append.append(1, b"k", b"v", None)
    out.append(log_append.build())
    out.extend(_legacy_sets())
    # Runs of batches, and a run cut mid-batch (a fetch size limit does that).
    out.append(out[0] + out[3] + out[10])
    out.append((out[1] + out[2])[:-7])
    return out


def records_section(batch: bytes) -> tuple[bytes, bytes, int]:
    """(61-byte header, uncompressed records section, codec) of a v2 batch."""
    header, body = batch[:61], batch[61:]
    codec = header[22] & 0x07
    if codec:
        body = compression.decompress(codec, body)
    return header, body, codec


@cache
def v2_batches() -> list[bytes]:
    """The single v2 batches among the record seeds (for structured mutation)."""
    return [s for s in record_seeds()[:13]]
