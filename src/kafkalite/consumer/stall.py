"""Stalled-consumer detection: one warning per stall, naming the partitions and why.

A consumer can stop making progress without anything raising: a partition stays paused,
a rebalance waits for a listener that never returns, the partition's leader is gone or
every fetch is refused, or the application simply stopped calling ``poll()``. The Java
client says nothing in most of these cases (it only leaves the group after
``max.poll.interval.ms``). :class:`StallDetector` turns them into one log line each:

* **slow application**: ``poll()`` was not called within ``max.poll.interval.ms``;
* **records waiting**: assigned partitions have records past their position (the lag
  the last fetch reported) or failing fetches, yet ``poll()`` returned none of theirs for
  ``stall.warning.ms``. Each partition gets a reason: *paused*, *waiting for a
  rebalance* (its assignment callback has not run, or it is being revoked, or the group
  is rebalancing), *fetch errors* (the last error, e.g. a topic ACL denial), *poll()
  raised* (the fetches succeed but poll() raises the partition's error each time, e.g. a
  batch that fails its CRC check on every read), *no leader* (the partition's leader is
  unknown or unreachable), else *not fetched*.

It is a plain state object (no I/O, no threads, injectable clock): the poll side calls
:meth:`polled` / :meth:`returned` / :meth:`raised`, the fetcher :meth:`fetch_failed` / :meth:`fetch_ok` /
:meth:`no_leader`, and an engine task calls :meth:`check` with a snapshot of the
partitions when :meth:`next_check` says a stall could be declared (not on a fixed tick:
an idle consumer should not wake every second, issue 27). A warning is logged once per
stall; the stall ends (and a new one may be reported) when the condition clears:
``poll()`` is called again, or records of the stalled partitions are returned.

Example::

    detector = StallDetector(stall_ms=60_000, max_poll_interval_ms=300_000)
    detector.polled(now)
    warning = detector.check(now + 61, {tp: PartitionView(lag=10)}, rebalancing=False)
    if warning is not None:
        log.warning("%s", warning)
"""

from __future__ import annotations

import asyncio
import enum
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafkalite.types import TopicPartition

if TYPE_CHECKING:
    from kafkalite.consumer.subscription import SubscriptionState

__all__ = ["PartitionView", "StallDetector", "StallKind", "StallWarning", "partition_views", "watch"]

log = logging.getLogger("kafkalite.consumer.stall")

PAUSED = "paused"
REBALANCE = "waiting for a rebalance"
FETCH_ERRORS = "fetch errors"
RAISED = "poll() raised"
NO_LEADER = "no leader"
NOT_FETCHED = "not fetched"
SLOW_APPLICATION = "slow application"


#: The stall checks' shortest spacing (a partition whose stall was due already, say).
MIN_CHECK_INTERVAL_S = 0.1


class StallKind(enum.Enum):
    """Why a warning was raised: no poll() in time, or records waiting without progress."""

    SLOW_APPLICATION = SLOW_APPLICATION
    RECORDS_WAITING = "records waiting"


@dataclass(frozen=True)
class PartitionView:
    """What the detector needs to know of one assigned partition at check time."""

    lag: int | None = None  # records past the position as of the last fetch (None: unknown)
    paused: bool = False
    awaiting_rebalance: bool = False  # assignment callback pending, or being revoked


@dataclass(frozen=True)
class StallWarning:
    """One stall: the reason per partition, and the message to log."""

    kind: StallKind
    partitions: Mapping[TopicPartition, str] = field(default_factory=dict)
    message: str = ""

    def __str__(self) -> str:
        return self.message


def _names(partitions: Mapping[TopicPartition, str]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions))


