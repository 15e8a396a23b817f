"""The producer engine shared by the blocking and the asyncio front ends.

:class:`ProducerCore` builds the producer's collaborators from its settings and wires
them, each given only what it works with:

* :class:`~kafkalite.net.client.NetworkClient` (connections, metadata);
* :class:`~kafkalite.producer.accumulator.RecordAccumulator` (batches per partition,
  ``buffer.memory``) and the append kernel over its topics
  (:mod:`~kafkalite.producer.append_kernel`: ``send()``'s common case in one call);
* :class:`~kafkalite.producer.serializing.RecordSerializer`, the interceptors,
  :class:`~kafkalite.producer.partitioner.CustomPartitioning` (``partitioner.class``);
* :class:`~kafkalite.producer.topic_metadata.TopicMetadata` (the topics send() knows,
  metadata waits);
* :class:`~kafkalite.producer.idempotence.IdempotenceState` and
  :class:`~kafkalite.producer.transactions.TransactionManager` (state, no I/O);
* :class:`~kafkalite.producer.delivery.Delivery` (settling batches, flush),
  :class:`~kafkalite.producer.sender.Sender` (the engine task) and
  :class:`~kafkalite.producer.txn_requests.TransactionClient` (transactional
  operations), woken through one :class:`~kafkalite.producer.wakeup.SenderWakeup`;
* :class:`~kafkalite.producer.producer_metrics.ProducerMetrics`.

What is left here is send()'s general path (:meth:`ProducerCore.append`: timestamp,
size, partition; caller's thread), the producer's lifecycle (start, flush, close, a
fatal error turning the append kernel off) and the calls of the front ends, which add
only waiting: a thread blocking with timeouts and Ctrl-C, or ``await``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

from kafkalite.backoff import ExponentialBackoff
from kafkalite.config import Config
from kafkalite.errors import (
    ClientClosedError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
    UnknownTopicOrPartitionError,
)
from kafkalite.net.client import NetworkClient
from kafkalite.plugins import close_each
from kafkalite.producer import exit_guard
from kafkalite.producer.accumulator import BufferPool, RecordAccumulator, TopicState
from kafkalite.producer.append_kernel import new_appender
from kafkalite.producer.batch import DoneSignal, ProducerBatch
from kafkalite.producer.delivery import Delivery
from kafkalite.producer.futures import AsyncRecordFuture, RecordFuture
from kafkalite.producer.idempotence import IdempotenceState
from kafkalite.producer.interceptors import ProducerRecord, load_interceptors
from kafkalite.producer.partitioner import CustomPartitioning, resolve_partitioner
from kafkalite.producer.producer_metrics import ProducerMetrics
from kafkalite.producer.sender import Sender, SenderSettings
from kafkalite.producer.serializing import RecordSerializer
from kafkalite.producer.topic_metadata import TopicMetadata
from kafkalite.producer.transactions import TransactionManager, TxnState
from kafkalite.producer.txn_requests import TransactionClient
from kafkalite.producer.wakeup import SenderWakeup
from kafkalite.protocol import compression
from kafkalite.protocol.record_codec import murmur2, record_size
from kafkalite.protocol.record_types import BATCH_OVERHEAD
from kafkalite.types import ConsumerGroupMetadata, OffsetAndMetadata, RecordMetadata, TopicPartition

if TYPE_CHECKING:
    from kafkalite._config_keys import IntSetting

log = logging.getLogger("kafkalite.producer")

__all__ = ["ProducerCore"]

_LEVEL_SETTING: dict[int, IntSetting] = {compression.GZIP: "compression.gzip.level", compression.LZ4: "compression.lz4.level",
                  compression.ZSTD: "compression.zstd.level"}


#: The futures send() returns: RecordFuture (blocking front) or AsyncRecordFuture.
F = TypeVar("F", bound=RecordFuture, covariant=True)


class ProducerCore(Generic[F]):
    """One producer's engine (see the module doc); ``F``: the futures its sends return."""

    @overload
    def __init__(self: ProducerCore[RecordFuture], cfg: Config, *, blocking: Literal[True]) -> None: ...

    @overload
    def __init__(self: ProducerCore[AsyncRecordFuture], cfg: Config, *, blocking: Literal[False]) -> None: ...

    def __init__(self, cfg: Config, *, blocking: bool) -> None:
        self.cfg = cfg
        self.client_id: str = cfg["client.id"]
        self.blocking = blocking
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
        self.sender_wakeup = SenderWakeup()
        self.acc = RecordAccumulator(
            batch_size=cfg["batch.size"], linger_ms=cfg["linger.ms"], compression=codec,
            compression_level=level, delivery_timeout_ms=cfg["delivery.timeout.ms"], pool=self.pool,
            signal=self.signal, wakeup=self.sender_wakeup.wake_threadsafe if blocking else self.sender_wakeup.wake,
        )
        #: The topics send() knows (the accumulator's), by name.
        self.topics = self.acc.topics
        txn_id = cfg["transactional.id"]
        self.idem = IdempotenceState(transactional=txn_id is not None) if cfg["enable.idempotence"] else None
        self.txn = TransactionManager(txn_id, cfg["transaction.timeout.ms"]) if txn_id is not None else None
        backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])
        self.topic_metadata = TopicMetadata(self.client, self.acc, backoff)
        self.partitioner = resolve_partitioner(cfg["partitioner.class"], cfg)
        self.custom_partitioning = (CustomPartitioning(self.partitioner, self.topic_metadata)
                                    if self.partitioner is not None else None)
        self.ignore_keys: bool = cfg["partitioner.ignore.keys"]
        self.serializer = RecordSerializer.from_config(cfg)
        # The front ends read these directly on send()'s path.
        self.key_serializer = self.serializer.key_serializer
        self.value_serializer = self.serializer.value_serializer
        self.serialize = self.serializer.serialize
        self.check_headers = self.serializer.check_headers
        #: No key/value serializer: send() hands its arguments to the append path as they are.
        self.raw = self.serializer.raw
        self.interceptors = load_interceptors(cfg["interceptor.classes"], cfg)
        self.ack_interceptor: Callable[[RecordMetadata, BaseException | None], None] | None = (
            self.interceptors.on_acknowledgement if self.interceptors is not None and self.interceptors.wants_acks
            else None
        )
        in_flight: set[ProducerBatch] = set()
        self.metrics = ProducerMetrics(
            self.client_id, cfg["metrics.sample.window.ms"], cfg["metrics.num.samples"], self.pool, self.acc,
            lambda: float(len(in_flight)), cfg["metrics.recording.level"],
        )
        self.client.stats.register(self.metrics.registry, "producer-metrics", {"client-id": self.client_id})
        settings = SenderSettings.from_config(cfg, custom_partitioner=self.partitioner is not None)
        self.delivery = Delivery(self.acc, self.metrics, in_flight=in_flight, wake=self.sender_wakeup.wake,
                                 idem=self.idem, txn=self.txn, guarantee_order=settings.max_in_flight == 1)
        self.txn_client: TransactionClient | None = None
        if self.txn is not None:
            assert self.idem is not None  # transactional.id requires idempotence (settings.py)
            self.txn_client = TransactionClient(
                client=self.client, txn=self.txn, idem=self.idem, batches=self.delivery, wake=self.sender_wakeup.wake,
                backoff=backoff, request_timeout_ms=cfg["request.timeout.ms"], max_block_s=self.max_block_s)
        self.sender = Sender(
            client=self.client, acc=self.acc, delivery=self.delivery, wakeup=self.sender_wakeup, metrics=self.metrics,
            settings=settings, backoff=backoff, sync_metadata=self.topic_metadata.sync, on_fatal=self._on_fatal,
            idem=self.idem, txn=self.txn,
            add_partitions=self.txn_client.schedule_add_partitions if self.txn_client is not None else None,
            on_loop_shutdown=None if blocking else self._flush_at_loop_shutdown,
        )
        # The overloads above tie F to ``blocking``.
        self.future_cls = cast("type[F]", RecordFuture if blocking else AsyncRecordFuture)
        self.closed = False
        #: send()'s common case in one call (C when built): see append_kernel.
        self.appender = new_appender(self.acc, self.future_cls, self.size_check_threshold)
        #: Whether send() may take the append path (no interceptors, transaction,
        #: custom partitioner; not closed, no fatal error). Cleared by close/fatal errors.
        self.plain = self.interceptors is None and self.txn is None and self.partitioner is None \
            and not self.ignore_keys
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

    def _on_fatal(self, error: KafkaError) -> None:
        """The sender met an error that ends the producer: every send() now raises it."""
        self.plain = False

    def _flush_at_loop_shutdown(self) -> Awaitable[None] | None:
        """The asyncio producer's loop shuts down under an open producer: deliver first."""
        if self.closed:
            return None
        return exit_guard.flush_at_loop_shutdown(self)

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
               callback: Callable[..., object] | None) -> F | None:
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
            for k, v in headers:  # a loop, not sum() over a generator: this runs per record
                hint += len(k) + 8 if v is None else len(k) + len(v) + 8
        if hint > self.size_check_threshold:
            hint = self._check_size(topic, key_bytes, value_bytes, headers)
        n = state.num_partitions
        if partition is None:
            custom = self.custom_partitioning
            if custom is not None:
                partition = custom.partition(topic, key, key_bytes, value, value_bytes, n)
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

    def memory_needed(self, key_bytes: bytes | None, value_bytes: bytes | None) -> int:
        size = (len(key_bytes) if key_bytes else 0) + (len(value_bytes) if value_bytes else 0) + 64
        return self.acc.first_room(size)

    # -------------------------------------------------------------- metadata (engine loop)

    async def wait_for_topic(self, topic: str, partition: int | None, timeout_s: float) -> TopicState:
        """Metadata for ``topic`` (with ``partition``), waiting up to ``timeout_s`` (max.block.ms)."""
        return await self.topic_metadata.wait_for_topic(topic, partition, timeout_s)

    def partitions_for_cached(self, topic: str) -> list[int] | None:
        return self.topic_metadata.partitions_cached(topic)

    # -------------------------------------------------------------- flush / close (engine loop)

    async def flush(self, timeout_s: float | None) -> None:
        """Send everything buffered now and wait until it is acknowledged (or failed)."""
        await self.delivery.flush(timeout_s)

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
            left = self.delivery.unacknowledged()
            if left:
                records = sum(b.record_count for b in left)
                log.warning("producer closed with %d record(s) unacknowledged after the close timeout; "
                            "they fail", records)
                self.delivery.fail_all(KafkaError(
                    "the producer was closed before the record was acknowledged (close timeout passed)"))
        finally:
            remaining = 1.0 if deadline is None else deadline - time.monotonic()
            txn_tasks: list[asyncio.Task[None]] = []
            if self.txn_client is not None:
                txn_tasks = list(self.txn_client.tasks())
            try:
                await self.sender.stop(max(0.05, min(1.0, remaining)), extra=txn_tasks)
            finally:
                await self.client.close()
                self.close_plugins()

    def close_plugins(self) -> None:
        """Close serializers, partitioner and interceptors (their ``close()``); errors are logged."""
        close_each((self.key_serializer, self.value_serializer, self.partitioner, self.interceptors), "plugin", log)

    def pending_batches(self) -> list[ProducerBatch]:
        """The batches not acknowledged or failed yet."""
        return self.delivery.unacknowledged()

    def unacknowledged(self) -> int:
        """How many records are not acknowledged or failed yet."""
        return sum(b.record_count for b in self.delivery.unacknowledged())

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
        _, client = self._txn()
        await client.commit(timeout_s)

    async def abort_transaction(self, timeout_s: float | None) -> None:
        _, client = self._txn()
        await client.abort(timeout_s)
