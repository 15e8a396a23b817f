"""A live connection to one broker on asyncio: TCP (or TLS), SASL, ApiVersions, requests.

:class:`BrokerConnection` drives a :class:`~kafkalite.net.connection.ConnectionState`
with an ``asyncio.Protocol``: bytes are parsed as they arrive and each response resolves
the future of its request. Requests are pipelined (several in flight; Kafka answers in
order). A request that exceeds its timeout fails with :class:`KafkaTimeoutError` and the
connection is closed, as the Java client does: later responses on it can no longer be
trusted to be matched correctly by a caller that gave up.

The lifecycle (connect, TLS, ApiVersions, SASL, KIP-368 re-authentication, close) is
the state machine :class:`~kafkalite.net.lifecycle.ConnectionLifecycle`: each step here
reports its event to it, and what a request may do (go out, wait, fail) is what the
current stage permits.

Security: TLS (:mod:`kafkalite.net.tls`) wraps the socket for SSL / SASL_SSL; a failed
handshake is an :class:`SslAuthenticationError` naming the broker and the reason. SASL
(:mod:`kafkalite.net.sasl`) runs after ApiVersions; a refused login is a
:class:`SaslAuthenticationError` naming the mechanism, the user and the broker. When the
broker limits the session (``connections.max.reauth.ms``, KIP-368), the connection
re-authenticates on its own before the session expires: at a random point between 85 %
and 95 % of the lifetime (as Java does) it sends SaslHandshake + SaslAuthenticate
behind the requests already in flight, and requests sent meanwhile wait until the new
session is established; their order on the wire is kept.

Example (inside a coroutine)::

    conn = BrokerConnection("127.0.0.1", 9092, cfg)
    await conn.connect()
    response = await conn.request(MetadataRequest(topics=None))
    await conn.close()
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar, cast, overload

from kafkalite._version import __version__
from kafkalite.config import Config
from kafkalite.errors import (
    AuthenticationError,
    IllegalSaslStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ProtocolError,
    SaslAuthenticationError,
    SslAuthenticationError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
    UnsupportedVersionForClientError,
    error_for_code,
)
from kafkalite.metrics import Metrics, Sensor
from kafkalite.net.connection import ConnectionState, PendingRequest
from kafkalite.net.deadlines import RequestDeadlines
from kafkalite.net.features import BrokerFeature, feature_of, require, unsupported
from kafkalite.net.lifecycle import ConnectionLifecycle, Stage
from kafkalite.net.sasl import SaslMechanism, mechanism_for
from kafkalite.net.tls import describe_tls_failure
from kafkalite.net.tls import ssl_context as ssl_context
from kafkalite.net.versions import ApiVersionTable, VersionRange
from kafkalite.protocol.message import Message, Request, ResponseT
from kafkalite.protocol.messages.api_versions import ApiVersionsRequest
from kafkalite.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from kafkalite.protocol.messages.sasl_handshake import SaslHandshakeRequest

log = logging.getLogger("kafkalite.net")

_UNSUPPORTED_VERSION = UnsupportedVersionError.code

# KIP-368: re-authenticate at a random point in this part of the session lifetime
# (Java's SaslClientAuthenticator uses 85 % + up to 10 %), so that many connections
# opened together do not all re-authenticate at once.
REAUTH_WINDOW = (0.85, 0.95)


@dataclass
class ConnectionStats:
    """Counters of one client's connections (shared by its BrokerConnections).

    ``created``: connections that completed their handshake; ``closed``: those that
    ended; ``failed``: attempts that did not connect; ``authentication_failures``:
    attempts (or re-authentications) the broker or TLS refused;
    ``authentications``: SASL logins that succeeded (new connections);
    ``reauthentications``: KIP-368 re-authentications that succeeded.

    :meth:`register` publishes them as the Java client's connection metrics.
    """

    created: int = 0
    closed: int = 0
    failed: int = 0
    authentication_failures: int = 0
    authentications: int = 0
    reauthentications: int = 0
    reauthentication_ms_total: float = 0.0
    _sensors: dict[str, Sensor] = field(default_factory=dict, repr=False, compare=False)

    @property
    def active(self) -> int:
        return self.created - self.closed

    def record(self, counter: str, latency_ms: float | None = None) -> None:
        """Add one to ``counter`` (a field name) and to its metrics, if registered."""
        setattr(self, counter, getattr(self, counter) + 1)
        if latency_ms is not None:
            self.reauthentication_ms_total += latency_ms
        sensor = self._sensors.get(counter)
        if sensor is not None:
            sensor.record(1.0 if latency_ms is None else latency_ms)

    def register(self, registry: Metrics, group: str, tags: dict[str, str] | None = None) -> None:
        """Publish the Java client's connection metrics in ``group`` (e.g.
        ``producer-metrics``): connection-count, connection-creation-rate/-total,
        connection-close-rate/-total, failed-authentication-rate/-total,
        successful-authentication-rate/-total, successful-reauthentication-rate/-total,
        reauthentication-latency-avg/-max (ms)."""
        registry.gauge("connection-count", group, lambda: float(self.active),
                       "Connections open now", tags)
        for counter, name, what in (
            ("created", "connection-creation", "New connections established"),
            ("closed", "connection-close", "Connections closed"),
            ("authentication_failures", "failed-authentication", "Logins the broker or TLS refused"),
            ("authentications", "successful-authentication", "Successful SASL logins"),
        ):
            sensor = registry.sensor(f"connections:{name}")
            sensor.add_count_rate(f"{name}-rate", group, f"{what} per second", tags)
            sensor.add_count(f"{name}-total", group, what, tags)
            self._sensors[counter] = sensor
        sensor = registry.sensor("connections:successful-reauthentication")
        sensor.add_count_rate("successful-reauthentication-rate", group, "KIP-368 re-authentications per second", tags)
        sensor.add_count("successful-reauthentication-total", group, "KIP-368 re-authentications", tags)
        sensor.add_avg("reauthentication-latency-avg", group, "Average re-authentication time (ms)", tags)
        sensor.add_max("reauthentication-latency-max", group, "Longest re-authentication (ms)", tags)
        self._sensors["reauthentications"] = sensor


T = TypeVar("T")

# The future of one request: its decoded response (None for a request that expects none).
# The state machine holds it without its type; send() hands it out typed by the request.
_ResponseFuture = asyncio.Future["Message | None"]

# A request sent during a KIP-368 re-authentication, held until it ends:
# (request, api version, timeout ms, expect a response, the caller's future).
_HeldRequest = tuple[Message, int | None, float | None, bool, _ResponseFuture]


class _KafkaProtocol(asyncio.BufferedProtocol):
    """asyncio callbacks -> BrokerConnection.

    A BufferedProtocol: the event loop reads the socket straight into the buffer the
    connection state offers (the frame itself for the bulk of a large fetch response),
    instead of allocating a bytes object per read and copying it into the frame.
    """

    def __init__(self, owner: BrokerConnection) -> None:
        self.owner = owner
        self.transport: asyncio.Transport | None = None
        self._can_write = asyncio.Event()
        self._can_write.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # create_connection() makes stream transports (TCP or TLS): asyncio.Transport.
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.owner.state.recv_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.owner._on_received(nbytes)

    def connection_lost(self, exc: Exception | None) -> None:
        self._can_write.set()
        self.owner._on_lost(exc)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()


class BrokerConnection:
    """One connection to one broker (``node_id`` -1 for a bootstrap address)."""

    def __init__(self, host: str, port: int, cfg: Config, *, node_id: int = -1,
                 on_close: Callable[[BrokerConnection, BaseException | None], None] | None = None,
                 stats: ConnectionStats | None = None) -> None:
        self.host, self.port, self.node_id = host, port, node_id
        self.cfg = cfg
        self.state: ConnectionState[_ResponseFuture] = ConnectionState(
            cfg["client.id"], cfg["receive.message.max.bytes"])
        self.versions: ApiVersionTable | None = None
        self.lifecycle: ConnectionLifecycle[_HeldRequest] = ConnectionLifecycle(
            authenticates=cfg["security.protocol"].startswith("SASL"))
        self._protocol: _KafkaProtocol | None = None
        self._close_reason: BaseException | None = None
        self._on_close = on_close
        # One timer for every request in flight (net/deadlines.py, issue 27).
        self._deadlines: RequestDeadlines[tuple[PendingRequest[_ResponseFuture], float]] = RequestDeadlines()
        self._deadline_timer: asyncio.TimerHandle | None = None
        self.connected_at = 0.0
        self.last_used = time.monotonic()
        self.stats = stats if stats is not None else ConnectionStats()
        # KIP-368 re-authentication
        self.sasl_session_expires_at: float | None = None
        self.sasl_principal: str | None = None
        self.reauthentications = 0
        self._reauth_timer: asyncio.TimerHandle | None = None
        self._reauth_task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port}>"

    # ------------------------------------------------------------ lifecycle

    @property
    def connected(self) -> bool:
        """Usable by its client: from ApiVersions on until closed (see ``Permits.open``)."""
        return self.lifecycle.permits.open

    @property
    def held(self) -> int:
        """Requests waiting for a KIP-368 re-authentication to end."""
        return self.lifecycle.held

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered, plus those held during re-authentication."""
        return self.state.in_flight + self.lifecycle.held

    @property
    def reauthenticating(self) -> bool:
        return self.lifecycle.stage in (Stage.REAUTHENTICATING, Stage.LOST)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port} (node {self.node_id})"

    async def connect(self, timeout_s: float | None = None) -> None:
        """Open the socket (TLS if configured), negotiate API versions, authenticate."""
        self.lifecycle.connect()
        try:
            await self._connect(timeout_s)
        except BaseException as exc:
            self.stats.record("failed")
            if isinstance(exc, AuthenticationError):
                self.stats.record("authentication_failures")
            raise
        self.stats.record("created")
        if self.lifecycle.authenticates:
            self.stats.record("authentications")
        self.connected_at = time.monotonic()

    async def _connect(self, timeout_s: float | None) -> None:
        loop = asyncio.get_running_loop()
        # NetworkClient passes the attempt's timeout (growing with failures, KIP-601).
        timeout_s = timeout_s or self.cfg["socket.connection.setup.timeout.ms"] / 1000.0
        ssl_ctx = ssl_context(self.cfg)
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _KafkaProtocol(self), self.host, self.port, ssl=ssl_ctx,
                    server_hostname=self.host if ssl_ctx else None,
                    ssl_handshake_timeout=timeout_s if ssl_ctx else None,
                ),
                timeout_s,
            )
        except asyncio.TimeoutError:
            raise KafkaConnectionError(
                f"connecting to {self.address} timed out after {timeout_s:.1f}s"
                + (" (TCP connect or TLS handshake)" if ssl_ctx else "")
            ) from None
        except ssl.SSLError as exc:
            raise self._tls_error(exc) from exc
        except OSError as exc:
            text = str(exc) or type(exc).__name__
            if ssl_ctx is not None and isinstance(exc, ConnectionError):
                text += " during the TLS handshake (is this port a TLS listener?)"
            raise KafkaConnectionError(f"cannot connect to {self.address}: {text}") from exc
        except (OverflowError, ValueError) as exc:
            # An address no socket can take (a port outside 0-65535, a NUL in the host):
            # a broker address from a damaged Metadata answer. A connection failure like
            # any other (retried, metadata refreshed), not an untyped error that ends the
            # caller's task (the consumer's positions task died of an OverflowError).
            raise KafkaConnectionError(f"cannot connect to {self.address}: {exc}") from exc
        if self.lifecycle.stage is Stage.CLOSED:  # close() was called while connecting
            if protocol.transport is not None:
                protocol.transport.close()
            raise self._closed_error()
        self._protocol = protocol
        self.lifecycle.connected()
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
            self._handshake_step(self.lifecycle.versions_agreed)
            if self.lifecycle.authenticates:
                await asyncio.wait_for(self._authenticate(), timeout_s * 3)
                self._handshake_step(self.lifecycle.authenticated)
        except asyncio.TimeoutError:
            err = KafkaConnectionError(f"handshake with {self.address} timed out")
            self.close(err)
            raise err from None
        except KafkaConnectionError as exc:
            # Lost before the handshake finished: often a client/listener mismatch.
            self.close(exc)
            raise KafkaConnectionError(f"{exc.message}{self._handshake_hint()}") from exc
        except BaseException as exc:
            self.close(exc if isinstance(exc, KafkaError) else None)
            raise

    def _handshake_step(self, event: Callable[[], None]) -> None:
        """Report a handshake step done, unless the connection closed meanwhile (it was
        lost or close() was called while the step's answer was on its way)."""
        if self.lifecycle.stage is Stage.CLOSED:
            raise self._closed_error()
        event()

    def _handshake_hint(self) -> str:
        protocol = self.cfg["security.protocol"]
        return (f" during the handshake (security.protocol={protocol}; does the listener at "
                f"{self.host}:{self.port} use the same protocol?)")

    def _tls_error(self, exc: BaseException) -> SslAuthenticationError:
        has_cert = any(self.cfg[k] is not None for k in (
            "ssl.certificate.location", "ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.context"))
        return SslAuthenticationError(
            f"TLS handshake with {self.address} failed: {describe_tls_failure(exc, has_cert)}",
            broker=self.address,
        )

    async def _negotiate_versions(self) -> None:
        version = ApiVersionsRequest.MAX_VERSION
        request = ApiVersionsRequest(client_software_name="kafkalite", client_software_version=__version__)
        for _ in range(3):
            response = await self._send_handshake(request, api_version=version)
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
        """The SASL exchange: SaslHandshake, then SaslAuthenticate until the mechanism is done.

        Also used for KIP-368 re-authentication, on a connection with requests in flight:
        these requests go straight to the socket (they are not held).
        """
        mechanism = mechanism_for(self.cfg, self.host)
        handshake = await self._send_handshake(SaslHandshakeRequest(mechanism=mechanism.name))
        if handshake.error_code == UnsupportedSaslMechanismError.code:
            raise error_for_code(
                handshake.error_code,
                f"broker {self.address} does not enable SASL mechanism {mechanism.name}; "
                f"it offers {', '.join(handshake.mechanisms) or 'none'}",
            )
        if handshake.error_code:
            raise error_for_code(handshake.error_code,
                                 f"broker {self.address} refused the SASL {mechanism.name} handshake")
        lifetime_ms = 0
        try:
            token: bytes | None = await self._sasl_step(mechanism, mechanism.first_token)
            while token is not None:
                response = await self._send_handshake(SaslAuthenticateRequest(auth_bytes=token))
                if response.error_code:
                    raise error_for_code(response.error_code, self._sasl_failure(
                        mechanism, response.error_message or "SASL authentication failed"))
                lifetime_ms = response.session_lifetime_ms or 0
                token = await self._sasl_step(mechanism, mechanism.next_token, bytes(response.auth_bytes))
        except SaslAuthenticationError as exc:
            if self.address not in exc.message:
                exc.message = self._sasl_failure(mechanism, exc.message)
                exc.args = (exc.message,)
            raise
        if not mechanism.done:
            raise IllegalSaslStateError(f"SASL {mechanism.name} exchange with {self.address} ended early")
        self.sasl_principal = mechanism.principal
        self._schedule_reauthentication(lifetime_ms)

    @staticmethod
    async def _sasl_step(mechanism: SaslMechanism, step: Callable[..., T], *args: bytes) -> T:
        """One mechanism step; a blocking one (a KDC or token endpoint round trip, Kerberos
        or OIDC) runs on the default executor so that the event loop keeps serving the
        other connections meanwhile."""
        if not mechanism.blocking:
            return step(*args)
        return await asyncio.get_running_loop().run_in_executor(None, step, *args)

    def _sasl_failure(self, mechanism: SaslMechanism, reason: str) -> str:
        who = f" as user '{mechanism.principal}'" if mechanism.principal else ""
        return f"SASL {mechanism.name} authentication{who} with {self.address} failed: {reason}"

    # ------------------------------------------------------------ KIP-368 re-authentication

    def _schedule_reauthentication(self, lifetime_ms: int) -> None:
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        if lifetime_ms <= 0:
            self.sasl_session_expires_at = None
            return
        now = time.monotonic()
        self.sasl_session_expires_at = now + lifetime_ms / 1000.0
        # Brokers refuse a re-authentication less than a second after the previous one
        # (KafkaChannel's MIN_REAUTH_INTERVAL_ONE_SECOND).
        delay = max(lifetime_ms / 1000.0 * random.uniform(*REAUTH_WINDOW), min(1.05, lifetime_ms / 1000.0))
        self._reauth_timer = asyncio.get_running_loop().call_later(delay, self._begin_reauthentication)

    def _begin_reauthentication(self) -> None:
        if self._reauth_timer is not None:  # called early (not by the timer): drop the timer
            self._reauth_timer.cancel()
            self._reauth_timer = None
        if self.lifecycle.stage is not Stage.READY:  # closed, or already re-authenticating
            return
        self.lifecycle.reauthentication_started()
        self._reauth_task = asyncio.get_running_loop().create_task(self._reauthenticate())

    async def _reauthenticate(self) -> None:
        """Authenticate again on this connection; requests sent meanwhile are held."""
        started = time.monotonic()
        timeout_s = self.cfg["request.timeout.ms"] / 1000.0
        try:
            await asyncio.wait_for(self._authenticate(), timeout_s)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if isinstance(exc, AuthenticationError):
                self.stats.record("authentication_failures")
            reason = exc if isinstance(exc, KafkaError) else KafkaConnectionError(
                f"re-authentication with {self.address} failed: {exc!r}")
            log.warning("closing %r: %s", self, reason)
            self._reauth_task = None
            self.close(reason)
            return
        self._reauth_task = None
        life = self.lifecycle
        if life.stage is Stage.LOST:
            self.close(life.lost_reason)
            return
        if life.stage is Stage.CLOSED:  # closed while the last answer was on its way
            return
        held = life.reauthenticated()
        self.reauthentications += 1
        self.stats.record("reauthentications", latency_ms=(time.monotonic() - started) * 1000.0)
        log.debug("%r re-authenticated in %.1f ms", self, (time.monotonic() - started) * 1000.0)
        for request, version, timeout_ms, expect_response, future in held:
            if future.done():  # the caller gave up (cancelled) while it waited
                continue
            self._write(request, version, timeout_ms, expect_response, future)

    def close(self, reason: BaseException | None = None) -> None:
        """Close now; every request in flight fails with ``reason`` (or a connection error)."""
        life = self.lifecycle
        if life.stage is Stage.CLOSED:
            return
        held = life.close()
        self._close_reason = reason
        if life.established:
            self.stats.record("closed")
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        task, self._reauth_task = self._reauth_task, None
        if task is not None and task is not _current_task():
            task.cancel()
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
        self._fail_pending(reason, held)
        if self._on_close is not None:
            self._on_close(self, reason)

    # ------------------------------------------------------------ requests

    def require(self, feature: BrokerFeature, **context: object) -> None:
        """Raise :class:`~kafkalite.errors.UnsupportedFeatureError` at once unless this
        broker has ``feature`` (:mod:`kafkalite.net.features`); a no-op before the
        versions are known (only ApiVersions is sent then)."""
        if self.versions is not None:
            require(self.versions, feature, broker=self.address, **context)

    def api_version(self, request_class: type[Message], min_version: int = 0) -> int:
        """The version to send ``request_class`` in (raises when there is none).

        An ApiVersions answer damaged on the way but still decodable can lack an API that
        every broker serves (:data:`~kafkalite.net.versions.ALWAYS_SERVED`): the table is
        this connection's for its whole life, so every Metadata refresh or fetch through
        it would fail at once, forever (a consumer behind the corrupting proxy of
        kafkalite.testing stayed without metadata). The connection closes and the caller
        gets a retriable :class:`KafkaConnectionError`: the next connection asks again.
        """
        if self.versions is None:
            # Only ApiVersions itself is sent before negotiation.
            return request_class.MAX_VERSION
        try:
            return self.versions.version_for(request_class, min_version)
        except UnsupportedVersionForClientError as exc:
            feature = feature_of(request_class, min_version)
            if feature is None:
                raise
            raise unsupported(feature, feature.missing(self.versions) or exc.message, broker=self.address) from exc
        except ProtocolError as exc:
            log.warning("closing %r: %s", self, exc)
            self.close(exc)
            raise KafkaConnectionError(f"{exc.message} (connection to {self.address} closed to ask again)") from exc

    @overload
    def send(self, request: Request[ResponseT], *, api_version: int | None = None, timeout_ms: float | None = None,
             expect_response: Literal[True] = True) -> asyncio.Future[ResponseT]: ...

    @overload
    def send(self, request: Request[ResponseT], *, api_version: int | None = None, timeout_ms: float | None = None,
             expect_response: bool) -> asyncio.Future[ResponseT | None]: ...

    def send(self, request: Request[ResponseT], *, api_version: int | None = None, timeout_ms: float | None = None,
             expect_response: bool = True) -> asyncio.Future[ResponseT] | asyncio.Future[ResponseT | None]:
        """Write ``request`` now and return a future of its decoded response.

        The future fails with the response's decode error, a timeout, or the reason the
        connection closed. With ``expect_response=False`` (acks=0 produce) it resolves to
        None once the bytes are handed to the socket. During a KIP-368 re-authentication
        the request waits (in order) until the new session is established.
        """
        future: _ResponseFuture = asyncio.get_running_loop().create_future()
        life = self.lifecycle
        if life.sends_now:
            self._write(request, api_version, timeout_ms, expect_response, future)
        elif life.permits.holds:
            life.hold((request, api_version, timeout_ms, expect_response, future))
        else:
            future.set_exception(self._unusable_error())
        # The state machine decodes the answer with the response class the request
        # names (Request[ResponseT]), so the future holds a ResponseT.
        return cast("asyncio.Future[ResponseT | None]", future)

    def _send_handshake(self, request: Request[ResponseT], api_version: int | None = None) -> asyncio.Future[ResponseT]:
        """Send one of the handshake's own requests (ApiVersions, SaslHandshake,
        SaslAuthenticate): written at once, also while application requests are held."""
        future: _ResponseFuture = asyncio.get_running_loop().create_future()
        if self.lifecycle.permits.handshake:
            self._write(request, api_version, None, True, future)
        else:
            future.set_exception(self._unusable_error())
        return cast("asyncio.Future[ResponseT]", future)  # decoded as Request[ResponseT] names (see send)

    def _write(self, request: Message, api_version: int | None, timeout_ms: float | None,
               expect_response: bool, future: _ResponseFuture) -> None:
        assert self._protocol is not None and self._protocol.transport is not None
        version = api_version if api_version is not None else self.api_version(type(request))
        pending, frame = self.state.build_request(
            request, version, expect_response=expect_response, sent_at=time.monotonic(), context=future
        )
        self._protocol.transport.write(frame)
        self.last_used = time.monotonic()
        if pending is None:
            future.set_result(None)
            return
        timeout = (timeout_ms if timeout_ms is not None else self.cfg["request.timeout.ms"]) / 1000.0
        arm_at = self._deadlines.add(pending.correlation_id, (pending, timeout), self.last_used + timeout)
        if arm_at is not None:
            self._arm_deadline_timer(arm_at)

    def _arm_deadline_timer(self, at: float) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._deadline_timer = asyncio.get_running_loop().call_later(
            max(0.0, at - time.monotonic()), self._on_deadline_timer)

    def _on_deadline_timer(self) -> None:
        self._deadline_timer = None
        expired, next_at = self._deadlines.fired(time.monotonic())
        if expired:
            pending, timeout = expired[0]  # the oldest: the connection closes for all of them
            self._on_timeout(pending, timeout)
        elif next_at is not None:
            self._arm_deadline_timer(next_at)

    async def request(self, request: Request[ResponseT], *, api_version: int | None = None,
                      timeout_ms: float | None = None) -> ResponseT:
        """Send ``request`` and await its response (see :meth:`send`)."""
        return await self.send(request, api_version=api_version, timeout_ms=timeout_ms)

    async def drain(self) -> None:
        """Wait while the socket's write buffer is above its high-water mark."""
        if self._protocol is not None:
            await self._protocol._can_write.wait()

    # ------------------------------------------------------------ callbacks

    def _on_received(self, nbytes: int) -> None:
        self.last_used = time.monotonic()  # traffic either way keeps a connection from idling out
        try:
            completed = self.state.received(nbytes)
        except ProtocolError as exc:
            log.warning("closing %r: %s", self, exc)
            self.close(exc)
            return
        for pending, result in completed:
            self._deadlines.answered(pending.correlation_id)
            future = pending.context
            if future is None or future.done():  # _write attaches a future to every request
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)

    def _on_lost(self, exc: Exception | None) -> None:
        life = self.lifecycle
        if life.stage is Stage.CLOSED:
            return
        reason: KafkaError
        if isinstance(exc, ssl.SSLError) and not life.established:
            # TLS 1.3: the broker checks our certificate after the handshake, so a
            # refused client certificate shows up as an alert on the first read.
            reason = self._tls_error(exc)
        else:
            reason = KafkaConnectionError(f"connection to {self.address} lost" + (f": {exc}" if exc else ""))
        if life.stage is Stage.REAUTHENTICATING:
            # A broker that refuses a re-authentication answers, then hangs up at once:
            # the hang-up must not hide the refusal. Fail what can no longer be
            # answered; the re-authentication task closes with the precise reason.
            self._fail_pending(reason, life.transport_lost(reason))
            return
        self.close(reason)

    def _on_timeout(self, pending: PendingRequest[_ResponseFuture], timeout: float) -> None:
        from kafkalite.protocol.messages import API_NAMES

        err = KafkaTimeoutError(
            f"{API_NAMES.get(pending.api_key, pending.api_key)} request to node {self.node_id} "
            f"({self.host}:{self.port}) timed out after {timeout * 1000:.0f} ms"
        )
        future = pending.context
        if future is not None and not future.done():
            future.set_exception(err)
        self.close(KafkaConnectionError(f"closed after a request timed out: {err.message}"))

    def _unusable_error(self) -> BaseException:
        """Why a request cannot go out in the current stage."""
        life = self.lifecycle
        if life.stage is Stage.LOST and life.lost_reason is not None:
            return life.lost_reason
        if life.stage is Stage.CLOSED:
            return self._closed_error()
        return KafkaConnectionError(f"connection to {self.address} is not established yet ({life.stage.value})")

    def _closed_error(self) -> KafkaError:
        reason = self._close_reason
        if isinstance(reason, KafkaConnectionError):
            return reason
        text = f"connection to {self.host}:{self.port} (node {self.node_id}) is closed"
        if reason is not None:
            text += f": {reason}"
        return KafkaConnectionError(text)

    def _fail_pending(self, reason: BaseException | None, held: list[_HeldRequest]) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        self._deadlines.clear()
        # The reason itself when it is specific (a malformed frame, the client closing),
        # so callers see what went wrong rather than just "closed".
        err = reason if isinstance(reason, KafkaError) else self._closed_error()
        futures = [pending.context for pending in self.state.fail_all()]
        futures += [request[-1] for request in held]
        for future in futures:
            if future is not None and not future.done():
                future.set_exception(err)
                # Nobody may be awaiting a request whose caller already gave up.
                future.exception()


def _current_task() -> asyncio.Task[object] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


def broker_version_range(conn: BrokerConnection, request_class: type[Message]) -> VersionRange | None:
    """The broker's advertised range for ``request_class`` (None if it lacks the API)."""
    if conn.versions is None:
        return None
    return conn.versions.broker_ranges.get(request_class.API_KEY)

