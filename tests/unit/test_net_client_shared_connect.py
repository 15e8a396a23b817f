"""Callers that share one connection attempt (NetworkClient.connection): when the caller
that started it is cancelled (its own deadline, e.g. a metadata refresh bounded by
request.timeout.ms), the others get a retriable connection error, not a cancellation
that is not theirs. Found by the black-hole fault scenario: the consumer's fetcher took
the borrowed cancellation for its own shutdown and never fetched from that broker again."""

from __future__ import annotations

import asyncio
import time

import pytest

from kafkalite.errors import KafkaConnectionError
from kafkalite.net.client import NetworkClient
from tests.helpers.settings import resolve


async def test_a_cancelled_starter_leaves_the_sharers_a_connection_error() -> None:
    # A listener that accepts and never answers: the handshake waits (a black hole).
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = NetworkClient(resolve("admin", {"bootstrap.servers": f"127.0.0.1:{port}",
                                             "socket.connection.setup.timeout.ms": 30_000,
                                             "socket.connection.setup.timeout.max.ms": 30_000,
                                             "reconnect.backoff.ms": 0, "reconnect.backoff.max.ms": 0}))
    try:
        starter = asyncio.ensure_future(client.connection(-1))
        await asyncio.sleep(0)  # the starter owns the attempt now
        sharer = asyncio.ensure_future(client.connection(-1))
        await asyncio.sleep(0)
        started = time.monotonic()
        starter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starter  # the starter's own cancellation
        with pytest.raises(KafkaConnectionError, match="abandoned by the caller that started it"):
            await asyncio.wait_for(sharer, 10)
        assert time.monotonic() - started < 10  # at once, not after the 30 s setup timeout
        assert not sharer.cancelled()
    finally:
        await client.close()
        server.close()
