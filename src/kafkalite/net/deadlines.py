"""The request timeouts of one connection: one timer for all requests in flight.

Every request a connection writes has a deadline (``request.timeout.ms``, or the caller's
timeout). Arming an event-loop timer per request and cancelling it when the answer comes
cost a timer-heap push, a cancel, and comparisons of cancelled handles left in the heap
on every request; at a thousand records a second that was a tenth of the engine's CPU
(issue 27). Answers nearly always come long before their deadline, so the connection
keeps one timer, due at the earliest deadline it knows, and an answer only forgets its
request's deadline. When the timer fires, requests past their deadline are reported and
the timer is armed again for the earliest one left (if any).

:class:`RequestDeadlines` is the bookkeeping without a loop or a socket; the
connection (:class:`~kafkalite.net.transport.BrokerConnection`) arms the timer when
:meth:`~RequestDeadlines.add` or :meth:`~RequestDeadlines.fired` says so.

Example::

    deadlines = RequestDeadlines()
    deadlines.add(7, "fetch", deadline=10.5)        # -> 10.5: arm the timer for 10.5
    deadlines.add(8, "produce", deadline=40.0)      # -> None: the timer already fires sooner
    deadlines.answered(7)
    expired, next_at = deadlines.fired(now=10.5)    # ([], 40.0): nothing late; arm for 40.0
    assert (expired, next_at) == ([], 40.0)
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["RequestDeadlines"]

T = TypeVar("T")


class RequestDeadlines(Generic[T]):
    """Deadlines of the requests in flight on one connection, keyed by correlation id."""

    __slots__ = ("_by_id", "timer_at")

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[float, T]] = {}
        #: When the armed timer fires (None: no timer armed).
        self.timer_at: float | None = None

    def __len__(self) -> int:
        return len(self._by_id)

    def add(self, correlation_id: int, item: T, deadline: float) -> float | None:
        """Remember a request; returns when the timer must fire now (None: as armed)."""
        self._by_id[correlation_id] = (deadline, item)
        if self.timer_at is None or deadline < self.timer_at:
            self.timer_at = deadline
            return deadline
        return None

    def answered(self, correlation_id: int) -> None:
        """The request was answered (or failed otherwise): its deadline no longer counts."""
        self._by_id.pop(correlation_id, None)

    def fired(self, now: float) -> tuple[list[T], float | None]:
        """The timer fired: the requests past their deadline (forgotten here), and when
        to arm the timer again (None: nothing is in flight)."""
        expired = [item for deadline, item in self._by_id.values() if deadline <= now]
        if expired:
            self._by_id = {cid: entry for cid, entry in self._by_id.items() if entry[0] > now}
        self.timer_at = min((deadline for deadline, _ in self._by_id.values()), default=None)
        return expired, self.timer_at

    def clear(self) -> None:
        """Forget every request (the connection closed); the caller cancels its timer."""
        self._by_id.clear()
        self.timer_at = None
