"""Runs a client's asyncio engine for the blocking front end.

The async front end (``kafkalite.aio``) runs its engine on the caller's event loop. The
blocking front end gives each client an :class:`EngineThread`: a daemon thread with its
own loop, which owns every socket and timer of that client. Blocking calls submit a
coroutine and wait for its result with a timeout; the wait wakes up several times a
second so that Ctrl-C (KeyboardInterrupt) is raised promptly in the caller's thread, and
the coroutine is then cancelled so that nothing keeps running on the caller's behalf.

Example::

    engine = EngineThread(name="kafkalite-producer")
    engine.start()
    metadata = engine.run(client.refresh_metadata({"orders"}), timeout=10)
    engine.stop()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from kafkalite.errors import ClientClosedError, KafkaTimeoutError

T = TypeVar("T")

# How often a blocked caller re-checks for signals. Python delivers KeyboardInterrupt to
# the main thread between bytecodes; a short wait slice keeps that prompt even on
# platforms where lock waits are not interrupted by signals.
_WAIT_SLICE_S = 0.1


class EngineThread:
    """A daemon thread running an asyncio event loop for one blocking client."""

    def __init__(self, name: str = "kafkalite-engine") -> None:
        self.name = name
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = threading.Event()
        self._stopped = False

    def start(self) -> EngineThread:
        self._thread.start()
        self._started.wait()
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
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

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a plain callback on the engine thread (thread-safe, cheap)."""
        if not self._stopped:
            self.loop.call_soon_threadsafe(fn, *args)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None,
            what: str = "operation") -> T:
        """Run ``coro`` on the engine and wait for it, at most ``timeout`` seconds.

        Raises :class:`KafkaTimeoutError` on timeout (after cancelling the coroutine)
        and re-raises KeyboardInterrupt after cancelling it too.
        """
        if self.in_engine_thread:
            coro.close()
            raise RuntimeError("blocking kafkalite call made from inside a callback on the engine thread")
        future = self.submit(coro)
        return wait_future(future, timeout, what)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop (cancelling what still runs) and join the thread."""
        if self._stopped:
            return
        self._stopped = True
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            if not self.in_engine_thread:
                self._thread.join(timeout)


def wait_future(future: concurrent.futures.Future[T], timeout: float | None, what: str = "operation") -> T:
    """Wait for a cross-thread future in slices, so Ctrl-C and timeouts stay prompt."""
    deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
    try:
        while True:
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


async def await_with_timeout(aw: Awaitable[T], timeout: float | None, what: str = "operation") -> T:
    """``asyncio.wait_for`` that raises :class:`KafkaTimeoutError` naming the operation."""
    try:
        return await asyncio.wait_for(aw, timeout)
    except asyncio.TimeoutError:
        raise KafkaTimeoutError(f"{what} did not complete within {timeout:.3f}s") from None
