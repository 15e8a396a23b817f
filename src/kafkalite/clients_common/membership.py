"""What a KIP-848 consumer group member and a KIP-932 share group member have in common.

Both heartbeat with a member id and a member epoch, follow the broker's heartbeat
interval, and read a heartbeat answer's error code the same way, as Java's
``AbstractMembershipManager`` does for ``ConsumerMembershipManager`` and
``ShareMembershipManager``:

* 0: take the member id (the broker may assign it), the epoch and the interval; a
  joining member is now stable; an assignment unlike the one held is the subclass's
  to take;
* UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH: *fenced*, the subclass drops what it holds
  and joins again with epoch 0 (:meth:`EpochMember.fenced`);
* COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR: find
  the coordinator again;
* a fatal code of the member's kind (:attr:`EpochMember.FATAL_ERRORS`): the member stops;
* anything else: the driver logs it and tries again.

Example::

    class Member(EpochMember):
        FATAL_ERRORS = frozenset({30})
        def _joining(self) -> None:
            pass
        def fenced(self) -> None:
            self.member_epoch = 0
            self.state = MembershipState.JOINING

    member = Member("m-1")
    member.start_joining()
    member.read_answer(HeartbeatAnswer(0, "m-1", 4, 3000), None)   # Verdict.ACCEPTED
    member.state, member.member_epoch, member.interval_s       # STABLE, 4, 3.0
"""

from __future__ import annotations

import enum
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, NamedTuple, Protocol

__all__ = [
    "COORDINATOR_ERRORS",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "FENCED_ERRORS",
    "LEAVE_EPOCH",
    "EpochMember",
    "HeartbeatAnswer",
    "HeartbeatResponse",
    "MembershipState",
    "TopicIdAssignment",
    "Verdict",
]

#: the member epoch of a leaving heartbeat
LEAVE_EPOCH = -1
COORDINATOR_LOAD_IN_PROGRESS = 14
#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
COORDINATOR_ERRORS = frozenset({14, 15, 16})
#: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH: the member lost what it was assigned.
FENCED_ERRORS = frozenset({25, 110})

#: an assignment as heartbeats carry it: partitions by topic id
TopicIdAssignment = dict[uuid.UUID, list[int]]


class MembershipState(enum.Enum):
    """Java's ``MemberState`` (the states both member kinds use)."""

    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"  # KIP-848 only: revoking / assigning the new target
    STABLE = "stable"
    LEAVING = "leaving"          # KIP-932 only: the leaving heartbeat is on its way
    FATAL = "fatal"


class Verdict(enum.Enum):
    """What a heartbeat answer means (see the module doc)."""

    ACCEPTED = "accepted"
    NEW_ASSIGNMENT = "new assignment"  # accepted, with an assignment unlike the one held
    FENCED = "fenced"
    COORDINATOR = "coordinator"
    FATAL = "fatal"
    OTHER = "other"


class _TopicPartitions(Protocol):
    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> Sequence[int]: ...


class _Assignment(Protocol):
    @property
    def topic_partitions(self) -> Sequence[_TopicPartitions]: ...


class HeartbeatResponse(Protocol):
    """What ConsumerGroupHeartbeatResponse and ShareGroupHeartbeatResponse have in common."""

    @property
    def error_code(self) -> int: ...

    @property
    def member_id(self) -> str | None: ...

    @property
    def member_epoch(self) -> int: ...

    @property
    def heartbeat_interval_ms(self) -> int: ...

    @property
    def assignment(self) -> _Assignment | None: ...


class HeartbeatAnswer(NamedTuple):
    """The fields of a ConsumerGroupHeartbeat / ShareGroupHeartbeat response a member reads."""

    error_code: int
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: the (target) assignment by topic id, or None when the answer carries none
    assignment: TopicIdAssignment | None = None

    @classmethod
    def of(cls, response: HeartbeatResponse) -> HeartbeatAnswer:
        """The answer in a heartbeat response (its assignment only when it succeeded)."""
        assignment = None
        if response.error_code == 0 and response.assignment is not None:
            assignment = {t.topic_id: sorted(t.partitions) for t in response.assignment.topic_partitions}
        return cls(response.error_code, response.member_id, response.member_epoch,
                   response.heartbeat_interval_ms, assignment)


class EpochMember(ABC):
    """Member id, epoch, state and heartbeat interval of a KIP-848 / KIP-932 member
    (no I/O); subclasses add their assignment handling and :meth:`fenced`."""

    #: the error codes that stop this kind of member
    FATAL_ERRORS: ClassVar[frozenset[int]] = frozenset()

    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.member_epoch = 0
        self.state = MembershipState.UNSUBSCRIBED
        self.interval_s = 5.0
        self.fatal_code: int | None = None

    def start_joining(self) -> None:
        """Called before each heartbeat: an unsubscribed member joins with epoch 0."""
        if self.state is MembershipState.UNSUBSCRIBED:
            self.state = MembershipState.JOINING
            self.member_epoch = 0
            self._joining()

    @abstractmethod
    def _joining(self) -> None:
        """What else a subclass forgets when it (re)joins."""

    def read_answer(self, answer: HeartbeatAnswer, held: TopicIdAssignment | None) -> Verdict:
        """Apply what every member takes from a heartbeat answer; the verdict says what
        the subclass still has to do (take the answer's assignment: it differs from
        ``held``, the one the member has)."""
        code = answer.error_code
        if code == 0:
            if answer.member_id:
                self.member_id = answer.member_id
            if answer.heartbeat_interval_ms > 0:
                self.interval_s = answer.heartbeat_interval_ms / 1000.0
            self.member_epoch = answer.member_epoch
            if self.state is MembershipState.JOINING:
                self.state = MembershipState.STABLE
            if answer.assignment is not None and answer.assignment != held:
                return Verdict.NEW_ASSIGNMENT
            return Verdict.ACCEPTED
        if code in FENCED_ERRORS:
            self.fenced()
            return Verdict.FENCED
        if code in COORDINATOR_ERRORS:
            return Verdict.COORDINATOR
        if code in self.FATAL_ERRORS:
            self.fatal_code = code
            self.state = MembershipState.FATAL
            return Verdict.FATAL
        return Verdict.OTHER

    @abstractmethod
    def fenced(self) -> None:
        """Fenced by the broker: join again from epoch 0 with nothing assigned."""
