"""BrokerConnection driving its lifecycle, without a broker: the socket is a scripted
in-process transport that answers the handshake (ApiVersions, SaslHandshake,
SaslAuthenticate with PLAIN) and Metadata, and records every frame written, so the
order on the wire is seen exactly. (tests/integration/test_security_sasl.py runs the
same KIP-368 paths against a real broker.)"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from kafkalite.errors import KafkaConnectionError
from kafkalite.net.lifecycle import IllegalConnectionEventError, Stage
from kafkalite.net.transport import BrokerConnection
from kafkalite.protocol.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
)
from kafkalite.protocol.messages.metadata import MetadataRequest, MetadataResponse
from kafkalite.protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from kafkalite.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from tests.helpers.settings import resolve

_HEADER = struct.Struct(">ihhi")  # size, api_key, api_version, correlation id
APIS = (ApiVersionsRequest, MetadataRequest, SaslHandshakeRequest, SaslAuthenticateRequest)
ANSWERS: dict[int, Any] = {
    ApiVersionsRequest.API_KEY: ApiVersionsResponse(api_keys=[
        ApiVersionsResponseApiVersion(api_key=k.API_KEY, min_version=0, max_version=k.MAX_VERSION) for k in APIS]),
    MetadataRequest.API_KEY: MetadataResponse(brokers=[], topics=[]),
    SaslHandshakeRequest.API_KEY: SaslHandshakeResponse(mechanisms=["PLAIN"]),
    SaslAuthenticateRequest.API_KEY: SaslAuthenticateResponse(auth_bytes=b""),
}
NAMES = {k.API_KEY: k.__name__.removesuffix("Request") for k in APIS}


class ScriptedTransport(asyncio.Transport):
    """Records each frame written as (API name, correlation id) and answers it on the next
    loop turn, as a socket read would."""

    def __init__(self, protocol: Any) -> None:
        super().__init__()
        self.protocol = protocol
        self.written: list[tuple[str, int]] = []
        self.closed = False

    def write(self, data: Any) -> None:
        _, api_key, version, correlation = _HEADER.unpack_from(data)
        self.written.append((NAMES[api_key], correlation))
        response = ANSWERS[api_key]
        header = struct.pack(">i", correlation)
        if api_key != ApiVersionsRequest.API_KEY and type(response).is_flexible(version):
            header += b"\x00"  # response header v1 (ApiVersions always answers with v0, KIP-511)
        version = min(version, 3) if api_key == ApiVersionsRequest.API_KEY else version
        frame = header + bytes(response.encode(version))
        asyncio.get_running_loop().call_soon(self._deliver, struct.pack(">i", len(frame)) + frame)

    def _deliver(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.closed:
            buffer = self.protocol.get_buffer(len(view))
            n = min(len(buffer), len(view))
            buffer[:n] = view[:n]
            view = view[n:]
            self.protocol.buffer_updated(n)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def is_closing(self) -> bool:
        return self.closed


class Wire:
    """Patches the running loop's create_connection; ``gate`` holds the connect back."""

    def __init__(self) -> None:
        self.transports: list[ScriptedTransport] = []
        self.gate: asyncio.Event | None = None

    def install(self) -> None:
        async def create_connection(factory: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if self.gate is not None:
                await self.gate.wait()
            protocol = factory()
            transport = ScriptedTransport(protocol)
            protocol.connection_made(transport)
            self.transports.append(transport)
            return transport, protocol

        asyncio.get_running_loop().create_connection = create_connection  # type: ignore[method-assign]


def connection(**settings: Any) -> BrokerConnection:
    cfg = resolve("admin", {"bootstrap.servers": "127.0.0.1:9092", **settings})
    return BrokerConnection("127.0.0.1", 9092, cfg)


SASL = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "u",
        "sasl.password": "p"}


async def test_plaintext_connect_goes_through_the_stages_and_closes_once() -> None:
    wire = Wire()
    wire.install()
    conn = connection()
    assert conn.lifecycle.stage is Stage.NEW and not conn.connected
    await conn.connect()
    assert conn.lifecycle.stage is Stage.READY and conn.connected and conn.stats.created == 1
    assert (await conn.request(MetadataRequest(topics=[]))).brokers == []
    assert [name for name, _ in wire.transports[0].written] == ["ApiVersions", "Metadata"]
    conn.close()
    conn.close()
    assert conn.lifecycle.stage is Stage.CLOSED and not conn.connected and conn.stats.closed == 1
    with pytest.raises(KafkaConnectionError, match="is closed"):
        await conn.request(MetadataRequest(topics=[]))
    with pytest.raises(IllegalConnectionEventError, match="'connect' is not allowed in stage 'closed'"):
        await conn.connect()


