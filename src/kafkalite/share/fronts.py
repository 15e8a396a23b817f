"""How each front runs the share consumer API: the two base classes, side by side.

The API is written once, for asyncio, in
:class:`~kafkalite.share.async_consumer.AsyncShareConsumer`; ``kafkalite.ShareConsumer``
is generated from it (``tools/generate_fronts.py``). What differs between the fronts is
here, under the same names in both classes (plus ``_run``, ``_call_soon``,
``_wait_event`` and ``_wake_waiters`` from :class:`~kafkalite.net.engine.EngineCalls` /
:class:`~kafkalite.net.engine.LoopCalls`):

* ``__init__``: settings; the blocking front starts its engine thread and builds the
  core there, the asyncio front builds it on the caller's running loop at first use
  (``_open_core()``);
* ``_run_ack_callbacks(core)``: the acknowledgement commit callback for every finished
  acknowledgement, in the thread that polls / commits; on the asyncio front the
  callback may be a coroutine function;
* ``_ack_callbacks_now(core)``: the same from a plain method (``commit_async()``), where
  the asyncio front cannot wait: a coroutine the callback returns runs as a task;
* ``_subscribe_to_nothing()``: ``subscribe([])``, Java's ``unsubscribe()`` on the
  blocking front; the asyncio front refuses it and says ``await unsubscribe()``;
* ``_stop_engine(deadline)``: the end of close().
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, cast

from kafkalite.arguments import ShapeChecked
from kafkalite.errors import ClientClosedError, IllegalStateError
from kafkalite.net.engine import EngineCalls, EngineThread, LoopCalls
from kafkalite.share import settings as st
from kafkalite.share.core import ShareConsumerCore

log = logging.getLogger("kafkalite.share")


class _BlockingApi(Protocol):
    """What the blocking base calls back into the generated class."""

    def unsubscribe(self) -> None: ...


class AsyncShareConsumerFront(LoopCalls, ShapeChecked):
    """``kafkalite.aio.ShareConsumer``'s way: the engine runs on the caller's event loop
    (no thread); the acknowledgement commit callback runs in the task that awaits
    ``poll()`` / a commit and may be a coroutine function."""

    _PUBLIC = "kafkalite.aio.ShareConsumer"
    _CLIENT = "the share consumer"

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = st.resolve_settings(config, kwargs)
        self._core: ShareConsumerCore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event = asyncio.Event()
        self._wakeup = False
        self._closed = False
        self._callback_tasks: set[asyncio.Future[object]] = set()

    def _open_core(self) -> ShareConsumerCore:
        """The core, once the consumer is known to be open; made on the running loop at first use."""
        self._check_open()
        core = self._core
        if core is None:
            self._loop = asyncio.get_running_loop()
            core = self._core = ShareConsumerCore(self.config, self._loop, self._event.set, self._call_soon)
            core.start()
        return core

    @staticmethod
    def _ack_callback_results(core: ShareConsumerCore) -> Iterator[object]:
        """Call the callback for each finished acknowledgement; what it returned."""
        callback = core.ack_callback
        while core.ack_results:
            outcome = core.ack_results.popleft()
            if callback is not None:
                yield callback({outcome.partition: set(outcome.offsets)}, outcome.error)

    async def _run_ack_callbacks(self, core: ShareConsumerCore) -> None:
        for result in self._ack_callback_results(core):
            if asyncio.iscoroutine(result):
                await result

    def _ack_callbacks_now(self, core: ShareConsumerCore) -> None:
        for result in self._ack_callback_results(core):
            if asyncio.iscoroutine(result):
                task = asyncio.ensure_future(result)
                self._callback_tasks.add(task)
                task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Future[object]) -> None:
        self._callback_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("the acknowledgement commit callback failed: %r", task.exception(), exc_info=task.exception())

    def _subscribe_to_nothing(self) -> None:
        raise IllegalStateError("subscribe([]) on the asyncio share consumer cannot wait for the group to be "
                                "left: await consumer.unsubscribe() instead")

    def _stop_engine(self, deadline: float) -> None:
        """The engine is the caller's loop: nothing to stop."""


class BlockingShareConsumerFront(EngineCalls, ShapeChecked):
    """``kafkalite.ShareConsumer``'s way: the engine (heartbeats, fetches,
    acknowledgements) runs on a background thread; ``poll()`` decodes records in the
    calling thread. Not thread-safe, like Java's ``KafkaShareConsumer``: one consumer
    per thread; only ``wakeup()`` may be called from another thread."""

    _PUBLIC = "kafkalite.ShareConsumer"
    _CLIENT = "the share consumer"

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._closed = True
        self.config = st.resolve_settings(config, kwargs)
        self._event = threading.Event()
        self._wakeup = False
        self._engine = engine = EngineThread(
            name=f"kafkalite-share-consumer-{self.config['client.id'] or id(self)}").start()
        event = self._event

        async def make() -> ShareConsumerCore:
            return ShareConsumerCore(self.config, asyncio.get_running_loop(), event.set, engine.call_soon)

        try:
            self._core: ShareConsumerCore = engine.run(make(), timeout=30, what="starting the share consumer")
        except BaseException:
            engine.stop()
            raise
        self._closed = False
        engine.call_soon(self._core.start)

    def _open_core(self) -> ShareConsumerCore:
        """The core, once the consumer is known to be open."""
        if self._closed:
            raise ClientClosedError("the share consumer is closed")
        return self._core

    def _run_ack_callbacks(self, core: ShareConsumerCore) -> None:
        core.run_ack_callbacks()

    def _ack_callbacks_now(self, core: ShareConsumerCore) -> None:
        core.run_ack_callbacks()

    def _subscribe_to_nothing(self) -> None:
        cast(_BlockingApi, self).unsubscribe()

    def _stop_engine(self, deadline: float) -> None:
        self._engine.stop(timeout=max(0.0, deadline - time.monotonic()))
