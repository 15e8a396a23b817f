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

from kafkalite.clients_common.membership import (
    EpochMember,
    HeartbeatAnswer,
    MembershipState,
    TopicIdAssignment,
    Verdict,
)


def java_uuid() -> str:
    """A random id in Java's ``Uuid.toString()`` form (URL-safe base64, 22 characters);
    like ``Uuid.randomUuid()`` it never starts with '-' (such ids read as options)."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class Next(enum.Enum):
    OK = "ok"                    # carry on
    ASSIGNMENT = "assignment"    # a new assignment: resolve topic ids and apply it
    FENCED = "fenced"            # assignment dropped: join again with epoch 0
    COORDINATOR = "coordinator"  # find the coordinator again, then retry
    FATAL = "fatal"              # stop: raise from every poll()
    RETRY = "retry"              # another error: back off and try again


_NEXT = {Verdict.ACCEPTED: Next.OK, Verdict.NEW_ASSIGNMENT: Next.ASSIGNMENT, Verdict.FENCED: Next.FENCED,
         Verdict.COORDINATOR: Next.COORDINATOR, Verdict.FATAL: Next.FATAL, Verdict.OTHER: Next.RETRY}


class ShareMemberState(EpochMember):
    """One member of a share group (see the module doc)."""

    #: GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED,
    #: TOPIC_AUTHORIZATION_FAILED, INCONSISTENT_GROUP_PROTOCOL (the id is a consumer group's),
    #: GROUP_ID_NOT_FOUND, UNSUPPORTED_ASSIGNOR
    FATAL_ERRORS = frozenset({30, 35, 42, 81, 29, 23, 69, 112})

    def __init__(self, member_id: str | None = None) -> None:
        super().__init__(member_id or java_uuid())
        self.assignment: TopicIdAssignment = {}
        self._sent_subscription: tuple[str, ...] | None = None

    # ------------------------------------------------------------ queries

    def should_heartbeat(self, subscribed: bool) -> bool:
        return subscribed and self.fatal_code is None and self.state is not MembershipState.LEAVING

    @property
    def active(self) -> bool:
        """Joined (epoch > 0): ShareFetch and ShareAcknowledge may be sent."""
        return self.member_epoch > 0 and self.state is MembershipState.STABLE

    # ------------------------------------------------------------ heartbeats

    def _joining(self) -> None:
        self._sent_subscription = None

    def fields(self, subscription: tuple[str, ...]) -> tuple[bool, bool]:
        """(send rack, send subscribed topic names) for the next heartbeat."""
        full = self.member_epoch == 0 or self._sent_subscription is None
        return full, full or self._sent_subscription != subscription

    def sent(self, error_code: int | None, subscription: tuple[str, ...]) -> None:
        """A heartbeat carrying ``subscription`` was answered (or failed: None)."""
        self._sent_subscription = subscription if error_code == 0 else None

    def on_response(self, answer: HeartbeatAnswer) -> Next:
        verdict = self.read_answer(answer, self.assignment)
        if verdict is Verdict.NEW_ASSIGNMENT and answer.assignment is not None:
            self.assignment = answer.assignment
        return _NEXT[verdict]

    def fenced(self) -> None:
        self.member_epoch = 0
        self.state = MembershipState.JOINING
        self.assignment = {}
        self._sent_subscription = None

    # ------------------------------------------------------------ leaving

    def should_send_leave(self) -> bool:
        return self.member_epoch > 0

    def leaving(self) -> None:
        self.state = MembershipState.LEAVING

    def left(self) -> None:
        self.member_epoch = 0
        self.state = MembershipState.UNSUBSCRIBED
        self.assignment = {}
        self._sent_subscription = None
