"""The lifecycle of one broker connection as a state machine with no sockets (sans-I/O).

:class:`~kafkalite.net.transport.BrokerConnection` owns the socket, the timers and the
tasks; this object decides what the connection may do at each point and which event may
come next. The stages and the events that move between them::

    NEW --connect--> CONNECTING --connected--> NEGOTIATING --versions_agreed--> READY
                     (TCP, TLS)                (ApiVersions)       |             ^  |
                                                  (SASL_*) -------+             |  | reauthentication_started
                                                       v                        |  v  (KIP-368 timer)
                                                AUTHENTICATING --authenticated--+  REAUTHENTICATING
                                                (SaslHandshake,    reauthenticated  |         |
                                                 SaslAuthenticate) <----------------+         | transport_lost
                                                                                               v
    any stage --close--> CLOSED                                                              LOST

What each stage permits (:class:`Permits`):

- ``sends_now``: the application's requests go to the socket at once (READY only);
- ``holds``: they wait, in order, and go out when the stage is READY again
  (REAUTHENTICATING: Java's ``KafkaChannel`` does not interleave application requests
  with the re-authentication's SaslHandshake / SaslAuthenticate either);
- ``handshake``: the handshake's own requests (ApiVersions, SaslHandshake,
  SaslAuthenticate) may be written (NEGOTIATING, AUTHENTICATING, REAUTHENTICATING);
- ``open``: the connection counts as connected for its client (from NEGOTIATING until
  CLOSED; LOST too, so that a client keeps the connection until the re-authentication
  it awaits gives its verdict and closes it with the precise reason).

Every other request fails at once: before READY (the connection is not established),
in LOST (the socket closed during a re-authentication) and in CLOSED. An event a stage
does not take raises :class:`IllegalConnectionEventError` naming both; ``close`` is
taken everywhere (closing twice does nothing). Requests held during a
re-authentication are kept here, in order: :meth:`ConnectionLifecycle.reauthenticated`
hands them back for writing, :meth:`ConnectionLifecycle.close` and
:meth:`ConnectionLifecycle.transport_lost` hand them back for failing.

Example::

    life = ConnectionLifecycle(authenticates=True)
    life.connect(); life.connected(); life.versions_agreed()   # AUTHENTICATING
    life.authenticated()                                       # READY: sends_now
    life.reauthentication_started()                            # KIP-368 timer fired
    life.hold(request)                                         # waits
    for held in life.reauthenticated():                        # READY again
        write(held)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from kafkalite.errors import IllegalStateError

T = TypeVar("T")


class Stage(Enum):
    NEW = "new"
    CONNECTING = "connecting"              # TCP connect, TLS handshake
    NEGOTIATING = "negotiating"            # ApiVersions
    AUTHENTICATING = "authenticating"      # SASL on the new connection
    READY = "ready"
    REAUTHENTICATING = "reauthenticating"  # KIP-368, on the open connection
    LOST = "lost"                          # socket gone during a re-authentication; its verdict pending
    CLOSED = "closed"


class Event(Enum):
    CONNECT = "connect"
    CONNECTED = "connected"
    VERSIONS_AGREED = "versions_agreed"
    AUTHENTICATED = "authenticated"
    REAUTHENTICATION_STARTED = "reauthentication_started"
    REAUTHENTICATED = "reauthenticated"
    TRANSPORT_LOST = "transport_lost"
    CLOSE = "close"


@dataclass(frozen=True)
class Permits:
    """What the connection may do in one stage (see the module docstring)."""

    sends_now: bool = False
    holds: bool = False
    handshake: bool = False
    open: bool = False


PERMITS: dict[Stage, Permits] = {
    Stage.NEW: Permits(),
    Stage.CONNECTING: Permits(),
    Stage.NEGOTIATING: Permits(handshake=True, open=True),
    Stage.AUTHENTICATING: Permits(handshake=True, open=True),
    Stage.READY: Permits(sends_now=True, open=True),
    Stage.REAUTHENTICATING: Permits(holds=True, handshake=True, open=True),
    Stage.LOST: Permits(open=True),
    Stage.CLOSED: Permits(),
}

# (stage, event) -> next stage. VERSIONS_AGREED goes to AUTHENTICATING instead of READY
# when the connection authenticates (SASL_PLAINTEXT, SASL_SSL); CLOSE is taken anywhere.
TRANSITIONS: dict[tuple[Stage, Event], Stage] = {
    (Stage.NEW, Event.CONNECT): Stage.CONNECTING,
    (Stage.CONNECTING, Event.CONNECTED): Stage.NEGOTIATING,
    (Stage.NEGOTIATING, Event.VERSIONS_AGREED): Stage.READY,
    (Stage.AUTHENTICATING, Event.AUTHENTICATED): Stage.READY,
    (Stage.READY, Event.REAUTHENTICATION_STARTED): Stage.REAUTHENTICATING,
    (Stage.REAUTHENTICATING, Event.REAUTHENTICATED): Stage.READY,
    (Stage.REAUTHENTICATING, Event.TRANSPORT_LOST): Stage.LOST,
    **{(stage, Event.CLOSE): Stage.CLOSED for stage in Stage},
}


class IllegalConnectionEventError(IllegalStateError):
    """An event the connection's current stage does not take (a bug in the caller)."""