class StallDetector:
    """Decides when a consumer is stalled; see the module doc.

    Args:
        stall_ms: ``stall.warning.ms`` (0 turns the records-waiting check off).
        max_poll_interval_ms: ``max.poll.interval.ms``.
        clock: seconds, monotonic (tests pass their own).
    """

    def __init__(self, stall_ms: int, max_poll_interval_ms: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stall_s = stall_ms / 1000.0
        self.max_poll_s = max_poll_interval_ms / 1000.0
        self.clock = clock
        now = clock()
        self.last_poll = now
        self.last_returned: dict[TopicPartition, float] = {}
        self.fetch_errors: dict[TopicPartition, tuple[float, str]] = {}  # first failure time, last error
        self.leaderless: dict[TopicPartition, float] = {}
        self.raised_errors: dict[TopicPartition, str] = {}  # the last error poll() raised, until records flow
        self._waiting_since: dict[TopicPartition, float] = {}
        self._poll_warned = False
        self._stall_warned: frozenset[TopicPartition] = frozenset()
        self.warnings = 0
        self.checks = 0  # how often check() ran: "N checks, one warning" is observable
        self._last_check = -math.inf

    # ------------------------------------------------------------ events

    def polled(self, now: float | None = None) -> None:
        """poll() was called (or is still waiting inside)."""
        self.last_poll = self.clock() if now is None else now
        self._poll_warned = False

    def returned(self, partitions: Mapping[TopicPartition, int] | set[TopicPartition] | list[TopicPartition],
                 now: float | None = None) -> None:
        """poll() handed out records of these partitions."""
        t = self.clock() if now is None else now
        for tp in partitions:
            self.last_returned[tp] = t
            self._waiting_since.pop(tp, None)
            self.raised_errors.pop(tp, None)

    def raised(self, tp: TopicPartition, error: BaseException) -> None:
        """poll() raised ``error`` for ``tp`` (its fetch succeeded, its data did not)."""
        self.raised_errors[tp] = f"{type(error).__name__}: {error}"

    def still_polling(self, last_poll: float) -> None:
        """The application is inside a poll() that waits: that is not a stall."""
        if last_poll > self.last_poll:
            self.last_poll = last_poll

    def fetch_failed(self, tp: TopicPartition, error: BaseException | str, now: float | None = None) -> None:
        """A fetch of ``tp`` failed (partition error, or the request to its broker)."""
        t = self.clock() if now is None else now
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        first = self.fetch_errors.get(tp)
        self.fetch_errors[tp] = (first[0] if first else t, text)

    def fetch_ok(self, tp: TopicPartition) -> None:
        """A fetch of ``tp`` succeeded: earlier errors are over."""
        if tp in self.fetch_errors:
            del self.fetch_errors[tp]
        if tp in self.leaderless:
            del self.leaderless[tp]

    def no_leader(self, tp: TopicPartition, now: float | None = None) -> None:
        """``tp`` could not be fetched: its leader is unknown."""
        if tp not in self.leaderless:
            self.leaderless[tp] = self.clock() if now is None else now

    def forget(self, partitions: set[TopicPartition]) -> None:
        """Partitions no longer assigned."""
        for tp in partitions:
            self.last_returned.pop(tp, None)
            self.fetch_errors.pop(tp, None)
            self.leaderless.pop(tp, None)
            self.raised_errors.pop(tp, None)
            self._waiting_since.pop(tp, None)

    # ------------------------------------------------------------ when to check

    def next_check(self, now: float | None = None) -> float:
        """When :meth:`check` should run next: the earliest moment a stall could be declared.

        * the application's: ``max.poll.interval.ms`` after the last poll() (unless that
          stall was already reported); a poll() still waiting moves it on at that check;
        * each partition already seen waiting: ``stall.warning.ms`` after it began;
        * partitions that start waiting are only seen by a check (lag is read, not
          reported), so checks also come every quarter of ``stall.warning.ms``: a stall
          is reported at most a quarter of ``stall.warning.ms`` late;
        * and at least every ``max.poll.interval.ms``: a poll() after a reported stall
          starts a new interval.

        A moment the last check already passed is not one (that check decided it: e.g. a
        consumer without partitions is not slow). Never sooner than
        ``MIN_CHECK_INTERVAL_S`` from ``now``.
        """
        t = self.clock() if now is None else now
        due = t + self.max_poll_s
        moments = [] if self._poll_warned else [self.last_poll + self.max_poll_s]
        if self.stall_s > 0:
            due = min(due, t + self.stall_s / 4)
            for tp, since in self._waiting_since.items():
                if tp not in self._stall_warned:
                    moments.append(max(since, self.last_returned.get(tp, since)) + self.stall_s)
            moments += [first + self.stall_s for tp, (first, _) in self.fetch_errors.items()
                        if tp not in self._stall_warned]
            moments += [first + self.stall_s for tp, first in self.leaderless.items() if tp not in self._stall_warned]
        for moment in moments:
            if moment > self._last_check:
                due = min(due, moment)
        return max(due, t + MIN_CHECK_INTERVAL_S)

    # ------------------------------------------------------------ the check

    def check(self, partitions: Mapping[TopicPartition, PartitionView], *, rebalancing: bool = False,
              now: float | None = None) -> StallWarning | None:
        """A warning to log now, or None (each stall is reported once)."""
        t = self.clock() if now is None else now
        self.checks += 1
        self._last_check = t
        warning = self._check_poll_interval(partitions, t)
        if warning is not None:
            return warning
        if self.stall_s <= 0:
            return None
        return self._check_records_waiting(partitions, rebalancing, t)

    def _check_poll_interval(self, partitions: Mapping[TopicPartition, PartitionView],
                             now: float) -> StallWarning | None:
        since = now - self.last_poll
        # A consumer without partitions (used only for offsets, say) is not stalled.
        if since <= self.max_poll_s or self._poll_warned or not partitions:
            return None
        self._poll_warned = True
        self.warnings += 1
        reasons = {tp: SLOW_APPLICATION for tp in partitions}
        owned = f" while assigned {_names(reasons)}" if reasons else ""
        message = (f"consumer stalled (slow application): poll() was not called for {since * 1000:.0f} ms, "
                   f"longer than max.poll.interval.ms ({self.max_poll_s * 1000:.0f} ms){owned}; the "
                   "group will move its partitions to other members. Process records faster, poll more "
                   "often, lower max.poll.records or raise max.poll.interval.ms")
        return StallWarning(StallKind.SLOW_APPLICATION, reasons, message)

    def _check_records_waiting(self, partitions: Mapping[TopicPartition, PartitionView], rebalancing: bool,
                               now: float) -> StallWarning | None:
        stalled: dict[TopicPartition, str] = {}
        for tp, view in partitions.items():
            failing = self.fetch_errors.get(tp)
            leaderless = self.leaderless.get(tp)
            waiting = (view.lag is not None and view.lag > 0) or failing is not None or leaderless is not None
            if not waiting:
                self._waiting_since.pop(tp, None)
                continue
            # Stalled since the later of: records became visible as waiting, the last
            # records handed out for this partition.
            since = self._waiting_since.setdefault(tp, now)
            if failing is not None:
                since = min(since, failing[0])
            if leaderless is not None:
                since = min(since, leaderless)
            since = max(since, self.last_returned.get(tp, since))
            if now - since < self.stall_s:
                continue
            stalled[tp] = self._reason(view, rebalancing, failing, leaderless, self.raised_errors.get(tp))
        if not stalled:
            self._stall_warned = frozenset()
            return None
        key = frozenset(stalled)
        if key <= self._stall_warned:
            return None  # already reported (a subset of it may have recovered)
        self._stall_warned = self._stall_warned | key
        self.warnings += 1
        by_reason: dict[str, list[TopicPartition]] = {}
        for tp, reason in stalled.items():
            by_reason.setdefault(reason, []).append(tp)
        parts = "; ".join(f"{_names(dict.fromkeys(tps, r))}: {r}" for r, tps in sorted(by_reason.items()))
        message = (f"consumer stalled: no records returned by poll() for {self.stall_s * 1000:.0f} ms "
                   f"(stall.warning.ms) from partitions with records waiting or fetches failing: {parts}")
        return StallWarning(StallKind.RECORDS_WAITING, stalled, message)

    @staticmethod
    def _reason(view: PartitionView, rebalancing: bool, failing: tuple[float, str] | None,
                leaderless: float | None, raised: str | None) -> str:
        if view.paused:
            return PAUSED
        if view.awaiting_rebalance or rebalancing:
            return REBALANCE
        if failing is not None:
            return f"{FETCH_ERRORS} ({failing[1]})"
        if raised is not None:
            return f"{RAISED} ({raised})"
        if leaderless is not None:
            return NO_LEADER
        return NOT_FETCHED


def partition_views(subs: SubscriptionState, read_committed: bool) -> dict[TopicPartition, PartitionView]:
    """A :class:`PartitionView` per assigned partition of a ``SubscriptionState``."""
    with subs.lock:
        states = list(subs.assignment.items())
    return {tp: PartitionView(lag=subs.lag(tp, read_committed), paused=state.paused,
                              awaiting_rebalance=state.awaiting_callback or state.pending_revocation)
            for tp, state in states}


async def watch(detector: StallDetector,
                views: Callable[[], tuple[Mapping[TopicPartition, PartitionView], bool]]) -> None:
    """Engine task: check when :meth:`StallDetector.next_check` says, and log each stall once."""
    while True:
        await asyncio.sleep(max(0.0, detector.next_check() - detector.clock()))
        partitions, rebalancing = views()
        warning = detector.check(partitions, rebalancing=rebalancing)
        if warning is not None:
            log.warning("%s", warning)
