"""The sans-I/O connection: framing, correlation and malformed input, without a broker."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.errors import ProtocolError
from kafkalite.net.connection import ConnectionState
from kafkalite.protocol.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
)
from kafkalite.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
)


def _frame(correlation_id: int, body: bytes, flexible_header: bool) -> bytes:
    header = struct.pack(">i", correlation_id) + (b"\x00" if flexible_header else b"")
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def test_request_frame_layout() -> None:
    conn = ConnectionState(client_id="cid")
    pending, frame = conn.build_request(MetadataRequest(topics=None), 12)
    size, api_key, version, cid = struct.unpack_from(">ihhi", frame)
    assert (size, api_key, version, cid) == (len(frame) - 4, 3, 12, 0)
    # client id is a classic (non-compact) string even in header v2, then empty tags.
    assert frame[12:17] == b"\x00\x03cid"
    assert frame[17] == 0
    assert pending is not None and conn.in_flight == 1


def test_response_fed_byte_by_byte() -> None:
    conn = ConnectionState()
    conn.build_request(MetadataRequest(topics=None), 12)
    body = MetadataResponse(brokers=[MetadataResponseBroker(node_id=1, host="h", port=9092)]).encode(12)
    data = _frame(0, body, flexible_header=True)
    results = []
    for i in range(len(data)):
        results += conn.feed(data[i : i + 1])
    assert len(results) == 1
    _, response = results[0]
    assert response.brokers[0].host == "h"
    assert conn.in_flight == 0


def test_pipelined_responses_in_order() -> None:
    conn = ConnectionState()
    for _ in range(3):
        conn.build_request(MetadataRequest(topics=None), 1)
    bodies = [MetadataResponse(controller_id=i).encode(1) for i in range(3)]
    data = b"".join(_frame(i, b, flexible_header=False) for i, b in enumerate(bodies))
    out = conn.feed(data)
    assert [r.controller_id for _, r in out] == [0, 1, 2]


def test_api_versions_uses_header_v0_even_when_flexible() -> None:
    conn = ConnectionState()
    conn.build_request(ApiVersionsRequest(), 3)
    body = ApiVersionsResponse(api_keys=[ApiVersionsResponseApiVersion(api_key=0, min_version=0, max_version=9)]).encode(3)
    [(_, response)] = conn.feed(_frame(0, body, flexible_header=False))
    assert response.api_keys[0].max_version == 9


def test_api_versions_v0_fallback_for_unsupported_version() -> None:
    conn = ConnectionState()
    conn.build_request(ApiVersionsRequest(), 4)
    body = ApiVersionsResponse(error_code=35, api_keys=[
        ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=2)]).encode(0)
    [(_, response)] = conn.feed(_frame(0, body, flexible_header=False))
    assert response.error_code == 35 and response.api_keys[0].max_version == 2


def test_wrong_correlation_id_is_fatal() -> None:
    conn = ConnectionState()
    conn.build_request(MetadataRequest(topics=None), 1)
    with pytest.raises(ProtocolError, match="correlation id"):
        conn.feed(_frame(7, MetadataResponse().encode(1), False))


def test_response_without_request() -> None:
    with pytest.raises(ProtocolError, match="no request"):
        ConnectionState().feed(_frame(0, b"", False))


@pytest.mark.parametrize("size", [-1, 0, 3, 600 * 1024 * 1024])
def test_frame_size_out_of_bounds(size: int) -> None:
    conn = ConnectionState(max_frame_size=512 * 1024 * 1024)
    conn.build_request(MetadataRequest(topics=None), 1)
    with pytest.raises(ProtocolError, match="frame size"):
        conn.feed(struct.pack(">i", size) + b"\x00" * 8)


def test_truncated_body_fails_only_that_request() -> None:
    conn = ConnectionState()
    conn.build_request(MetadataRequest(topics=None), 1)
    conn.build_request(MetadataRequest(topics=None), 1)
    good = MetadataResponse(controller_id=5).encode(1)
    out = conn.feed(_frame(0, good[:-3], False) + _frame(1, good, False))
    assert isinstance(out[0][1], ProtocolError)
    assert out[1][1].controller_id == 5


def test_fail_all_clears_state() -> None:
    conn = ConnectionState()
    conn.build_request(MetadataRequest(topics=None), 1)
    conn.feed(b"\x00\x00")  # half a size field
    assert len(conn.fail_all()) == 1
    assert conn.in_flight == 0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 12))
def test_random_bytes_give_typed_errors_only(data: bytes, version: int) -> None:
    conn = ConnectionState(max_frame_size=1 << 20)
    for _ in range(3):
        conn.build_request(MetadataRequest(), version)
    try:
        for _, result in conn.feed(data):
            assert isinstance(result, (MetadataResponse, ProtocolError))
    except ProtocolError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=0, max_size=300))
def test_random_bodies_in_valid_frames(body: bytes) -> None:
    conn = ConnectionState()
    conn.build_request(MetadataRequest(topics=None), 12)
    [(_, result)] = conn.feed(_frame(0, body, True))
    assert isinstance(result, (MetadataResponse, ProtocolError))


def _read_through_buffers(conn: ConnectionState, data: bytes, chunk_sizes: list[int]) -> list:
    """Deliver ``data`` as asyncio's BufferedProtocol does: read up to the offered
    buffer's size (and the next chunk size) into recv_buffer(), then received(n)."""
    results = []
    pos, i = 0, 0
    while pos < len(data):
        buf = conn.recv_buffer()
        n = min(len(buf), chunk_sizes[i % len(chunk_sizes)], len(data) - pos)
        buf[:n] = data[pos : pos + n]
        results += conn.received(n)
        pos += n
        i += 1
    return results


