"""One broker connection as a state machine with no sockets (sans-I/O).

It turns requests into frames (size prefix + request header + body) and incoming bytes
into responses, matching them to the requests in flight by correlation id. Kafka answers
the requests of one connection in the order they were sent, so a response whose
correlation id is not the oldest outstanding one means the stream is broken: that is a
:class:`ProtocolError` and the connection must be closed.

The asyncio transport (:mod:`kafkalite.net.transport`) feeds it bytes and writes what it
returns; tests drive it directly with byte strings.

Example::

    conn = ConnectionState(client_id="demo")
    frame = conn.build_request(ApiVersionsRequest(), api_version=3)
    # ... write frame, read bytes back ...
    for pending, result in conn.feed(data):
        ...   # result is the decoded ApiVersionsResponse (or a ProtocolError)
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kafkalite.errors import ProtocolError
from kafkalite.protocol.message import Message
from kafkalite.protocol.messages.api_versions import ApiVersionsRequest
from kafkalite.protocol.primitives import skip_tagged_fields

_SIZE = struct.Struct(">i")
# Receive buffer for reads that do not go straight into a frame (small responses, the
# start of a large one). A frame with at least _DIRECT_MIN bytes still to come is read
# into its own buffer instead (see recv_buffer): no intermediate bytes object, no copy.
_SCRATCH_SIZE = 256 * 1024
_DIRECT_MIN = 16 * 1024
# A frame's size prefix is checked against max_frame_size but not trusted beyond that:
# its buffer starts at _FIRST_FRAME_ALLOC and grows as bytes arrive, to at most _GROWTH
# times what has arrived, so a peer announcing 500 MB and sending 20 bytes costs 256 KiB
# rather than 500 MB (found by tools/fuzz). A large fetch response still lands in place;
# each growth copies what has arrived (a fraction of the frame in all).
_FIRST_FRAME_ALLOC = 256 * 1024
_GROWTH = 8
_HEADER = struct.Struct(">ihhi")  # size, api_key, api_version, correlation_id
_CORRELATION = struct.Struct(">i")

# ApiVersions responses always use response header v0 (no tagged fields), even in
# flexible versions, so that a client can parse the answer before it knows what the
# broker speaks (KIP-511).
_API_VERSIONS_KEY = ApiVersionsRequest.API_KEY


# What the driver attaches to each request (the asyncio transport: the caller's future).
C = TypeVar("C")


@dataclass(eq=False)
class PendingRequest(Generic[C]):
    """A request sent on this connection and waiting for its response."""

    correlation_id: int
    api_key: int
    api_version: int
    response_class: type[Message]
    sent_at: float = 0.0
    context: C | None = field(default=None)


#: A completed request: its response, or the error its body failed to decode with.
Completed = tuple[PendingRequest[C], "Message | ProtocolError"]


class ConnectionState(Generic[C]):
    """Framing and correlation for one connection.

    ``max_frame_size`` bounds the size field of incoming frames: a corrupt or hostile
    length must not make the client allocate gigabytes. ``C`` is the type of the
    ``context`` the driver attaches to each request.
    """

    def __init__(self, client_id: str | None = "", max_frame_size: int = 512 * 1024 * 1024) -> None:
        self.client_id = client_id
        self._client_id_bytes = b"\xff\xff" if client_id is None else (
            len(client_id.encode()).to_bytes(2, "big") + client_id.encode()
        )
        self.max_frame_size = max_frame_size
        self._next_correlation = 0
        self._pending: deque[PendingRequest[C]] = deque()
        # Incoming frame assembly: a preallocated buffer per frame avoids re-copying
        # multi-megabyte fetch responses chunk by chunk.
        self._size_buf = bytearray()
        self._frame: bytearray | None = None
        self._frame_view: memoryview | None = None
        self._frame_size = 0  # what the size prefix announced (the buffer may be smaller yet)
        self._filled = 0
        self._scratch: memoryview | None = None
        self._direct = False

    # ------------------------------------------------------------ outgoing

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def pending(self) -> list[PendingRequest[C]]:
        return list(self._pending)

    def next_correlation_id(self) -> int:
        cid = self._next_correlation
        self._next_correlation = (cid + 1) & 0x7FFFFFFF
        return cid

    def build_request(self, request: Message, api_version: int, *, expect_response: bool = True,
                      sent_at: float = 0.0, context: C | None = None) -> tuple[PendingRequest[C] | None, bytearray]:
        """Encode ``request`` as a complete frame.

        Returns the pending entry (None when no response is expected, as for acks=0
        produce requests) and the frame bytes to write.
        """
        cid = self.next_correlation_id()
        api_key = request.API_KEY
        out = bytearray(_HEADER.pack(0, api_key, api_version, cid))
        out += self._client_id_bytes
        if request.is_flexible(api_version):
            out.append(0)  # request header v2: empty tagged fields
        request.encode_into(out, api_version)
        _SIZE.pack_into(out, 0, len(out) - 4)
        if not expect_response:
            return None, out
        pending = PendingRequest(cid, api_key, api_version, _response_class(request), sent_at, context)
        self._pending.append(pending)
        return pending, out

    # ------------------------------------------------------------ incoming

    def feed(self, data: bytes | bytearray | memoryview) -> list[Completed[C]]:
        """Consume bytes from the socket; return completed (request, response) pairs.

        A response body that fails to decode is returned as the exception in place of
        the response (the frame boundary is intact, the connection can go on).
        Framing errors raise :class:`ProtocolError`: the connection must be closed.
        Requests answered earlier in the same ``data`` are then pending again, first in
        line, for :meth:`fail_all` to fail with the rest: raising must not lose them
        (their callers would wait for good; a corrupted size prefix that cut a fetch
        response short, then made the rest of it a frame size out of bounds, left a
        consumer's fetcher waiting on that fetch forever).
        """
        done: list[Completed[C]] = []
        try:
            self._feed(data, done)
        except ProtocolError:
            self._pending.extendleft(pending for pending, _ in reversed(done))
            raise
        return done

    def _feed(self, data: bytes | bytearray | memoryview, done: list[Completed[C]]) -> None:
        view = memoryview(data)
        pos, end = 0, len(view)
        while pos < end:
            if self._frame is None:
                need = 4 - len(self._size_buf)
                take = min(need, end - pos)
                self._size_buf += view[pos : pos + take]
                pos += take
                if len(self._size_buf) < 4:
                    break
                (size,) = _SIZE.unpack(self._size_buf)
                self._size_buf.clear()
                if size < 4 or size > self.max_frame_size:
                    raise ProtocolError(
                        f"response frame size {size} is outside 4..{self.max_frame_size} bytes"
                    )
                self._frame_size = size
                self._frame = bytearray(min(size, _FIRST_FRAME_ALLOC))
                self._frame_view = memoryview(self._frame)
                self._filled = 0
            if self._filled == len(self._frame):
                self._grow()
            assert self._frame_view is not None
            take = min(len(self._frame) - self._filled, end - pos)
            self._frame_view[self._filled : self._filled + take] = view[pos : pos + take]
            self._filled += take
            pos += take
            if self._filled == self._frame_size:
                frame = self._frame
                self._frame = None
                self._frame_view = None
                done.append(self._complete(frame))

    def _grow(self) -> None:
        """Make room for more of the frame being received (it is full, not complete)."""
        assert self._frame is not None
        filled = self._filled
        bigger = bytearray(min(self._frame_size, max(_FIRST_FRAME_ALLOC, _GROWTH * filled)))
        bigger[:filled] = self._frame
        # Not released: the transport may still hold a slice of the old buffer until its
        # read returns; the old bytearray goes when that slice does.
        self._frame = bigger
        self._frame_view = memoryview(bigger)

    def recv_buffer(self) -> memoryview:
        """Where the next read from the socket should go (asyncio's BufferedProtocol).

        The rest of the frame being received when much of it is still to come (a large
        fetch response: read into place, no copy); otherwise a scratch buffer. Call
        :meth:`received` with the number of bytes read into it.
        """
        if self._frame is not None and self._filled == len(self._frame):
            self._grow()
        frame_view = self._frame_view
        if frame_view is not None and len(frame_view) - self._filled >= _DIRECT_MIN:
            self._direct = True
            return frame_view[self._filled:]
        self._direct = False
        if self._scratch is None:
            self._scratch = memoryview(bytearray(_SCRATCH_SIZE))
        return self._scratch

    def received(self, nbytes: int) -> list[Completed[C]]:
        """``nbytes`` were read into the buffer :meth:`recv_buffer` returned last;
        returns the completed (request, response) pairs, as :meth:`feed` does."""
        if not self._direct:
            assert self._scratch is not None
            return self.feed(self._scratch[:nbytes])
        self._direct = False
        frame = self._frame
        assert frame is not None
        self._filled += nbytes
        if self._filled < self._frame_size:
            return []
        self._frame = None
        self._frame_view = None
        return [self._complete(frame)]

    def _complete(self, frame: bytearray) -> Completed[C]:
        (cid,) = _CORRELATION.unpack_from(frame, 0)
        if not self._pending:
            raise ProtocolError(f"response with correlation id {cid} but no request is in flight")
        pending = self._pending[0]
        if pending.correlation_id != cid:
            raise ProtocolError(
                f"response correlation id {cid} does not match the oldest request in flight "
                f"({pending.correlation_id}); the connection is out of sync"
            )
        self._pending.popleft()
        view = memoryview(frame)
        pos = 4
        cls = pending.response_class
        try:
            if cls.is_flexible(pending.api_version) and pending.api_key != _API_VERSIONS_KEY:
                pos = _skip_header_tags(view, pos)
            response = cls.decode(view, pending.api_version, pos)
        except ProtocolError as exc:
            if pending.api_key == _API_VERSIONS_KEY and pending.api_version > 0:
                # A broker that does not speak our ApiVersions version answers in v0
                # with UNSUPPORTED_VERSION and its own range (KIP-511).
                try:
                    return pending, cls.decode(view, 0, 4)
                except ProtocolError:
                    pass
            return pending, exc
        return pending, response

    def fail_all(self) -> list[PendingRequest[C]]:
        """Forget every pending request (the connection closed); returns them."""
        failed = list(self._pending)
        self._pending.clear()
        self._frame = None
        self._frame_view = None
        self._direct = False
        self._size_buf.clear()
        return failed


def _skip_header_tags(buf: memoryview, pos: int) -> int:
    if pos < len(buf) and buf[pos] == 0:  # the usual case: no tagged fields in the header
        return pos + 1
    _, pos = skip_tagged_fields(buf, pos)
    return pos


_RESPONSE_CLASSES: dict[type[Message], type[Message]] = {}


def _response_class(request: Message) -> type[Message]:
    cls = type(request)
    resp = _RESPONSE_CLASSES.get(cls)
    if resp is None:
        from kafkalite.protocol.messages import response_class

        resp = _RESPONSE_CLASSES[cls] = response_class(request.API_KEY)
    return resp
