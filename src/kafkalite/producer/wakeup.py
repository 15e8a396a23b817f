"""Waking the producer's sender: from callers' threads and from the engine loop.

The sender sleeps between passes until its next timer (linger, backoff, expiry) is
due or someone has news for it: a caller's ``send()`` started or closed a batch
(:meth:`SenderWakeup.wake_threadsafe`, any thread: one ``call_soon_threadsafe`` while
one is pending, not one per record), or code on the engine loop completed a batch,
got a response, flushes or added transaction partitions (:meth:`SenderWakeup.wake`).
The accumulator, the delivery bookkeeping and the transaction client get these
methods; only the sender sleeps on it.

Example (on the engine loop)::

    wakeup = SenderWakeup()
    wakeup.bind(asyncio.get_running_loop())
    wakeup.begin_pass()
    ...                                   # one pass of the sender
    if not wakeup.pending:
        await wakeup.sleep_until(time.monotonic() + 0.5)   # returns early once someone calls wake()
"""

from __future__ import annotations

import asyncio
import time

__all__ = ["SenderWakeup"]


class SenderWakeup:
    """The sender's wake-up signal (see the module doc)."""

    __slots__ = ("_requested", "_timer", "_timer_at", "_waiter", "loop", "pending")

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        #: Woken since the current pass began: the sender looks again at once.
        self.pending = False
        self._requested = False  # a call_soon_threadsafe(wake) is on its way
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None  # wakes the sleeping sender at _timer_at
        self._timer_at = 0.0

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The engine loop the sender runs on (before :meth:`wake_threadsafe` reaches it)."""
        self.loop = loop

    def wake_threadsafe(self) -> None:
        """Wake the sender from any thread (one cross-thread call while one is pending)."""
        if not self._requested:
            self._requested = True
            loop = self.loop
            if loop is not None and not loop.is_closed():
                try:
                    loop.call_soon_threadsafe(self.wake)
                except RuntimeError:  # loop closed meanwhile
                    pass

    def wake(self) -> None:
        """Wake the sender (engine loop only)."""
        self._requested = False
        self.pending = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def begin_pass(self) -> None:
        """The sender starts a pass: what woke it so far is being looked at."""
        self.pending = False

    async def sleep_until(self, at: float) -> None:
        """Sleep until :meth:`wake` or ``time.monotonic()`` reaches ``at`` (engine loop)."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiter = waiter
        # One timer, kept from pass to pass while the sender's next due time stays the
        # same (a pass woken by a response or a send() mostly computes the linger
        # deadline it computed before): a timer armed and cancelled per pass filled the
        # loop's timer heap with cancelled handles (issue 27).
        timer = self._timer
        if timer is None or abs(at - self._timer_at) > 1e-6:
            if timer is not None:
                timer.cancel()
            self._timer = loop.call_later(max(0.0, at - time.monotonic()), self._on_timer)
            self._timer_at = at
        try:
            await waiter
        finally:
            self._waiter = None

    def _on_timer(self) -> None:
        self._timer = None
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        """The sender stopped: its timer goes (engine loop)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
