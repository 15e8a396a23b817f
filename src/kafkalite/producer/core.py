"""The producer engine shared by the blocking and the asyncio front ends.

:class:`ProducerCore` owns the settings, the network client, the accumulator, the
sender, the idempotence and transaction state, serializers, partitioner,
interceptors and metrics. Its synchronous methods (:meth:`prepare`,
:meth:`append`) run in the caller's thread and touch only thread-safe structures;
its coroutines (metadata waits, flush, close, transactions) run on the engine's
event loop. The front ends (:mod:`kafkalite.producer.producer`,
:mod:`kafkalite.producer.async_producer`) add only waiting: a thread blocking with
timeouts and Ctrl-C, or ``await``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.config import Config, acks_value
from kafkalite.errors import (
    AuthenticationError,
    ClientClosedError,
    ConfigError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kafkalite.net.client import NetworkClient
from kafkalite.producer import exit_guard
from kafkalite.producer.accumulator import BufferPool, RecordAccumulator, TopicState
from kafkalite.producer.append_kernel import Appender
from kafkalite.producer.batch import DoneSignal, ProducerBatch
from kafkalite.producer.futures import AsyncRecordFuture, RecordFuture
from kafkalite.producer.idempotence import IdempotenceState
from kafkalite.producer.interceptors import ProducerRecord, load_interceptors
from kafkalite.producer.partitioner import resolve_partitioner
from kafkalite.producer.producer_metrics import ProducerMetrics
from kafkalite.producer.sender import Sender
from kafkalite.producer.transactions import TransactionManager, TxnState
from kafkalite.producer.txn_requests import TransactionClient, _wait
from kafkalite.protocol import compression
from kafkalite.protocol.record_codec import murmur2, record_size
from kafkalite.protocol.record_types import BATCH_OVERHEAD
from kafkalite.serialization.base import resolve_serializer
from kafkalite.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

log = logging.getLogger("kafkalite.producer")

__all__ = ["ProducerCore"]

_UNKNOWN_TOPIC = UnknownTopicOrPartitionError.code
# Topic errors that will not go away by waiting (authorization, invalid name).
_FINAL_TOPIC_ERRORS = {17, 29}
_LEVEL_SETTING = {compression.GZIP: "compression.gzip.level", compression.LZ4: "compression.lz4.level",
                  compression.ZSTD: "compression.zstd.level"}


class _ClusterView:
    """What custom partitioners see (see :class:`kafkalite.producer.partitioner.ClusterView`)."""

    def __init__(self, acc: RecordAccumulator) -> None:
        self._acc = acc

    def partition_count(self, topic: str) -> int:
        state = self._acc.topics.get(topic)
        return state.num_partitions if state else 0

    def available_partitions(self, topic: str) -> list[int]:
        state = self._acc.topics.get(topic)
        return list(state.available) if state else []


class ProducerCore:
    """One producer's engine (see the module doc)."""

    def __init__(self, cfg: Config, *, blocking: bool) -> None:
        self.cfg = cfg
        self.client_id: str = cfg["client.id"]
        self.blocking = blocking
        self.acks = acks_value(cfg)
        self.max_request_size: int = cfg["max.request.size"]
        self.buffer_memory: int = cfg["buffer.memory"]
        self.max_block_s: float = cfg["max.block.ms"] / 1000.0
        self.batch_size: int = cfg["batch.size"]
        self.size_check_threshold = min(self.max_request_size, self.buffer_memory) - BATCH_OVERHEAD - 256
        codec = compression.codec_id(cfg["compression.type"])
        level_setting = _LEVEL_SETTING.get(codec)
        level = cfg[level_setting] if level_setting else None
        if codec == compression.GZIP and level == -1:
            level = None
        compression.validate_level(codec, level)
        self.client = NetworkClient(cfg)
        self.signal = DoneSignal()
        self.pool = BufferPool(self.buffer_memory)
        self.sender: Sender  # set below; the accumulator's wakeup refers to it
        self.acc = RecordAccumulator(
            batch_size=cfg["batch.size"], linger_ms=cfg["linger.ms"], compression=codec,
            compression_level=level, delivery_timeout_ms=cfg["delivery.timeout.ms"], pool=self.pool,
            signal=self.signal, wakeup=self._wakeup_threadsafe if blocking else self._wakeup_local,
        )
        txn_id = cfg["transactional.id"]
        self.idem = IdempotenceState(transactional=txn_id is not None) if cfg["enable.idempotence"] else None
        self.txn = TransactionManager(txn_id, cfg["transaction.timeout.ms"]) if txn_id is not None else None
        self.partitioner = resolve_partitioner(cfg["partitioner.class"], cfg)
        self.ignore_keys: bool = cfg["partitioner.ignore.keys"]
        self.key_serializer = resolve_serializer(cfg["key.serializer"], "key.serializer")
        self.value_serializer = resolve_serializer(cfg["value.serializer"], "value.serializer")
        for serializer, is_key in ((self.key_serializer, True), (self.value_serializer, False)):
            configure = getattr(serializer, "configure", None)
            if callable(configure):
                configure(cfg, is_key)
        self.interceptors = load_interceptors(cfg["interceptor.classes"], cfg)
        self.ack_interceptor: Callable[..., Any] | None = (
            self.interceptors.on_acknowledgement if self.interceptors is not None and self.interceptors.wants_acks
            else None
        )
        self.metrics = ProducerMetrics(
            self.client_id, cfg["metrics.sample.window.ms"], cfg["metrics.num.samples"], self.pool, self.acc,
            lambda: float(len(self.sender.in_flight)),
        )
        self.client.stats.register(self.metrics.registry, "producer-metrics", {"client-id": self.client_id})
        self.sender = Sender(self)
        self.txn_client = TransactionClient(self) if self.txn is not None else None
        self.future_cls: type[RecordFuture] = RecordFuture if blocking else AsyncRecordFuture
        self.cluster_view = _ClusterView(self.acc)
        self.closed = False
        self.topics = self.acc.topics
        #: send()'s common case in one call (C when built): see append_kernel.
        self.appender = Appender(self.topics, self.future_cls, self.batch_size, self.size_check_threshold)
        #: Whether send() may take the append path (no interceptors, transaction,
        #: custom partitioner; not closed, no fatal error). Cleared by close/fatal errors.
        self.plain = self.interceptors is None and self.txn is None and self.partitioner is None \
            and not self.ignore_keys
        #: No key/value serializer: send() hands its arguments to the append path as they are.
        self.raw = self.key_serializer is None and self.value_serializer is None
        self.close_task: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def plain(self) -> bool:
        return bool(self.appender.enabled)

    @plain.setter
    def plain(self, value: bool) -> None:
        self.appender.enabled = bool(value)

    # -------------------------------------------------------------- lifecycle

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the sender on ``loop`` (call on that loop's thread, or before it runs)."""
        self.loop = loop
        self.sender.start(loop)

    def _wakeup_threadsafe(self) -> None:
        self.sender.wakeup_threadsafe()

    def _wakeup_local(self) -> None:
        self.sender.wakeup()

    def set_fatal(self, error: KafkaError) -> None:
        self.sender.fatal_error = error
        self.plain = False

    def check_open(self) -> None:
        if self.closed:
            raise ClientClosedError("the producer is closed")
        fatal = self.sender.fatal_error
        if fatal is not None:
            raise fatal

    # -------------------------------------------------------------- send path (caller's thread)

    def intercept(self, topic: str, value: Any, key: Any, partition: int | None, timestamp: int | None,
                  headers: Any) -> ProducerRecord:
        assert self.interceptors is not None
        return self.interceptors.on_send(ProducerRecord(topic, value, key, partition, timestamp, headers))

    def check_headers(self, headers: Any, topic: str) -> list[tuple[str, bytes | None]]:
        """Headers as an ordered list of (str, bytes | None); duplicates kept."""
        if isinstance(headers, Mapping):
            headers = list(headers.items())
        out = []
        try:
            for name, value in headers:
                if not isinstance(name, str):
                    raise SerializationError(f"header names must be str, got {type(name).__name__}", topic=topic)
                if value is not None and type(value) is not bytes:
                    if isinstance(value, (bytearray, memoryview)):
                        value = bytes(value)
                    elif isinstance(value, str):
                        value = value.encode("utf-8")
                    else:
                        raise SerializationError(
                            f"header {name!r} value must be bytes, str or None, got {type(value).__name__}",
                            topic=topic)
                out.append((name, value))
        except (TypeError, ValueError) as exc:
            if isinstance(exc, SerializationError):
                raise
            raise SerializationError(f"headers must be a list of (str, bytes) pairs: {exc}", topic=topic) from None
        return out

    def serialize(self, topic: str, data: Any, headers: Any, is_key: bool) -> bytes | None:
        serializer = self.key_serializer if is_key else self.value_serializer
        what = "key" if is_key else "value"
        if serializer is None:
            if data is None or type(data) is bytes:
                return data  # type: ignore[no-any-return]
            if isinstance(data, (bytearray, memoryview)):
                return bytes(data)
            raise SerializationError(
                f"the {what} must be bytes (or None) without a {what}.serializer; got {type(data).__name__} "
                f"(set {what}.serializer, e.g. 'str' or 'json')", topic=topic)
        try:
            out = serializer.serialize(topic, data, headers)
        except SerializationError as exc:
            exc.message = f"{what} serializer failed: {exc.message}"
            raise exc.with_context(topic=topic) from None
        except Exception as exc:
            raise SerializationError(f"{what} serializer {serializer!r} failed: {exc!r}", topic=topic) from exc
        if out is not None and type(out) is not bytes:
            if isinstance(out, (bytearray, memoryview)):
                return bytes(out)
            raise SerializationError(
                f"{what} serializer {serializer!r} returned {type(out).__name__}, not bytes", topic=topic)
        return out

    def _check_size(self, topic: str, key: bytes | None, value: bytes | None, headers: Any) -> int:
        size = record_size(0, 0, key, value, headers) + BATCH_OVERHEAD
        if size > self.max_request_size:
            raise RecordTooLargeError(
                f"the record is {size} bytes when serialized, larger than max.request.size "
                f"({self.max_request_size})", topic=topic)
        if size > self.buffer_memory:
            raise RecordTooLargeError(
                f"the record is {size} bytes when serialized, larger than buffer.memory ({self.buffer_memory})",
                topic=topic)
        return size

    def append(self, state: TopicState, topic: str, partition: int | None, key: Any, key_bytes: bytes | None,
               value: Any, value_bytes: bytes | None, timestamp: int | None, headers: Any,
               callback: Callable[..., Any] | None) -> RecordFuture | None:
        """Partition and append one serialized record; None when buffer memory is short."""
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        elif type(timestamp) is not int or timestamp < 0:
            if isinstance(timestamp, float) and timestamp >= 0:
                timestamp = int(timestamp)
            else:
                raise SerializationError(f"timestamp must be a non-negative int (ms), got {timestamp!r}",
                                         topic=topic)
        klen = len(key_bytes) if key_bytes is not None else -1
        vlen = len(value_bytes) if value_bytes is not None else -1
        hint = klen + vlen + 32
        if headers:
            hint += sum(len(k) + (len(v) if v is not None else 0) + 8 for k, v in headers)
        if hint > self.size_check_threshold:
            hint = self._check_size(topic, key_bytes, value_bytes, headers)
        n = state.num_partitions
        if partition is None:
            if self.partitioner is not None:
                partition = self._custom_partition(topic, key, key_bytes, value, value_bytes, n)
            elif key_bytes is not None and not self.ignore_keys:
                partition = (murmur2(key_bytes) & 0x7FFFFFFF) % n
            else:
                # The sticky partition (KIP-794): chosen under its lock by the accumulator.
                future = self.acc.append(state, None, timestamp, key_bytes, value_bytes, headers, klen, vlen,
                                         self.future_cls, callback, self.ack_interceptor, hint)
                if future is not None and self.txn is not None:
                    self._txn_partition(topic, future.partition)
                return future
        elif type(partition) is not int or partition < 0:
            raise UnknownTopicOrPartitionError(f"invalid partition {partition!r}", topic=topic)
        if self.txn is not None:
            self._txn_partition(topic, partition)
        return self.acc.append(state, partition, timestamp, key_bytes, value_bytes, headers, klen, vlen,
                               self.future_cls, callback, self.ack_interceptor, hint)

    def _txn_partition(self, topic: str, partition: int) -> None:
        txn = self.txn
        assert txn is not None
        tp = (topic, partition)
        if tp not in txn.partitions_in_txn and tp not in txn.pending_partitions and tp not in txn.new_partitions:
            txn.maybe_add_partition(tp)
            self.acc.wakeup()

    def _custom_partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any,
                          value_bytes: bytes | None, n: int) -> int:
        assert self.partitioner is not None
        try:
            partition = self.partitioner.partition(topic, key, key_bytes, value, value_bytes, self.cluster_view)
        except KafkaError:
            raise
        except Exception as exc:
            raise ConfigError(f"the custom partitioner (partitioner.class) failed: {exc!r}", topic=topic) from exc
        if type(partition) is not int or not 0 <= partition < n:
            raise ConfigError(
                f"the custom partitioner (partitioner.class) returned {partition!r}; topic '{topic}' has "
                f"partitions 0..{n - 1}", topic=topic)
        return partition

    def memory_needed(self, key_bytes: bytes | None, value_bytes: bytes | None) -> int:
        size = (len(key_bytes) if key_bytes else 0) + (len(value_bytes) if value_bytes else 0) + 64
        return max(size, self.cfg["batch.size"])

    # -------------------------------------------------------------- metadata (engine loop)

    def sync_metadata(self) -> None:
        """Apply new metadata to the topics send() knows (partition counts, leaders)."""
        metadata = self.client.metadata
        for topic in list(self.acc.topics):
            meta = metadata.topics.get(topic)
            if meta is not None and meta.partitions:
                self.acc.update_topic(topic, meta.partition_count, metadata.available_partitions(topic))

    async def wait_for_topic(self, topic: str, partition: int | None, timeout_s: float) -> TopicState:
        """Metadata for ``topic`` (with ``partition``), waiting up to ``timeout_s`` (max.block.ms)."""
        if not isinstance(topic, str) or not topic:
            raise UnknownTopicOrPartitionError(f"invalid topic name {topic!r}")
        deadline = time.monotonic() + timeout_s
        self.client.track_topics([topic])
        metadata = self.client.metadata
        refreshed = False
        attempt = 0
        last_error: BaseException | None = None
        while True:
            meta = metadata.topics.get(topic)
            if meta is not None and meta.partitions:
                state = self.acc.update_topic(topic, meta.partition_count, metadata.available_partitions(topic))
                if partition is None or partition < state.num_partitions:
                    return state
                if refreshed:
                    raise UnknownTopicOrPartitionError(
                        f"partition {partition} of topic '{topic}' does not exist (the topic has "
                        f"{state.num_partitions} partitions)", topic=topic, partition=partition)
            code = metadata.topic_errors.get(topic)
            if refreshed and code in _FINAL_TOPIC_ERRORS:
                raise error_for_code(code, f"cannot produce to topic '{topic}'", topic=topic)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if code == _UNKNOWN_TOPIC:
                    raise UnknownTopicOrPartitionError(
                        f"topic '{topic}' not present in metadata after {timeout_s * 1000:.0f} ms "
                        "(it does not exist and the broker does not create topics automatically?)",
                        topic=topic)
                raise KafkaTimeoutError(
                    f"topic '{topic}' not present in metadata after {timeout_s * 1000:.0f} ms"
                    + (f": {last_error}" if last_error else ""), topic=topic)
            if refreshed:
                await asyncio.sleep(min(remaining, self.sender.backoff.delay_s(attempt)))
                attempt += 1
            try:
                await self.client.refresh_metadata({topic}, timeout_s=max(0.001, deadline - time.monotonic()))
                last_error = None
            except AuthenticationError:
                raise  # a refused login: waiting out max.block.ms will not fix it (Java raises too)
            except KafkaError as exc:
                last_error = exc
            refreshed = True

    # -------------------------------------------------------------- flush / close (engine loop)

    async def _wait_batches(self, batches: list[ProducerBatch]) -> None:
        for batch in batches:
            if not batch.done:
                await batch.async_waiter()

    async def flush(self, timeout_s: float | None) -> None:
        """Send everything buffered now and wait until it is acknowledged (or failed)."""
        pending = [b for b in list(self.acc.incomplete) if not b.done]
        if not pending:
            return
        self.acc.flushes_in_progress += 1
        self.sender.wakeup()
        try:
            await asyncio.wait_for(self._wait_batches(pending), timeout_s)
        except asyncio.TimeoutError:
            left = sum(b.record_count for b in pending if not b.done)
            raise KafkaTimeoutError(f"flush() did not complete within {timeout_s:.3f}s; "
                                    f"{left} record(s) are still unacknowledged") from None
        finally:
            self.acc.flushes_in_progress -= 1

    async def close(self, timeout_s: float | None) -> None:
        """Flush (bounded by ``timeout_s``), then stop; unsent records fail after the timeout."""
        if self.close_task is None:
            self.close_task = asyncio.ensure_future(self._close(timeout_s))
        await asyncio.shield(self.close_task)

    async def _close(self, timeout_s: float | None) -> None:
        exit_guard.unregister(self)
        self.closed = True
        self.plain = False
        self.acc.closed = True
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        txn = self.txn
        try:
            if txn is not None and txn.state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
                # As the Java client does on close: abort the open transaction.
                log.info("aborting the open transaction of %r on close", txn.transactional_id)
                try:
                    await self.abort_transaction(None if deadline is None else max(0.0, deadline - time.monotonic()))
                except KafkaError as exc:
                    log.warning("aborting the open transaction on close failed: %s", exc)
            if timeout_s != 0:  # close(0) sends nothing more: Java's forced close
                self.sender.wakeup()
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    await self.flush(remaining)
                except KafkaTimeoutError:
                    pass
            left = [b for b in self.acc.incomplete if not b.done]
            if left:
                records = sum(b.record_count for b in left)
                log.warning("producer closed with %d record(s) unacknowledged after the close timeout; "
                            "they fail", records)
                self.sender.abort_all(KafkaError(
                    "the producer was closed before the record was acknowledged (close timeout passed)"))
        finally:
            remaining = 1.0 if deadline is None else deadline - time.monotonic()
            txn_tasks: list[asyncio.Future[Any]] = []
            if self.txn_client is not None:
                txn_tasks = [t for t in (self.txn_client.init_task, self.txn_client.add_task,
                                         self.txn_client.end_task) if t is not None]
            try:
                await self.sender.stop(max(0.05, min(1.0, remaining)), extra=txn_tasks)
            finally:
                await self.client.close()
                self._close_plugins()

    def _close_plugins(self) -> None:
        for plugin in (self.key_serializer, self.value_serializer, self.partitioner, self.interceptors):
            close = getattr(plugin, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:
                    log.exception("closing %r failed", plugin)

    def unacknowledged(self) -> int:
        return sum(b.record_count for b in list(self.acc.incomplete) if not b.done)

    def partitions_for_cached(self, topic: str) -> list[int] | None:
        state = self.acc.topics.get(topic)
        return list(range(state.num_partitions)) if state is not None else None

    # -------------------------------------------------------------- transactions (engine loop)

    def _txn(self) -> tuple[TransactionManager, TransactionClient]:
        if self.txn is None or self.txn_client is None:
            raise IllegalStateError("transactions need the 'transactional.id' setting")
        return self.txn, self.txn_client

    async def init_transactions(self, timeout_s: float) -> None:
        _, client = self._txn()
        await client.initialize(timeout_s)

    def begin_transaction(self) -> None:
        txn, _ = self._txn()
        self.check_open()
        txn.begin()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                          group_metadata: ConsumerGroupMetadata | str, timeout_s: float) -> None:
        _, client = self._txn()
        if isinstance(group_metadata, str):
            group_metadata = ConsumerGroupMetadata(group_metadata)
        if not isinstance(group_metadata, ConsumerGroupMetadata):
            raise IllegalStateError("group_metadata must be consumer.group_metadata() "
                                    "(a kafkalite.types.ConsumerGroupMetadata)")
        await client.send_offsets(offsets, group_metadata, timeout_s)

    async def commit_transaction(self, timeout_s: float | None) -> None:
        txn, client = self._txn()
        fresh = txn.begin_commit()
        if fresh or client.end_task is None or client.end_task.done():
            client.end_task = asyncio.ensure_future(self._finish_transaction(True))
        await _wait(client.end_task, timeout_s, "commit_transaction()")

    async def abort_transaction(self, timeout_s: float | None) -> None:
        txn, client = self._txn()
        fresh = txn.begin_abort()
        if fresh or client.end_task is None or client.end_task.done():
            client.end_task = asyncio.ensure_future(self._finish_transaction(False))
        await _wait(client.end_task, timeout_s, "abort_transaction()")

    async def _finish_transaction(self, commit: bool) -> None:
        txn, client = self._txn()
        if not commit:
            for batch in self.acc.remove_all():
                self.sender._fail(batch, KafkaError("the transaction was aborted before the record was sent",
                                                    abortable=True, transactional_id=txn.transactional_id))
        pending = [b for b in list(self.acc.incomplete) if not b.done]
        if pending:
            self.acc.flushes_in_progress += 1
            self.sender.wakeup()
            try:
                await self._wait_batches(pending)
            finally:
                self.acc.flushes_in_progress -= 1
        if commit and txn.has_error:
            txn.pending_operation = None
            txn.fail_if_error()
        deadline = time.monotonic() + max(self.max_block_s, txn.transaction_timeout_ms / 1000.0)
        if txn.started_on_broker:
            await client.end(commit, deadline)
        if not commit and txn.epoch_bump_required and not txn.tv2:
            # A request of the aborted transaction had an unknown outcome: fence it (KIP-360).
            await client.init_producer_id(deadline, bump=True)
        txn.epoch_bump_required = False
        txn.end_done()
