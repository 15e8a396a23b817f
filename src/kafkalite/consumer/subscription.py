"""What the consumer reads: subscription, assignment and per-partition positions (no I/O).

:class:`SubscriptionState` is the consumer's one source of truth about partitions. It
is a plain object, unit-tested without a broker, shared by the engine (fetcher, offset
resets, group membership) and the thread that calls ``poll()``; one lock guards it and
is held only for short updates, never across I/O or user code.

Per assigned partition it keeps (Java's ``SubscriptionState.TopicPartitionState``):

* ``position``: the offset of the next record poll() will return (None until known:
  from the committed offset, a reset, or a seek), with the leader epoch of the last
  record returned (KIP-320);
* ``reset``: a pending ``auto.offset.reset`` lookup (``earliest`` / ``latest``);
* ``paused``; ``awaiting_callback`` (assigned but on_partitions_assigned has not run yet:
  not fetchable, as in Java's new consumer); ``pending_revocation`` (cooperative: being
  revoked, not fetched any more);
* the high watermark, last stable offset and log start offset from the last fetch;
* ``token``: incremented by every seek / reset / reassignment, so that fetches issued
  before it are recognised as stale and dropped instead of returning records from an
  old position;
* KIP-320 validation (Java's ``AWAIT_VALIDATION`` fetch state): ``leader_epoch`` is the
  partition leader epoch the position is known to be valid under (Java's
  ``FetchPosition.currentLeader``). When metadata shows a newer one, or the position
  came from outside with a record epoch (a committed offset, ``seek`` with an
  ``OffsetAndMetadata``), ``awaiting_validation`` stops fetching until an
  OffsetsForLeaderEpoch answer (or a Fetch response's diverging epoch) confirms the
  position or reveals a truncated log (:meth:`SubscriptionState.complete_validation`).

Example::

    subs = SubscriptionState("latest")
    subs.assign_from_user([TopicPartition("orders", 0)])
    subs.seek(TopicPartition("orders", 0), 42)
    subs.fetchable_partitions()      # [TopicPartition('orders', 0)]
"""

from __future__ import annotations

import enum
import logging
import re
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

from kafkalite.errors import IllegalStateError, InvalidRegularExpressionError
from kafkalite.types import OffsetAndMetadata, TopicPartition

log = logging.getLogger("kafkalite.consumer")

_SUBSCRIBE_AND_ASSIGN = (
    "subscribe() and assign() are mutually exclusive: call unsubscribe() first "
    "(the consumer is already {current})"
)


class SubscriptionType(enum.Enum):
    NONE = "none"
    AUTO_TOPICS = "subscribe(topics)"
    AUTO_PATTERN = "subscribe(pattern)"
    USER_ASSIGNED = "assign(partitions)"


class PartitionState:
    """Mutable state of one assigned partition (guarded by the owner's lock)."""

    __slots__ = (
        "awaiting_callback",
        "awaiting_validation",
        "high_watermark",
        "last_stable_offset",
        "leader_epoch",
        "log_start_offset",
        "paused",
        "pending_revocation",
        "position",
        "position_epoch",
        "preferred_read_replica",
        "preferred_replica_expires",
        "reset",
        "token",
        "validation_retry_at",
    )

    def __init__(self) -> None:
        self.position: int | None = None
        self.position_epoch: int | None = None
        self.reset: str | None = None
        self.paused = False
        self.awaiting_callback = False
        self.pending_revocation = False
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.token = 0
        self.preferred_read_replica = -1
        self.preferred_replica_expires = 0.0
        self.leader_epoch: int | None = None
        self.awaiting_validation = False
        self.validation_retry_at = 0.0

    @property
    def has_position(self) -> bool:
        return self.position is not None

    def __repr__(self) -> str:
        return (f"PartitionState(position={self.position}, epoch={self.position_epoch}, reset={self.reset}, "
                f"paused={self.paused}, validating={self.awaiting_validation}, hw={self.high_watermark}, "
                f"lso={self.last_stable_offset})")

    def _set_position(self, offset: int, epoch: int | None, *, validate: bool) -> None:
        """A new position; ``validate``: it came with a record epoch from outside, so it
        is checked against the leader's log before fetching (Java's seekUnvalidated)."""
        self.position = offset
        self.position_epoch = epoch
        self.reset = None
        self.leader_epoch = None
        self.awaiting_validation = validate and epoch is not None
        self.validation_retry_at = 0.0
        self.preferred_read_replica = -1
        self.token += 1


