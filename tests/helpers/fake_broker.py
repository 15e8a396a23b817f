"""A scripted one-node "broker" on loopback, for faults no real broker produces.

Only for what a real broker cannot be made to do (a record batch whose CRC is wrong, a
hand-picked error code at a given moment). It speaks the real framing with kafkalite's
generated messages: each request is decoded, handed to the test's handler for its API
key, and the handler's response object is encoded at the request's version. APIs
without a handler are not advertised in ApiVersions, so the client never sends them.

Example::

    async with FakeBroker({3: metadata, 2: list_offsets, 1: fetch}) as broker:
        consumer = aio.Consumer({"bootstrap.servers": broker.bootstrap})
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from typing import Any

from kafkalite.protocol.messages import request_class, response_class
from kafkalite.protocol.messages.api_versions import (
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
)
from kafkalite.protocol.primitives import read_uvarint

API_VERSIONS = 18
Handler = Callable[[Any, int], Any]


class FakeBroker:
    """Node ``node_id`` on 127.0.0.1:<free port>; ``handlers`` maps API key -> fn(request, version).

    A handler may be a coroutine function (e.g. to wait like ``fetch.max.wait.ms``).
    ``versions`` caps the versions advertised per API key (default: all this client
    knows). ``requests`` records ``(api_key, version, request)`` in arrival order.
    """

    def __init__(self, handlers: dict[int, Handler], *, node_id: int = 1,
                 versions: dict[int, tuple[int, int]] | None = None) -> None:
        self.handlers = handlers
        self.node_id = node_id
        self.versions = versions or {}
        self.requests: list[tuple[int, int, Any]] = []
        self.port = 0
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _api_versions(self) -> ApiVersionsResponse:
        keys = []
        for key in sorted({API_VERSIONS, *self.handlers}):
            cls = request_class(key)
            low, high = self.versions.get(key, (cls.MIN_VERSION, cls.MAX_VERSION))
            keys.append(ApiVersionsResponseApiVersion(api_key=key, min_version=low, max_version=high))
        return ApiVersionsResponse(error_code=0, api_keys=keys)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                api_key, version, cid, client_len = struct.unpack_from(">hhih", frame, 0)
                pos = 10 + max(client_len, 0)
                cls = request_class(api_key)
                if cls.is_flexible(version):
                    count, pos = read_uvarint(frame, pos)
                    assert count == 0, "the fake broker does not read request header tags"
                request = cls.decode(frame, version, pos)
                self.requests.append((api_key, version, request))
                if api_key == API_VERSIONS:
                    response: Any = self._api_versions()
                else:
                    response = self.handlers[api_key](request, version)
                    if asyncio.iscoroutine(response):
                        response = await response
                body = bytearray(struct.pack(">i", cid))
                if response_class(api_key).is_flexible(version) and api_key != API_VERSIONS:
                    body.append(0)  # response header v1: no tagged fields
                response.encode_into(body, version)
                writer.write(struct.pack(">i", len(body)) + bytes(body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()
