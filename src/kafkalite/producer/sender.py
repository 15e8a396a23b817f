"""The sender: drains ready batches into Produce requests and handles the answers.

It runs on the producer's engine (one asyncio task) and wakes up when the
accumulator starts or closes a batch, when a response arrives, or when the next
linger/backoff/expiry timer is due. Each pass (:meth:`Sender.run_once`):

1. applies metadata changes (new partitions, leaders) and idempotence epoch bumps;
2. fails batches whose ``delivery.timeout.ms`` passed (with the last broker error
   they got, or a timeout);
3. asks the accumulator for leaders with sendable batches, connects to them, and
   for each connected leader with fewer than ``max.in.flight.requests.per.connection``
   requests in flight drains at most one batch per partition into one Produce
   request (written at once, pipelined; the response is handled in a callback).

Responses: success completes the batch (base offset per batch, per-record futures
derive their offsets); DUPLICATE_SEQUENCE_NUMBER counts as success; retriable errors
put the batch back at the front of its queue after an exponential backoff (refreshing
metadata for stale leaders and applying KIP-951 leader hints first); MESSAGE_TOO_LARGE
splits a batch of several records; sequence errors go through the idempotence state
(KIP-360); everything else fails exactly that batch's futures.

Produce versions: the negotiated one, but at most 12 when a topic id is unknown
(v13 addresses topics by id), and at most 11 inside a transaction of protocol v1
(v12+ implies KIP-890's implicit AddPartitionsToTxn).

The sender gets what it works with, not the producer: the network client, the
accumulator, :class:`~kafkalite.producer.delivery.Delivery` (which settles batches),
its :class:`~kafkalite.producer.wakeup.SenderWakeup`, the metrics, the idempotence
and transaction state, its :class:`SenderSettings`, and callbacks for what belongs to
others: applying metadata to the producer's topics, a fatal error, transaction
partitions to add, the event loop shutting down under an open producer.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalite.backoff import ExponentialBackoff
from kafkalite.config import Config, acks_value
from kafkalite.errors import (
    ApiError,
    DuplicateSequenceError,
    InvalidMetadataError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotLeaderOrFollowerError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    error_for_code,
)
from kafkalite.net.client import NetworkClient
from kafkalite.net.cluster import BrokerNode
from kafkalite.net.engine import cancel_and_wait
from kafkalite.net.transport import BrokerConnection
from kafkalite.protocol.messages.init_producer_id import InitProducerIdRequest
from kafkalite.protocol.messages.produce import (
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    ProduceResponsePartitionProduceResponse,
)
from kafkalite.protocol.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkalite.producer.accumulator import PartitionQueue, RecordAccumulator
    from kafkalite.producer.batch import ProducerBatch
    from kafkalite.producer.delivery import Delivery
    from kafkalite.producer.idempotence import IdempotenceState
    from kafkalite.producer.producer_metrics import ProducerMetrics
    from kafkalite.producer.transactions import TransactionManager
    from kafkalite.producer.wakeup import SenderWakeup

log = logging.getLogger("kafkalite.producer")

__all__ = ["Sender", "SenderSettings"]

_INT32_MAX = 2**31 - 1
#: How long after a topic that was due to be forgotten, but still had batches in flight,
#: it is looked at again (metadata.max.idle.ms).
_IDLE_RECHECK_S = 1.0


@dataclass(frozen=True)
class SenderSettings:
    """The settings the sender works by (from the producer's :class:`~kafkalite.config.Config`)."""

    acks: int
    request_timeout_ms: int
    max_request_size: int
    max_in_flight: int
    retries: int
    batch_size: int
    adaptive_partitioning: bool
    availability_timeout_s: float
    metadata_idle_s: float

    @classmethod
    def from_config(cls, cfg: Config, *, custom_partitioner: bool) -> SenderSettings:
        acks = acks_value(cfg)
        return cls(
            acks=acks, request_timeout_ms=cfg["request.timeout.ms"], max_request_size=cfg["max.request.size"],
            max_in_flight=cfg["max.in.flight.requests.per.connection"],
            retries=cfg["retries"] if acks != 0 else 0, batch_size=cfg["batch.size"],
            # KIP-794's load statistics serve the built-in partitioner only.
            adaptive_partitioning=not custom_partitioner and cfg["partitioner.adaptive.partitioning.enable"],
            availability_timeout_s=cfg["partitioner.availability.timeout.ms"] / 1000.0,
            metadata_idle_s=cfg["metadata.max.idle.ms"] / 1000.0,
        )


class Sender:
    """The engine side of one producer (see the module doc).

    ``sync_metadata()`` applies metadata to the producer's topics; ``on_fatal(error)``
    is told of an error that ends the producer (also kept as :attr:`fatal_error`);
    ``add_partitions()`` (transactional producers) sends the pending
    AddPartitionsToTxn; ``on_loop_shutdown()`` is called when the sender is cancelled
    by its event loop's shutdown while the producer is open (asyncio producers): it
    returns what to wait for while sending goes on, or None to stop.
    """

    def __init__(self, *, client: NetworkClient, acc: RecordAccumulator, delivery: Delivery,
                 wakeup: SenderWakeup, metrics: ProducerMetrics, settings: SenderSettings,
                 backoff: ExponentialBackoff, sync_metadata: Callable[[], None],
                 on_fatal: Callable[[KafkaError], None], idem: IdempotenceState | None = None,
                 txn: TransactionManager | None = None, add_partitions: Callable[[], None] | None = None,
                 on_loop_shutdown: Callable[[], Awaitable[None] | None] | None = None) -> None:
        self.client = client
        self.acc = acc
        self.delivery = delivery
        self.wake_signal = wakeup
        self.idem = idem
        self.txn = txn
        self.metrics = metrics
        self.settings = settings
        self.sync_metadata = sync_metadata
        self.on_fatal = on_fatal
        self.add_partitions = add_partitions
        self.on_loop_shutdown = on_loop_shutdown
        self._next_idle_check = 0.0
        self.backoff = backoff
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[None] | None = None
        #: Batches sent and not answered yet (shared with ``delivery``, which settles them).
        self.in_flight: set[ProducerBatch] = delivery.in_flight
        self._stopping = False
        self._connecting: set[int] = set()
        self._connect_tasks: set[asyncio.Future[None]] = set()
        self._metadata_task: asyncio.Task[Any] | None = None
        self._metadata_wanted: set[str] = set()
        self._last_metadata_request = 0.0
        self._pid_task: asyncio.Task[None] | None = None
        self._pid_attempts = 0
        self._ready_since: dict[int, float] = {}
        self._throttled_until: dict[int, float] = {}
        self._next_expiry_check = 0.0
        self._seen_metadata_version = -1
        self.fatal_error: KafkaError | None = None

    # -------------------------------------------------------------- lifecycle

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.wake_signal.bind(loop)
        self.task = loop.create_task(self._run(), name="kafkalite-producer-sender")

    def wakeup(self) -> None:
        """Wake the sender (engine loop only; other threads: ``SenderWakeup.wake_threadsafe``)."""
        self.wake_signal.wake()

    async def stop(self, timeout_s: float = 1.0, extra: Sequence[asyncio.Future[Any]] | None = None) -> None:
        """Stop the sender loop and its side tasks (and ``extra`` tasks) within ``timeout_s``."""
        self._stopping = True
        self.wakeup()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout_s)
        if self.task is not None and not self.task.done() and self.task is not asyncio.current_task():
            # Woken with _stopping set, the loop ends at its next pass by itself.
            await asyncio.wait({self.task}, timeout=max(0.0, min(0.5, timeout_s / 2)))
        tasks: list[asyncio.Future[Any]] = [t for t in (self.task, self._metadata_task, self._pid_task)
                                            if t is not None]
        tasks += self._connect_tasks
        tasks += extra or ()
        # One cancel() may not stop a task on Python < 3.12 (gh-86296): see cancel_and_wait.
        await cancel_and_wait(tasks, max(0.05, deadline - loop.time()))
        self.wake_signal.close()

    async def _run(self) -> None:
        try:
            await self._loop()
        except asyncio.CancelledError:
            shutdown = None
            if not self._stopping and self.on_loop_shutdown is not None:
                shutdown = self.on_loop_shutdown()
            if shutdown is None:
                raise
            # Cancelled while the producer is open: its event loop is shutting down
            # (asyncio.run() cancels every task when the main coroutine returns). Deliver
            # what can be delivered first (``shutdown``: bounded by exit.flush.timeout.ms).
            task = asyncio.current_task()
            uncancel = getattr(task, "uncancel", None)  # Python >= 3.11
            if uncancel is not None:
                uncancel()
            # The sending goes on in a new task (the shutdown cancelled the tasks it knew
            # of, not this one); this one waits for the flush, so the shutdown does too.
            self.task = asyncio.get_running_loop().create_task(self._loop(), name="kafkalite-producer-sender")
            await shutdown

    async def _loop(self) -> None:
        wake_signal = self.wake_signal
        while not self._stopping:
            wake_signal.begin_pass()
            now = time.monotonic()
            try:
                delay = self.run_once(now)
            except Exception:
                log.exception("producer sender pass failed")
                delay = 0.1
            if self._stopping:
                break
            if wake_signal.pending or delay <= 0.0:
                await asyncio.sleep(0)  # let responses in, then look again at once
                continue
            # Due times on the pass's clock: a pass that finds the same next deadline
            # (a batch's linger) keeps the timer already armed for it.
            await wake_signal.sleep_until(now + delay)

    # -------------------------------------------------------------- one pass

    def run_once(self, now: float) -> float:
        metadata = self.client.metadata
        if metadata.version != self._seen_metadata_version:
            self._seen_metadata_version = metadata.version
            self.sync_metadata()
        # The sender sleeps until the next thing that is due (Java's Sender polls with the
        # soonest of these timeouts): the linger and backoff of queued batches (ready()),
        # the soonest delivery.timeout.ms, metadata.max.idle.ms, metadata.max.age.ms; news
        # (a send, a response, a flush) wakes it earlier. Not a fixed tick: an idle
        # producer used to wake every second (issue 27).
        delay = math.inf
        idem = self.idem
        if idem is not None:
            if idem.bump_epoch_if_needed() or (not idem.has_producer_id and self.txn is None):
                self._ensure_producer_id()
        txn = self.txn
        if txn is not None:
            if txn.has_error:
                self._abort_queued(txn.last_error)
            elif txn.new_partitions and self.add_partitions is not None:
                self.add_partitions()
        if now >= self._next_expiry_check:
            self._expire(now)
            # A batch started from now on expires delivery.timeout.ms from now or later; one
            # put back for a retry lowers this again (_retry_expiry_at).
            self._next_expiry_check = min(self.acc.next_expiry(), now + self.acc.delivery_timeout_s)
        if now >= self._next_idle_check or self.acc.revived:
            self._forget_idle_topics(now)
            self._next_idle_check = self.acc.next_idle(now, self.settings.metadata_idle_s, _IDLE_RECHECK_S)
        delay = min(delay, self._next_idle_check - now)
        settings = self.settings
        unavailable: set[int] | None = None
        if settings.availability_timeout_s > 0:
            unavailable = {n for n, t in self._ready_since.items() if now - t > settings.availability_timeout_s}
        ready, next_check, unknown = self.acc.ready(metadata.leader_for, now, settings.adaptive_partitioning,
                                                    unavailable)
        if unknown:
            self.request_metadata(unknown)
        elif self.acc.topics:
            if self.client.metadata_is_stale():
                self.request_metadata(())  # its answer wakes the sender
            else:
                delay = min(delay, self.client.metadata_due() - now)
        delay = min(delay, next_check)
        if idem is not None and not idem.has_producer_id:
            return min(delay, 0.1)
        throttled = self._throttled_until
        for node, queues in ready.items():
            until = throttled.get(node)
            if until is not None:
                if until > now:
                    # The broker asked us to back off (quota, KIP-219): as the Java client
                    # does, send nothing more to it until the throttle time passed.
                    delay = min(delay, until - now)
                    continue
                del throttled[node]
            conn = self.client.connection_if_ready(node)
            if conn is None:
                self._ready_since.setdefault(node, now)
                self._connect(node)
                continue
            if conn.in_flight >= settings.max_in_flight:
                self._ready_since.setdefault(node, now)
                continue
            # Up to max.in.flight.requests.per.connection requests per pass: after each,
            # the partitions whose next batch is sendable too go into the next request
            # at once (Java loops with poll timeout 0 while nodes are ready; one pass
            # here saves an event-loop round per request).
            while True:
                batches = self.acc.drain(node, queues, settings.max_request_size, now, self._allowed)
                if not batches:
                    break
                self._ready_since.pop(node, None)
                self._send(node, conn, batches, now)
                if conn.in_flight >= settings.max_in_flight:
                    break
                queues = [pq for pq in queues if self.acc.sendable(pq, now)]
                if not queues:
                    break
        return min(delay, max(0.0, self._next_expiry_check - time.monotonic()) + 0.001)

    def _allowed(self, pq: PartitionQueue, batch: ProducerBatch) -> bool:
        tp = (pq.topic, pq.partition)
        txn = self.txn
        if txn is not None and not txn.is_send_allowed(tp):
            return False
        idem = self.idem
        return idem is None or (idem.has_producer_id and not idem.should_stop_drain(tp, batch))

    # -------------------------------------------------------------- sending

    def _send(self, node: int, conn: BrokerConnection, batches: list[ProducerBatch], now: float) -> None:
        idem = self.idem
        metadata = self.client.metadata
        version = conn.api_version(ProduceRequest)
        txn = self.txn
        if txn is not None and not txn.tv2 and version > 11:
            version = 11  # v12+ inside a transaction means transactions v2 (KIP-890)
        by_topic: dict[str, list[ProducerBatch]] = {}
        for batch in batches:
            if idem is not None and batch.base_sequence < 0:
                idem.assign(batch)
            first_build = batch.wire is None
            batch.wire_bytes()
            if first_build:
                self.acc.update_compression_ratio(batch)
                self.metrics.record_batch(batch, now)
            else:
                self.metrics.record_retry(batch.record_count)
            by_topic.setdefault(batch.topic, []).append(batch)
            self.delivery.mute(batch)
        if version >= 13 and any(metadata.topic_id(t) == ZERO_UUID for t in by_topic):
            version = 12
        topic_data = [
            ProduceRequestTopicProduceData(
                name=topic, topic_id=metadata.topic_id(topic),
                partition_data=[ProduceRequestPartitionProduceData(index=b.partition, records=b.wire)
                                for b in tbatches],
            )
            for topic, tbatches in by_topic.items()
        ]
        request = ProduceRequest(
            transactional_id=txn.transactional_id if txn is not None else None,
            acks=self.settings.acks, timeout_ms=self.settings.request_timeout_ms, topic_data=topic_data,
        )
        for batch in batches:
            batch.sent_once = True
            batch.in_retry = False
        if txn is not None:
            txn.started_on_broker = True  # (with transactions v2 the produce request starts it)
        if self.settings.acks == 0:
            written = conn.send(request, api_version=version, expect_response=False)
            for batch in batches:
                error = written.exception() if written.done() else None
                if error is not None:
                    self.delivery.fail(batch, error)
                else:
                    self.delivery.complete(batch, -1, -1)
            self.metrics.record_request(len(batches), sum(b.record_count for b in batches), 0.0)
            return
        future = conn.send(request, api_version=version)
        self.in_flight.update(batches)
        sent_at = time.monotonic()
        # v13 answers by topic id: remember which ids this request used.
        names = {td.topic_id: td.name for td in topic_data} if version >= 13 else None
        future.add_done_callback(
            lambda f: self._on_response(f, node, batches, version, sent_at, names)
        )

    def _on_response(self, future: asyncio.Future[ProduceResponse], node: int, batches: list[ProducerBatch],
                     version: int, sent_at: float, names: dict[uuid.UUID, str] | None = None) -> None:
        now = time.monotonic()
        try:
            if future.cancelled():
                error: BaseException | None = KafkaConnectionError(f"produce request to node {node} was cancelled")
                response = None
            else:
                error = future.exception()
            if error is not None:
                if not isinstance(error, KafkaError):
                    error = KafkaConnectionError(f"produce request to node {node} failed: {error!r}")
                for batch in batches:
                    self._handle_error(batch, error, now, None)
                if isinstance(error, (KafkaConnectionError, KafkaTimeoutError)):
                    self.request_metadata({b.topic for b in batches})
                return
            response = future.result()
            self._handle_response(response, batches, version, now, names)
            throttle_ms = response.throttle_time_ms
            if throttle_ms > 0:
                self._throttled_until[node] = now + throttle_ms / 1000.0
            self.metrics.record_request(len(batches), sum(b.record_count for b in batches), now - sent_at,
                                        throttle_ms)
        except Exception:
            log.exception("handling a produce response from node %d failed", node)
            for batch in batches:
                if not batch.done and batch in self.in_flight:
                    self.delivery.fail(batch, KafkaError("internal error while handling the produce response"))
        finally:
            self.wakeup()

    def _handle_response(self, response: ProduceResponse, batches: list[ProducerBatch], version: int, now: float,
                         names: dict[uuid.UUID, str] | None = None) -> None:
        metadata = self.client.metadata
        for endpoint in response.node_endpoints or ():
            metadata.add_broker(BrokerNode(endpoint.node_id, endpoint.host, endpoint.port, endpoint.rack))
        by_tp = {(b.topic, b.partition): b for b in batches}
        for topic_resp in response.responses:
            name: str | None
            if version < 13:
                name = topic_resp.name
            else:
                name = (names or {}).get(topic_resp.topic_id) or metadata.topic_name(topic_resp.topic_id)
            for p in topic_resp.partition_responses:
                batch = by_tp.pop((name, p.index), None) if name is not None else None
                if batch is None:
                    continue
                code = p.error_code
                if code == 0:
                    self.delivery.complete(batch, p.base_offset, p.log_append_time_ms)
                    continue
                message = p.error_message
                if p.record_errors:
                    details = "; ".join(f"record {e.batch_index}: {e.batch_index_error_message}"
                                        for e in p.record_errors[:5])
                    message = f"{message or 'the batch was rejected'} ({details})"
                err = error_for_code(code, message, topic=batch.topic, partition=batch.partition)
                leader = p.current_leader
                if leader is not None and leader.leader_id >= 0:
                    metadata.update_leader(batch.topic, batch.partition, leader.leader_id, leader.leader_epoch)
                self._handle_error(batch, err, now, p)
        for batch in by_tp.values():
            self._handle_error(batch, KafkaError(
                f"the produce response had no answer for {batch.topic}-{batch.partition}"), now, None)

    # -------------------------------------------------------------- outcomes

    def _handle_error(self, batch: ProducerBatch, error: BaseException, now: float,
                      presp: ProduceResponsePartitionProduceResponse | None) -> None:
        if batch.done:
            self.in_flight.discard(batch)
            return
        self.in_flight.discard(batch)
        self.delivery.unmute(batch)
        if isinstance(error, DuplicateSequenceError):
            # The broker already has this batch (a retry of a written batch).
            self.delivery.complete(batch, presp.base_offset if presp is not None else -1,
                                   presp.log_append_time_ms if presp is not None else -1)
            return
        if isinstance(error, RecordTooLargeError) and batch.record_count > 1 and now < batch.delivery_deadline:
            self._split(batch, now)
            return
        if self._can_retry(batch, error, now):
            batch.last_error = error
            if isinstance(error, (InvalidMetadataError, KafkaConnectionError, KafkaTimeoutError)):
                if isinstance(error, NotLeaderOrFollowerError) and not (
                        presp is not None and presp.current_leader is not None
                        and presp.current_leader.leader_id >= 0):
                    self.client.metadata.forget_leader(batch.topic, batch.partition)
                self.request_metadata({batch.topic})
            log.debug("retrying %r after %s", batch, error)
            self.acc.reenqueue(batch, now, self.backoff.delay_s(batch.attempts))
            self._retry_expiry_at(batch)
            return
        written_unknown = batch.sent_once and isinstance(error, (KafkaConnectionError, KafkaTimeoutError))
        self.delivery.fail(batch, error, written_unknown)

    def _can_retry(self, batch: ProducerBatch, error: BaseException, now: float) -> bool:
        if now >= batch.delivery_deadline or batch.attempts >= self.settings.retries:
            return False
        if self.fatal_error is not None or (self.txn is not None and self.txn.is_fatal):
            return False
        idem = self.idem
        if idem is not None:
            if isinstance(error, OutOfOrderSequenceError):  # includes UNKNOWN_PRODUCER_ID
                return idem.can_retry(batch, error)
            if (batch.producer_id, batch.producer_epoch) != (idem.producer_id, idem.epoch) and \
                    self.txn is None and batch.base_sequence >= 0:
                return True  # its sequence was restarted (KIP-360)
        if isinstance(error, (KafkaConnectionError, KafkaTimeoutError)):
            return True
        return bool(getattr(error, "retriable", False))

    def _split(self, batch: ProducerBatch, now: float) -> None:
        # Java splits into batch.size pieces; when batch.size itself is above the topic's
        # limit that never converges, so pieces are also at most half the rejected batch.
        target = max(1, min(self.settings.batch_size, batch.estimated_size() // 2))
        children = self.acc.split(batch, target, now)
        log.info("splitting %r into %d batches after MESSAGE_TOO_LARGE", batch, len(children))
        self.metrics.record_split()
        idem = self.idem
        if idem is not None and batch.base_sequence >= 0:
            idem.remove_in_flight(batch)
            sequence = batch.base_sequence
            for child in children:
                child.set_producer_state(batch.producer_id, batch.producer_epoch, sequence, batch.transactional)
                idem.add_in_flight(child)
                sequence += child.record_count
        for child in reversed(children):
            self.acc.incomplete.add(child)
            child.in_retry = True
            self.acc.reenqueue(child, now, 0.0)
            self._retry_expiry_at(child)
            child.attempts -= 1

    def _forget_idle_topics(self, now: float) -> None:
        """metadata.max.idle.ms: stop refreshing metadata of topics nothing was sent to
        for that long, and forget it, so that the next send fetches it anew (Java's
        ProducerMetadata); topics a send used again are tracked again."""
        client = self.client
        forgotten = self.acc.forget_idle_topics(now, self.settings.metadata_idle_s)
        if forgotten:
            log.debug("forgetting the metadata of idle topics %s (metadata.max.idle.ms)", forgotten)
            client.untrack_topics(forgotten)
            for topic in forgotten:
                client.metadata.forget(topic)
        revived = self.acc.revived
        if revived:
            topics = {revived.pop() for _ in range(len(revived))}
            client.track_topics(topics)
            self.request_metadata(topics)

    def _retry_expiry_at(self, batch: ProducerBatch) -> None:
        """A batch queued again keeps its delivery deadline, which may come before the
        next expiry check planned."""
        self._next_expiry_check = min(self._next_expiry_check, batch.delivery_deadline)

    def _expire(self, now: float) -> None:
        for batch in self.acc.expired(now):
            last = batch.last_error
            if last is not None:
                error: BaseException = last
            else:
                error = KafkaTimeoutError(
                    f"{batch.record_count} record(s) expired: delivery.timeout.ms="
                    f"{int(self.acc.delivery_timeout_s * 1000)} passed before they could be sent",
                    topic=batch.topic, partition=batch.partition,
                )
            self.delivery.fail(batch, error, written_unknown=batch.sent_once)

    def _abort_queued(self, error: BaseException | None) -> None:
        """Fail queued batches of a transaction that must be aborted (Java's abortUndrainedBatches)."""
        self.delivery.fail_queued(lambda: KafkaError(
            f"the transaction is being aborted because an earlier operation failed: {error}", abortable=True))

    # -------------------------------------------------------------- side tasks

    def _connect(self, node: int) -> None:
        if node in self._connecting or self._stopping:
            return
        self._connecting.add(node)

        async def connect() -> None:
            try:
                await self.client.connection(node)
            except Exception as exc:
                log.debug("connecting to node %d failed: %s", node, exc)
                self.request_metadata(())
            finally:
                self._connecting.discard(node)
                self._connect_tasks.discard(asyncio.current_task())
                self.wakeup()

        self._connect_tasks.add(asyncio.ensure_future(connect()))

    def request_metadata(self, topics: Iterable[str]) -> None:
        """Refresh metadata soon (coalesced; at most once per retry.backoff.ms)."""
        self._metadata_wanted.update(topics)
        if self._stopping or (self._metadata_task is not None and not self._metadata_task.done()):
            return
        self._metadata_task = asyncio.ensure_future(self._refresh_metadata())

    async def _refresh_metadata(self) -> None:
        wait = self._last_metadata_request + self.backoff.initial_ms / 1000.0 - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        self._last_metadata_request = time.monotonic()
        topics, self._metadata_wanted = self._metadata_wanted, set()
        try:
            await self.client.refresh_metadata(topics, timeout_s=self.settings.request_timeout_ms / 1000.0)
        except Exception as exc:
            log.debug("metadata refresh failed: %s", exc)
        self.sync_metadata()
        self.wakeup()

    def _ensure_producer_id(self) -> None:
        if self._pid_task is not None and not self._pid_task.done():
            return
        if self._stopping or self.fatal_error is not None:
            return
        self._pid_task = asyncio.ensure_future(self._init_producer_id())

    async def _init_producer_id(self) -> None:
        """InitProducerId for the idempotent (not transactional) producer."""
        idem = self.idem
        assert idem is not None
        while not idem.has_producer_id and not self._stopping:
            try:
                node = self.client.least_loaded_node()
                response = await self.client.send(
                    node, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=_INT32_MAX),
                    timeout_ms=self.settings.request_timeout_ms)
                if response.error_code:
                    raise error_for_code(response.error_code, "InitProducerId failed")
                idem.set_producer_id(response.producer_id, response.producer_epoch)
                self._pid_attempts = 0
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                log.debug("InitProducerId failed, retrying: %s", exc)
                await asyncio.sleep(self.backoff.delay_s(self._pid_attempts))
                self._pid_attempts += 1
            except ApiError as exc:
                if exc.retriable:
                    await asyncio.sleep(self.backoff.delay_s(self._pid_attempts))
                    self._pid_attempts += 1
                    continue
                exc.fatal = True
                self.fatal_error = exc
                self.on_fatal(exc)
                log.error("the idempotent producer cannot get a producer id: %s", exc)
                self.delivery.fail_all(exc)
                return
        self.wakeup()
