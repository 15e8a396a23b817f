"""The classic group member as a plain state machine (no sockets, no asyncio).

:class:`ClassicMemberState` holds what a member of a classic consumer group knows —
state, generation, member id, the rejoin flags, whether its partitions were lost —
and decides, for each event, what must happen next. The asyncio driver
(:class:`~kafkalite.consumer.coordinator.ClassicGroupMember`) sends JoinGroup / SyncGroup
/ Heartbeat / LeaveGroup, calls the listener and feeds the answers back here; the
decisions follow Java's ``AbstractCoordinator`` / ``ConsumerCoordinator``:

=========================  ===============================================================
event                      decision
=========================  ===============================================================
``prepare(owned, topics)`` what to revoke before joining: everything (eager), only
                           partitions of topics no longer subscribed (cooperative), or
                           report the partitions *lost* (membership already gone)
JoinGroup answer           joined (-> COMPLETING_REBALANCE) / join again (MEMBER_ID_REQUIRED
                           with the given id, UNKNOWN_MEMBER_ID with none,
                           ILLEGAL_GENERATION and REBALANCE_IN_PROGRESS keeping the id)
                           / fail (coordinator moved, fatal codes)
SyncGroup answer           assignment / join again (REBALANCE_IN_PROGRESS,
                           UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) / fail
``complete(new, owned)``   STABLE; eager: assign all; cooperative: revoke what moved
                           away, add the rest, and rejoin once more if anything was
                           revoked (KIP-429's second round)
Heartbeat answer           fine / rejoin (REBALANCE_IN_PROGRESS) / membership lost
                           (ILLEGAL_GENERATION keeps the member id, UNKNOWN_MEMBER_ID
                           drops it) / fenced static member (fatal) / coordinator moved
``commit_gate()``          commit with the generation (STABLE) / retry after poll()
                           (a rebalance is under way) / fail (not a member)
OffsetCommit answer        generation and member errors: retry after poll() when the
                           member already joined a newer generation, else membership
                           lost (Java's ``OffsetCommitResponseHandler``)
poll timeout, leave        generation forgotten (static members keep their member id);
                           after a poll timeout joining waits for the next poll()
=========================  ===============================================================

Example::

    member = ClassicMemberState(RebalanceProtocol.COOPERATIVE)
    member.on_join_response(JoinResult(0, generation_id=3, member_id="m-1", leader="m-1"))
    change = member.complete({tp_a, tp_b}, owned={tp_a, tp_c})
    change.revoked, change.added, change.rejoin      # {tp_c}, {tp_b}, True
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkalite.consumer.assignors import RebalanceProtocol
from kafkalite.types import TopicPartition

# Error codes the member reacts to by name.
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS = 22, 25, 27
MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID = 79, 82
COORDINATOR_ERRORS = frozenset({COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})
#: INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT,
#: GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED, FENCED_INSTANCE_ID: the member stops.
FATAL_ERRORS = frozenset({23, 24, 26, 30, 81, FENCED_INSTANCE_ID})


class MemberState(enum.Enum):
    """Java's ``AbstractCoordinator.MemberState``."""

    UNJOINED = "unjoined"
    PREPARING_REBALANCE = "preparing_rebalance"
    COMPLETING_REBALANCE = "completing_rebalance"
    STABLE = "stable"


class Next(enum.Enum):
    """What the driver does after an answer."""

    OK = "ok"                      # go on (joined, synced, heartbeat fine)
    JOIN_AGAIN = "join_again"      # send JoinGroup again now (same rebalance)
    REJOIN = "rejoin"              # a new rebalance is needed (the join loop runs it)
    LOST = "lost"                  # membership lost: partitions are lost, join again
    FAIL = "fail"                  # raise the error (retried with backoff unless fatal)
    FATAL = "fatal"                # stop: raise from every poll()
    COORDINATOR = "coordinator"    # find the coordinator again, retry later
    IGNORE = "ignore"              # log and carry on