class LogTruncation(NamedTuple):
    """Validation found the log truncated below the position and no reset policy is set."""

    tp: TopicPartition
    fetch_offset: int
    #: (first offset known to diverge, its leader epoch); None when the leader could
    #: not say (the epoch is unknown to it)
    divergent: tuple[int, int] | None


def compile_pattern(pattern: str | re.Pattern[str]) -> re.Pattern[str]:
    """Compile a subscription regex, raising a typed error naming a bad one."""
    if isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str) or not pattern:
        raise InvalidRegularExpressionError(f"subscription pattern must be a non-empty string, got {pattern!r}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InvalidRegularExpressionError(f"invalid subscription pattern {pattern!r}: {exc}") from None


class SubscriptionState:
    """Subscription, assignment and positions of one consumer (thread-safe, no I/O).

    Args:
        default_reset: ``auto.offset.reset`` (``earliest``, ``latest`` or ``none``).
        exclude_internal_topics: pattern subscriptions skip ``__consumer_offsets`` etc.
    """

    def __init__(self, default_reset: str = "latest", exclude_internal_topics: bool = True) -> None:
        self.lock = threading.RLock()
        self.default_reset = default_reset
        self.exclude_internal_topics = exclude_internal_topics
        self.type = SubscriptionType.NONE
        self.topics: frozenset[str] = frozenset()
        self.pattern: re.Pattern[str] | None = None
        # The rebalance listener: any object with some of ConsumerRebalanceListener's
        # methods (they are looked up by name, as the fronts document).
        self.listener: object | None = None
        self.assignment: dict[TopicPartition, PartitionState] = {}
        #: bumped on every subscription or assignment change (the fetcher and group
        #: membership compare it to notice changes cheaply)
        self.version = 0
        #: Topics any member of the group subscribes to (the leader's view, for metadata).
        self.group_topics: frozenset[str] = frozenset()
        self._on_change: Callable[[], None] | None = None

    # ------------------------------------------------------------ subscribing

    def set_change_callback(self, fn: Callable[[], None] | None) -> None:
        """Called (without the lock) after subscription or assignment changes."""
        self._on_change = fn

    def _changed(self) -> None:
        self.version += 1

    def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change()

    def _require_type(self, wanted: SubscriptionType) -> None:
        if self.type not in (SubscriptionType.NONE, wanted):
            raise IllegalStateError(_SUBSCRIBE_AND_ASSIGN.format(current=self.type.value))

    def subscribe(self, topics: Iterable[str], listener: object | None = None) -> bool:
        """Subscribe to topic names; True if the subscription changed."""
        names = frozenset(topics)
        for name in names:
            if not isinstance(name, str) or not name.strip():
                raise IllegalStateError(f"topic names must be non-empty strings, got {name!r}")
        with self.lock:
            self._require_type(SubscriptionType.AUTO_TOPICS)
            self.listener = listener
            changed = self.type is not SubscriptionType.AUTO_TOPICS or names != self.topics
            self.type = SubscriptionType.AUTO_TOPICS
            self.topics = names
            self.pattern = None
            if changed:
                self._changed()
        if changed:
            self._notify()
        return changed

    def subscribe_pattern(self, pattern: str | re.Pattern[str], listener: object | None = None) -> None:
        """Subscribe to every topic whose whole name matches ``pattern``."""
        compiled = compile_pattern(pattern)
        with self.lock:
            self._require_type(SubscriptionType.AUTO_PATTERN)
            self.listener = listener
            self.type = SubscriptionType.AUTO_PATTERN
            self.pattern = compiled
            self.topics = frozenset()
            self._changed()
        self._notify()

    def matches(self, topic: str, internal: bool = False) -> bool:
        if self.pattern is None:
            return False
        if internal and self.exclude_internal_topics:
            return False
        return self.pattern.fullmatch(topic) is not None

    def update_pattern_topics(self, topics: Iterable[str]) -> bool:
        """Set the topics a pattern currently matches; True if they changed."""
        names = frozenset(topics)
        with self.lock:
            if self.type is not SubscriptionType.AUTO_PATTERN or names == self.topics:
                return False
            self.topics = names
            self._changed()
        self._notify()
        return True

    def assign_from_user(self, partitions: Iterable[TopicPartition]) -> None:
        """Manual assignment: exactly these partitions, keeping positions of kept ones."""
        wanted = []
        for tp in partitions:
            if not isinstance(tp, tuple) or len(tp) != 2:
                raise IllegalStateError(f"assign() takes TopicPartition objects, got {tp!r}")
            wanted.append(TopicPartition(*tp))
        with self.lock:
            self._require_type(SubscriptionType.USER_ASSIGNED)
            if not wanted:
                self._clear()
                return
            self.type = SubscriptionType.USER_ASSIGNED
            self.topics = frozenset(tp.topic for tp in wanted)
            self.assignment = {tp: self.assignment.get(tp) or PartitionState() for tp in wanted}
            self._changed()
        self._notify()

    def unsubscribe(self) -> None:
        with self.lock:
            self._clear()
        self._notify()

    def _clear(self) -> None:
        self.type = SubscriptionType.NONE
        self.topics = frozenset()
        self.pattern = None
        self.listener = None
        self.assignment = {}
        self.group_topics = frozenset()
        self._changed()

    @property
    def has_auto_assignment(self) -> bool:
        return self.type in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)

    @property
    def is_user_assigned(self) -> bool:
        return self.type is SubscriptionType.USER_ASSIGNED

    def subscription(self) -> set[str]:
        """Topics subscribed to (for a pattern: the topics it matches now)."""
        with self.lock:
            return set(self.topics) if self.has_auto_assignment else set()

    # ------------------------------------------------------------ group assignment

    def assign_from_subscribed(self, partitions: Iterable[TopicPartition], *,
                               awaiting_callback: Iterable[TopicPartition] = ()) -> None:
        """Set the assignment the group gave us (kept partitions keep their position)."""
        waiting = set(awaiting_callback)
        with self.lock:
            if not self.has_auto_assignment:
                return  # the user unsubscribed meanwhile
            new: dict[TopicPartition, PartitionState] = {}
            for tp in partitions:
                state = self.assignment.get(tp)
                if state is None:
                    state = PartitionState()
                    state.awaiting_callback = tp in waiting
                state.pending_revocation = False
                new[tp] = state
            self.assignment = new
            self._changed()
        self._notify()

    def add_partitions(self, partitions: Iterable[TopicPartition], *, awaiting_callback: bool = False) -> None:
        with self.lock:
            for tp in partitions:
                if tp not in self.assignment:
                    state = PartitionState()
                    state.awaiting_callback = awaiting_callback
                    self.assignment[tp] = state
            self._changed()
        self._notify()

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        with self.lock:
            for tp in partitions:
                self.assignment.pop(tp, None)
            self._changed()
        self._notify()

    def mark_pending_revocation(self, partitions: Iterable[TopicPartition]) -> None:
        with self.lock:
            for tp in partitions:
                state = self.assignment.get(tp)
                if state is not None:
                    state.pending_revocation = True
                    state.token += 1
            self._changed()

    def callback_done(self, partitions: Iterable[TopicPartition]) -> None:
        """on_partitions_assigned ran: these partitions may be fetched now."""
        with self.lock:
            for tp in partitions:
                state = self.assignment.get(tp)
                if state is not None:
                    state.awaiting_callback = False
            self._changed()
        self._notify()

    # ------------------------------------------------------------ queries

    def assigned_partitions(self) -> set[TopicPartition]:
        with self.lock:
            return set(self.assignment)

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self.assignment

    def state(self, tp: TopicPartition) -> PartitionState:
        """The state of an assigned partition; IllegalStateError names an unassigned one."""
        state = self.assignment.get(tp)
        if state is None:
            raise IllegalStateError(
                f"partition {tp.topic}-{tp.partition} is not assigned to this consumer",
                topic=tp.topic, partition=tp.partition,
            )
        return state

    def position(self, tp: TopicPartition) -> int | None:
        with self.lock:
            return self.state(tp).position

    def valid_position(self, tp: TopicPartition) -> int | None:
        """The position once known and validated (KIP-320), else None."""
        with self.lock:
            state = self.state(tp)
            return None if state.awaiting_validation else state.position

    def fetchable(self, tp: TopicPartition) -> bool:
        state = self.assignment.get(tp)
        return state is not None and is_fetchable(state)

    def fetchable_partitions(self) -> list[TopicPartition]:
        with self.lock:
            return [tp for tp, state in self.assignment.items() if is_fetchable(state)]

    def partitions_needing_position(self) -> list[TopicPartition]:
        """Assigned partitions with no position and no reset pending (ask the committed offset)."""
        with self.lock:
            return [tp for tp, s in self.assignment.items()
                    if s.position is None and s.reset is None and not s.pending_revocation]

    def partitions_needing_reset(self) -> dict[TopicPartition, str]:
        with self.lock:
            return {tp: s.reset for tp, s in self.assignment.items()
                    if s.reset is not None and not s.pending_revocation}

    def has_all_positions(self) -> bool:
        with self.lock:
            return all(s.position is not None for s in self.assignment.values())

    def paused_partitions(self) -> set[TopicPartition]:
        with self.lock:
            return {tp for tp, s in self.assignment.items() if s.paused}

    def all_consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """Positions of every assigned partition that has one (what auto-commit commits)."""
        with self.lock:
            return {
                tp: OffsetAndMetadata(s.position, "", s.position_epoch)
                for tp, s in self.assignment.items()
                if s.position is not None and not s.pending_revocation
            }

    # ------------------------------------------------------------ positions

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int | None = None) -> None:
        """Next poll() returns ``offset`` of ``tp`` (which must be assigned)."""
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise IllegalStateError(f"seek offset must be an integer >= 0, got {offset!r}",
                                    topic=tp.topic, partition=tp.partition)
        with self.lock:
            # With a leader epoch (an OffsetAndMetadata) the position is validated
            # before fetching, as Java's seek(tp, OffsetAndMetadata) does.
            self.state(tp)._set_position(offset, leader_epoch, validate=True)
            self._changed()

    def set_position_if_unset(self, tp: TopicPartition, offset: int, leader_epoch: int | None = None,
                              token: int | None = None, *, validate: bool = False) -> bool:
        """Set an initial position (committed offset or reset result) unless a seek won.

        ``validate``: a committed offset with its leader epoch is checked against the
        leader's log first (KIP-320); reset results are not (Java skips those).
        """
        with self.lock:
            state = self.assignment.get(tp)
            if state is None or (token is not None and state.token != token):
                return False
            if state.position is not None and state.reset is None:
                return False
            state._set_position(offset, leader_epoch, validate=validate)
            self._changed()
            return True

    def set_reset_position(self, tp: TopicPartition, offset: int, token: int | None) -> bool:
        """The answer of a reset's offset lookup (``auto.offset.reset`` or ``seek_to_*``):
        ``offset`` becomes the position unless a seek or another reset came since ``token``
        was read. No record epoch, so no validation, as Java's ``resetPositionIfNeeded``."""
        with self.lock:
            state = self.assignment.get(tp)
            if state is None or state.token != token or state.reset is None:
                return False
            state._set_position(offset, None, validate=False)
            self._changed()
            return True

    def tokens(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The current token of each assigned one of ``partitions`` (for :meth:`still_without_position`)."""
        with self.lock:
            return {tp: self.assignment[tp].token for tp in partitions if tp in self.assignment}

    def still_without_position(self, partitions: Iterable[TopicPartition], tokens: dict[TopicPartition, int]
                               ) -> list[TopicPartition]:
        """Those of ``partitions`` still assigned and without a position, and neither
        sought nor reset since their ``tokens`` were read (a lookup's answer may only
        decide for those)."""
        with self.lock:
            return [tp for tp in partitions if (state := self.assignment.get(tp)) is not None
                    and state.token == tokens.get(tp) and state.position is None]

    def request_reset(self, partitions: Iterable[TopicPartition], strategy: str | None = None) -> None:
        """Look up a new position with ``strategy`` (default: auto.offset.reset)."""
        with self.lock:
            for tp in partitions:
                state = self.assignment.get(tp)
                if state is not None:
                    state.reset = strategy or self.default_reset
                    state.position = None
                    state.awaiting_validation = False
                    state.preferred_read_replica = -1
                    state.token += 1
            self._changed()

    # ------------------------------------------------------------ KIP-320 validation

    def maybe_validate_for_leader(self, tp: TopicPartition, leader_epoch: int) -> bool:
        """The partition's current leader epoch (from metadata) is ``leader_epoch``.

        Java's ``maybeValidatePositionForCurrentLeader``: a position known under an older
        epoch is validated when it carries the epoch of the record before it; one without
        that information simply moves on to the new epoch. Returns True when the
        partition (now) awaits validation. The caller holds the lock.
        """
        state = self.assignment.get(tp)
        if state is None or state.position is None or state.reset is not None:
            return False
        if state.awaiting_validation or leader_epoch < 0 or state.leader_epoch == leader_epoch:
            return state.awaiting_validation
        first = state.leader_epoch is None
        state.leader_epoch = leader_epoch
        if first or state.position_epoch is None:
            return False
        # A new leader: what we fetched so far may have been truncated on it.
        state.awaiting_validation = True
        state.validation_retry_at = 0.0
        state.preferred_read_replica = -1
        state.token += 1  # buffered and in-flight fetches are not returned
        self._changed()
        return True

    def partitions_needing_validation(self, now: float) -> dict[TopicPartition, tuple[int, int, int]]:
        """``{tp: (position, position epoch, token)}`` of partitions whose validation is due."""
        with self.lock:
            return {tp: (s.position, s.position_epoch, s.token) for tp, s in self.assignment.items()
                    if s.awaiting_validation and s.position is not None and s.position_epoch is not None
                    and s.reset is None and s.validation_retry_at <= now}

    def validation_started(self, tp: TopicPartition, token: int, leader_epoch: int) -> bool:
        """The validation request names ``leader_epoch`` as the current one."""
        with self.lock:
            state = self.assignment.get(tp)
            if state is None or state.token != token or not state.awaiting_validation:
                return False
            state.leader_epoch = leader_epoch if leader_epoch >= 0 else None
            return True

    def skip_validation(self, tp: TopicPartition, token: int) -> None:
        """The leader cannot validate (OffsetsForLeaderEpoch < v3, or no epoch known): fetch."""
        with self.lock:
            state = self.assignment.get(tp)
            if state is not None and state.token == token and state.awaiting_validation:
                state.awaiting_validation = False
                self._changed()

    def validation_failed(self, partitions: Iterable[TopicPartition], retry_at: float) -> None:
        with self.lock:
            for tp in partitions:
                state = self.assignment.get(tp)
                if state is not None and state.awaiting_validation:
                    state.validation_retry_at = retry_at

    def complete_validation(self, tp: TopicPartition, fetch_offset: int, token: int, end_offset: int,
                            end_epoch: int, *, retry_at: float = 0.0) -> LogTruncation | None:
        """The leader's log ends epoch ``end_epoch`` at ``end_offset`` (OffsetsForLeaderEpoch).

        Java's ``SubscriptionState.maybeCompleteValidation``: an end offset below the
        position means the log was truncated under us. With a reset policy the position
        moves to that offset (the first one known to diverge; if the leader does not
        know the epoch at all, a reset per ``auto.offset.reset``); with
        ``auto.offset.reset=none`` the partition stays unvalidated and the returned
        :class:`LogTruncation` is raised to the application. Answers for a position that
        changed meanwhile (``token``) are ignored.
        """
        with self.lock:
            state = self.assignment.get(tp)
            if (state is None or not state.awaiting_validation or state.token != token
                    or state.position != fetch_offset):
                return None
            has_policy = self.default_reset != "none"
            if end_offset < 0 or end_epoch < 0:
                if has_policy:
                    log.info("Truncation detected for partition %s at offset %d, resetting offset", tp, fetch_offset)
                    state.reset = self.default_reset
                    state.position = None
                    state.awaiting_validation = False
                    state.token += 1
                    self._changed()
                    return None
                log.warning("Truncation detected for partition %s at offset %d, but no reset policy is set",
                            tp, fetch_offset)
                state.validation_retry_at = retry_at
                return LogTruncation(tp, fetch_offset, None)
            if end_offset < fetch_offset:
                if has_policy:
                    log.info("Truncation detected for partition %s at offset %d (leader epoch %s), resetting "
                             "offset to the first offset known to diverge %d (leader epoch %d)",
                             tp, fetch_offset, state.position_epoch, end_offset, end_epoch)
                    leader_epoch = state.leader_epoch
                    state._set_position(end_offset, end_epoch, validate=False)
                    state.leader_epoch = leader_epoch
                    self._changed()
                    return None
                log.warning("Truncation detected for partition %s at offset %d (the end offset from the broker "
                            "is %d, leader epoch %d), but no reset policy is set", tp, fetch_offset, end_offset,
                            end_epoch)
                state.validation_retry_at = retry_at
                return LogTruncation(tp, fetch_offset, (end_offset, end_epoch))
            state.awaiting_validation = False
            self._changed()
            return None

    def diverged(self, tp: TopicPartition, token: int, end_offset: int, end_epoch: int,
                 *, retry_at: float = 0.0) -> LogTruncation | None:
        """A Fetch response says records from ``end_offset`` on diverge (v12+ ``DivergingEpoch``).

        Buffered data of the partition is dropped (it may hold diverged records beyond
        ``end_offset``); then the position is judged as by :meth:`complete_validation`.
        """
        with self.lock:
            state = self.assignment.get(tp)
            if state is None or state.token != token or state.position is None or state.reset is not None:
                return None
            state.awaiting_validation = True
            state.preferred_read_replica = -1
            state.token += 1
            self._changed()
            return self.complete_validation(tp, state.position, state.token, end_offset, end_epoch,
                                            retry_at=retry_at)

    def advance(self, tp: TopicPartition, token: int, offset: int, epoch: int | None) -> bool:
        """poll() returned records up to ``offset - 1``; False if the fetch went stale."""
        state = self.assignment.get(tp)
        if state is None or state.token != token:
            return False
        state.position = offset
        if epoch is not None:
            state.position_epoch = epoch
        return True

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        with self.lock:
            for tp in partitions:
                self.state(tp).paused = True
            self._changed()

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        with self.lock:
            for tp in partitions:
                self.state(tp).paused = False
            self._changed()
        self._notify()

    def update_marks(self, tp: TopicPartition, high_watermark: int, last_stable_offset: int,
                     log_start_offset: int) -> None:
        state = self.assignment.get(tp)
        if state is not None:
            if high_watermark >= 0:
                state.high_watermark = high_watermark
            if last_stable_offset >= 0:
                state.last_stable_offset = last_stable_offset
            if log_start_offset >= 0:
                state.log_start_offset = log_start_offset

    def lag(self, tp: TopicPartition, read_committed: bool) -> int | None:
        """Records between the position and the end of the log (None if unknown)."""
        state = self.assignment.get(tp)
        if state is None or state.position is None:
            return None
        end = state.last_stable_offset if read_committed else state.high_watermark
        if end < 0:
            return None
        return max(0, end - state.position)


def is_fetchable(state: PartitionState) -> bool:
    """Whether a partition in ``state`` may be fetched now (the fetcher reads it under the lock)."""
    return (state.position is not None and state.reset is None and not state.paused
            and not state.awaiting_callback and not state.pending_revocation and not state.awaiting_validation)