async def test_a_request_before_the_connection_is_established_fails_typed() -> None:
    wire = Wire()
    wire.install()
    conn = connection()
    with pytest.raises(KafkaConnectionError, match=r"is not established yet \(new\)"):
        await conn.request(MetadataRequest(topics=[]))
    assert wire.transports == []


async def test_close_while_connecting_fails_the_connect_and_closes_the_new_socket() -> None:
    wire = Wire()
    wire.gate = asyncio.Event()
    wire.install()
    conn = connection()
    attempt = asyncio.ensure_future(conn.connect())
    await asyncio.sleep(0)
    assert conn.lifecycle.stage is Stage.CONNECTING
    conn.close(KafkaConnectionError("the client is closing"))
    wire.gate.set()
    with pytest.raises(KafkaConnectionError, match="the client is closing"):
        await attempt
    assert wire.transports[0].closed and wire.transports[0].written == []
    assert conn.stats.failed == 1 and conn.stats.closed == 0  # never established


async def test_requests_during_a_reauthentication_wait_and_follow_it_in_order() -> None:
    wire = Wire()
    wire.install()
    conn = connection(**SASL)
    await conn.connect()
    assert conn.lifecycle.stage is Stage.READY and conn.stats.authentications == 1
    before = conn.send(MetadataRequest(topics=[]))
    conn._begin_reauthentication()  # what the KIP-368 timer calls
    assert conn.reauthenticating and conn.lifecycle.stage is Stage.REAUTHENTICATING
    during = [conn.send(MetadataRequest(topics=[])) for _ in range(3)]
    assert conn.held == 3 and conn.in_flight == 4
    await asyncio.wait_for(asyncio.gather(before, *during), 10)
    assert conn.lifecycle.stage is Stage.READY and conn.held == 0 and conn.reauthentications == 1
    written = wire.transports[0].written
    assert [name for name, _ in written] == [
        "ApiVersions", "SaslHandshake", "SaslAuthenticate",  # the new connection's login
        "Metadata",  # sent before the re-authentication began
        "SaslHandshake", "SaslAuthenticate",  # the re-authentication, not interleaved
        "Metadata", "Metadata", "Metadata",  # held, then written in the order sent
    ]
    correlations = [cid for _, cid in written]
    assert correlations == sorted(correlations)
    conn.close()


async def test_closing_during_a_reauthentication_fails_the_held_requests_with_the_reason() -> None:
    wire = Wire()
    wire.install()
    conn = connection(**SASL)
    await conn.connect()
    conn._begin_reauthentication()
    held = conn.send(MetadataRequest(topics=[]))
    conn.close(KafkaConnectionError("the client is closing"))
    with pytest.raises(KafkaConnectionError, match="the client is closing"):
        await held
    assert conn.lifecycle.stage is Stage.CLOSED and conn.held == 0
    assert "Metadata" not in [name for name, _ in wire.transports[0].written]


# A proxy that corrupts bytes towards the client (kafkalite.testing.netfaults) once made
# an ApiVersions answer decode without Metadata: every metadata refresh through that
# connection failed at once, for as long as it stayed open (tests/unit/test_api_versions.py
# has the table's side).
async def test_an_api_versions_answer_without_metadata_closes_the_connection_to_ask_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    damaged = ApiVersionsResponse(api_keys=[
        k for k in ANSWERS[ApiVersionsRequest.API_KEY].api_keys if k.api_key != MetadataRequest.API_KEY])
    monkeypatch.setitem(ANSWERS, ApiVersionsRequest.API_KEY, damaged)
    wire = Wire()
    wire.install()
    conn = connection()
    await conn.connect()
    with pytest.raises(KafkaConnectionError, match="lists no Metadata.*closed to ask again"):
        conn.api_version(MetadataRequest)
    assert conn.lifecycle.stage is Stage.CLOSED and wire.transports[0].closed


# The same proxy once made a Metadata answer name a broker at port 2811679: connecting
# raised OverflowError, which ended the consumer's positions task and reached poll().
async def test_an_address_no_socket_can_take_is_a_connection_error() -> None:
    cfg = resolve("admin", {"bootstrap.servers": "127.0.0.1:9092"})
    for host, port in (("127.0.0.1", 2811679), ("127.0.0.1", -1), ("127.0.\x000.1", 9092)):
        conn = BrokerConnection(host, port, cfg)
        with pytest.raises(KafkaConnectionError, match="cannot connect to"):
            await conn.connect(5)