@settings(max_examples=60)
@given(st.lists(st.integers(1, 300_000), min_size=1, max_size=8),
       st.lists(st.integers(0, 200_000), min_size=1, max_size=5))
def test_reads_into_offered_buffers_equal_feeding_bytes(chunks: list[int], sizes: list[int]) -> None:
    """Large frames are read straight into their own buffer, small ones through the
    scratch buffer; either way the responses are those of feed() with the same bytes."""
    bodies = [MetadataResponse(controller_id=i, brokers=[MetadataResponseBroker(
        node_id=i, host="h" * size, port=9092)]).encode(12) for i, size in enumerate(sizes)]
    data = b"".join(_frame(i, b, flexible_header=True) for i, b in enumerate(bodies))
    fed, read = ConnectionState(), ConnectionState()
    for conn in (fed, read):
        for _ in sizes:
            conn.build_request(MetadataRequest(topics=None), 12)
    expected = fed.feed(data)
    got = _read_through_buffers(read, data, chunks)
    assert [(p.correlation_id, r) for p, r in got] == [(p.correlation_id, r) for p, r in expected]
    assert [r.brokers[0].host for _, r in got] == ["h" * s for s in sizes]
    assert read.in_flight == 0


def test_direct_reads_go_into_the_frame_buffer() -> None:
    conn = ConnectionState()
    conn.build_request(MetadataRequest(topics=None), 12)
    body = MetadataResponse(brokers=[MetadataResponseBroker(node_id=1, host="x" * 100_000, port=1)]).encode(12)
    data = _frame(0, body, flexible_header=True)
    first = conn.recv_buffer()
    first[:1000] = data[:1000]
    assert conn.received(1000) == []
    rest = conn.recv_buffer()  # ~99 KB to come: the frame's own buffer, exactly the rest
    assert len(rest) == len(data) - 1000
    rest[:] = data[1000:]
    [(pending, response)] = conn.received(len(rest))
    assert pending.correlation_id == 0 and response.brokers[0].host == "x" * 100_000


def test_frame_buffer_grows_with_what_arrives_not_with_what_is_announced() -> None:
    """A size prefix is checked against the limit but not trusted: a peer announcing
    500 MB and sending 20 bytes costs the first 256 KiB, not 500 MB (found by tools/fuzz)."""
    import tracemalloc

    conn = ConnectionState(max_frame_size=1 << 30)
    conn.build_request(MetadataRequest(topics=None), 12)
    tracemalloc.start()
    try:
        conn.feed(struct.pack(">i", 500_000_000) + b"\x00" * 20)
        conn.recv_buffer()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize("chunks", [[7000, 300_000, 1 << 20], [1 << 22], [65_536]])
def test_large_frames_grow_in_place_and_decode(chunks: list[int]) -> None:
    """A 3 MB response arriving through the offered buffers (growing from 256 KiB) and
    through feed() decodes to the same response."""
    body = MetadataResponse(brokers=[MetadataResponseBroker(node_id=1, host="y" * 3_000_000, port=1)]).encode(12)
    data = _frame(0, body, flexible_header=True)
    fed, read = ConnectionState(), ConnectionState()
    for conn in (fed, read):
        conn.build_request(MetadataRequest(topics=None), 12)
    [(_, expected)] = fed.feed(data)
    [(_, got)] = _read_through_buffers(read, data, chunks)
    assert got == expected and got.brokers[0].host == "y" * 3_000_000


def test_a_framing_error_leaves_the_requests_answered_before_it_in_the_same_data_to_fail_all() -> None:
    # A corrupted size prefix cut a response short (its body fails to decode), and the
    # rest of it then read as a frame size out of bounds, in one read: the connection
    # closes, and the first request must fail with it rather than be forgotten (found
    # as a consumer whose fetcher waited forever on a fetch from a closed connection).
    conn = ConnectionState()
    first, _ = conn.build_request(MetadataRequest(topics=None), 1)
    second, _ = conn.build_request(MetadataRequest(topics=None), 1)
    body = MetadataResponse(controller_id=5).encode(1)
    cut_short = struct.pack(">ii", 6, 0) + body[:2]  # the size says 6 where the frame has more
    with pytest.raises(ProtocolError, match="frame size"):
        conn.feed(cut_short + b"\x7f\x7f\x7f\x7f" + b"\x00" * 8)
    assert conn.fail_all() == [first, second]


def test_a_wrong_correlation_id_leaves_the_earlier_answers_in_the_same_data_to_fail_all() -> None:
    conn = ConnectionState()
    first, _ = conn.build_request(MetadataRequest(topics=None), 1)
    second, _ = conn.build_request(MetadataRequest(topics=None), 1)
    body = MetadataResponse(controller_id=5).encode(1)
    with pytest.raises(ProtocolError, match="correlation id"):
        conn.feed(_frame(0, body, False) + _frame(9, body, False))
    assert conn.fail_all() == [first, second]
