"""The blocking, thread-safe producer: ``kafkalite.Producer``.

Example::

    from kafkalite import Producer

    with Producer({"bootstrap.servers": "127.0.0.1:9092", "linger.ms": 5}) as producer:
        future = producer.send("orders", value=b"...", key=b"k1", headers=[("trace", b"1")])
        metadata = future.result(timeout=10)   # RecordMetadata(topic, partition, offset, ...)
        producer.send("orders", b"x", callback=lambda md, err: print(md, err))
        outcome = producer.send_many("orders", [b"a", b"b"])   # one call, one result
        producer.flush()
        outcome.result()
        producer.flush()

    tx = Producer({"bootstrap.servers": "127.0.0.1:9092", "transactional.id": "copier-1"})
    tx.init_transactions()
    with tx.transaction():                     # begin; commit on success, abort on error
        tx.send("out", b"...")

``send()`` serializes, partitions and appends the record in the calling thread and
returns at once with a :class:`~kafkalite.producer.futures.RecordFuture`; a
background engine thread sends batches. It blocks only while the topic's metadata
is unknown or ``buffer.memory`` is full, for at most ``max.block.ms``, and then
raises :class:`~kafkalite.errors.KafkaTimeoutError` from ``send()`` itself. Callbacks
``callback(metadata, error)`` run on the engine thread in send order per partition:
keep them quick (a slow callback delays every acknowledgement; kafkalite logs a
warning when one batch's callbacks take over a second).

Every blocking call honours its timeout and Ctrl-C. Leaving a ``with`` block flushes
and closes. A producer left open at interpreter exit is flushed for at most
``exit.flush.timeout.ms`` and what could not be delivered is reported per topic (see
:mod:`kafkalite.producer.exit_guard`).
"""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from time import time as _time
from typing import Any

from kafkalite.config import PRODUCER, Config, resolve
from kafkalite.errors import ClientClosedError, InvalidArgumentError, KafkaError, KafkaTimeoutError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.net.engine import EngineThread
from kafkalite.otel.tracing import install_producer_tracing, tracing_for
from kafkalite.producer import exit_guard
from kafkalite.producer.append_kernel import SendFunction
from kafkalite.producer.core import ProducerCore
from kafkalite.producer.futures import RecordFuture, SendManyResult
from kafkalite.telemetry.hub import ClientTelemetry
from kafkalite.types import ConsumerGroupMetadata, OffsetAndMetadata, RecordMetadata, TopicPartition

log = logging.getLogger("kafkalite.producer")

__all__ = ["Producer"]

Callback = Callable[[RecordMetadata, "BaseException | None"], object]
_UNSET: Any = object()


