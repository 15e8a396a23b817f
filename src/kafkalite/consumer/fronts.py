"""How each front runs the consumer API: the two base classes, side by side.

The API is written once, for asyncio, in
:class:`~kafkalite.consumer.async_consumer.AsyncConsumer`; ``kafkalite.Consumer`` is
generated from it (``tools/generate_fronts.py``). What differs between the fronts is
here, under the same names in both classes (plus ``_run``, ``_call_soon``,
``_wait_event`` and ``_wake_waiters`` from :class:`~kafkalite.net.engine.EngineCalls` /
:class:`~kafkalite.net.engine.LoopCalls`):

* ``__init__``: settings and tracing; the blocking front starts its engine thread and
  builds the core there, the asyncio front builds it on the caller's running loop at
  first use (``_open_core()``);
* ``_run_callbacks()``: the application's calls the engine queued (rebalance listener,
  commit callbacks, interceptors' ``on_commit``), run in the thread that polls; on the
  asyncio front they may be coroutines;
* ``_revoke(core, partitions)``: the listener's ``on_partitions_revoked`` now;
* ``_start_group(core)``: subscribe()'s engine side;
* ``_subscribe_to_nothing()``: ``subscribe([])``. Java's meaning is ``unsubscribe()``,
  which the blocking front does; a plain method of the asyncio front cannot wait for
  the group, so it refuses and says ``await unsubscribe()``;
* ``_stop_engine(deadline)``: the end of close().

``poll()`` decodes in the calling thread on both fronts: the engine only fetches.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol, cast

from kafkalite.arguments import ShapeChecked
from kafkalite.consumer import _frontend as fe
from kafkalite.consumer.core import ConsumerCore
from kafkalite.consumer.records import ConsumerRecords
from kafkalite.errors import ClientClosedError, IllegalStateError
from kafkalite.net.engine import EngineCalls, EngineThread, LoopCalls
from kafkalite.otel.tracing import install_consumer_tracing, tracing_for
from kafkalite.types import ConsumerRecord, TopicPartition


class _AsyncApi(Protocol):
    """What the asyncio base calls back into the definition class."""

    async def poll(self, timeout: float | None = None, max_records: int | None = None) -> ConsumerRecords: ...


class _BlockingApi(Protocol):
    """What the blocking base calls back into the generated class."""

    def unsubscribe(self) -> None: ...


class AsyncConsumerFront(LoopCalls, ShapeChecked):
    """``kafkalite.aio.Consumer``'s way: the engine runs on the caller's event loop (no
    thread); listener methods and commit callbacks run in the task that awaits poll()
    (or a commit) and may be coroutines."""

    _PUBLIC = "kafkalite.aio.Consumer"
    _CLIENT = "the consumer"

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = fe.resolve_settings(config, kwargs)
        self._core: ConsumerCore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event = asyncio.Event()
        self._wakeup = False
        self._closed = False
        tracing = tracing_for(self.config, self.config["group.id"])
        if tracing is not None:
            install_consumer_tracing(self, tracing, asynchronous=True)

    def _open_core(self) -> ConsumerCore:
        """The core, once the consumer is known to be open; made on the running loop at first use."""
        self._check_open()
        core = self._core
        if core is None:
            loop = self._loop = asyncio.get_running_loop()
            core = self._core = ConsumerCore(self.config, loop, self._event.set, self._call_soon)
            core.start()
        return core

    async def _run_callbacks(self) -> BaseException | None:
        return await self._open_core().app_calls.run_async()

    async def _revoke(self, core: ConsumerCore, partitions: set[TopicPartition]) -> None:
        result = core.revoke_now(partitions)
        if asyncio.iscoroutine(result):
            await result

    def _start_group(self, core: ConsumerCore) -> None:
        core.ensure_group()

    def _subscribe_to_nothing(self) -> None:
        raise IllegalStateError("subscribe([]) on the asyncio consumer cannot wait for the group to be left: "
                                "await consumer.unsubscribe() instead")

    def _stop_engine(self, deadline: float) -> None:
        """The engine is the caller's loop: nothing to stop."""

    async def getmany(self, timeout_ms: int = 0, max_records: int | None = None
                      ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records grouped by partition: aiokafka's name and shape (``timeout_ms`` in ms).

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            batches = await consumer.getmany(timeout_ms=10000)
            assert [r.value for r in batches[TopicPartition("orders", 0)]] == [b"v0"]
        """
        records = await cast(_AsyncApi, self).poll(timeout_ms / 1000.0, max_records)
        return records.by_partition()


class BlockingConsumerFront(EngineCalls, ShapeChecked):
    """``kafkalite.Consumer``'s way: the engine (fetching, heartbeats, commits) runs on a
    background thread; ``poll()`` takes already fetched records from a buffer and decodes
    them in the calling thread. Rebalance listener callbacks and commit callbacks run in
    the thread that calls ``poll()``. Every blocking call honours its timeout,
    ``wakeup()`` and Ctrl-C.

    Not thread-safe, like the Java consumer: use one consumer per thread; only
    ``wakeup()`` may be called from another thread.
    """

    _PUBLIC = "kafkalite.Consumer"
    _CLIENT = "the consumer"

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._closed = True
        self.config = fe.resolve_settings(config, kwargs)
        tracing = tracing_for(self.config, self.config["group.id"])  # settings errors before any thread starts
        self._event = threading.Event()
        self._wakeup = False
        name = f"kafkalite-consumer-{self.config['client.id'] or id(self)}"
        self._engine = engine = EngineThread(name=name).start()
        event = self._event

        async def make() -> ConsumerCore:
            return ConsumerCore(self.config, asyncio.get_running_loop(), event.set, engine.call_soon)

        try:
            self._core: ConsumerCore = engine.run(make(), timeout=30, what="starting the consumer")
        except BaseException:
            engine.stop()  # e.g. a deserializer that fails to configure: no thread left behind
            raise
        self._closed = False
        engine.call_soon(self._core.start)
        if tracing is not None:
            install_consumer_tracing(self, tracing)

    def _open_core(self) -> ConsumerCore:
        """The core, once the consumer is known to be open."""
        if self._closed:
            raise ClientClosedError("the consumer is closed")
        return self._core

    def _run_callbacks(self) -> BaseException | None:
        return self._core.app_calls.run()

    def _revoke(self, core: ConsumerCore, partitions: set[TopicPartition]) -> None:
        core.revoke_now(partitions)

    def _start_group(self, core: ConsumerCore) -> None:
        async def attach() -> None:
            core.ensure_group()
            core.start()
        self._run(attach(), 30, "subscribe()")

    def _subscribe_to_nothing(self) -> None:
        cast(_BlockingApi, self).unsubscribe()

    def _stop_engine(self, deadline: float) -> None:
        self._engine.stop(timeout=max(0.0, deadline - time.monotonic()))
