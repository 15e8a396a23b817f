"""The per-record kernels: known vectors, and the C kernels against the pure-Python
reference (same bytes encoded, same records decoded, same errors on garbage)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.errors import CorruptRecordsError
from kafkalite.protocol import record_codec
from kafkalite.protocol.record_codec import c_impl, python_impl
from kafkalite.protocol.record_types import Record

IMPLS = [python_impl] + ([c_impl] if c_impl is not None else [])
needs_c = pytest.mark.skipif(c_impl is None, reason="kafkalite._speedups is not built")

VARINTS = [
    (0, "00"),
    (1, "02"),
    (-1, "01"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (2**31 - 1, "feffffff0f"),
    (-(2**31), "ffffffff0f"),
]
VARLONGS = [
    *VARINTS[:-2],
    (2**31, "8080808010"),
    (2**63 - 1, "feffffffffffffffff01"),
    (-(2**63), "ffffffffffffffffff01"),
]


@pytest.mark.parametrize("impl", IMPLS, ids=lambda m: m.__name__)
def test_varint_vectors(impl):
    for value, hexed in VARINTS:
        assert impl.encode_varint(value).hex() == hexed
        assert impl.decode_varint(bytes.fromhex(hexed), 0) == (value, len(hexed) // 2)
    for value, hexed in VARLONGS:
        assert impl.encode_varlong(value).hex() == hexed
        assert impl.decode_varlong(b"\xaa" + bytes.fromhex(hexed), 1) == (
            value,
            1 + len(hexed) // 2,
        )
    # The C kernel raises the builtin, the Python one InvalidArgumentError (a ValueError).
    for bad in (2**31, -(2**31) - 1):
        with pytest.raises(ValueError):
            impl.encode_varint(bad)
    with pytest.raises(ValueError):
        impl.encode_varlong(2**63)


@pytest.mark.parametrize("impl", IMPLS, ids=lambda m: m.__name__)
def test_varint_edge_cases_follow_java(impl):
    # Java's ByteUtils.readVarint keeps the low 32 bits of a 5-byte varint.
    assert impl.decode_varint(bytes.fromhex("ffffffff7f"), 0) == (-(2**31), 5)
    for bad in ("ffffffffff01", "80", "", "ffff"):
        with pytest.raises(CorruptRecordsError):
            impl.decode_varint(bytes.fromhex(bad), 0)
    with pytest.raises(CorruptRecordsError):
        impl.decode_varlong(bytes.fromhex("ff" * 10 + "01"), 0)
    with pytest.raises(CorruptRecordsError):
        impl.decode_varint(b"\x00", -1)


@pytest.mark.parametrize("impl", IMPLS, ids=lambda m: m.__name__)
def test_record_encoding_vector(impl):
    # Hand-assembled from the v2 record layout: length, attributes, timestampDelta,
    # offsetDelta, key, value, header count, (header key, header value).
    buf = bytearray(b"prefix")
    n = impl.encode_record_into(buf, 1, 5, b"k", b"vv", [("h", None)])
    body = "00" + "0a" + "02" + "02" + "6b" + "04" + "7676" + "02" + "02" + "68" + "01"
    assert buf[6:].hex() == f"{len(body) // 2 * 2:02x}" + body
    assert n == len(buf) - 6 == impl.record_size(1, 5, b"k", b"vv", [("h", None)])
    recs = impl.decode_records(bytes(buf), 6, len(buf), 1, 100, 1000)
    assert recs == [(101, 1005, b"k", b"vv", [("h", None)])]


def test_interface_picks_an_implementation():
    assert record_codec.IMPLEMENTATION in ("c", "python")
    if os.environ.get("KAFKALITE_PURE_PYTHON") == "1":
        assert record_codec.IMPLEMENTATION == "python"
    elif c_impl is not None:
        assert record_codec.IMPLEMENTATION == "c"


@pytest.mark.parametrize("impl", IMPLS, ids=lambda m: m.__name__)
def test_bad_arguments(impl):
    with pytest.raises(TypeError):
        impl.encode_record_into(bytearray(), 0, 0, "str key", b"v", None)
    with pytest.raises(TypeError):
        impl.encode_record_into(bytearray(), 0, 0, b"k", b"v", [(None, b"x")])
    with pytest.raises(TypeError):
        impl.decode_records(b"", 0, 0, 0, 0, 0, None, dict, ())


blobs = st.one_of(st.none(), st.binary(max_size=300))
headers = st.one_of(
    st.none(),
    st.lists(
        st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=40))), max_size=5
    ),
)
record = st.tuples(
    st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1), blobs, blobs, headers
)
small_record = st.tuples(
    st.integers(0, 20_000), st.integers(-100_000, 100_000), blobs, blobs, headers
)


@needs_c
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(record, small_record), max_size=20),
    st.integers(-(2**62), 2**62),
    st.integers(-(2**62), 2**62),
    st.booleans(),
)
def test_c_matches_python(recs, base_offset, base_ts, log_append):
    bufs = [bytearray(), bytearray()]
    for r in recs:
        sizes = [impl.encode_record_into(buf, *r) for impl, buf in zip((python_impl, c_impl), bufs)]
        assert sizes[0] == sizes[1] == python_impl.record_size(*r) == c_impl.record_size(*r)
    assert bufs[0] == bufs[1]
    data = bytes(bufs[0])
    lat = 12345 if log_append else None
    extra = (0, "t", 3, None)
    py = python_impl.decode_records(
        data, 0, len(data), len(recs), base_offset, base_ts, lat, Record, extra
    )
    cc = c_impl.decode_records(
        data, 0, len(data), len(recs), base_offset, base_ts, lat, Record, extra
    )
    assert py == cc
    assert all(type(x) is Record for x in cc)
    for got, (od, td, k, v, h) in zip(cc, recs):
        assert got.offset == base_offset + od
        assert got.timestamp == (lat if log_append else base_ts + td)
        assert (got.key, got.value, got.headers) == (k, v, list(h or []))
    try:
        pycols = python_impl.decode_records_columnar(
            data, 0, len(data), len(recs), base_offset, base_ts, lat
        )
    except CorruptRecordsError:  # an offset or timestamp beyond int64
        with pytest.raises(CorruptRecordsError):
            c_impl.decode_records_columnar(data, 0, len(data), len(recs), base_offset, base_ts, lat)
    else:
        assert pycols == c_impl.decode_records_columnar(
            data, 0, len(data), len(recs), base_offset, base_ts, lat
        )


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except CorruptRecordsError:
        return ("corrupt", None)


@needs_c
@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 40), st.integers(0, 5))
def test_c_matches_python_on_garbage(data, count, start):
    start = min(start, len(data))
    args = (data, start, len(data), count, 0, 0)
    assert _outcome(python_impl.decode_records, *args) == _outcome(c_impl.decode_records, *args)
    assert _outcome(python_impl.decode_records_columnar, *args) == _outcome(
        c_impl.decode_records_columnar, *args
    )
    assert _outcome(python_impl.decode_varint, data, start) == _outcome(
        c_impl.decode_varint, data, start
    )
    assert _outcome(python_impl.decode_varlong, data, start) == _outcome(
        c_impl.decode_varlong, data, start
    )


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(small_record, min_size=1, max_size=8), st.data())
def test_c_matches_python_on_mutated_records(recs, data):
    buf = bytearray()
    for r in recs:
        python_impl.encode_record_into(buf, *r)
    pos = data.draw(st.integers(0, len(buf) - 1))
    buf[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(buf)))
    blob = bytes(buf[:cut])
    args = (blob, 0, len(blob), len(recs), 7, 9)
    assert _outcome(python_impl.decode_records, *args) == _outcome(c_impl.decode_records, *args)
    assert _outcome(python_impl.decode_records_columnar, *args) == _outcome(
        c_impl.decode_records_columnar, *args
    )


@needs_c
@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=100))
def test_murmur2_c_matches_python(key):
    assert python_impl.murmur2(key) == c_impl.murmur2(key)
    assert -(2**31) <= c_impl.murmur2(key) < 2**31
