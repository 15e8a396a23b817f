"""A handful of Kafka requests, hand-encoded, for the harness's own needs.

The harness must not depend on the client it tests: readiness probes and topic
creation speak the wire protocol directly, with fixed old (non-flexible) versions
every supported broker accepts: ApiVersions v0, Metadata v1, CreateTopics v4,
SaslHandshake v1 and SaslAuthenticate v0. Each is a few lines of ``struct``.

>>> with KafkaSocket("127.0.0.1", 9092) as conn:        # doctest: +SKIP
...     conn.api_versions()[18]
(0, 4)
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from types import TracebackType

API_VERSIONS, METADATA, CREATE_TOPICS = 18, 3, 19
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36

_CLIENT_ID = b"kafkalite-testing"


class WireError(RuntimeError):
    """The peer closed the connection or sent something unexpected."""


class _Reader:
    """Sequential decoder over one response body."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def int8(self) -> int:
        return self._take(">b")

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def string(self) -> str | None:
        n = self.int16()
        if n < 0:
            return None
        value = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return value

    def bytes_(self) -> bytes | None:
        n = self.int32()
        if n < 0:
            return None
        value = self.data[self.pos : self.pos + n]
        self.pos += n
        return value

    def int32_array(self) -> list[int]:
        return [self.int32() for _ in range(max(self.int32(), 0))]


def _str(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


@dataclass
class PartitionInfo:
    partition: int
    error_code: int
    leader: int
    replicas: list[int]
    isr: list[int]


@dataclass
class TopicInfo:
    name: str
    error_code: int
    partitions: list[PartitionInfo] = field(default_factory=list)


@dataclass
class ClusterMetadata:
    """What Metadata v1 says: live (unfenced) brokers, controller, asked-for topics."""

    brokers: dict[int, tuple[str, int]]
    controller_id: int
    topics: dict[str, TopicInfo]


class KafkaSocket:
    """One blocking connection that sends a request and waits for its response."""

    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation = 0

    @classmethod
    def to(cls, address: str, timeout: float = 5.0) -> KafkaSocket:
        """Connect to ``"host:port"`` (the first entry of a bootstrap list)."""
        host, _, port = address.split(",")[0].strip().rpartition(":")
        return cls(host.strip("[]"), int(port), timeout)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> KafkaSocket:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def request(self, api_key: int, api_version: int, body: bytes) -> _Reader:
        """Send one request (header v1) and return a reader over the response body."""
        self._correlation += 1
        header = struct.pack(">hhi", api_key, api_version, self._correlation) + _str(
            _CLIENT_ID.decode()
        )
        payload = header + body
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._recv(4))[0]
        data = self._recv(size)
        correlation = struct.unpack_from(">i", data)[0]
        if correlation != self._correlation:
            raise WireError(f"correlation id {correlation}, expected {self._correlation}")
        reader = _Reader(data)
        reader.pos = 4
        return reader

    def _recv(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise WireError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)

    # -- requests ----------------------------------------------------------------

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """ApiVersions v0: ``{api_key: (min_version, max_version)}``."""
        r = self.request(API_VERSIONS, 0, b"")
        error = r.int16()
        if error:
            raise WireError(f"ApiVersions failed with error code {error}")
        versions = {}
        for _ in range(r.int32()):
            key, low, high = r.int16(), r.int16(), r.int16()
            versions[key] = (low, high)
        return versions

    def metadata(self, topics: list[str] | None = None) -> ClusterMetadata:
        """Metadata v1 for ``topics`` (``[]``: brokers only; ``None``: all topics)."""
        if topics is None:
            body = struct.pack(">i", -1)
        else:
            body = struct.pack(">i", len(topics)) + b"".join(_str(t) for t in topics)
        r = self.request(METADATA, 1, body)
        brokers = {}
        for _ in range(r.int32()):
            node, host, port = r.int32(), r.string() or "", r.int32()
            r.string()  # rack
            brokers[node] = (host, port)
        controller = r.int32()
        result = {}
        for _ in range(r.int32()):
            error, name = r.int16(), r.string() or ""
            r.int8()  # is_internal
            info = TopicInfo(name, error)
            for _ in range(r.int32()):
                p_error, index, leader = r.int16(), r.int32(), r.int32()
                info.partitions.append(
                    PartitionInfo(index, p_error, leader, r.int32_array(), r.int32_array())
                )
            result[name] = info
        return ClusterMetadata(brokers, controller, result)

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str],
        timeout_ms: int = 30_000,
    ) -> tuple[int, str | None]:
        """CreateTopics v4 for one topic: ``(error_code, error_message)``.

        ``partitions`` / ``replication_factor`` of -1 take the broker's defaults.
        """
        topic = (
            _str(name)
            + struct.pack(">ih", partitions, replication_factor)
            + struct.pack(">i", 0)  # no manual assignment
            + struct.pack(">i", len(configs))
            + b"".join(_str(k) + _str(v) for k, v in configs.items())
        )
        body = struct.pack(">i", 1) + topic + struct.pack(">ib", timeout_ms, 0)
        r = self.request(CREATE_TOPICS, 4, body)
        r.int32()  # throttle_time_ms
        for _ in range(r.int32()):
            got, code, message = r.string(), r.int16(), r.string()
            if got == name:
                return code, message
        raise WireError(f"CreateTopics response does not mention {name!r}")

    def sasl_handshake(self, mechanism: str) -> tuple[int, list[str]]:
        """SaslHandshake v1: ``(error_code, enabled_mechanisms)``."""
        r = self.request(SASL_HANDSHAKE, 1, _str(mechanism))
        error = r.int16()
        return error, [r.string() or "" for _ in range(r.int32())]

    def sasl_authenticate(self, auth_bytes: bytes) -> tuple[int, str | None, bytes]:
        """SaslAuthenticate v0: ``(error_code, error_message, server_bytes)``."""
        r = self.request(SASL_AUTHENTICATE, 0, struct.pack(">i", len(auth_bytes)) + auth_bytes)
        error, message = r.int16(), r.string()
        return error, message, r.bytes_() or b""
