"""Micro-benchmark of one broker connection's request path: CPU per request.

What it runs is :class:`~kafkalite.net.transport.BrokerConnection`'s own code, through
its public calls only (``connect()``, ``send()``): the request side (state checks,
version, framing, write, timeout timer) and the response side (``BufferedProtocol``
buffer, frame parse, correlation match, decode, future, timer cancel). The socket is
replaced by an in-process transport that answers each frame on the next turn of the
event loop, as a socket read would: no peer, no broker, no system calls, so the figure
moves only with the connection's code. Requests are pipelined (``--window`` in flight),
as the producer's sender and the fetcher keep them.

Run: ``python benchmarks/micro_connection.py [--requests 200000] [--window 16] [--repeat 5]``
(µs of CPU per request, best of the rounds), or ``--instructions`` for valgrind's
instruction count per request (a run of N and one of 2N requests; the difference
divided by N cancels start-up; repeatable to well under 1 %). Compare two versions by
running each with ``PYTHONPATH=<their src>``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any

from kafkalite.protocol.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
)
from kafkalite.protocol.messages.metadata import MetadataRequest, MetadataResponse

_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">ihhi")  # size, api_key, api_version, correlation id

_VERSIONS = ApiVersionsResponse(api_keys=[
    ApiVersionsResponseApiVersion(api_key=k.API_KEY, min_version=0, max_version=k.MAX_VERSION)
    for k in (ApiVersionsRequest, MetadataRequest)])
_METADATA = bytes(MetadataResponse(brokers=[], topics=[]).encode(MetadataRequest.MAX_VERSION))


class AnsweringTransport(asyncio.Transport):
    """Stands in for the socket: every frame written is answered on the next loop turn."""

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.BufferedProtocol) -> None:
        super().__init__()
        self._loop, self._protocol, self._closed = loop, protocol, False

    def write(self, data: Any) -> None:
        _, api_key, version, correlation = _HEADER.unpack_from(data)
        if api_key == ApiVersionsRequest.API_KEY:  # response header v0, even when flexible (KIP-511)
            payload = struct.pack(">i", correlation) + bytes(_VERSIONS.encode(min(version, 3)))
        else:  # flexible Metadata: response header v1 (an empty tagged-field section)
            payload = struct.pack(">i", correlation) + b"\x00" + _METADATA
        self._loop.call_soon(self._deliver, _SIZE.pack(len(payload)) + payload)

    def _deliver(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._closed:
            buffer = self._protocol.get_buffer(len(view))
            n = min(len(buffer), len(view))
            buffer[:n] = view[:n]
            view = view[n:]
            self._protocol.buffer_updated(n)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def close(self) -> None:
        self._closed = True

    def is_closing(self) -> bool:
        return self._closed

    def abort(self) -> None:
        self._closed = True


async def _round(requests: int, window: int) -> float:
    from kafkalite.net.transport import BrokerConnection

    try:
        from kafkalite.producer.settings import PRODUCER_RULES

        def resolve(kind: str, settings: dict[str, Any]) -> Any:
            return PRODUCER_RULES.resolve(settings)
    except ImportError:  # before issue 28 every kind resolved through kafkalite.settings
        try:
            from kafkalite.settings import resolve  # type: ignore[attr-defined,no-redef]
        except ImportError:  # before issue 14 resolve lived in kafkalite.config
            from kafkalite.config import resolve  # type: ignore[attr-defined,no-redef]

    loop = asyncio.get_running_loop()

    async def create_connection(factory: Any, *args: Any, **kwargs: Any) -> tuple[asyncio.Transport, Any]:
        protocol = factory()
        transport = AnsweringTransport(loop, protocol)
        protocol.connection_made(transport)
        return transport, protocol

    loop.create_connection = create_connection  # type: ignore[method-assign,assignment]
    conn = BrokerConnection("127.0.0.1", 9092, resolve("producer", {"bootstrap.servers": "127.0.0.1:9092"}))
    await conn.connect()
    request, version = MetadataRequest(topics=[]), MetadataRequest.MAX_VERSION
    in_flight: list[asyncio.Future[Any]] = []
    cpu = time.process_time()
    for _ in range(requests):
        in_flight.append(conn.send(request, api_version=version))
        if len(in_flight) >= window:
            await in_flight.pop(0)
    for future in in_flight:
        await future
    cpu = time.process_time() - cpu
    conn.close()
    return cpu


def _instructions(requests: int, window: int) -> float:
    """Instructions per request under cachegrind: (count(2N) - count(N)) / N."""
    counts = []
    for n in (requests, 2 * requests):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cg.out")
            done = subprocess.run(
                ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                 sys.executable, __file__, "--requests", str(n), "--window", str(window), "--repeat", "1"],
                capture_output=True, text=True, check=True)
            match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
            assert match, done.stderr[-2000:]
            counts.append(int(match.group(1).replace(",", "")))
    return (counts[1] - counts[0]) / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--instructions", action="store_true", help="count instructions with valgrind")
    args = parser.parse_args()
    if args.instructions:
        per = _instructions(args.requests, args.window)
        print(f"window {args.window}: {per:,.0f} instructions per request")
        return
    best = min(asyncio.run(_round(args.requests, args.window)) for _ in range(args.repeat))
    print(f"{args.requests} requests, window {args.window}: CPU {best / args.requests * 1e6:.2f} µs/request "
          f"(best of {args.repeat})")


if __name__ == "__main__":
    main()
