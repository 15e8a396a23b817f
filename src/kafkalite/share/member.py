"""A share group member (KIP-932) as a plain state machine.

:class:`ShareMemberState` holds what the member knows — its member id (made by the
client, kept for the life of the consumer), member epoch, the assignment, what the last
heartbeat carried — and decides what each ShareGroupHeartbeat answer means. The asyncio
driver (:mod:`kafkalite.share.heartbeat`) sends the requests. It follows Java's
``ShareMembershipManager``:

* the assignment is computed by the broker and simply taken: share groups hand the
  same partition to many members, so there is nothing to revoke before another member
  may read it (no reconciliation handshake, no owned partitions in the heartbeat);
* heartbeats are incremental: the subscription and rack go only with the joining
  heartbeat (epoch 0) and when the subscription changed; an error makes the next one
  full;
* UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH: the assignment is dropped and the member
  joins again with epoch 0 under the same member id;
* fatal codes stop the member (raised from poll()); coordinator codes make the driver
  find the coordinator again;
* leaving sends epoch -1.

Example::

    member = ShareMemberState()
    member.on_response(HeartbeatAnswer(0, member.member_id, 1, 1000, {topic_id: [0]}))
    member.member_epoch, member.interval_s     # (1, 1.0)
"""

from __future__ import annotations

import base64
import enum
import os
import uuid
from typing import NamedTuple

LEAVE_EPOCH = -1
COORDINATOR_LOAD_IN_PROGRESS = 14
#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
COORDINATOR_ERRORS = frozenset({14, 15, 16})
#: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH
FENCED_ERRORS = frozenset({25, 110})
#: GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED,
#: TOPIC_AUTHORIZATION_FAILED, INCONSISTENT_GROUP_PROTOCOL (the id is a consumer group's),
#: GROUP_ID_NOT_FOUND, UNSUPPORTED_ASSIGNOR
FATAL_ERRORS = frozenset({30, 35, 42, 81, 29, 23, 69, 112})

Assignment = dict[uuid.UUID, list[int]]


def java_uuid() -> str:
    """A random id in Java's ``Uuid.toString()`` form (URL-safe base64, 22 characters);
    like ``Uuid.randomUuid()`` it never starts with '-' (such ids read as options)."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class State(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    STABLE = "stable"
    LEAVING = "leaving"
    FATAL = "fatal"


class Next(enum.Enum):
    OK = "ok"                    # carry on
    ASSIGNMENT = "assignment"    # a new assignment: resolve topic ids and apply it
    FENCED = "fenced"            # assignment dropped: join again with epoch 0
    COORDINATOR = "coordinator"  # find the coordinator again, then retry
    FATAL = "fatal"              # stop: raise from every poll()
    RETRY = "retry"              # another error: back off and try again


class HeartbeatAnswer(NamedTuple):
    error_code: int
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: the assignment by topic id, or None when the answer carries none
    assignment: Assignment | None = None


class ShareMemberState:
    """One member of a share group (see the module doc)."""

    def __init__(self, member_id: str | None = None) -> None:
        self.member_id = member_id or java_uuid()
        self.member_epoch = 0
        self.state = State.UNSUBSCRIBED
        self.interval_s = 5.0
        self.assignment: Assignment = {}
        self.fatal_code: int | None = None
        self._sent_subscription: tuple[str, ...] | None = None

    # ------------------------------------------------------------ queries

    def should_heartbeat(self, subscribed: bool) -> bool:
        return subscribed and self.fatal_code is None and self.state is not State.LEAVING

    @property
    def active(self) -> bool:
        """Joined (epoch > 0): ShareFetch and ShareAcknowledge may be sent."""
        return self.member_epoch > 0 and self.state is State.STABLE

    # ------------------------------------------------------------ heartbeats

    def start_joining(self) -> None:
        if self.state is State.UNSUBSCRIBED:
            self.state = State.JOINING
            self.member_epoch = 0
            self._sent_subscription = None

    def fields(self, subscription: tuple[str, ...]) -> tuple[bool, bool]:
        """(send rack, send subscribed topic names) for the next heartbeat."""
        full = self.member_epoch == 0 or self._sent_subscription is None
        return full, full or self._sent_subscription != subscription

    def sent(self, error_code: int | None, subscription: tuple[str, ...]) -> None:
        """A heartbeat carrying ``subscription`` was answered (or failed: None)."""
        self._sent_subscription = subscription if error_code == 0 else None

    def on_response(self, answer: HeartbeatAnswer) -> Next:
        code = answer.error_code
        if code == 0:
            if answer.member_id:
                self.member_id = answer.member_id
            if answer.heartbeat_interval_ms > 0:
                self.interval_s = answer.heartbeat_interval_ms / 1000.0
            self.member_epoch = answer.member_epoch
            if self.state is State.JOINING:
                self.state = State.STABLE
            if answer.assignment is not None and answer.assignment != self.assignment:
                self.assignment = answer.assignment
                return Next.ASSIGNMENT
            return Next.OK
        if code in FENCED_ERRORS:
            self.fenced()
            return Next.FENCED
        if code in COORDINATOR_ERRORS:
            return Next.COORDINATOR
        if code in FATAL_ERRORS:
            self.fatal_code = code
            self.state = State.FATAL
            return Next.FATAL
        return Next.RETRY

    def fenced(self) -> None:
        self.member_epoch = 0
        self.state = State.JOINING
        self.assignment = {}
        self._sent_subscription = None

    # ------------------------------------------------------------ leaving

    def should_send_leave(self) -> bool:
        return self.member_epoch > 0

    def leaving(self) -> None:
        self.state = State.LEAVING

    def left(self) -> None:
        self.member_epoch = 0
        self.state = State.UNSUBSCRIBED
        self.assignment = {}
        self._sent_subscription = None