class Producer:
    """Sends records to Kafka (see the module doc for an overview).

    Args:
        config: settings with Java names (``{"bootstrap.servers": ..., "linger.ms": 5}``).
        **settings: the same with snake_case names (``linger_ms=5``).

    Raises:
        kafkalite.errors.ConfigError: an unknown, mistyped or contradictory setting.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **settings: Any) -> None:
        cfg = resolve("producer", config, **settings)
        tracing = tracing_for(cfg)  # settings errors before any thread starts
        self._core = core = ProducerCore(cfg, blocking=True)
        self._appender = core.appender
        self._append = core.appender.append
        self._raw = core.raw
        self._telemetry = ClientTelemetry(cfg, PRODUCER, core.client, core.metrics.registry, core.metrics.snapshot,
                                          labels=lambda: {"transactional_id": cfg["transactional.id"],
                                                          "client_rack": cfg["client.rack"] or None})
        self._engine = EngineThread(name=f"kafkalite-{core.client_id}").start()
        try:
            self._engine.run(self._start(), timeout=10.0, what="starting the producer")
        except BaseException:
            self._engine.stop()
            raise
        self._finalizer = weakref.finalize(self, _finalize, core, self._engine)
        # At interpreter exit the exit guard flushes (bounded) and reports instead.
        self._finalizer.atexit = False
        exit_guard.register(core, self._engine)
        if SendFunction is not None and core.raw and type(self).send is Producer.send:
            # send() as one C call in the common case; it hands everything else to the
            # method below unchanged (see append_kernel).
            self.send = SendFunction(core.appender, self, Producer.send)  # type: ignore[method-assign]
        if tracing is not None:
            # Only a traced producer gets wrappers: the untraced send() above stays as is.
            install_producer_tracing(self, tracing)

    async def _start(self) -> None:
        import asyncio

        self._core.start(asyncio.get_running_loop())
        self._telemetry.start(asyncio.get_running_loop())

    @property
    def config(self) -> Config:
        """The resolved settings."""
        return self._core.cfg

    # -------------------------------------------------------------- sending

    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             timestamp: int | None = None, headers: Any = None, callback: Callback | None = None) -> RecordFuture:
        """Append a record for sending; returns a future of its RecordMetadata.

        Args:
            topic: the topic.
            value: the value (bytes, or anything ``value.serializer`` takes); None is a
                null value (a tombstone), distinct from ``b""``.
            key: the key (bytes or ``key.serializer`` input). Keyed records go to
                ``murmur2(key) % partitions`` like the Java client's.
            partition: an explicit partition (wins over the key).
            timestamp: create time in ms since the epoch (default: now).
            headers: ordered list of ``(str, bytes | None)``; names may repeat.
            callback: ``callback(metadata, error)`` once acknowledged or failed
                (``error`` None on success), on the producer's I/O thread.

        Raises (from send() itself, never through the future):
            SerializationError: a serializer rejected the key or value.
            RecordTooLargeError: the record exceeds max.request.size or buffer.memory.
            UnknownTopicOrPartitionError: the topic does not exist (after
                max.block.ms), or the partition is out of range.
            KafkaTimeoutError: metadata or buffer memory not available within max.block.ms.
            ClientClosedError: the producer is closed.
        """
        if headers is None:
            # The common case in one call (C when built): partition, lock, encode into
            # the open batch, one future. None means: take the general path below.
            if self._raw:
                future = self._append(topic, key, value, partition, timestamp, callback)
                if future is not None:
                    return future
            elif self._appender.enabled:
                core = self._core
                key_bytes = key if core.key_serializer is None and (key is None or type(key) is bytes) \
                    else core.serialize(topic, key, None, True)
                value_bytes = value if core.value_serializer is None and (value is None or type(value) is bytes) \
                    else core.serialize(topic, value, None, False)
                future = self._append(topic, key_bytes, value_bytes, partition, timestamp, callback)
                if future is not None:
                    return future
                return self._send(topic, value, key, partition, timestamp, None, callback, key_bytes, value_bytes)
        return self._send(topic, value, key, partition, timestamp, headers, callback)

    def send_many(self, topic: str, values: Sequence[Any], keys: Sequence[Any] | None = None, *,
                  partition: int | None = None, timestamp: int | None = None) -> SendManyResult:
        """Append many records to one topic in one call; one result for all of them.

        Each record is exactly what ``send(topic, values[i], keys[i], partition,
        timestamp)`` would append (same partitioning, batching, serializers, errors),
        but the common case costs one C call for the whole list and no future per
        record: the :class:`~kafkalite.producer.futures.SendManyResult` tells, once
        the records are acknowledged, whether all succeeded (``result()`` raises the
        first failure) and which failed (``failures()``).

        Args:
            topic: the topic of every record.
            values: the values (a list or tuple is used as is; other iterables are
                copied into a list).
            keys: None, or one key per value.
            partition: one partition for every record (default: by key, or sticky).
            timestamp: one create time (ms) for every record (default: now).

        Raises the same errors as :meth:`send`, from the record that caused them; the
        records before it were appended and are sent (``flush()`` waits for them).

        Example::

            outcome = producer.send_many("events", [b"a", b"b", b"c"], keys=[b"1", b"2", b"3"])
            producer.flush()
            outcome.result()          # 3, or raises the first record's error
        """
        if not isinstance(values, (list, tuple)):
            values = list(values)
        n = len(values)
        if keys is not None:
            if not isinstance(keys, (list, tuple)):
                keys = list(keys)
            if len(keys) != n:
                raise InvalidArgumentError(f"send_many(): {len(keys)} keys for {n} values")
        core = self._core
        key_bytes: Sequence[Any] | None = keys
        value_bytes: Sequence[Any] = values
        serialized = not core.raw
        if serialized:
            if core.key_serializer is not None and keys is not None:
                key_bytes = [core.serialize(topic, k, None, True) for k in keys]
            if core.value_serializer is not None:
                value_bytes = [core.serialize(topic, v, None, False) for v in values]
        if timestamp is None:
            timestamp = int(_time() * 1000)  # one time for the call, whichever path a record takes
        spans: list[tuple[Any, int, int]] = []
        append_many = self._appender.append_many
        i = 0
        while i < n:
            i = append_many(topic, key_bytes, value_bytes, i, partition, timestamp, spans)
            if i >= n:
                break
            # The general path for this one (new batch, metadata, memory, errors).
            key = keys[i] if keys is not None else None
            if serialized:
                future = self._send(topic, values[i], key, partition, timestamp, None, None,
                                    key_bytes[i] if key_bytes is not None else None, value_bytes[i])
            else:
                future = self._send(topic, values[i], key, partition, timestamp, None, None)
            spans.append((future._batch, future._index, i))
            i += 1
        return SendManyResult(spans, n)

    def _send(self, topic: str, value: Any, key: Any, partition: int | None, timestamp: int | None,
              headers: Any, callback: Callback | None, key_bytes: Any = _UNSET, value_bytes: Any = _UNSET,
              ) -> RecordFuture:
        """send()'s general path: everything the append path declined."""
        core = self._core
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
        if key_bytes is _UNSET:
            if core.key_serializer is None and (key is None or type(key) is bytes):
                key_bytes = key
            else:
                key_bytes = core.serialize(topic, key, headers, True)
        if value_bytes is _UNSET:
            if core.value_serializer is None and (value is None or type(value) is bytes):
                value_bytes = value
            else:
                value_bytes = core.serialize(topic, value, headers, False)
        state = core.topics.get(topic)
        if state is None or state.expired or (partition is not None and type(partition) is int and partition >= state.num_partitions):
            state = self._engine.run(core.wait_for_topic(topic, partition, core.max_block_s), None,
                                     f"waiting for metadata of topic '{topic}'")
        appended = core.append(state, topic, partition, key, key_bytes, value, value_bytes, timestamp, headers,
                               callback)
        if appended is None:
            return self._append_waiting(state, topic, partition, key, key_bytes, value, value_bytes, timestamp,
                                        headers, callback)
        return appended

    def _append_waiting(self, state: Any, topic: str, partition: int | None, key: Any, key_bytes: bytes | None,
                        value: Any, value_bytes: bytes | None, timestamp: int | None, headers: Any,
                        callback: Callback | None) -> RecordFuture:
        """buffer.memory is full: wait (max.block.ms) for batches to complete, then append."""
        core = self._core
        deadline = time.monotonic() + core.max_block_s
        needed = core.memory_needed(key_bytes, value_bytes)
        if self._engine.in_engine_thread:
            raise KafkaTimeoutError("buffer.memory is full and send() was called from a producer callback, "
                                    "which cannot wait", topic=topic)
        while True:
            core.acc.wakeup()  # waiting makes every batch urgent; tell the sender
            if not core.pool.wait_blocking(needed, deadline):
                raise KafkaTimeoutError(
                    f"could not allocate {needed} bytes of buffer.memory ({core.buffer_memory}) within "
                    f"max.block.ms ({int(core.max_block_s * 1000)} ms): records are produced faster than "
                    "the brokers take them", topic=topic)
            if core.closed:
                raise ClientClosedError("the producer was closed while send() waited for memory")
            future = core.append(state, topic, partition, key, key_bytes, value, value_bytes, timestamp, headers,
                                 callback)
            if future is not None:
                return future

    def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered and wait until it is acknowledged or failed.

        Raises KafkaTimeoutError if that takes longer than ``timeout`` seconds
        (None: no limit; records are bounded by delivery.timeout.ms anyway).
        """
        core = self._core
        if not core.acc.incomplete:
            return
        self._engine.run(core.flush(timeout), None, "flush()")

    def close(self, timeout: float | None = None) -> None:
        """Flush (for at most ``timeout`` seconds; None: until done), then release everything.

        Records still unacknowledged when the timeout passes fail. Idempotent.
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

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -------------------------------------------------------------- information

    def partitions_for(self, topic: str, timeout: float | None = None) -> list[int]:
        """The partition ids of ``topic`` (fetching metadata if needed, up to max.block.ms)."""
        core = self._core
        cached = core.partitions_for_cached(topic)
        if cached is not None:
            return cached
        wait = core.max_block_s if timeout is None else timeout
        state = self._engine.run(core.wait_for_topic(topic, None, wait), None, f"partitions_for('{topic}')")
        return list(range(state.num_partitions))

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``; ``metrics()["record-send-rate"]`` reads
        one by its Java name (record-send-rate, request-latency-avg, batch-size-avg, ...)."""
        return self._core.metrics.snapshot()

    # -------------------------------------------------------------- transactions

    def _timeout(self, timeout: float | None) -> float:
        return self._core.max_block_s if timeout is None else timeout

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register ``transactional.id`` with its coordinator: fences older producers with
        the same id and completes (aborts) a transaction they left open. Call once."""
        self._engine.run(self._core.init_transactions(self._timeout(timeout)), None, "init_transactions()")

    def begin_transaction(self) -> None:
        """Start a transaction (local; the coordinator learns of it with the first record)."""
        self._core.begin_transaction()

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                    group_metadata: ConsumerGroupMetadata | str,
                                    timeout: float | None = None) -> None:
        """Commit consumer offsets as part of the transaction (consume-transform-produce).

        ``offsets`` are the NEXT offsets to read; ``group_metadata`` is
        ``consumer.group_metadata()`` so that zombie group members are fenced (KIP-447).
        """
        self._engine.run(self._core.send_offsets_to_transaction(offsets, group_metadata, self._timeout(timeout)),
                         None, "send_offsets_to_transaction()")

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit. Raises if any record of the transaction failed (then abort).

        A KafkaTimeoutError means the outcome is unknown: call commit_transaction() again.
        """
        self._engine.run(self._core.commit_transaction(self._timeout(timeout)), None, "commit_transaction()")

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: records of the transaction are never seen by read_committed consumers."""
        self._engine.run(self._core.abort_transaction(self._timeout(timeout)), None, "abort_transaction()")

    @contextlib.contextmanager
    def transaction(self, timeout: float | None = None) -> Iterator[Producer]:
        """``with producer.transaction():`` begins, then commits, or aborts on an exception."""
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            txn = self._core.txn
            if txn is not None and not txn.is_fatal:
                try:
                    self.abort_transaction(timeout)
                except KafkaError as exc:
                    log.warning("aborting the transaction failed: %s", exc)
            raise
        self.commit_transaction(timeout)


def _finalize(core: ProducerCore, engine: EngineThread) -> None:
    """The Producer was garbage-collected without close() (at interpreter exit,
    :mod:`~kafkalite.producer.exit_guard` handles unclosed producers instead)."""
    if core.closed:
        engine.stop(0.5)
        return
    left = core.unacknowledged()
    if left:
        text = (f"kafkalite Producer (client.id={core.client_id}) was garbage-collected without close() "
                f"with {left} record(s) not yet acknowledged; they are sent in the background "
                "(delivery.timeout.ms). Call producer.close(), or use 'with Producer(...)'.")
        log.warning(text)
    try:
        # Deliver what can be delivered in the background, then stop the engine.
        future = engine.submit(core.close(core.cfg["delivery.timeout.ms"] / 1000.0))
        future.add_done_callback(lambda _f: engine.stop(0))
    except ClientClosedError:
        pass
