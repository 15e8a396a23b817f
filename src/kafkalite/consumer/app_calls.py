"""Application calls: code the engine needs run in the polling thread.

Rebalance listeners and commit callbacks are the application's code, and the Java
client runs them inside ``poll()``: the engine queues them here and (for listeners)
awaits their outcome; the poll side runs them (:meth:`AppCallQueue.run` in the blocking
front end's thread, :meth:`AppCallQueue.run_async` on the asyncio caller's loop).

Example (engine side, inside a coroutine)::

    await core.app_calls.call(listener.on_partitions_revoked, partitions)
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

#: An application function (listener method, commit callback): what it returns is awaited
#: when it is a coroutine (asyncio front), and otherwise only marks the call done.
AppFunction = Callable[..., object]


class AppCall:
    """A function the engine needs run in the polling thread, and its outcome."""

    __slots__ = ("args", "fn", "future")

    def __init__(self, fn: AppFunction, args: tuple[object, ...], future: asyncio.Future[object] | None) -> None:
        self.fn = fn
        self.args = args
        self.future = future


def _settle(future: asyncio.Future[object] | None, result: object = None, exc: BaseException | None = None) -> None:
    if future is None or future.done():
        return
    if exc is not None:
        future.set_exception(exc)
        future.exception()
    else:
        future.set_result(result)


class AppCallQueue:
    """The queue of application calls of one consumer (true while calls wait).

    Args:
        loop: the engine's event loop (where the awaiting side runs).
        notify_poll: wakes a waiting poll().
        call_soon: runs a callable on the engine (thread-safe).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, notify_poll: Callable[[], None],
                 call_soon: Callable[..., None]) -> None:
        self._loop = loop
        self._notify_poll = notify_poll
        self._call_soon = call_soon
        self._calls: deque[AppCall] = deque()

    def __len__(self) -> int:
        return len(self._calls)

    async def call(self, fn: AppFunction, *args: object) -> None:
        """Run ``fn(*args)`` in the polling thread and wait until it ran (engine side)."""
        future: asyncio.Future[object] = self._loop.create_future()
        self._calls.append(AppCall(fn, args, future))
        self._notify_poll()
        await future

    def post(self, fn: AppFunction, *args: object) -> None:
        """Queue ``fn(*args)`` for the polling thread without waiting (commit callbacks)."""
        self._calls.append(AppCall(fn, args, None))
        self._notify_poll()

    def run(self) -> BaseException | None:
        """Run the queued calls (poll side, blocking front end); returns the first error raised."""
        first: BaseException | None = None
        calls = self._calls
        while calls:
            call = calls.popleft()
            try:
                result = call.fn(*call.args)
            except BaseException as exc:  # delivered to the engine and re-raised by poll()
                if call.future is not None:
                    self._call_soon(_settle, call.future, None, None)
                if first is None:
                    first = exc
                continue
            if call.future is not None:
                self._call_soon(_settle, call.future, result, None)
        return first

    async def run_async(self) -> BaseException | None:
        """As :meth:`run`, awaiting coroutine results (asyncio front end, engine's loop)."""
        first: BaseException | None = None
        calls = self._calls
        while calls:
            call = calls.popleft()
            try:
                result = call.fn(*call.args)
                if asyncio.iscoroutine(result):
                    result = await result
            except BaseException as exc:
                _settle(call.future)
                if first is None:
                    first = exc
                continue
            _settle(call.future, result)
        return first

    def cancel_all(self) -> None:
        """Drop the queued calls, cancelling what awaits them (the consumer closed)."""
        while self._calls:
            call = self._calls.popleft()
            if call.future is not None and not call.future.done():
                call.future.cancel()
