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
  old position.

Example::

    subs = SubscriptionState("latest")
    subs.assign_from_user([TopicPartition("orders", 0)])
    subs.seek(TopicPartition("orders", 0), 42)
    subs.fetchable_partitions()      # [TopicPartition('orders', 0)]
"""

from __future__ import annotations

import enum
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kafkalite.errors import IllegalStateError, InvalidRegularExpressionError
from kafkalite.types import OffsetAndMetadata, TopicPartition

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
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "paused",
        "pending_revocation",
        "position",
        "position_epoch",
        "preferred_read_replica",
        "preferred_replica_expires",
        "reset",
        "token",
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

    @property
    def has_position(self) -> bool:
        return self.position is not None

    def __repr__(self) -> str:
        return (f"PartitionState(position={self.position}, reset={self.reset}, paused={self.paused}, "
                f"hw={self.high_watermark}, lso={self.last_stable_offset})")


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
        self.listener: Any = None
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

    def subscribe(self, topics: Iterable[str], listener: Any = None) -> bool:
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

    def subscribe_pattern(self, pattern: str | re.Pattern[str], listener: Any = None) -> None:
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

    def fetchable(self, tp: TopicPartition) -> bool:
        state = self.assignment.get(tp)
        return state is not None and _fetchable(state)

    def fetchable_partitions(self) -> list[TopicPartition]:
        with self.lock:
            return [tp for tp, state in self.assignment.items() if _fetchable(state)]

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
            state = self.state(tp)
            state.position = offset
            state.position_epoch = leader_epoch
            state.reset = None
            state.token += 1
            self._changed()

    def set_position_if_unset(self, tp: TopicPartition, offset: int, leader_epoch: int | None = None,
                              token: int | None = None) -> bool:
        """Set an initial position (committed offset or reset result) unless a seek won."""
        with self.lock:
            state = self.assignment.get(tp)
            if state is None or (token is not None and state.token != token):
                return False
            if state.position is not None and state.reset is None:
                return False
            state.position = offset
            state.position_epoch = leader_epoch
            state.reset = None
            state.token += 1
            self._changed()
            return True

    def request_reset(self, partitions: Iterable[TopicPartition], strategy: str | None = None) -> None:
        """Look up a new position with ``strategy`` (default: auto.offset.reset)."""
        with self.lock:
            for tp in partitions:
                state = self.assignment.get(tp)
                if state is not None:
                    state.reset = strategy or self.default_reset
                    state.position = None
                    state.token += 1
            self._changed()

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


def _fetchable(state: PartitionState) -> bool:
    return (state.position is not None and state.reset is None and not state.paused
            and not state.awaiting_callback and not state.pending_revocation)