class ConnectionLifecycle(Generic[T]):
    """The stage of one connection, what it permits, and the requests it holds.

    ``authenticates``: SASL follows ApiVersions (``security.protocol`` SASL_*).
    ``established`` becomes True on reaching READY the first time and stays so (a closed
    connection that was established counts as a closed connection in the metrics).
    ``sends_now`` mirrors ``permits.sends_now`` as a plain attribute: the request path
    reads it once per request.
    """

    def __init__(self, authenticates: bool) -> None:
        self.authenticates = authenticates
        self.stage = Stage.NEW
        self.permits = PERMITS[Stage.NEW]
        self.sends_now = False
        self.established = False
        self.lost_reason: BaseException | None = None
        self._held: deque[T] = deque()

    def __repr__(self) -> str:
        return f"<ConnectionLifecycle {self.stage.value} held={len(self._held)}>"

    @property
    def held(self) -> int:
        """How many requests wait for the re-authentication to end."""
        return len(self._held)

    def _move(self, event: Event) -> None:
        target = TRANSITIONS.get((self.stage, event))
        if target is None:
            raise IllegalConnectionEventError(
                f"connection event '{event.value}' is not allowed in stage '{self.stage.value}' "
                f"(it takes: {', '.join(e.value for (s, e) in TRANSITIONS if s is self.stage)})")
        if event is Event.VERSIONS_AGREED and self.authenticates:
            target = Stage.AUTHENTICATING
        self.stage = target
        self.permits = PERMITS[target]
        self.sends_now = self.permits.sends_now
        if target is Stage.READY:
            self.established = True

    # ------------------------------------------------------------ events

    def connect(self) -> None:
        """The TCP connect (and TLS handshake) begins."""
        self._move(Event.CONNECT)

    def connected(self) -> None:
        """The socket (and TLS) is up: ApiVersions comes next."""
        self._move(Event.CONNECTED)

    def versions_agreed(self) -> None:
        """ApiVersions answered: READY, or AUTHENTICATING for SASL."""
        self._move(Event.VERSIONS_AGREED)

    def authenticated(self) -> None:
        """The SASL exchange of a new connection succeeded."""
        self._move(Event.AUTHENTICATED)

    def reauthentication_started(self) -> None:
        """KIP-368: the session nears its end; requests are held from now on."""
        self._move(Event.REAUTHENTICATION_STARTED)

    def reauthenticated(self) -> list[T]:
        """The re-authentication succeeded: READY again; the held requests, in the order
        they were held, to write now."""
        self._move(Event.REAUTHENTICATED)
        return self._take_held()

    def transport_lost(self, reason: BaseException) -> list[T]:
        """The socket closed during a re-authentication (a broker that refuses one answers,
        then hangs up): LOST until the re-authentication ends; the held requests, to fail
        with ``reason``."""
        self._move(Event.TRANSPORT_LOST)
        self.lost_reason = reason
        return self._take_held()

    def close(self) -> list[T]:
        """Closed (from any stage; again: nothing happens); the held requests, to fail."""
        self._move(Event.CLOSE)
        return self._take_held()

    # ------------------------------------------------------------ requests

    def hold(self, request: T) -> None:
        """Keep ``request`` until the re-authentication ends (REAUTHENTICATING only)."""
        if not self.permits.holds:
            raise IllegalConnectionEventError(f"requests are not held in stage '{self.stage.value}'")
        self._held.append(request)

    def _take_held(self) -> list[T]:
        held = list(self._held)
        self._held.clear()
        return held
