"""The network layer against real brokers (the default release, 3.9.x and 2.1.1) and a scripted bad peer."""

from __future__ import annotations

import asyncio
import re
import socket
import struct
import time

import pytest

from kafkalite.errors import (
    ClientClosedError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProtocolError,
)
from kafkalite.net.client import NetworkClient
from kafkalite.net.transport import BrokerConnection
from kafkalite.protocol.messages import APIS, request_class
from kafkalite.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestFetchPartition,
    FetchRequestFetchTopic,
)
from kafkalite.protocol.messages.metadata import MetadataRequest
from kafkalite.protocol.messages.produce import ProduceRequest
from tests.helpers.settings import resolve


def _cfg(bootstrap: str, **kw: object):
    return resolve("admin", {"bootstrap.servers": bootstrap, "client.id": "net-test", **kw})


async def _versions(bootstrap: str):
    client = NetworkClient(_cfg(bootstrap))
    try:
        meta = await client.bootstrap()
        node = next(iter(meta.brokers))
        conn = await client.connection(node)
        return conn.versions
    finally:
        await client.close()


def _check_negotiation(table) -> None:
    assert table.broker_ranges, "broker advertised no APIs"
    for api_key, broker in table.broker_ranges.items():
        if api_key not in APIS:
            continue
        cls = request_class(api_key)
        negotiated = table.negotiate(cls)
        if negotiated is None:
            assert broker.max < cls.MIN_VERSION or broker.min > cls.MAX_VERSION
        else:
            # The highest version both sides support, per API.
            assert negotiated == min(cls.MAX_VERSION, broker.max)
            assert negotiated >= max(cls.MIN_VERSION, broker.min)


@pytest.mark.timeout(120)
def test_api_versions_negotiation_kafka_4(kafka_broker) -> None:
    table = asyncio.run(_versions(kafka_broker.bootstrap))
    _check_negotiation(table)
    assert table.version_for(FetchRequest) >= 18
    assert table.version_for(ProduceRequest) >= 13
    assert table.feature_level("metadata.version") > 0


@pytest.mark.timeout(240)
def test_api_versions_negotiation_kafka_3_9(kafka_broker_39) -> None:
    table = asyncio.run(_versions(kafka_broker_39.bootstrap))
    _check_negotiation(table)
    # 3.9 predates Produce v12 (KIP-890 part 2) and v13 (topic ids): we settle lower
    # than against 4.x and still speak it.
    assert 9 <= table.version_for(ProduceRequest) < 12
    assert 13 <= table.version_for(FetchRequest) < 18


@pytest.mark.timeout(120)
def test_bootstrap_skips_dead_address(kafka_broker) -> None:
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"

    async def run() -> int:
        client = NetworkClient(_cfg(f"{dead},{kafka_broker.bootstrap}", **{"reconnect.backoff.ms": 10}))
        try:
            meta = await client.bootstrap(timeout_s=20)
            return len(meta.brokers)
        finally:
            await client.close()

    assert asyncio.run(run()) >= 1


@pytest.mark.timeout(60)
def test_bootstrap_with_no_broker_times_out_naming_servers() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"

    async def run() -> None:
        client = NetworkClient(_cfg(dead))
        try:
            await client.bootstrap(timeout_s=1.5)
        finally:
            await client.close()

    start = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match=dead):
        asyncio.run(run())
    assert time.monotonic() - start < 10


