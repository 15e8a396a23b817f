"""How each front runs the producer API: the two base classes, side by side.

The API is written once, for asyncio, in
:class:`~kafkalite.producer.async_producer.AsyncProducer`; ``kafkalite.Producer`` is
generated from it (``tools/generate_fronts.py``). What differs between the fronts is
here, under the same names in both classes:

* ``__init__``: settings, one :class:`~kafkalite.producer.core.ProducerCore`,
  telemetry, tracing, the exit guard. The blocking front starts its engine thread at
  once and installs the C ``send`` (below); the asyncio front starts on the caller's
  running loop at first use (``start()``, ``async with``, or the first ``send()``).
* ``_ensure_started()``: starts the asyncio front; nothing for the blocking one.
* ``_run(coro, what)``: work on the engine loop (metadata waits, flush,
  transactions). The asyncio front awaits it; the blocking one runs it on its engine
  thread and waits (Ctrl-C prompt). The core's coroutines keep their own deadlines
  (``max.block.ms``, the call's ``timeout``), so the wait itself is not bounded.
* ``_wait_memory(needed, deadline, topic)``: ``buffer.memory`` is full; wait for
  batches to complete (in the caller's thread, or awaiting on the loop).
* ``close(timeout)`` and the finalizers: the blocking front stops its engine thread.

The hot paths stay where they were: ``send()`` and ``send_many()`` run in the caller's
thread on both fronts (one call into the append kernel in the common case), and with
the C extension the blocking ``send`` *is* the kernel's ``SendFunction``, which hands
everything unusual to the generated ``Producer.send`` method.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

from kafkalite.arguments import ShapeChecked
from kafkalite.config import PRODUCER, Config
from kafkalite.errors import (
    ClientClosedError,
    KafkaTimeoutError,
)
from kafkalite.net.engine import EngineThread
from kafkalite.otel.tracing import install_producer_tracing, tracing_for
from kafkalite.producer import exit_guard
from kafkalite.producer.append_kernel import SendFunction
from kafkalite.producer.core import ProducerCore
from kafkalite.producer.futures import AsyncRecordFuture, RecordFuture
from kafkalite.producer.settings import PRODUCER_RULES
from kafkalite.telemetry.hub import ClientTelemetry
from kafkalite.types import RecordMetadata

T = TypeVar("T")

log = logging.getLogger("kafkalite.producer")

#: ``callback(metadata, error)`` of :meth:`Producer.send`.
Callback = Callable[[RecordMetadata, "BaseException | None"], object]

#: "not serialized yet" for send()'s general path (None is a valid serialized value).
UNSET: Any = object()

#: Where the generated blocking class lives: its ``send`` is the one the C
#: ``SendFunction`` may stand in for (a subclass overriding ``send`` keeps its own).
_GENERATED_MODULE = "kafkalite.producer.producer"


def _telemetry(cfg: Config, core: ProducerCore[RecordFuture]) -> ClientTelemetry:
    return ClientTelemetry(cfg, PRODUCER, core.client, core.metrics.registry, core.metrics.snapshot,
                           labels=lambda: {"transactional_id": cfg["transactional.id"],
                                           "client_rack": cfg["client.rack"] or None})


def _warn_unclosed(core: ProducerCore[RecordFuture], front: str, what_happens: str) -> None:
    left = core.unacknowledged()
    if left:
        log.warning(f"kafkalite {front} (client.id={core.client_id}) was garbage-collected without close() "
                    f"with {left} record(s) not yet acknowledged; {what_happens}")


def _not_started(*args: Any) -> None:
    """The asyncio front's append path before start(): always "take the general path"."""
    return None


class AsyncProducerFront(ShapeChecked):
    """``kafkalite.aio.Producer``'s way: the engine runs on the caller's event loop."""

    def __init__(self, config: Mapping[str, Any] | None = None, **settings: Any) -> None:
        cfg = PRODUCER_RULES.resolve(config, **settings)
        self._core = core = ProducerCore(cfg, blocking=False)
        self._appender = core.appender
        # (topic, key, value, partition, timestamp, callback) -> the future, or None: the
        # general path. The append kernel's; None from everything before start().
        self._append: Callable[..., AsyncRecordFuture | None] = _not_started
        self._raw = core.raw
        self._started = False
        self._finalizer = weakref.finalize(self, _finalize_async, core)
        self._telemetry = _telemetry(cfg, core)
        tracing = tracing_for(cfg, producer=True)
        if tracing is not None:
            install_producer_tracing(self, tracing, asynchronous=True)
        # At interpreter exit (or when the loop shuts down) the exit guard flushes and reports.
        self._finalizer.atexit = False
        exit_guard.register(core, None)

    async def start(self) -> None:
        """Start the engine on the running loop (``send()`` and ``async with`` do it too).

        Example::

            p = Producer({"bootstrap.servers": bootstrap})
            await p.start()                        # or let the first send() start it
            await p.close()
        """
        if not self._started:
            self._core.check_open()
            loop = asyncio.get_running_loop()
            self._core.start(loop)
            self._telemetry.start(loop)
            self._started = True
            self._append = self._appender.append

    async def _ensure_started(self) -> None:
        if not self._started:
            await self.start()

    async def _run(self, coro: Coroutine[Any, Any, T], what: str) -> T:
        return await coro

    async def _wait_memory(self, needed: int, deadline: float, topic: str) -> bool:
        return await self._core.pool.wait_async(needed, deadline)

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                            timestamp: int | None = None, headers: Any = None) -> RecordMetadata:
        """Send one record and wait for its acknowledgement (``await (await send(...))``).

        Example::

            metadata = await producer.send_and_wait("orders", b"v", key=b"k")
            assert metadata.topic == "orders" and metadata.offset >= 0
        """
        send: Callable[..., Awaitable[AsyncRecordFuture]] = getattr(self, "send")  # noqa: B009 (traced one if tracing)
        future = await send(topic, value, key, partition, timestamp, headers)
        return await future

    async def close(self, timeout: float | None = None) -> None:
        """Flush (for at most ``timeout`` seconds; None: until done), then release everything.

        Records still unacknowledged when the timeout passes fail. Idempotent.

        Example::

            await producer.send("orders", b"last")
            await producer.close(timeout=10.0)     # flushes first; a closed producer refuses send()
        """
        core = self._core
        self._finalizer.detach()
        if not self._started:
            core.closed = True
            core.close_plugins()
            exit_guard.unregister(core)
            return
        await self._telemetry.close(1.0 if timeout is None else min(1.0, timeout / 4))  # KIP-714 last push
        await core.close(timeout)


