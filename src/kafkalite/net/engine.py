"""Runs a client's asyncio engine for the blocking front end.

The async front end (``kafkalite.aio``) runs its engine on the caller's event loop. The
blocking front end gives each client an :class:`EngineThread`: a daemon thread with its
own loop, which owns every socket and timer of that client. Blocking calls submit a
coroutine and wait for its result with a timeout; the wait wakes up several times a
second so that Ctrl-C (KeyboardInterrupt) is raised promptly in the caller's thread, and
the coroutine is then cancelled so that nothing keeps running on the caller's behalf.

Stopping background tasks goes through :func:`cancel_and_wait` everywhere: Python
< 3.12's ``asyncio.wait_for`` can swallow a cancellation that races with its result
(gh-86296), so one ``task.cancel()`` does not always stop a task; ``cancel_and_wait``
cancels until the tasks are done, bounded by a timeout, so ``close(timeout)`` stays
within its timeout.

Example::

    engine = EngineThread(name="kafkalite-producer")
    engine.start()
    metadata = engine.run(client.refresh_metadata({"orders"}), timeout=10)
    engine.stop()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

from kafkalite.config import Config
from kafkalite.errors import ClientClosedError, IllegalStateError, KafkaTimeoutError, WakeupError
from kafkalite.net.timers import new_engine_loop, tighten_timer_slack

T = TypeVar("T")

# How often a blocked caller re-checks for signals. Python delivers KeyboardInterrupt to
# the main thread between bytecodes; a short wait slice keeps that prompt even on
# platforms where lock waits are not interrupted by signals.
_WAIT_SLICE_S = 0.1
# On POSIX a signal interrupts a thread's lock wait (Python runs the handler, and Ctrl-C
# raises KeyboardInterrupt, at once), so a poll() waits in one piece there; elsewhere
# (Windows) it waits in slices of _WAIT_SLICE_S to notice Ctrl-C.
_SIGNALS_INTERRUPT_WAITS = os.name == "posix"


class EngineThread:
    """A daemon thread running an asyncio event loop for one blocking client."""

    def __init__(self, name: str = "kafkalite-engine") -> None:
        self.name = name
        self.loop = new_engine_loop()  # timers on time, not rounded up to the millisecond
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = threading.Event()
        self._stopped = False
        self._stop_timeout = 2.0

    def start(self) -> EngineThread:
        self._thread.start()
        self._started.wait()
        return self

    def _run(self) -> None:
        tighten_timer_slack()  # this thread's timers (linger, backoff) fire on time
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
                left: set[asyncio.Future[Any]] = set()
                if pending:
                    left = self.loop.run_until_complete(cancel_and_wait(pending, self._stop_timeout))
                    if left:
                        # Never hang the thread on a task that will not stop: leave it.
                        names = ", ".join(sorted(t.get_name() if isinstance(t, asyncio.Task) else repr(t) for t in left))
                        logging.getLogger("kafkalite").warning(
                            "%s: %d task(s) did not stop when cancelled: %s", self.name, len(left), names)
                if not left:
                    self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    @property
    def in_engine_thread(self) -> bool:
        return threading.current_thread() is self._thread

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stopped

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the engine; returns a thread-safe future."""
        if self._stopped:
            coro.close()
            raise ClientClosedError(f"{self.name}: the client is closed")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, fn: Callable[..., object], *args: object) -> None:
        """Run a plain callback on the engine thread (thread-safe, cheap)."""
        if not self._stopped:
            self.loop.call_soon_threadsafe(fn, *args)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None,
            what: str = "operation", interrupted: Callable[[], bool] | None = None) -> T:
        """Run ``coro`` on the engine and wait for it, at most ``timeout`` seconds.

        Raises :class:`KafkaTimeoutError` on timeout (after cancelling the coroutine)
        and re-raises KeyboardInterrupt after cancelling it too. ``interrupted``: see
        :func:`wait_future` (the consumers' ``wakeup()``).
        """
        if self.in_engine_thread:
            coro.close()
            raise IllegalStateError("blocking kafkalite call made from inside a callback on the engine thread")
        future = self.submit(coro)
        return wait_future(future, timeout, what, interrupted)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join the thread, both within ``timeout`` seconds.

        Tasks still running are cancelled (with :func:`cancel_and_wait`); one that does
        not stop within the timeout is left behind with a warning rather than hanging.
        """
        if self._stopped:
            return
        self._stopped = True
        # The caller waits at most ``timeout``; the (daemon) thread may take a little
        # longer to let cancelled tasks finish before it gives up on them.
        self._stop_timeout = max(2.0, timeout)
        if self._thread.is_alive():
            try:
                self.loop.call_soon_threadsafe(self.loop.stop)
            except RuntimeError:  # the loop is closed already
                return
            if not self.in_engine_thread:
                self._thread.join(timeout)


class FrontCalls:
    """What both fronts of a consumer share around their calls: ``self._closed``,
    ``self._wakeup`` (set by ``wakeup()``), ``self.config`` and ``_CLIENT`` (its name in
    errors, "the consumer") come from the subclass."""

    _CLIENT = "the client"
    _closed: bool
    _wakeup: bool
    config: Config

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError(f"{self._CLIENT} is closed")

    def _take_wakeup(self) -> bool:
        """Whether wakeup() was called since the last check (and clear it)."""
        if self._wakeup:
            self._wakeup = False
            return True
        return False

    def _timeout(self, timeout: float | None) -> float:
        return float(self.config["default.api.timeout.ms"]) / 1000.0 if timeout is None else timeout


class EngineCalls(FrontCalls):
    """How a blocking front with ``wakeup()`` (Consumer, ShareConsumer) runs its calls: on
    its :class:`EngineThread`, waiting in the caller's thread.

    The asyncio fronts get the same contract from :class:`LoopCalls`, so that the API
    written once for asyncio (see ``tools/generate_fronts.py``) behaves the same on
    both: ``_run`` honours ``timeout`` and ``wakeup()`` (Java's ``WakeupException`` from
    any blocking call), ``_call_soon`` hands a callable to the engine. ``self._engine``
    and ``self._event`` (what a waiting poll() sleeps on) come from the subclass.
    """

    _engine: EngineThread
    _event: threading.Event

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None, what: str, *,
             wakeable: bool = True) -> T:
        """Run ``coro`` on the engine; honours ``timeout``, Ctrl-C and (if ``wakeable``) wakeup()."""
        if self._closed:
            coro.close()
            self._check_open()
        return self._engine.run(coro, timeout, what, interrupted=self._take_wakeup if wakeable else None)

    def _wake_waiters(self) -> None:
        """Wake a waiting poll() or ``_run`` (thread-safe; the flag is ``self._wakeup``)."""
        self._event.set()

    def _wait_event(self, timeout: float | None) -> None:
        """Sleep until the engine has news for poll() (``self._event``), at most ``timeout``
        s (None: no limit); may return early (no news) where signals cannot end the wait."""
        if not _SIGNALS_INTERRUPT_WAITS:
            timeout = _WAIT_SLICE_S if timeout is None else min(_WAIT_SLICE_S, timeout)
        self._event.wait(timeout)

    def _call_soon(self, fn: Callable[..., object], *args: object) -> None:
        """Run ``fn(*args)`` on the engine soon (thread-safe; nothing waits for it)."""
        self._engine.call_soon(fn, *args)


class LoopCalls(FrontCalls):
    """:class:`EngineCalls` for an asyncio front: the engine is the caller's running loop.

    ``_run`` awaits the coroutine as a task, at most ``timeout`` seconds, and cancels it
    when ``wakeup()`` is called meanwhile (from any thread: :meth:`_wake_waiters` is
    thread-safe), raising :class:`WakeupError` as the blocking front does. ``self._loop``
    (None until the client first runs on a loop) and ``self._event`` come from the
    subclass.
    """

    _loop: asyncio.AbstractEventLoop | None
    _event: asyncio.Event
    _waker: asyncio.Future[None] | None = None

    async def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None, what: str, *,
                   wakeable: bool = True) -> T:
        """Await ``coro``; KafkaTimeoutError after ``timeout`` s, WakeupError on wakeup()."""
        if self._closed:
            coro.close()
            self._check_open()
        if not wakeable:
            return await await_with_timeout(coro, timeout, what)
        if self._take_wakeup():
            coro.close()
            raise WakeupError(f"{what} was interrupted by wakeup()")
        loop = asyncio.get_running_loop()
        task = loop.create_task(coro)
        deadline = None if timeout is None else loop.time() + max(0.0, timeout)
        try:
            while True:
                waker: asyncio.Future[None] = loop.create_future()
                self._waker = waker
                remaining = None if deadline is None else max(0.0, deadline - loop.time())
                done, _ = await asyncio.wait((task, waker), timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
                if task in done:
                    return task.result()
                if not waker.done():
                    raise KafkaTimeoutError(f"{what} did not complete within {timeout:.3f}s")
                if self._take_wakeup():
                    raise WakeupError(f"{what} was interrupted by wakeup()")
                # The wake-up of a wakeup() an earlier call already raised: wait on.
        finally:
            self._waker = None
            if not task.done():
                task.cancel()
                task.add_done_callback(_retrieve)

    def _wake_waiters(self) -> None:
        """Interrupt a waiting poll() or ``_run`` (thread-safe; the flag is ``self._wakeup``)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._on_wakeup)

    def _on_wakeup(self) -> None:
        self._event.set()
        waker = self._waker
        if waker is not None and not waker.done():
            waker.set_result(None)

    async def _wait_event(self, timeout: float | None) -> None:
        """Sleep until the engine has news for poll() (``self._event``), at most ``timeout`` s
        (None: no limit)."""
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    def _call_soon(self, fn: Callable[..., object], *args: object) -> None:
        """Run ``fn(*args)`` on the loop soon (after the current step, as the engine thread would)."""
        loop = self._loop
        if loop is not None and not self._closed:
            loop.call_soon(fn, *args)