@pytest.mark.timeout(60)
def test_pipelined_requests_and_request_timeout(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)

    async def run() -> None:
        client = NetworkClient(_cfg(kafka_broker.bootstrap))
        try:
            meta = await client.refresh_metadata({topic})
            conn = await client.connection(meta.leader_for(topic, 0))
            # Many requests in flight at once on one connection resolve in order.
            futures = [conn.send(MetadataRequest(topics=[])) for _ in range(50)]
            results = await asyncio.gather(*futures)
            assert all(r.cluster_id == meta.cluster_id for r in results)
            # A fetch that waits 5 s at the broker exceeds a 500 ms request timeout:
            # the request fails and the connection closes (Java behaviour).
            slow = FetchRequest(max_wait_ms=5000, min_bytes=1 << 20, topics=[FetchRequestFetchTopic(
                topic=topic, topic_id=meta.topic_id(topic),
                partitions=[FetchRequestFetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
            with pytest.raises(KafkaTimeoutError, match="Fetch request to node .* timed out after 500 ms"):
                await conn.request(slow, timeout_ms=500)
            assert not conn.connected
            # The client reconnects transparently for the next request.
            again = await client.send(meta.leader_for(topic, 0), MetadataRequest(topics=[]))
            assert again.cluster_id == meta.cluster_id
        finally:
            await client.close()

    asyncio.run(run())


@pytest.mark.timeout(60)
def test_close_fails_requests_in_flight(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)

    async def run() -> None:
        client = NetworkClient(_cfg(kafka_broker.bootstrap))
        meta = await client.refresh_metadata({topic})
        conn = await client.connection(meta.leader_for(topic, 0))
        waiting = conn.send(FetchRequest(max_wait_ms=3000, min_bytes=1 << 20, topics=[FetchRequestFetchTopic(
            topic=topic, topic_id=meta.topic_id(topic),
            partitions=[FetchRequestFetchPartition(partition=0, partition_max_bytes=1 << 20)])]))
        await client.close()
        with pytest.raises(ClientClosedError, match="closed"):
            await waiting

    asyncio.run(run())


class _ScriptedPeer:
    """A TCP server that answers every frame with bytes chosen by the test."""

    def __init__(self, reply: bytes, close_after: bool = False) -> None:
        self.reply = reply
        self.close_after = close_after

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            frame = await reader.readexactly(size)
            correlation = frame[4:8]
            writer.write(self.reply.replace(b"CID!", correlation))
            await writer.drain()
            if self.close_after:
                writer.close()
            else:
                await asyncio.sleep(30)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass


async def _connect_to_peer(reply: bytes, close_after: bool = False, **cfg: object) -> BaseException:
    peer = _ScriptedPeer(reply, close_after)
    server = await asyncio.start_server(peer.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        conn = BrokerConnection("127.0.0.1", port, _cfg(f"127.0.0.1:{port}", **cfg))
        try:
            await asyncio.wait_for(conn.connect(), 10)
        except BaseException as exc:
            return exc
        raise AssertionError("connect() succeeded against a malformed peer")
    finally:
        server.close()


@pytest.mark.parametrize(
    "reply,expected,match",
    [
        # Frame size beyond receive.message.max.bytes: refused before allocating.
        (struct.pack(">i", 2_000_000_000) + b"CID!", ProtocolError, "frame size"),
        (struct.pack(">i", -5) + b"CID!", ProtocolError, "frame size"),
        # Correct size, garbage body: a typed decode error, not a crash.
        (struct.pack(">i", 12) + b"CID!" + b"\xff" * 8, ProtocolError, "ApiVersionsResponse"),
        # Wrong correlation id: the stream is out of sync.
        (struct.pack(">i", 10) + b"\x00\x00\x30\x39" + b"\x00" * 6, ProtocolError, "correlation id"),
        # Truncated frame then the peer hangs up.
        (struct.pack(">i", 100) + b"CID!" + b"\x00" * 10, KafkaConnectionError, "lost"),
    ],
)
@pytest.mark.timeout(30)
def test_malformed_peer_gives_typed_errors(reply: bytes, expected: type, match: str) -> None:
    close = expected is KafkaConnectionError
    exc = asyncio.run(_connect_to_peer(reply, close_after=close, **{"receive.message.max.bytes": 1 << 20}))
    assert isinstance(exc, expected), repr(exc)
    assert re.search(match, str(exc)), str(exc)
