"""An event loop whose timers fire on time, not up to a millisecond late.

asyncio's epoll selector waits in whole milliseconds and rounds every timeout up
(``epoll_wait`` takes milliseconds), so a timer set for 4.3 ms fires after 5 ms and one
set for 5.0 ms after 5 to 6: half a millisecond late on average, a full one at worst.
For a producer that is most of the gap between ``linger.ms`` and when a batch really
leaves: at 10,000 records/s with the default ``linger.ms=5`` its batches left 5.6 to
5.9 ms after they started instead of 5 (issue 15, measured on the sender).

:class:`PreciseEpollSelector` waits all but the last whole millisecond with epoll and the rest
with ``select(2)`` on the epoll descriptor itself (``select`` takes microseconds; the
epoll descriptor is readable as soon as any registered socket is), so a socket that
becomes ready during either wait ends it at once, as before. If the epoll descriptor is
too high a number for ``select`` (``FD_SETSIZE``, 1024), the rest is waited as asyncio
would, rounded up. Only timeouts under :data:`PRECISE_BELOW_S` are waited this way: the
second wait wakes the thread twice per timer, which a heartbeat or a stall check (seconds
away, where a millisecond does not matter) should not pay at rest (issue 27). :func:`new_engine_loop` makes the loops of the blocking clients'
engine threads with it where epoll exists (Linux) and a plain loop elsewhere; an
asyncio client runs on its caller's loop, which keeps asyncio's rounding.

Linux also lets every timed wait of a thread end up to its "timer slack" late (50 us
by default, so that wake-ups can be merged). :func:`tighten_timer_slack` sets the
calling thread's to 1 us; the engine thread calls it when it starts (it costs nothing
measurable: the engine wakes for its timers either way; threads it starts, such as the
loop's executor for DNS look-ups, inherit it). With both, a 5 ms timer
fires 0.05-0.1 ms late instead of 0.5-1.

Example::

    loop = new_engine_loop()
    loop.run_until_complete(asyncio.sleep(0.0043))   # ~4.3 ms, not 5
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import select
import selectors
import sys
import time

__all__ = ["new_engine_loop", "tighten_timer_slack"]
if sys.platform == "linux":
    __all__ += ["PreciseEpollSelector"]

#: Timeouts from this long on are waited with epoll alone (rounded up to the millisecond):
#: the precision is for linger.ms-sized timers (5 ms by default).
PRECISE_BELOW_S = 0.05

_PR_SET_TIMERSLACK = 29  # <linux/prctl.h>
_TIMER_SLACK_NS = 1000

# What this system offers, decided once. Elsewhere (macOS, Windows, BSD) both are False and
# the engine runs asyncio's own loop with the system's timer slack; the unit tests set them
# False on Linux to run those paths (tests/unit/test_net_other_platforms.py).
HAVE_EPOLL = sys.platform == "linux" and hasattr(select, "epoll")
"""Whether :func:`new_engine_loop` can use :class:`PreciseEpollSelector`."""
HAVE_PRCTL = sys.platform == "linux"
"""Whether :func:`tighten_timer_slack` can set the thread's timer slack."""

if sys.platform == "linux":

    class PreciseEpollSelector(selectors.EpollSelector):
        """An epoll selector that waits sub-millisecond timeouts exactly (see the module doc)."""

        def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            if timeout is None or timeout <= 0.0 or timeout >= PRECISE_BELOW_S:
                return super().select(timeout)
            deadline = time.monotonic() + timeout
            # epoll waits a millisecond less than the whole milliseconds of the timeout:
            # the parent rounds (epoll_ms - 0.5) ms up to epoll_ms, but the float it then
            # hands to epoll can be a hair above (9 * 1e-3 == 0.009000000000000001),
            # which epoll rounds up to one more millisecond. Either way the wait ends
            # by the whole milliseconds; select(2) waits what is left.
            epoll_ms = math.floor(timeout * 1000.0) - 1
            if epoll_ms >= 1:
                ready = super().select((epoll_ms - 0.5) / 1000.0)
                if ready:
                    return ready
            rest = deadline - time.monotonic()
            if rest > 0.0:
                try:
                    select.select([self.fileno()], [], [], rest)
                except ValueError:  # descriptor >= FD_SETSIZE: wait as asyncio would
                    return super().select(rest)
            return super().select(0)


def new_engine_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for an engine thread: with :class:`PreciseEpollSelector` on
    Linux under asyncio's default event loop policy; otherwise the policy's loop (an
    application that installed another policy, e.g. uvloop's, keeps its loop)."""
    if HAVE_EPOLL and type(asyncio.get_event_loop_policy()) is asyncio.DefaultEventLoopPolicy:
        return asyncio.SelectorEventLoop(PreciseEpollSelector())
    return asyncio.new_event_loop()


def tighten_timer_slack() -> bool:
    """Set the calling thread's timer slack to 1 us (Linux ``prctl(PR_SET_TIMERSLACK)``);
    False where that is not available (other systems, no C library found)."""
    if not HAVE_PRCTL:
        return False
    try:
        libc = ctypes.CDLL(None)
        return int(libc.prctl(_PR_SET_TIMERSLACK, _TIMER_SLACK_NS, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False
