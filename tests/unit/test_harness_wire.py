"""The harness's hand-encoded requests, against a scripted peer."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator

import pytest

from kafkalite.testing.wire import KafkaSocket, WireError


def _s(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(text)) + text.encode()


Handler = Callable[[int, int, bytes], "bytes | None"]


@pytest.fixture
def peer() -> Iterator[Callable[[Handler], str]]:
    """A one-connection server: handler(api_key, version, body) -> response body
    (None: close the connection instead of answering)."""
    servers = []

    def start(handler: Handler) -> str:
        server = socket.create_server(("127.0.0.1", 0))
        servers.append(server)

        def serve() -> None:
            conn, _ = server.accept()
            with conn:
                while True:
                    head = conn.recv(4, socket.MSG_WAITALL)
                    if len(head) < 4:
                        return
                    data = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                    key, version, correlation = struct.unpack_from(">hhi", data)
                    client_len = struct.unpack_from(">h", data, 8)[0]
                    body = data[10 + client_len :]
                    answer = handler(key, version, body)
                    if answer is None:
                        return
                    reply = struct.pack(">i", correlation) + answer
                    conn.sendall(struct.pack(">i", len(reply)) + reply)

        threading.Thread(target=serve, daemon=True).start()
        return f"127.0.0.1:{server.getsockname()[1]}"

    yield start
    for server in servers:
        server.close()


def test_api_versions(peer) -> None:
    seen = []

    def handler(key: int, version: int, body: bytes) -> bytes:
        seen.append((key, version, body))
        return struct.pack(">hi", 0, 2) + struct.pack(">hhh", 18, 0, 4) + struct.pack(">hhh", 3, 0, 13)

    with KafkaSocket.to(peer(handler)) as conn:
        assert conn.api_versions() == {18: (0, 4), 3: (0, 13)}
    assert seen == [(18, 0, b"")]


def test_metadata_v1(peer) -> None:
    def handler(key: int, version: int, body: bytes) -> bytes:
        assert (key, version) == (3, 1)
        assert body == struct.pack(">i", 1) + _s("orders")
        brokers = struct.pack(">i", 2) + struct.pack(">i", 1) + _s("h1") + struct.pack(">i", 9092) + _s(None)
        brokers += struct.pack(">i", 2) + _s("h2") + struct.pack(">i", 9093) + _s("rack-a")
        partition = struct.pack(">hii", 0, 0, 2) + struct.pack(">iii", 2, 2, 1) + struct.pack(">ii", 1, 2)
        topic = struct.pack(">h", 0) + _s("orders") + b"\x00" + struct.pack(">i", 1) + partition
        return brokers + struct.pack(">i", 2) + struct.pack(">i", 1) + topic

    with KafkaSocket.to(peer(handler)) as conn:
        meta = conn.metadata(["orders"])
    assert meta.brokers == {1: ("h1", 9092), 2: ("h2", 9093)}
    assert meta.controller_id == 2
    (p,) = meta.topics["orders"].partitions
    assert (p.partition, p.leader, p.replicas, p.isr) == (0, 2, [2, 1], [2])


def test_create_topic_v4_encoding(peer) -> None:
    def handler(key: int, version: int, body: bytes) -> bytes:
        assert (key, version) == (19, 4)
        expected = (
            struct.pack(">i", 1) + _s("t") + struct.pack(">ih", 3, -1) + struct.pack(">i", 0)
            + struct.pack(">i", 1) + _s("cleanup.policy") + _s("compact")
            + struct.pack(">ib", 5000, 0)
        )
        assert body == expected
        return struct.pack(">i", 0) + struct.pack(">i", 1) + _s("t") + struct.pack(">h", 36) + _s("exists")

    with KafkaSocket.to(peer(handler)) as conn:
        assert conn.create_topic("t", 3, -1, {"cleanup.policy": "compact"}, 5000) == (36, "exists")


def test_closed_connection_is_a_wire_error(peer) -> None:
    address = peer(lambda k, v, b: None)
    with KafkaSocket.to(address) as conn, pytest.raises(WireError):
        conn.api_versions()


def test_create_topic_returns_the_error_code_and_message(peer) -> None:
    # kafkalite.testing.topics.create_topic now goes through the AdminClient (tested
    # on the real broker in tests/integration/test_admin_topics.py); the wire call
    # still reports the broker's answer as it is.
    address = peer(lambda k, v, b: struct.pack(">ii", 0, 1) + _s("t") + struct.pack(">h", 38) + _s("bad rf"))
    with KafkaSocket.to(address, timeout=5.0) as conn:
        assert conn.create_topic("t", 1, 7, {}) == (38, "bad rf")