class CommitGate(enum.Enum):
    """Whether an offset commit may go out now (Java's ``generationIfStable()`` /
    ``rebalanceInProgress()``), and what a refused or failed commit means."""

    OPEN = "open"                # a stable generation: commit with it
    REBALANCING = "rebalancing"  # RebalanceInProgressError: poll() completes it, then commit again
    NOT_MEMBER = "not_member"    # CommitFailedError: the membership is gone
    FATAL = "fatal"              # the broker's error is fatal (a fenced static member)


class JoinResult(NamedTuple):
    error_code: int
    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None
    leader: str = ""


class Revocation(NamedTuple):
    """What ``prepare`` decided: call ``on_partitions_lost`` or ``on_partitions_revoked``
    with ``partitions``; ``always``: call it even with no partitions (eager, as Java)."""

    partitions: frozenset[TopicPartition]
    lost: bool = False
    always: bool = False


class AssignmentChange(NamedTuple):
    """What ``complete`` decided: revoke ``revoked`` first, then own ``assigned`` and call
    ``on_partitions_assigned(added)``; ``rejoin`` with ``reason`` when not empty."""

    assigned: frozenset[TopicPartition]
    added: frozenset[TopicPartition]
    revoked: frozenset[TopicPartition]
    rejoin_reason: str = ""


