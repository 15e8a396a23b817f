"""The producer's API, written once: ``kafkalite.aio.Producer``.

This class is the definition of the producer API: ``kafkalite.Producer`` (blocking) is
generated from it by ``tools/generate_fronts.py`` over
:class:`~kafkalite.producer.fronts.BlockingProducerFront`; here it runs on the caller's
event loop (:class:`~kafkalite.producer.fronts.AsyncProducerFront`, no thread).

``send()`` is designed like aiokafka's: ``await producer.send(...)`` serializes,
partitions and appends the record, waiting only for metadata or buffer memory (at most
``max.block.ms``), and returns an awaitable
:class:`~kafkalite.producer.futures.AsyncRecordFuture`; awaiting that gives the
RecordMetadata once the broker acknowledged the record. ``await
producer.send_and_wait(...)`` does both. Appending many records and awaiting their
futures later (or just ``flush()``), or ``send_many()``, is how to go fast: no asyncio
future is made per record.

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

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from time import time as _time
from typing import Any

from kafkalite.config import Config
from kafkalite.errors import ClientClosedError, KafkaError, KafkaTimeoutError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.producer.fronts import UNSET, AsyncProducerFront, Callback
from kafkalite.producer.futures import AsyncRecordFuture, AsyncSendManyResult, many_args
from kafkalite.producer.transactions import TxnState
from kafkalite.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

log = logging.getLogger("kafkalite.producer")

__all__ = ["AsyncProducer"]


class AsyncProducer(AsyncProducerFront):
    """Sends records to Kafka.

    Args:
        config: settings with Java names (``{"bootstrap.servers": ..., "linger.ms": 5}``).
        **settings: the same with snake_case names (``linger_ms=5``).

    Raises:
        kafkalite.errors.ConfigError: an unknown, mistyped or contradictory setting.

    ``send()`` serializes, partitions and appends the record in the calling thread and
    returns at once with a future of its RecordMetadata; the engine sends batches. It
    waits only while the topic's metadata is unknown or ``buffer.memory`` is full, for
    at most ``max.block.ms``, and then raises
    :class:`~kafkalite.errors.KafkaTimeoutError` from ``send()`` itself. Callbacks
    ``callback(metadata, error)`` run on the engine in send order per partition: keep
    them quick (a slow callback delays every acknowledgement; kafkalite logs a warning
    when one batch's callbacks take over a second). Leaving a ``with`` block flushes and
    closes. A producer left open at interpreter exit is flushed for at most
    ``exit.flush.timeout.ms`` and what could not be delivered is reported per topic
    (see :mod:`kafkalite.producer.exit_guard`).

    Example::

        async with Producer({"bootstrap.servers": "127.0.0.1:9092", "linger.ms": 5}) as producer:
            future = await producer.send("orders", value=b"...", key=b"k1", headers=[("trace", b"1")])
            await producer.send("orders", b"x", callback=lambda md, err: print(md, err))
            outcome = await producer.send_many("orders", [b"a", b"b"])   # one call, one result
            await producer.flush()
            print(future.result(), outcome.result())   # RecordMetadata(topic, partition, offset, ...), 2

        tx = Producer({"bootstrap.servers": "127.0.0.1:9092", "transactional.id": "copier-1"})
        await tx.init_transactions()
        async with tx.transaction():               # begin; commit on success, abort on error
            await tx.send("out", b"...")
    """

    @property
    def config(self) -> Config:
        """The resolved settings.

        Example::

            assert producer.config["bootstrap.servers"] == [bootstrap]   # parsed into a list
            assert producer.config["linger.ms"] == 5                       # kafkalite's default
        """
        return self._core.cfg

    async def __aenter__(self) -> AsyncProducer:
        await self._ensure_started()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -------------------------------------------------------------- sending

    async def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                   timestamp: int | None = None, headers: Any = None,
                   callback: Callback | None = None) -> AsyncRecordFuture:
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
                (``error`` None on success), on the producer's engine.

        Raises (from send() itself, never through the future):
            SerializationError: a serializer rejected the key or value.
            RecordTooLargeError: the record exceeds max.request.size or buffer.memory.
            UnknownTopicOrPartitionError: the topic does not exist (after
                max.block.ms), or the partition is out of range.
            KafkaTimeoutError: metadata or buffer memory not available within max.block.ms.
            ClientClosedError: the producer is closed.

        On the blocking producer the future's ``result(timeout)`` waits for the
        acknowledgement; on the asyncio producer awaiting the future does (its
        ``result()`` does not wait).

        Example::

            future = await producer.send("orders", b'{"id": 1}', key=b"c-7", headers=[("trace", b"abc")])
            await producer.flush()
            print(future.result())           # RecordMetadata(topic, partition, offset, ...)
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
                return await self._send(topic, value, key, partition, timestamp, None, callback, key_bytes,
                                        value_bytes)
        return await self._send(topic, value, key, partition, timestamp, headers, callback)

    async def send_many(self, topic: str, values: Sequence[Any], keys: Sequence[Any] | None = None, *,
                        partition: int | None = None, timestamp: int | None = None) -> AsyncSendManyResult:
        """Append many records to one topic in one call; one result for all of them.

        Each record is exactly what ``send(topic, values[i], keys[i], partition,
        timestamp)`` would append (same partitioning, batching, serializers, errors),
        but the common case costs one C call for the whole list and no future per
        record: the :class:`~kafkalite.producer.futures.SendManyResult` tells, once
        the records are acknowledged, whether all succeeded (``result()`` raises the
        first failure; the asyncio producer's result is awaited instead) and which
        failed (``failures()``).

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

            outcome = await producer.send_many("events", [b"a", b"b", b"c"], keys=[b"1", b"2", b"3"])
            await producer.flush()
            outcome.result()          # 3, or raises the first record's error
        """
        values, keys = many_args(values, keys)
        n = len(values)
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
                future = await self._send(topic, values[i], key, partition, timestamp, None, None,
                                          key_bytes[i] if key_bytes is not None else None, value_bytes[i])
            else:
                future = await self._send(topic, values[i], key, partition, timestamp, None, None)
            spans.append((future._batch, future._index, i))
            i += 1
        return AsyncSendManyResult(spans, n)

    async def _send(self, topic: str, value: Any, key: Any, partition: int | None, timestamp: int | None,
                    headers: Any, callback: Callback | None, key_bytes: Any = UNSET, value_bytes: Any = UNSET,
                    ) -> AsyncRecordFuture:
        """send()'s general path: everything the append path declined."""
        await self._ensure_started()
        core = self._core
        if core.closed:
            raise ClientClosedError("send() on a closed producer")
        if core.sender.fatal_error is not None:
            raise core.sender.fatal_error
        txn = core.txn
        if txn is not None and txn.state is not TxnState.IN_TRANSACTION:
            txn.check_send()
        if core.interceptors is not None:
            topic, value, key, partition, timestamp, headers = core.intercept(
                topic, value, key, partition, timestamp, headers)
        if headers is not None:
            headers = core.check_headers(headers, topic)
        if key_bytes is UNSET:
            if core.key_serializer is None and (key is None or type(key) is bytes):
                key_bytes = key
            else:
                key_bytes = core.serialize(topic, key, headers, True)
        if value_bytes is UNSET:
            if core.value_serializer is None and (value is None or type(value) is bytes):
                value_bytes = value
            else:
                value_bytes = core.serialize(topic, value, headers, False)
        state = core.topics.get(topic)
        if state is None or state.expired or (partition is not None and type(partition) is int and partition >= state.num_partitions):
            state = await self._run(core.wait_for_topic(topic, partition, core.max_block_s),
                                    f"waiting for metadata of topic '{topic}'")
        appended = core.append(state, topic, partition, key, key_bytes, value, value_bytes, timestamp, headers,
                               callback)
        if appended is None:
            return await self._append_waiting(state, topic, partition, key, key_bytes, value, value_bytes,
                                              timestamp, headers, callback)
        return appended

    async def _append_waiting(self, state: Any, topic: str, partition: int | None, key: Any,
                              key_bytes: bytes | None, value: Any, value_bytes: bytes | None,
                              timestamp: int | None, headers: Any, callback: Callback | None) -> AsyncRecordFuture:
        """buffer.memory is full: wait (max.block.ms) for batches to complete, then append."""
        core = self._core
        deadline = time.monotonic() + core.max_block_s
        needed = core.memory_needed(key_bytes, value_bytes)
        while True:
            core.acc.wakeup()  # waiting makes every batch urgent; tell the sender
            if not await self._wait_memory(needed, deadline, topic):
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

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered and wait until it is acknowledged or failed.

        Raises KafkaTimeoutError if that takes longer than ``timeout`` seconds
        (None: no limit; records are bounded by delivery.timeout.ms anyway).

        Example::

            for n in range(1000):
                await producer.send("orders", str(n).encode())
            await producer.flush(timeout=30)   # every record acknowledged (or failed)
        """
        core = self._core
        if not core.acc.incomplete:
            return
        await self._run(core.flush(timeout), "flush()")

    # -------------------------------------------------------------- information

    async def partitions_for(self, topic: str, timeout: float | None = None) -> list[int]:
        """The partition ids of ``topic`` (fetching metadata if needed, for at most
        ``timeout`` seconds; default max.block.ms).

        Example::

            assert await producer.partitions_for("orders") == [0, 1, 2]
        """
        core = self._core
        cached = core.partitions_for_cached(topic)
        if cached is not None:
            return cached
        await self._ensure_started()
        wait = core.max_block_s if timeout is None else timeout
        state = await self._run(core.wait_for_topic(topic, None, wait), f"partitions_for('{topic}')")
        return list(range(state.num_partitions))

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``; ``metrics()["record-send-rate"]`` reads
        one by its Java name (record-send-rate, request-latency-avg, batch-size-avg, ...).

        Example::

            await producer.send("orders", b"v")
            await producer.flush()
            print(producer.metrics()["record-send-rate"])
        """
        return self._core.metrics.snapshot()

    # -------------------------------------------------------------- transactions

    def _timeout(self, timeout: float | None) -> float:
        return self._core.max_block_s if timeout is None else timeout

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Register ``transactional.id`` with its coordinator: fences older producers with
        the same id and completes (aborts) a transaction they left open. Call once.

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-init"})
            await tx.init_transactions()          # once, before the first transaction
            await tx.close()
        """
        await self._ensure_started()
        await self._run(self._core.init_transactions(self._timeout(timeout)), "init_transactions()")

    def begin_transaction(self) -> None:
        """Start a transaction (local; the coordinator learns of it with the first record).

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-begin"})
            await tx.init_transactions()
            tx.begin_transaction()
            await tx.send("orders", b"in the transaction")
            await tx.commit_transaction()
            await tx.close()
        """
        self._core.begin_transaction()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                          group_metadata: ConsumerGroupMetadata | str,
                                          timeout: float | None = None) -> None:
        """Commit consumer offsets as part of the transaction (consume-transform-produce).

        ``offsets`` are the NEXT offsets to read; ``group_metadata`` is
        ``consumer.group_metadata()`` so that zombie group members are fenced (KIP-447).

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-copier"})
            await tx.init_transactions()
            consumer.assign([TopicPartition("orders", 0)])
            records = await consumer.poll(timeout=10.0)
            async with tx.transaction():
                for record in records:
                    await tx.send("orders-copy", record.value)
                await tx.send_offsets_to_transaction({TopicPartition("orders", 0): records[-1].offset + 1},
                                                     consumer.group_metadata())
            await tx.close()
        """
        await self._run(self._core.send_offsets_to_transaction(offsets, group_metadata, self._timeout(timeout)),
                        "send_offsets_to_transaction()")

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit. Raises if any record of the transaction failed (then abort).

        A KafkaTimeoutError means the outcome is unknown: call commit_transaction() again.

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-commit"})
            await tx.init_transactions()
            tx.begin_transaction()
            await tx.send("orders", b"committed")
            await tx.commit_transaction()         # read_committed consumers see the record now
            await tx.close()
        """
        await self._run(self._core.commit_transaction(self._timeout(timeout)), "commit_transaction()")

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: records of the transaction are never seen by read_committed consumers.

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-abort"})
            await tx.init_transactions()
            tx.begin_transaction()
            await tx.send("orders", b"never seen by read_committed consumers")
            await tx.abort_transaction()
            await tx.close()
        """
        await self._run(self._core.abort_transaction(self._timeout(timeout)), "abort_transaction()")

    @contextlib.asynccontextmanager
    async def transaction(self, timeout: float | None = None) -> AsyncIterator[AsyncProducer]:
        """``async with producer.transaction():`` begins, then commits, or aborts on an exception.

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-with"})
            await tx.init_transactions()
            async with tx.transaction():          # commits here; an exception inside aborts instead
                await tx.send("orders", b"a")
                await tx.send("orders", b"b")
            await tx.close()
        """
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
