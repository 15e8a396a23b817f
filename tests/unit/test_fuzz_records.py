"""Fuzzing the batch decoder: random, truncated and mutated bytes must only ever give
kafkalite errors (or a clean stop at a partial batch), never another exception, a
hang or an allocation far beyond the input."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.errors import KafkaError
from kafkalite.protocol import compression, record_builder, records
from kafkalite.protocol.record_codec import c_impl, python_impl
from kafkalite.protocol.records import RecordBatchBuilder, build_end_txn_marker, iter_batches

IMPLS = ["python"] + (["c"] if c_impl is not None else [])


@pytest.fixture(params=IMPLS, autouse=True)
def impl(request, monkeypatch):
    mod = python_impl if request.param == "python" else c_impl
    monkeypatch.setattr(records, "decode_records", mod.decode_records)
    monkeypatch.setattr(records, "decode_records_columnar", mod.decode_records_columnar)
    builder = record_builder.builder_class(mod.BuilderBase)
    monkeypatch.setattr(record_builder, "RecordBatchBuilder", builder)
    monkeypatch.setattr(records, "RecordBatchBuilder", builder)
    monkeypatch.setitem(globals(), "RecordBatchBuilder", builder)


def decode_all(data: bytes, check_crcs: bool) -> None:
    """Everything a consumer would do with the bytes; only KafkaError may escape."""
    try:
        for batch in iter_batches(data, check_crcs=check_crcs):
            for name in (
                "base_offset",
                "last_offset",
                "record_count",
                "compression",
                "timestamp_type",
                "producer_id",
                "max_timestamp",
                "size_in_bytes",
                "is_control",
            ):
                getattr(batch, name)
            try:
                batch.records("t", 0, max_decompressed_size=1 << 20)
            except KafkaError:
                pass
            if hasattr(batch, "columns"):
                batch.columns(max_decompressed_size=1 << 20)
    except KafkaError:
        pass


def _valid_batches() -> list[bytes]:
    out = []
    for codec in range(5):
        b = RecordBatchBuilder(compression=codec, producer_id=1, producer_epoch=0, base_sequence=0)
        for i in range(6):
            b.append(
                1000 + i,
                None if i == 2 else b"key%d" % i,
                b"value" * i,
                [("h", b"x"), ("n", None)] if i % 2 else None,
            )
        out.append(b.build())
    out.append(build_end_txn_marker(True, producer_id=1, producer_epoch=0, timestamp_ms=5))
    legacy = (
        struct.pack(">bbq", 1, 0, 5) + struct.pack(">i", 1) + b"k" + struct.pack(">i", 1) + b"v"
    )
    import zlib

    msg = struct.pack(">I", zlib.crc32(legacy)) + legacy
    out.append(struct.pack(">qi", 3, len(msg)) + msg)
    inner = struct.pack(">qi", 0, len(msg)) + msg
    wrapped = compression.compress(1, inner)
    w = (
        struct.pack(">bbq", 1, 1, 5)
        + struct.pack(">i", -1)
        + struct.pack(">i", len(wrapped))
        + wrapped
    )
    wmsg = struct.pack(">I", zlib.crc32(w)) + w
    out.append(struct.pack(">qi", 0, len(wmsg)) + wmsg)
    return out


VALID = _valid_batches()


def test_valid_inputs_decode():
    for data in VALID:
        assert sum(len(b.records()) for b in iter_batches(data)) >= 1


@settings(
    max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=400), st.booleans())
def test_random_bytes(data, check_crcs):
    decode_all(data, check_crcs)


@settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sampled_from(range(len(VALID))), st.data())
def test_mutated_and_truncated_batches(which, data):
    buf = bytearray(VALID[which] + VALID[(which + 1) % len(VALID)])
    for _ in range(data.draw(st.integers(0, 4))):
        pos = data.draw(st.integers(0, len(buf) - 1))
        buf[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        # Plausible-looking but hostile header fields: counts and lengths near int32 limits.
        field = data.draw(st.sampled_from([8, 57, 23]))
        buf[field : field + 4] = struct.pack(
            ">i", data.draw(st.sampled_from([2**31 - 1, -1, -(2**31), 0, 49, 100]))
        )
    cut = data.draw(st.integers(0, len(buf)))
    decode_all(bytes(buf[:cut]), check_crcs=False)
    decode_all(bytes(buf), check_crcs=False)


def _adversarial_inputs() -> list[bytes]:
    base = bytearray(VALID[0])
    cases = []
    huge_count = bytearray(base)
    huge_count[57:61] = struct.pack(">i", 2**31 - 1)
    cases.append(bytes(huge_count))
    # A record whose key length claims 2^31 - 1 bytes.
    rec = bytearray(base)
    rec[61 + 4] = 0xFE
    rec[61 + 5 : 61 + 5] = b"\xff\xff\xff\x0f"
    cases.append(bytes(rec))
    bomb = RecordBatchBuilder(compression=4, batch_size=1 << 30)
    bomb.append(0, None, b"\x00" * 50_000_000)
    cases.append(bomb.build())
    return cases


def test_memory_stays_bounded_on_hostile_input():
    cases = _adversarial_inputs()
    tracemalloc.start()
    try:
        for data in cases:
            tracemalloc.reset_peak()
            decode_all(data, check_crcs=False)
            _, peak = tracemalloc.get_traced_memory()
            assert peak < 4 * len(data) + 4 * (1 << 20), (len(data), peak)
    finally:
        tracemalloc.stop()
