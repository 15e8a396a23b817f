"""The KIP-848 group member (``group.protocol=consumer``) as a plain state machine.

:class:`ConsumerMemberState` holds what the member knows — member id and epoch, state,
the broker's target assignment, what the last heartbeat carried — and decides, for each
event, what happens next; the asyncio driver
(:class:`~kafkalite.consumer.group_consumer_protocol.ConsumerGroupMember`) sends the
ConsumerGroupHeartbeats and runs the listener. It follows Java's
``ConsumerMembershipManager``:

* heartbeats are incremental: the subscription and the owned partitions are sent only
  when they changed since the last successful heartbeat; joining (epoch 0), leaving and
  any error make the next one *full*;
* a response's assignment is the *target*; reconciling it against what the member owns
  gives ``revoked`` (auto-commit, ``on_partitions_revoked``, then dropped; the next
  heartbeat tells the broker, which only then hands them on) and ``added``
  (``on_partitions_assigned``, called once even with nothing added on the first
  reconciliation, as Java does);
* UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH: the partitions are *lost*
  (``on_partitions_lost``) and the member joins again with epoch 0;
* fatal codes stop the member; coordinator errors make the driver look it up again;
* leaving sends epoch -1, or -2 for a static member (which keeps its assignment on the
  broker for a quick restart).

Example::

    member = ConsumerMemberState(member_id="m")
    member.start_joining()
    member.on_heartbeat_response(HeartbeatAnswer(0, "m", 1, 5000, {topic_id: [0, 1]}))
    plan = member.reconcile({tp0, tp1}, owned=set())     # plan.added == {tp0, tp1}
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from typing import NamedTuple

from kafkalite.clients_common.membership import (
    LEAVE_EPOCH,
    EpochMember,
    HeartbeatAnswer,
    MembershipState,
    TopicIdAssignment,
    Verdict,
)
from kafkalite.types import TopicPartition

STATIC_LEAVE_EPOCH = -2


class Next(enum.Enum):
    OK = "ok"                      # nothing more to do
    RECONCILE = "reconcile"        # a new target assignment: reconcile it
    LOST = "lost"                  # fenced: partitions are lost, join again with epoch 0
    COORDINATOR = "coordinator"    # find the coordinator again
    FATAL = "fatal"                # stop: raise from every poll()
    IGNORE = "ignore"              # log and carry on


_NEXT = {Verdict.ACCEPTED: Next.OK, Verdict.NEW_ASSIGNMENT: Next.RECONCILE, Verdict.FENCED: Next.LOST,
         Verdict.COORDINATOR: Next.COORDINATOR, Verdict.FATAL: Next.FATAL, Verdict.OTHER: Next.IGNORE}


class HeartbeatFields(NamedTuple):
    """What the next heartbeat carries: ``full`` adds instance id, rack, rebalance timeout
    and server assignor; the subscription and owned partitions only when they changed."""

    full: bool
    subscription: bool
    owned: bool


class Reconciliation(NamedTuple):
    wanted: frozenset[TopicPartition]
    revoked: frozenset[TopicPartition]
    added: frozenset[TopicPartition]
    #: take the new assignment and call on_partitions_assigned(added)
    assign: bool


class ConsumerMemberState(EpochMember):
    """One member of a KIP-848 consumer group (see the module doc)."""

    #: GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION, INVALID_REQUEST, GROUP_ID_NOT_FOUND,
    #: GROUP_MAX_SIZE_REACHED, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID,
    #: UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION: the member stops.
    FATAL_ERRORS = frozenset({30, 35, 42, 69, 81, 82, 111, 112, 128})

    def __init__(self, member_id: str | None = None, instance_id: str | None = None) -> None:
        super().__init__(member_id or str(uuid.uuid4()))
        self.instance_id = instance_id
        self.target: TopicIdAssignment | None = None
        self.target_changed = False
        self.first_reconcile = True
        self.rejoin_allowed = True
        # (subscription, owned partitions) of the last answered heartbeat: values only
        # compared with the next heartbeat's, to leave out what did not change.
        self._last_sent: tuple[object, object] | None = None

    # ------------------------------------------------------------ queries

    def should_heartbeat(self, subscribed: bool) -> bool:
        return subscribed and self.rejoin_allowed and self.fatal_code is None

    def can_commit(self) -> bool:
        return self.member_epoch > 0

    def poll_timed_out(self, since_poll_s: float, max_poll_s: float) -> bool:
        return self.member_epoch > 0 and since_poll_s > max_poll_s

    # ------------------------------------------------------------ heartbeats

    def _joining(self) -> None:
        self.first_reconcile = True

    def heartbeat_fields(self, epoch: int, subscription: object, owned: object) -> HeartbeatFields:
        """Which fields the heartbeat with ``epoch`` must carry (KIP-848 incremental)."""
        last = self._last_sent
        full = epoch <= 0 or last is None
        return HeartbeatFields(full, full or last is None or last[0] != subscription,
                               full or last is None or last[1] != owned)

    def sent(self, error_code: int | None, epoch: int, subscription: object, owned: object) -> None:
        """A heartbeat was answered (``error_code``) or failed (None): what the next one
        may leave out."""
        if error_code == 0 and epoch >= 0:
            self._last_sent = (subscription, owned)
        else:
            self._last_sent = None

    def on_heartbeat_response(self, answer: HeartbeatAnswer) -> Next:
        verdict = self.read_answer(answer, self.target)
        if verdict is Verdict.NEW_ASSIGNMENT:
            self.target = answer.assignment
            self.target_changed = True
        return _NEXT[verdict]

    def fenced(self) -> None:
        """Fenced by the broker: join again from epoch 0 with nothing owned."""
        self.member_epoch = 0
        self._last_sent = None
        self.state = MembershipState.JOINING
        self.target = None
        self.target_changed = False
        self.first_reconcile = True

    # ------------------------------------------------------------ reconciliation

    def take_target_change(self) -> bool:
        """True once after a new target arrived (the driver starts reconciling)."""
        changed, self.target_changed = self.target_changed, False
        return changed

    def reconcile(self, wanted: Iterable[TopicPartition], owned: Iterable[TopicPartition]) -> Reconciliation:
        """Compare the target (resolved to names) with what the member owns."""
        want = frozenset(wanted)
        have = frozenset(owned)
        self.state = MembershipState.RECONCILING
        revoked = have - want
        added = want - have
        assign = bool(added or revoked) or self.first_reconcile
        if assign:
            self.first_reconcile = False
        return Reconciliation(want, revoked, added, assign)

    def reconciled(self, target: TopicIdAssignment | None) -> bool:
        """Reconciliation of ``target`` finished; True if it is still the target (STABLE)."""
        if self.target is target:
            self.state = MembershipState.STABLE
            return True
        return False

    # ------------------------------------------------------------ leaving

    def leave_epoch(self) -> int:
        return STATIC_LEAVE_EPOCH if self.instance_id is not None else LEAVE_EPOCH

    def should_send_leave(self) -> bool:
        return self.member_epoch > 0 or self.state is MembershipState.STABLE

    def left(self) -> None:
        self.member_epoch = 0
        self.state = MembershipState.UNSUBSCRIBED
        self.target = None

    def poll_timeout(self) -> None:
        """max.poll.interval.ms passed: the driver leaves; joining waits for poll()."""
        self.rejoin_allowed = False
        self.state = MembershipState.UNSUBSCRIBED

    def allow_rejoin(self) -> None:
        self.rejoin_allowed = True
