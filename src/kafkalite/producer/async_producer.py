"""The asyncio producer: ``kafkalite.aio.Producer``.

It runs on the caller's event loop (no thread). ``send()`` is designed like
aiokafka's: ``await producer.send(...)`` serializes, partitions and appends the
record, waiting only for metadata or buffer memory (at most ``max.block.ms``), and
returns an awaitable :class:`~kafkalite.producer.futures.AsyncRecordFuture`;
awaiting that gives the RecordMetadata once the broker acknowledged the record.
``await producer.send_and_wait(...)`` does both. Appending many records and awaiting
their futures later (or just ``flush()``) is how to go fast: no asyncio future is made
per record.

Example::

    from kafkalite.aio import Producer

    async with Producer({"bootstrap.servers": "127.0.0.1:9092"}) as producer:
        metadata = await producer.send_and_wait("orders", b"hello", key=b"k1")
        futures = [await producer.send("orders", b"v%d" % i) for i in range(1000)]
        await producer.flush()
        offsets = [(await f).offset for f in futures]

    tx = Producer({"bootstrap.servers": "127.0.0.1:9092", "transactional.id": "copier-1"})
    await tx.start()
    await tx.init_transactions()
    async with tx.transaction():
        await tx.send("out", b"...")
    await tx.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from kafkalite.config import PRODUCER, Config
from kafkalite.errors import ClientClosedError, KafkaError, KafkaTimeoutError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.otel.tracing import install_producer_tracing, tracing_for
from kafkalite.producer import exit_guard
from kafkalite.producer.core import ProducerCore
from kafkalite.producer.futures import AsyncRecordFuture
from kafkalite.settings import resolve
from kafkalite.telemetry.hub import ClientTelemetry
from kafkalite.types import ConsumerGroupMetadata, OffsetAndMetadata, RecordMetadata, TopicPartition

log = logging.getLogger("kafkalite.producer")

__all__ = ["AsyncProducer"]

Callback = Callable[[RecordMetadata, "BaseException | None"], object]


class AsyncProducer:
    """Sends records to Kafka from asyncio code (see the module doc).

    Args:
        config: settings with Java names; ``**settings`` with snake_case names.

    Raises:
        kafkalite.errors.ConfigError: an unknown, mistyped or contradictory setting.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **settings: Any) -> None:
        cfg = resolve("producer", config, **settings)
        self._core = core = ProducerCore(cfg, blocking=False)
        self._started = False
        self._finalizer = weakref.finalize(self, _finalize, core)
        self._telemetry = ClientTelemetry(cfg, PRODUCER, core.client, core.metrics.registry, core.metrics.snapshot,
                                          labels=lambda: {"transactional_id": cfg["transactional.id"],
                                                          "client_rack": cfg["client.rack"] or None})
        tracing = tracing_for(cfg)
        if tracing is not None:
            install_producer_tracing(self, tracing, asynchronous=True)
        # At interpreter exit (or when the loop shuts down) the exit guard flushes and reports.
        self._finalizer.atexit = False
        exit_guard.register(core, None)

    @property
    def config(self) -> Config:
        return self._core.cfg

    async def start(self) -> None:
        """Start the engine on the running loop (``send()`` and ``async with`` do it too)."""
        if not self._started:
            self._core.check_open()
            self._core.start(asyncio.get_running_loop())
            self._telemetry.start(asyncio.get_running_loop())
            self._started = True

    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    # -------------------------------------------------------------- sending

    async def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                   timestamp: int | None = None, headers: Any = None,
                   callback: Callback | None = None) -> AsyncRecordFuture:
        """Append a record; returns an awaitable future of its RecordMetadata.

        Same arguments and errors as :meth:`kafkalite.Producer.send`; the errors are
        raised here, never through the future.
        """
        core = self._core
        if headers is None and core.raw and self._started:
            # The common case in one call (C when built); None: the general path below.
            future = core.appender.append(topic, key, value, partition, timestamp, callback)
            if future is not None:
                return future  # type: ignore[no-any-return]
        if not self._started:
            await self.start()
        if core.closed:
            raise ClientClosedError("send() on a closed producer")
        if core.sender.fatal_error is not None:
            raise core.sender.fatal_error
        txn = core.txn
        if txn is not None and txn.state.value != "IN_TRANSACTION":
            txn.check_send()
        if core.interceptors is not None:
            topic, value, key, partition, timestamp, headers = core.intercept(
                topic, value, key, partition, timestamp, headers)
        if headers is not None:
            headers = core.check_headers(headers, topic)
        if core.key_serializer is None and (key is None or type(key) is bytes):
            key_bytes = key
        else:
            key_bytes = core.serialize(topic, key, headers, True)
        if core.value_serializer is None and (value is None or type(value) is bytes):
            value_bytes = value
        else:
            value_bytes = core.serialize(topic, value, headers, False)
        state = core.acc.topics.get(topic)
        if state is None or state.expired or (partition is not None and type(partition) is int and partition >= state.num_partitions):
            state = await core.wait_for_topic(topic, partition, core.max_block_s)
        future = core.append(state, topic, partition, key, key_bytes, value, value_bytes, timestamp, headers,
                             callback)
        if future is None:
            deadline = time.monotonic() + core.max_block_s
            needed = core.memory_needed(key_bytes, value_bytes)
            while future is None:
                core.sender.wakeup()
                if not await core.pool.wait_async(needed, deadline):
                    raise KafkaTimeoutError(
                        f"could not allocate {needed} bytes of buffer.memory within max.block.ms "
                        f"({int(core.max_block_s * 1000)} ms)", topic=topic)
                if core.closed:
                    raise ClientClosedError("the producer was closed while send() waited for memory")
                future = core.append(state, topic, partition, key, key_bytes, value, value_bytes, timestamp,
                                     headers, callback)
        return future  # type: ignore[return-value]

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                            timestamp: int | None = None, headers: Any = None) -> RecordMetadata:
        """Send one record and wait for its acknowledgement."""
        future = await self.send(topic, value, key, partition, timestamp, headers)
        return await future

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered and wait until acknowledged or failed (KafkaTimeoutError after ``timeout``)."""
        if self._started:
            await self._core.flush(timeout)

    async def close(self, timeout: float | None = None) -> None:
        """Flush (at most ``timeout`` seconds; None: until done), then release everything. Idempotent."""
        core = self._core
        self._finalizer.detach()
        if not self._started:
            core.closed = True
            core.close_plugins()
            return
        await self._telemetry.close(1.0 if timeout is None else min(1.0, timeout / 4))  # KIP-714 last push
        await core.close(timeout)

    # -------------------------------------------------------------- information

    async def partitions_for(self, topic: str, timeout: float | None = None) -> list[int]:
        """The partition ids of ``topic`` (fetching metadata if needed)."""
        core = self._core
        cached = core.partitions_for_cached(topic)
        if cached is not None:
            return cached
        if not self._started:
            await self.start()
        state = await core.wait_for_topic(topic, None, core.max_block_s if timeout is None else timeout)
        return list(range(state.num_partitions))

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``; ``metrics()["record-send-rate"]`` reads
        one by its Java name (record-send-rate, request-latency-avg, batch-size-avg, ...)."""
        return self._core.metrics.snapshot()

    # -------------------------------------------------------------- transactions

    def _timeout(self, timeout: float | None) -> float:
        return self._core.max_block_s if timeout is None else timeout

    async def init_transactions(self, timeout: float | None = None) -> None:
        """See :meth:`kafkalite.Producer.init_transactions`."""
        if not self._started:
            await self.start()
        await self._core.init_transactions(self._timeout(timeout))

    def begin_transaction(self) -> None:
        """Start a transaction (local)."""
        self._core.begin_transaction()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                          group_metadata: ConsumerGroupMetadata | str,
                                          timeout: float | None = None) -> None:
        """See :meth:`kafkalite.Producer.send_offsets_to_transaction`."""
        await self._core.send_offsets_to_transaction(offsets, group_metadata, self._timeout(timeout))

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush and commit (KafkaTimeoutError: outcome unknown, call again)."""
        await self._core.commit_transaction(self._timeout(timeout))

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction."""
        await self._core.abort_transaction(self._timeout(timeout))

    @contextlib.asynccontextmanager
    async def transaction(self, timeout: float | None = None) -> AsyncIterator[AsyncProducer]:
        """``async with producer.transaction():`` begins, commits, or aborts on an exception."""
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            txn = self._core.txn
            if txn is not None and not txn.is_fatal:
                try:
                    await self.abort_transaction(timeout)
                except KafkaError as exc:
                    log.warning("aborting the transaction failed: %s", exc)
            raise
        await self.commit_transaction(timeout)


def _finalize(core: ProducerCore) -> None:
    if core.closed:
        return
    if core.loop is None:  # never started: nothing was sent, nothing to flush at exit
        exit_guard.unregister(core)
        return
    left = core.unacknowledged()
    if left:
        text = (f"kafkalite aio Producer (client.id={core.client_id}) was garbage-collected without close() "
                f"with {left} record(s) not yet acknowledged; its sender keeps sending them while the event "
                "loop runs. Await producer.close() (or use 'async with Producer(...)').")
        log.warning(text)