class BlockingProducerFront(ShapeChecked):
    """``kafkalite.Producer``'s way: the engine runs on the producer's own thread.

    Thread-safe: any thread may send, flush and run transactions.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **settings: Any) -> None:
        cfg = PRODUCER_RULES.resolve(config, **settings)
        tracing = tracing_for(cfg, producer=True)  # settings errors before any thread starts
        self._core = core = ProducerCore(cfg, blocking=True)
        self._appender = core.appender
        self._append: Callable[..., RecordFuture | None] = core.appender.append
        self._raw = core.raw
        self._telemetry = _telemetry(cfg, core)
        self._engine = EngineThread(name=f"kafkalite-{core.client_id}").start()
        try:
            self._engine.run(self._start(), timeout=10.0, what="starting the producer")
        except BaseException:
            self._engine.stop()
            raise
        self._finalizer = weakref.finalize(self, _finalize_blocking, core, self._engine)
        # At interpreter exit the exit guard flushes (bounded) and reports instead.
        self._finalizer.atexit = False
        exit_guard.register(core, self._engine)
        send = getattr(type(self), "send", None)
        if SendFunction is not None and core.raw and getattr(send, "__module__", None) == _GENERATED_MODULE:
            # send() as one C call in the common case; it hands everything else to the
            # method unchanged (see append_kernel). An instance attribute, as tracing's.
            self.__dict__["send"] = SendFunction(core.appender, self, send)
        if tracing is not None:
            # Only a traced producer gets wrappers (they also record the send duration
            # histograms when otel.meter.provider is set): the untraced send() above stays as is.
            install_producer_tracing(self, tracing)

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self._core.start(loop)
        self._telemetry.start(loop)

    def _ensure_started(self) -> None:
        """Started in the constructor."""

    def _run(self, coro: Coroutine[Any, Any, T], what: str) -> T:
        return self._engine.run(coro, None, what)

    def _wait_memory(self, needed: int, deadline: float, topic: str) -> bool:
        if self._engine.in_engine_thread:
            raise KafkaTimeoutError("buffer.memory is full and send() was called from a producer callback, "
                                    "which cannot wait", topic=topic)
        return self._core.pool.wait_blocking(needed, deadline)

    def close(self, timeout: float | None = None) -> None:
        """Flush (for at most ``timeout`` seconds; None: until done), then release everything.

        Records still unacknowledged when the timeout passes fail. Idempotent.

        Example::

            producer.send("orders", b"last")
            producer.close(timeout=10.0)     # flushes first; a closed producer refuses send()
        """
        core = self._core
        if not self._engine.running:
            return
        if self._engine.in_engine_thread:
            # From a callback: cannot wait for ourselves; close in the background.
            self._engine.submit(core.close(0.0))
            return
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        # The core gets a little less than the timeout, so that it ends (failing what is
        # left, stopping its tasks) before this wait gives up on it.
        margin = 0.0 if timeout is None else min(0.2, max(0.0, timeout) * 0.2)
        try:
            self._engine.run(self._close(None if timeout is None else max(0.0, timeout - margin)),
                             None if timeout is None else max(0.01, timeout - margin / 4), "close()")
        except KafkaTimeoutError:
            log.warning("close() did not finish within its timeout; stopping the engine")
        finally:
            self._finalizer.detach()
            self._engine.stop(5.0 if deadline is None else max(0.0, deadline - time.monotonic()))

    async def _close(self, timeout: float | None) -> None:
        # KIP-714's terminating push first, while the connections are up (bounded).
        await self._telemetry.close(1.0 if timeout is None else min(1.0, timeout / 4))
        await self._core.close(timeout)


def _finalize_async(core: ProducerCore[RecordFuture]) -> None:
    if core.closed:
        return
    if core.loop is None:  # never started: nothing was sent, nothing to flush at exit
        exit_guard.unregister(core)
        return
    _warn_unclosed(core, "aio Producer", "its sender keeps sending them while the event loop runs. Await "
                   "producer.close() (or use 'async with Producer(...)').")


def _finalize_blocking(core: ProducerCore[RecordFuture], engine: EngineThread) -> None:
    """The Producer was garbage-collected without close() (at interpreter exit,
    :mod:`~kafkalite.producer.exit_guard` handles unclosed producers instead)."""
    if core.closed:
        engine.stop(0.5)
        return
    _warn_unclosed(core, "Producer", "they are sent in the background (delivery.timeout.ms). Call "
                   "producer.close(), or use 'with Producer(...)'.")
    try:
        # Deliver what can be delivered in the background, then stop the engine.
        future = engine.submit(core.close(core.cfg["delivery.timeout.ms"] / 1000.0))
        future.add_done_callback(lambda _f: engine.stop(0))
    except ClientClosedError:
        pass
