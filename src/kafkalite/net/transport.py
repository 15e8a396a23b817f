"""A live connection to one broker on asyncio: TCP (or TLS), SASL, ApiVersions, requests.

:class:`BrokerConnection` drives a :class:`~kafkalite.net.connection.ConnectionState`
with an ``asyncio.Protocol``: bytes are parsed as they arrive and each response resolves
the future of its request. Requests are pipelined (several in flight; Kafka answers in
order). A request that exceeds its timeout fails with :class:`KafkaTimeoutError` and the
connection is closed, as the Java client does: later responses on it can no longer be
trusted to be matched correctly by a caller that gave up.

Example (inside a coroutine)::

    conn = BrokerConnection("127.0.0.1", 9092, cfg)
    await conn.connect()
    response = await conn.request(MetadataRequest(topics=None))
    await conn.close()
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from kafkalite import __version__
from kafkalite.errors import (
    IllegalSaslStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ProtocolError,
    UnsupportedVersionError,
    error_for_code,
)
from kafkalite.net.connection import ConnectionState, PendingRequest
from kafkalite.net.sasl import mechanism_for
from kafkalite.net.versions import ApiVersionTable, VersionRange
from kafkalite.protocol.message import Message
from kafkalite.protocol.messages.api_versions import ApiVersionsRequest
from kafkalite.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from kafkalite.protocol.messages.sasl_handshake import SaslHandshakeRequest

log = logging.getLogger("kafkalite.net")

_UNSUPPORTED_VERSION = UnsupportedVersionError.code


class _KafkaProtocol(asyncio.Protocol):
    """asyncio callbacks -> BrokerConnection."""

    def __init__(self, owner: BrokerConnection) -> None:
        self.owner = owner
        self.transport: asyncio.Transport | None = None
        self._can_write = asyncio.Event()
        self._can_write.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.owner._on_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._can_write.set()
        self.owner._on_lost(exc)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()


class BrokerConnection:
    """One connection to one broker (``node_id`` -1 for a bootstrap address)."""

    def __init__(self, host: str, port: int, cfg: Any, *, node_id: int = -1,
                 on_close: Callable[[BrokerConnection, BaseException | None], None] | None = None) -> None:
        self.host, self.port, self.node_id = host, port, node_id
        self.cfg = cfg
        self.state = ConnectionState(cfg["client.id"], cfg["receive.message.max.bytes"])
        self.versions: ApiVersionTable | None = None
        self._protocol: _KafkaProtocol | None = None
        self._closed = False
        self._close_reason: BaseException | None = None
        self._on_close = on_close
        self._timeouts: dict[int, asyncio.TimerHandle] = {}
        self.connected_at = 0.0
        self.last_used = time.monotonic()
        self.sasl_session_expires_at: float | None = None

    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port}>"

    # ------------------------------------------------------------ lifecycle

    @property
    def connected(self) -> bool:
        return self._protocol is not None and not self._closed

    @property
    def in_flight(self) -> int:
        return self.state.in_flight

    async def connect(self, timeout_s: float | None = None) -> None:
        """Open the socket, authenticate and negotiate API versions."""
        loop = asyncio.get_running_loop()
        timeout_s = timeout_s or self.cfg["socket.connection.setup.timeout.ms"] / 1000.0
        ssl_ctx = ssl_context(self.cfg)
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _KafkaProtocol(self), self.host, self.port, ssl=ssl_ctx,
                    server_hostname=self.host if ssl_ctx else None,
                ),
                timeout_s,
            )
        except asyncio.TimeoutError:
            raise KafkaConnectionError(
                f"connecting to {self.host}:{self.port} (node {self.node_id}) timed out after {timeout_s:.1f}s"
            ) from None
        except (OSError, ssl.SSLError) as exc:
            raise KafkaConnectionError(
                f"cannot connect to {self.host}:{self.port} (node {self.node_id}): {exc}"
            ) from exc
        self._protocol = protocol
        sock = protocol.transport.get_extra_info("socket") if protocol.transport else None
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self.cfg["send.buffer.bytes"] > 0:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.cfg["send.buffer.bytes"])
                if self.cfg["receive.buffer.bytes"] > 0:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.cfg["receive.buffer.bytes"])
            except OSError:
                pass
        try:
            await asyncio.wait_for(self._negotiate_versions(), timeout_s * 3)
            if self.cfg["security.protocol"].startswith("SASL"):
                await asyncio.wait_for(self._authenticate(), timeout_s * 3)
        except asyncio.TimeoutError:
            err = KafkaConnectionError(f"handshake with {self.host}:{self.port} timed out")
            self.close(err)
            raise err from None
        except BaseException as exc:
            self.close(exc if isinstance(exc, KafkaError) else None)
            raise
        self.connected_at = time.monotonic()

    async def _negotiate_versions(self) -> None:
        version = ApiVersionsRequest.MAX_VERSION
        request = ApiVersionsRequest(client_software_name="kafkalite", client_software_version=__version__)
        for _ in range(3):
            response = await self.request(request, api_version=version)
            if response.error_code == _UNSUPPORTED_VERSION:
                # The broker answers with v0 and lists its own ApiVersions range (KIP-511).
                theirs = [k for k in response.api_keys if k.api_key == ApiVersionsRequest.API_KEY]
                version = min(theirs[0].max_version, ApiVersionsRequest.MAX_VERSION) if theirs else 0
                continue
            if response.error_code:
                raise error_for_code(response.error_code, "ApiVersions failed")
            self.versions = ApiVersionTable.from_response(response)
            return
        raise ProtocolError(f"{self.host}:{self.port} did not agree on an ApiVersions version")

    async def _authenticate(self) -> None:
        mechanism = mechanism_for(self.cfg)
        handshake = await self.request(SaslHandshakeRequest(mechanism=mechanism.name))
        if handshake.error_code:
            raise error_for_code(
                handshake.error_code,
                f"broker does not enable SASL mechanism {mechanism.name}; it offers {handshake.mechanisms}",
            )
        token: bytes | None = mechanism.first_token()
        while token is not None:
            response = await self.request(SaslAuthenticateRequest(auth_bytes=token))
            if response.error_code:
                raise error_for_code(response.error_code, response.error_message or "SASL authentication failed")
            if response.session_lifetime_ms:
                self.sasl_session_expires_at = time.monotonic() + response.session_lifetime_ms / 1000.0
            token = mechanism.next_token(bytes(response.auth_bytes))
        if not mechanism.done:
            raise IllegalSaslStateError(f"SASL {mechanism.name} exchange ended early")

    def close(self, reason: BaseException | None = None) -> None:
        """Close now; every request in flight fails with ``reason`` (or a connection error)."""
        if self._closed:
            return
        self._closed = True
        self._close_reason = reason
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
        self._fail_pending(reason)
        if self._on_close is not None:
            self._on_close(self, reason)

    # ------------------------------------------------------------ requests

    def api_version(self, request_class: Any, min_version: int = 0) -> int:
        if self.versions is None:
            # Only ApiVersions itself is sent before negotiation.
            return request_class.MAX_VERSION
        return self.versions.version_for(request_class, min_version)

    def send(self, request: Message, *, api_version: int | None = None, timeout_ms: float | None = None,
             expect_response: bool = True) -> asyncio.Future[Any]:
        """Write ``request`` now and return a future of its decoded response.

        The future fails with the response's decode error, a timeout, or the reason the
        connection closed. With ``expect_response=False`` (acks=0 produce) it resolves to
        None once the bytes are handed to the socket.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if self._closed or self._protocol is None or self._protocol.transport is None:
            future.set_exception(self._closed_error())
            return future
        version = api_version if api_version is not None else self.api_version(type(request))
        pending, frame = self.state.build_request(
            request, version, expect_response=expect_response, sent_at=time.monotonic(), context=future
        )
        self._protocol.transport.write(frame)
        self.last_used = time.monotonic()
        if pending is None:
            future.set_result(None)
            return future
        timeout = (timeout_ms if timeout_ms is not None else self.cfg["request.timeout.ms"]) / 1000.0
        cid = pending.correlation_id
        self._timeouts[cid] = loop.call_later(timeout, self._on_timeout, pending, timeout)
        return future

    async def request(self, request: Message, *, api_version: int | None = None,
                      timeout_ms: float | None = None) -> Any:
        """Send ``request`` and await its response (see :meth:`send`)."""
        return await self.send(request, api_version=api_version, timeout_ms=timeout_ms)

    async def drain(self) -> None:
        """Wait while the socket's write buffer is above its high-water mark."""
        if self._protocol is not None:
            await self._protocol._can_write.wait()

    # ------------------------------------------------------------ callbacks

    def _on_data(self, data: bytes) -> None:
        try:
            completed = self.state.feed(data)
        except ProtocolError as exc:
            log.warning("closing %r: %s", self, exc)
            self.close(exc)
            return
        for pending, result in completed:
            handle = self._timeouts.pop(pending.correlation_id, None)
            if handle is not None:
                handle.cancel()
            future = pending.context
            if future.done():
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)

    def _on_lost(self, exc: Exception | None) -> None:
        if not self._closed:
            reason = KafkaConnectionError(
                f"connection to {self.host}:{self.port} (node {self.node_id}) lost"
                + (f": {exc}" if exc else "")
            )
            self.close(reason)

    def _on_timeout(self, pending: PendingRequest, timeout: float) -> None:
        self._timeouts.pop(pending.correlation_id, None)
        from kafkalite.protocol.messages import API_NAMES

        err = KafkaTimeoutError(
            f"{API_NAMES.get(pending.api_key, pending.api_key)} request to node {self.node_id} "
            f"({self.host}:{self.port}) timed out after {timeout * 1000:.0f} ms"
        )
        future = pending.context
        if not future.done():
            future.set_exception(err)
        self.close(KafkaConnectionError(f"closed after a request timed out: {err.message}"))

    def _closed_error(self) -> KafkaError:
        reason = self._close_reason
        if isinstance(reason, KafkaConnectionError):
            return reason
        text = f"connection to {self.host}:{self.port} (node {self.node_id}) is closed"
        if reason is not None:
            text += f": {reason}"
        return KafkaConnectionError(text)

    def _fail_pending(self, reason: BaseException | None) -> None:
        for handle in self._timeouts.values():
            handle.cancel()
        self._timeouts.clear()
        # The reason itself when it is specific (a malformed frame, the client closing),
        # so callers see what went wrong rather than just "closed".
        err = reason if isinstance(reason, KafkaError) else self._closed_error()
        for pending in self.state.fail_all():
            future = pending.context
            if not future.done():
                future.set_exception(err)
                # Nobody may be awaiting a request whose caller already gave up.
                future.exception()


def ssl_context(cfg: Any) -> ssl.SSLContext | None:
    """The TLS context for ``security.protocol`` SSL / SASL_SSL (None for plaintext)."""
    if not cfg["security.protocol"].endswith("SSL"):
        return None
    if cfg["ssl.context"] is not None:
        return cfg["ssl.context"]
    cafile = cfg["ssl.ca.location"] or cfg["ssl.truststore.location"]
    ctx = ssl.create_default_context(cafile=cafile)
    if cfg["ssl.certificate.location"]:
        ctx.load_cert_chain(cfg["ssl.certificate.location"], cfg["ssl.key.location"], cfg["ssl.key.password"])
    if not cfg["ssl.endpoint.identification.algorithm"]:
        ctx.check_hostname = False
    return ctx


def broker_version_range(conn: BrokerConnection, request_class: Any) -> VersionRange | None:
    """The broker's advertised range for ``request_class`` (None if it lacks the API)."""
    if conn.versions is None:
        return None
    return conn.versions.broker_ranges.get(request_class.API_KEY)