def _retrieve(task: asyncio.Future[Any]) -> None:
    """A task cancelled after the caller gave up on it: its outcome is nobody's business."""
    if not task.cancelled():
        task.exception()


def wait_future(future: concurrent.futures.Future[T], timeout: float | None, what: str = "operation",
                interrupted: Callable[[], bool] | None = None) -> T:
    """Wait for a cross-thread future in slices, so Ctrl-C and timeouts stay prompt.

    ``interrupted`` is asked once per slice: when it returns True the future is
    cancelled and :class:`WakeupError` raised (the consumers' ``wakeup()``).
    """
    deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
    try:
        while True:
            if interrupted is not None and interrupted():
                future.cancel()
                raise WakeupError(f"{what} was interrupted by wakeup()")
            remaining = _WAIT_SLICE_S if deadline is None else min(_WAIT_SLICE_S, deadline - time.monotonic())
            if remaining <= 0:
                future.cancel()
                raise KafkaTimeoutError(f"{what} did not complete within {timeout:.3f}s")
            # wait() rather than result(timeout): a KafkaTimeoutError raised by the
            # operation itself is a TimeoutError too and must not be mistaken for ours.
            done, _ = concurrent.futures.wait([future], remaining)
            if done:
                return future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]], timeout: float | None = None
                          ) -> set[asyncio.Future[Any]]:
    """Cancel ``tasks`` and wait until they are done, cancelling again while they are not.

    Python < 3.12's ``asyncio.wait_for`` can swallow a cancellation that races with
    the result it was waiting for (gh-86296): a task inside such a call survives one
    ``cancel()``. This cancels every slice (0.1 s) until all tasks are done or
    ``timeout`` seconds passed (None: no limit), and returns the tasks that are still
    running then (normally none). The calling task itself is skipped. Errors of the
    tasks are not raised here (their done callbacks see them).

    Example (inside a coroutine)::

        left = await cancel_and_wait(self._tasks, timeout=1.0)
    """
    current = asyncio.current_task()
    pending = {t for t in tasks if not t.done() and t is not current}
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + max(0.0, timeout)
    while pending:
        for task in pending:
            task.cancel()
        wait = _WAIT_SLICE_S if deadline is None else min(_WAIT_SLICE_S, deadline - loop.time())
        if wait <= 0:
            break
        _, pending = await asyncio.wait(pending, timeout=wait)
    return pending


async def await_with_timeout(aw: Awaitable[T], timeout: float | None, what: str = "operation") -> T:
    """``asyncio.wait_for`` that raises :class:`KafkaTimeoutError` naming the operation."""
    try:
        return await asyncio.wait_for(aw, timeout)
    except asyncio.TimeoutError:
        raise KafkaTimeoutError(f"{what} did not complete within {timeout:.3f}s") from None