@dataclass
class ClassicMemberState:
    """One member's view of its classic group (see the module doc)."""

    protocol: RebalanceProtocol = RebalanceProtocol.EAGER
    instance_id: str | None = None
    state: MemberState = MemberState.UNJOINED
    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None
    leader_id: str = ""
    need_rejoin: bool = True
    rejoin_reason: str = "the consumer subscribed"
    #: False after a poll timeout until the application polls again
    rejoin_allowed: bool = True
    #: the owned partitions must be reported lost (on_partitions_lost) before joining
    lost: bool = False
    fatal_code: int | None = None
    subscribed_at_join: frozenset[str] = frozenset()
    #: partitions per topic when the leader assigned (a change triggers a rebalance)
    partition_counts: dict[str, int] = field(default_factory=dict)

    # ------------------------------------------------------------ queries

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id

    @property
    def has_generation(self) -> bool:
        return self.generation_id >= 0

    def should_join(self, subscribed: bool) -> bool:
        """Whether the join loop may run a rebalance now."""
        return subscribed and self.need_rejoin and self.rejoin_allowed and self.fatal_code is None

    def should_heartbeat(self) -> bool:
        """Heartbeats go out in a generation, except while a JoinGroup is outstanding
        (Java disables them in UNJOINED and PREPARING_REBALANCE); they continue while
        the listener revokes partitions before joining and while SyncGroup waits."""
        return self.has_generation and self.state in (MemberState.STABLE, MemberState.COMPLETING_REBALANCE)

    @property
    def rebalancing(self) -> bool:
        return self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    def commit_gate(self) -> CommitGate:
        """May a commit go out now? Only with a *stable* generation, as Java's
        ``sendOffsetCommitRequest`` decides: once JoinGroup is sent the broker answers the
        member's requests after the join completes (one request at a time per
        connection), so a commit carrying the old generation would come back
        ILLEGAL_GENERATION although the member is fine. Between JoinGroup and the
        assignment the commit is refused as a rebalance in progress (retry after
        poll()); without a generation at all the member is not in the group."""
        if self.state is MemberState.STABLE and self.has_generation:
            return CommitGate.OPEN
        if self.rebalancing:
            return CommitGate.REBALANCING
        return CommitGate.NOT_MEMBER

    def on_commit_error(self, code: int, sent_generation: int) -> CommitGate:
        """An OffsetCommit sent with ``sent_generation`` failed with a group error code.

        Java's ``OffsetCommitResponseHandler``: REBALANCE_IN_PROGRESS asks for a rejoin
        and the commit may be retried after poll(); ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID
        (and FENCED_INSTANCE_ID) mean only "retry after poll()" when the member has
        meanwhile moved to a newer generation or is rejoining, and otherwise that the
        membership is gone (generation reset, rejoin; ILLEGAL_GENERATION keeps the member
        id). The caller reports lost partitions when :attr:`lost` became true.
        """
        if code == REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:  # a rejoin already under way is enough
                self.request_rejoin("an offset commit found the group rebalancing")
            return CommitGate.REBALANCING
        # A rejoin under way, or a newer generation already held: the commit only
        # carried a stale generation; the member itself is fine.
        moved_on = self.rebalancing or (self.has_generation and sent_generation != self.generation_id)
        if code in (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID):
            if moved_on:
                return CommitGate.REBALANCING
            if self.has_generation:  # the group went on without the generation we hold
                self.reset_generation(keep_member=code == ILLEGAL_GENERATION)
            return CommitGate.NOT_MEMBER
        if code == FENCED_INSTANCE_ID:
            # Fatal for this member (the driver stops it with set_fatal).
            return CommitGate.REBALANCING if moved_on else CommitGate.FATAL
        return CommitGate.OPEN

    @staticmethod
    def is_fatal(code: int | None) -> bool:
        return code in FATAL_ERRORS

    # ------------------------------------------------------------ rejoin triggers

    def request_rejoin(self, reason: str) -> bool:
        """Ask for a rebalance; True if none was pending."""
        first = not self.need_rejoin
        self.need_rejoin = True
        self.rejoin_reason = reason
        return first

    def on_subscription_change(self, topics: Iterable[str]) -> bool:
        """The subscription changed: rejoin if it differs from what we joined with."""
        if frozenset(topics) != self.subscribed_at_join:
            self.request_rejoin("the subscription changed")
            return True
        return False

    def on_metadata_update(self, counts: Mapping[str, int]) -> bool:
        """Partition counts of the topics the leader assigned; rejoin if they changed."""
        if self.state is not MemberState.STABLE or not self.partition_counts:
            return False
        if {t: counts.get(t, 0) for t in self.partition_counts} != self.partition_counts:
            self.request_rejoin("the partitions of subscribed topics changed")
            return True
        return False

    def allow_rejoin(self) -> None:
        """The application polled again (after a poll timeout)."""
        self.rejoin_allowed = True

    # ------------------------------------------------------------ a rebalance

    def prepare(self, owned: Iterable[TopicPartition], subscribed: Iterable[str]) -> Revocation:
        """Start a rebalance; returns what to revoke (or report lost) before joining
        (Java's ``onJoinPrepare``: the state changes only when JoinGroup is sent)."""
        owned = frozenset(owned)
        if self.lost or (not self.has_generation and owned):
            self.lost = False
            return Revocation(owned, lost=True)
        if not self.has_generation:
            return Revocation(frozenset())
        if self.protocol is RebalanceProtocol.EAGER:
            return Revocation(owned, always=True)
        topics = frozenset(subscribed)
        return Revocation(frozenset(tp for tp in owned if tp.topic not in topics))

    def take_lost(self, owned: Iterable[TopicPartition]) -> frozenset[TopicPartition] | None:
        """Between join attempts: partitions to report lost if the membership was lost."""
        if not self.lost:
            return None
        self.lost = False
        return frozenset(owned)

    def joining(self, topics: Iterable[str]) -> None:
        """A JoinGroup for ``topics`` is about to be sent."""
        self.subscribed_at_join = frozenset(topics)
        self.need_rejoin = False
        self.state = MemberState.PREPARING_REBALANCE

    def on_join_response(self, result: JoinResult) -> Next:
        code = result.error_code
        if code == 0:
            self.generation_id = result.generation_id
            self.member_id = result.member_id
            self.protocol_name = result.protocol_name
            self.leader_id = result.leader
            self.state = MemberState.COMPLETING_REBALANCE
            return Next.OK
        if code == MEMBER_ID_REQUIRED:
            self.member_id = result.member_id  # KIP-394: join again with the given id
            return Next.JOIN_AGAIN
        if code == UNKNOWN_MEMBER_ID:
            self.reset_generation(keep_member=False)
            return Next.JOIN_AGAIN
        if code in (ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS):
            self.reset_generation(keep_member=True)
            return Next.JOIN_AGAIN
        return self._failure(code)

    def on_sync_response(self, code: int) -> Next:
        """SyncGroup's error code (0: the assignment is in the response)."""
        if code == 0:
            return Next.OK
        if code == REBALANCE_IN_PROGRESS:
            return Next.JOIN_AGAIN
        if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self.reset_generation(keep_member=code == ILLEGAL_GENERATION)
            return Next.JOIN_AGAIN
        return self._failure(code)

    def complete(self, assigned: Iterable[TopicPartition], owned: Iterable[TopicPartition],
                 subscribed: Iterable[str] = ()) -> AssignmentChange:
        """The assignment arrived: become STABLE and say what changes hands."""
        new = frozenset(assigned)
        old = frozenset(owned)
        self.state = MemberState.STABLE
        reason = ""
        if self.protocol is RebalanceProtocol.EAGER:
            change = AssignmentChange(new, new, frozenset())
        else:
            revoked = old - new
            change = AssignmentChange(new, new - old, revoked)
            if revoked:
                reason = "partitions were revoked (cooperative rebalance, second round)"
        topics = frozenset(subscribed)
        if topics and any(tp.topic not in topics for tp in new):
            reason = reason or "the assignment holds topics this member does not subscribe to"
        if reason:
            self.request_rejoin(reason)
        return change._replace(rejoin_reason=reason)

    def rebalance_failed(self) -> None:
        """A rebalance attempt raised: the next attempt starts over."""
        self.need_rejoin = True

    # ------------------------------------------------------------ heartbeats and leaving

    def on_heartbeat_response(self, code: int) -> Next:
        if code == 0:
            return Next.OK
        if code == REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:
                self.request_rejoin("the group is rebalancing")
                return Next.REJOIN
            return Next.OK
        if code in (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID):
            self.reset_generation(keep_member=code == ILLEGAL_GENERATION)
            return Next.LOST
        if code == FENCED_INSTANCE_ID:
            self.set_fatal(code)
            return Next.FATAL
        if code in COORDINATOR_ERRORS:
            return Next.COORDINATOR
        return Next.IGNORE

    def reset_generation(self, keep_member: bool = False) -> bool:
        """Forget the generation; True if owned partitions are now lost (the caller
        stops fetching them; ``prepare`` reports them with on_partitions_lost)."""
        lost = self.has_generation
        if lost:
            self.lost = True
        self.generation_id = -1
        if not keep_member:
            self.member_id = ""
        self.state = MemberState.UNJOINED
        self.need_rejoin = True
        return lost

    def poll_timeout(self) -> bool:
        """max.poll.interval.ms passed: leave (the driver sends LeaveGroup first) and
        wait for the next poll() before joining; returns as :meth:`reset_generation`."""
        self.rejoin_allowed = False
        return self.reset_generation(keep_member=self.instance_id is not None)

    def should_send_leave(self) -> bool:
        """Dynamic members announce leaving; static ones (KIP-345) never do."""
        return self.instance_id is None and bool(self.member_id) and self.state is not MemberState.UNJOINED

    def left(self) -> None:
        self.generation_id = -1
        if self.instance_id is None:
            self.member_id = ""
        self.state = MemberState.UNJOINED
        self.need_rejoin = True

    def set_fatal(self, code: int) -> bool:
        """Stop for good (e.g. a fenced static member); returns as :meth:`reset_generation`."""
        lost = self.reset_generation(keep_member=True)
        self.fatal_code = code
        self.need_rejoin = False
        return lost

    def _failure(self, code: int) -> Next:
        if code in FATAL_ERRORS:
            return Next.FATAL
        if code in COORDINATOR_ERRORS:
            return Next.COORDINATOR
        return Next.FAIL
