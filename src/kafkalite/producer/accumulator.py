"""The record accumulator: per-partition queues of batches being filled (no I/O).

Callers' threads append records here under a per-partition lock: in the common case
the append kernel (:mod:`kafkalite.producer.append_kernel`) encodes the record into
the partition's open batch, and everything else goes through
:meth:`RecordAccumulator.append`, send()'s one general path, the only code that
starts batches. The sender on the engine asks which leaders have sendable batches
(:meth:`ready`), takes them (:meth:`drain`) and completes them. Records are encoded
straight into the open batch's ``bytearray`` by
:class:`~kafkalite.protocol.record_builder.RecordBatchBuilder`, so a record costs one
encode call and one small future object.

Memory: a batch reserves ``buffer.memory`` from the :class:`BufferPool` as it grows,
not ``batch.size`` up front as Java's pool does: a new batch reserves
``min(batch.size, 1 KiB)`` (or its first record's size), and when that room is used
the append doubles it, up to what the batch holds at ``batch.size``. So a large
``batch.size`` costs no memory on partitions that receive little, and the reservation
counts the uncompressed records a compressed batch holds (they can be many times its
``batch.size``). A batch whose room cannot grow is closed as full. The reservation is
returned when the batch completes. When the pool is exhausted :meth:`append` returns
None and the front end waits (up to ``max.block.ms``) for memory, then retries.

A batch is sendable when it is full (another batch follows it in its queue), has
waited ``linger.ms``, is being retried, or a flush/close is in progress, or when
someone waits for memory (so that memory comes back). Like the Java client's
``RecordAccumulator``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from kafkalite.producer.append_kernel import FastLock, FutureBase, QueueBase, TopicBase
from kafkalite.producer.batch import CB_SEND, DoneSignal, ProducerBatch
from kafkalite.producer.partitioner import StickyPartitioner
from kafkalite.protocol.record_builder import RecordBatchBuilder
from kafkalite.protocol.records import RecordBatch

log = logging.getLogger("kafkalite.producer")

__all__ = ["BufferPool", "PartitionQueue", "ProducerBatch", "RecordAccumulator", "TopicState"]

F = TypeVar("F", bound=FutureBase)
Headers = Sequence[tuple[str, "bytes | None"]]

#: A new batch's first reservation of buffer.memory; it doubles on demand. Small, so
#: that thousands of partitions with a record or two each fit the default 32 MiB
#: (10,000 partitions take 10 MiB; at Java's 16 KiB per batch they would need 160 MiB
#: and every send() would wait for memory). The doublings to a full 1 MB batch cost
#: ten calls of the general append path per batch, nothing per record.
INITIAL_ROOM = 1024

# Java's CompressionRatioEstimator steps.
_RATIO_WORSE_STEP = 0.05
_RATIO_BETTER_STEP = 0.005


class BufferPool:
    """Accounting of ``buffer.memory``: reservations per batch, waiters when exhausted."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.available = total
        self._cond = threading.Condition(threading.Lock())
        self.waiters = 0
        self._async_waiters: list[asyncio.Future[None]] = []
        self.wait_time_total = 0.0

    def try_reserve(self, size: int) -> bool:
        with self._cond:
            if self.available >= size:
                self.available -= size
                return True
            return False

    def release(self, size: int) -> None:
        if size <= 0:
            return
        with self._cond:
            self.available += size
            if self.waiters:
                self._cond.notify_all()
            waiters, self._async_waiters = self._async_waiters, []
        for w in waiters:
            if not w.done():
                w.get_loop().call_soon_threadsafe(_resolve_none, w)

    def wait_blocking(self, size: int, deadline: float) -> bool:
        """Block until ``size`` bytes could be free (True) or ``deadline`` passes (False)."""
        start = time.monotonic()
        with self._cond:
            self.waiters += 1
            try:
                while self.available < size:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._cond.wait(min(remaining, 0.1))
                return True
            finally:
                self.waiters -= 1
                self.wait_time_total += time.monotonic() - start

    async def wait_async(self, size: int, deadline: float) -> bool:
        start = time.monotonic()
        self.waiters += 1
        try:
            while self.available < size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                with self._cond:
                    self._async_waiters.append(fut)
                try:
                    await asyncio.wait_for(fut, remaining)
                except asyncio.TimeoutError:
                    pass
            return True
        finally:
            self.waiters -= 1
            self.wait_time_total += time.monotonic() - start


def _resolve_none(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class PartitionQueue(QueueBase):
    """The batches of one partition, oldest first; ``lock`` guards appends and drains."""

    # batches and lock are QueueBase's (the append path's fields).
    __slots__ = ("muted", "partition", "topic")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.lock = FastLock()
        self.batches: deque[ProducerBatch] = deque()
        self.muted = False


class TopicState(TopicBase):
    """What send() needs per topic: partition count, available partitions, queues, sticky state.

    ``last_used`` is when the topic last started a batch; ``expired`` is set once it has
    been idle for ``metadata.max.idle.ms`` and its metadata was forgotten: the next send
    fetches metadata again (see :meth:`RecordAccumulator.forget_idle_topics`).
    """

    # available, num_partitions, queues and sticky are TopicBase's (the append path's fields).
    __slots__ = ("expired", "last_used", "topic")

    def __init__(self, topic: str, num_partitions: int, available: list[int], batch_size: int) -> None:
        self.topic = topic
        self.num_partitions = num_partitions
        self.available = available
        self.queues = [PartitionQueue(topic, p) for p in range(num_partitions)]
        self.sticky = StickyPartitioner(batch_size)
        self.last_used = time.monotonic()
        self.expired = False


class RecordAccumulator:
    """Queues of batches per partition, shared by callers' threads and the sender."""

    def __init__(self, *, batch_size: int, linger_ms: int, compression: int, compression_level: int | None,
                 delivery_timeout_ms: int, pool: BufferPool, signal: DoneSignal,
                 wakeup: Callable[[], None]) -> None:
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.compression = compression
        self.compression_level = compression_level
        self.delivery_timeout_s = delivery_timeout_ms / 1000.0
        self.pool = pool
        self.signal = signal
        self.wakeup = wakeup
        self.topics: dict[str, TopicState] = {}
        self.incomplete: set[ProducerBatch] = set()
        self.flushes_in_progress = 0
        self.closed = False
        self._ratio: dict[str, float] = {}
        self._drain_index: dict[int, int] = {}
        self._topics_lock = threading.Lock()
        #: Expired topics a send used again (the sender tracks their metadata again).
        self.revived: set[str] = set()

    # -------------------------------------------------------------- topics

    def update_topic(self, topic: str, num_partitions: int, available: list[int]) -> TopicState:
        """Apply metadata: create the topic's state or grow its partition list."""
        with self._topics_lock:
            state = self.topics.get(topic)
            if state is None:
                state = TopicState(topic, num_partitions, available, self.batch_size)
                self.topics[topic] = state
                return state
            if num_partitions > len(state.queues):
                state.queues.extend(PartitionQueue(topic, p) for p in range(len(state.queues), num_partitions))
            if num_partitions >= state.num_partitions:
                # Partitions are only ever added; a smaller count is a stale answer.
                state.num_partitions = num_partitions
            state.available = available
            state.expired = False
            return state

    def forget_idle_topics(self, now: float, idle_s: float) -> list[str]:
        """Topics that started no batch for ``idle_s`` seconds and have none queued or in
        flight: marked expired, their names returned so that their metadata is forgotten
        (Java's ``metadata.max.idle.ms``, ProducerMetadata.retainTopic). The state object
        stays (send() may hold it); a send to it later fetches metadata first."""
        busy = {b.topic for b in list(self.incomplete)}
        forgotten = []
        for state in list(self.topics.values()):
            if state.expired or now - state.last_used < idle_s or state.topic in busy:
                continue
            with contextlib.ExitStack() as locked:  # no append may start a batch meanwhile
                for pq in state.queues:
                    locked.enter_context(pq.lock)
                if now - state.last_used < idle_s or any(pq.batches for pq in state.queues):
                    continue
                state.expired = True
            forgotten.append(state.topic)
        return forgotten

    def next_idle(self, now: float, idle_s: float, recheck_s: float) -> float:
        """When :meth:`forget_idle_topics` could next forget a topic: ``idle_s`` after the
        least recently used topic last started a batch (a batch started later only moves
        that on), or ``now + idle_s`` without topics. A topic already idle that long but
        kept (batches still in flight) is looked at again after ``recheck_s``."""
        due = now + idle_s
        for state in list(self.topics.values()):
            if not state.expired:
                at = state.last_used + idle_s
                due = min(due, at if at > now else now + recheck_s)
        return due

    def _touch(self, state: TopicState) -> None:
        """A batch starts for ``state``'s topic (called under one of its partition locks)."""
        state.last_used = time.monotonic()
        if state.expired:  # a send that raced with the expiry: use the topic again
            state.expired = False
            self.revived.add(state.topic)

    # -------------------------------------------------------------- appending

    def append(self, state: TopicState, partition: int | None, timestamp: int, key: bytes | None,
               value: bytes | None, headers: Headers | None, key_size: int, value_size: int,
               future_cls: type[F], callback: Callable[..., object] | None,
               interceptor_cb: Callable[..., object] | None, size_hint: int) -> F | None:
        """Append one record to ``partition``, or (None) to the topic's sticky partition.

        send()'s general path: whatever the append kernel declined comes here, and this
        is the only code that starts batches. Under the partition's lock the record goes
        into the open batch if it has room; else that batch is closed and a new one
        started (one sender wake-up per batch). Unkeyed records follow KIP-794: they
        stick to one partition until ``batch.size`` bytes went there and its batch is
        full (or twice that regardless); the sticky bookkeeping is the append kernel's.

        Returns the record's future, or None when a new batch is needed and
        ``buffer.memory`` has no room for it (nothing changed then). ``size_hint`` is
        the record's encoded size estimate, reserved when it starts a batch of its own
        beyond ``batch.size``.
        """
        sticky = state.sticky
        batch_size = self.batch_size
        while True:
            n = state.num_partitions
            if partition is not None:
                p = partition
            else:
                p = sticky.current
                if p < 0 or p >= n:
                    p = sticky.partition(state.available, n)
            pq = state.queues[p]
            with pq.lock:
                dq = pq.batches
                last = dq[-1] if dq else None
                if partition is None:
                    if sticky.current != p:
                        continue  # switched by another thread meanwhile
                    if sticky.produced_bytes >= batch_size and (
                            last is None or last.closed or last.builder.is_full()):
                        sticky.update(p, 0, True, state.available, n)  # switch before a new batch
                        continue
                batch: ProducerBatch | None = None
                index = 0
                before = 0
                if last is not None and not last.closed:
                    builder = last.builder
                    if partition is None:  # the sticky bookkeeping below counts the bytes
                        before = builder.uncompressed_size_in_bytes
                    index = builder.try_append(timestamp, key, value, headers)
                    if index < 0 and self._grow(last, size_hint):
                        index = builder.try_append(timestamp, key, value, headers)
                    if index >= 0:
                        batch = last
                    else:
                        last.closed = True  # full: the next batch starts now
                        if partition is None and sticky.produced_bytes >= batch_size:
                            sticky.update(p, 0, True, state.available, n)
                            continue
                        before = index = 0
                new_batch = batch is None
                if batch is None:
                    self._touch(state)
                    batch = self._new_batch(pq, timestamp, key, value, headers, size_hint)
                    if batch is None:
                        return None
                future = future_cls(batch, index, timestamp, key_size, value_size)
                if interceptor_cb is not None:
                    batch.add_callback(future, interceptor_cb, CB_SEND)
                if callback is not None:
                    batch.add_callback(future, callback, CB_SEND)
                if partition is None:
                    # StickyPartitioner.update, inlined as in the append kernel: count the
                    # bytes; the call (a switch) only once one is due.
                    builder = batch.builder
                    appended = builder.uncompressed_size_in_bytes - before
                    produced = sticky.produced_bytes + appended
                    limit = sticky.batch_size
                    if produced < limit:  # the common case: no switch due
                        if sticky.current == p:
                            sticky.produced_bytes = produced
                    else:
                        full = builder.is_full()
                        if full or produced >= 2 * limit:
                            sticky.update(p, appended, full, state.available, n)
                        elif sticky.current == p:
                            sticky.produced_bytes = produced
            if new_batch:
                # One wake-up per batch: the sender starts its linger timer, or sends the
                # batch just closed.
                self.wakeup()
            return future

    def _new_batch(self, pq: PartitionQueue, timestamp: int, key: bytes | None, value: bytes | None,
                   headers: Headers | None, size_hint: int) -> ProducerBatch | None:
        """A new batch at the end of ``pq`` holding the record (index 0); None: no memory."""
        reserve = self.first_room(size_hint)
        if not self.pool.try_reserve(reserve):
            return None
        builder = RecordBatchBuilder(
            compression=self.compression, compression_level=self.compression_level,
            batch_size=self.batch_size, compression_ratio_estimate=self._ratio.get(pq.topic, 1.0),
        )
        builder.room = reserve
        now = time.monotonic()
        batch = ProducerBatch(pq.topic, pq.partition, builder, now, self.signal, pq.lock, reserve,
                              now + self.delivery_timeout_s)
        batch.linger_due = self.linger_due(now)
        builder.append(timestamp, key, value, headers)
        pq.batches.append(batch)
        self.incomplete.add(batch)
        return batch

    def first_room(self, record_size: int) -> int:
        """The buffer.memory a new batch starting with a record of ``record_size`` bytes
        reserves (what a send waits for when the pool is exhausted)."""
        room = min(INITIAL_ROOM, self.batch_size)
        return room if record_size <= room else record_size

    def _grow(self, batch: ProducerBatch, record_size: int) -> bool:
        """More room for ``batch`` when room, not ``batch.size``, keeps the next record
        (``record_size`` bytes, estimated) out: the room doubles (at least what the record
        needs) if the pool has it. False: the batch is full (closed by the caller)."""
        builder = batch.builder
        short = builder.room_short_by(record_size)
        if short <= 0:
            return False
        more = max(short, builder.room)
        if not self.pool.try_reserve(more):
            if more == short or not self.pool.try_reserve(short):
                return False
            more = short
        builder.room += more
        batch.reserved += more
        return True

    def split(self, batch: ProducerBatch, batch_size: int, now: float) -> list[ProducerBatch]:
        """Split ``batch`` into batches of at most ``batch_size`` (after MESSAGE_TOO_LARGE).

        The new batches take over its records in order; futures of ``batch`` resolve
        through them (:func:`~kafkalite.producer.batch.resolve`). Sequence numbers are
        assigned by the caller.
        """
        data = batch.wire if batch.wire is not None else batch.builder.build()
        records = RecordBatch(data).records()
        children: list[tuple[int, ProducerBatch]] = []
        current: ProducerBatch | None = None
        for index, rec in enumerate(records):
            headers = rec.headers or None
            if current is None or current.builder.try_append(rec.timestamp, rec.key, rec.value, headers) < 0:
                builder = RecordBatchBuilder(compression=self.compression, compression_level=self.compression_level,
                                             batch_size=batch_size)
                current = ProducerBatch(batch.topic, batch.partition, builder, now, batch.signal, batch.lock,
                                        0, batch.delivery_deadline)
                current.parent = batch
                current.attempts = batch.attempts
                current.transactional = batch.transactional
                current.closed = True
                builder.append(rec.timestamp, rec.key, rec.value, headers)
                children.append((index, current))
        batch.children = children
        return [c for _, c in children]

    # -------------------------------------------------------------- sender side

    def linger_due(self, created: float) -> float:
        """When a batch opened at ``created`` (monotonic seconds) has lingered enough.

        Counted as Java's accumulator counts it: in whole milliseconds of the clock
        (``RecordAccumulator``: ``nowMs - batch.createdMs >= lingerMs``, both
        ``time.milliseconds()``), so a batch opened late in a millisecond leaves up to
        1 ms before ``linger.ms`` of real time has passed (0.5 ms on average), never
        later. librdkafka counts microseconds, and its batches wait the whole linger."""
        return (math.floor(created * 1000.0) + self.linger_ms) / 1000.0

    def ready(self, leader_for: Callable[[str, int], int | None], now: float,
              adaptive: bool = False, unavailable_nodes: set[int] | None = None,
              ) -> tuple[dict[int, list[PartitionQueue]], float, set[str]]:
        """Leaders with sendable batches, seconds until the next check, topics without leaders."""
        ready: dict[int, list[PartitionQueue]] = {}
        next_check = 3600.0
        unknown: set[str] = set()
        urgent = self.flushes_in_progress > 0 or self.closed or self.pool.waiters > 0
        for state in list(self.topics.values()):
            sizes: list[int] | None = [] if adaptive else None
            ids: list[int] | None = [] if adaptive else None
            topic = state.topic
            for pq in state.queues:
                dq = pq.batches
                leader = leader_for(topic, pq.partition)
                if sizes is not None and ids is not None and leader is not None and (
                        not unavailable_nodes or leader not in unavailable_nodes):
                    sizes.append(len(dq))
                    ids.append(pq.partition)
                if not dq:
                    continue
                if leader is None:
                    unknown.add(topic)
                    continue
                if pq.muted:
                    continue
                try:
                    first = dq[0]
                except IndexError:
                    continue
                if first.retry_at > now:
                    next_check = min(next_check, first.retry_at - now)
                    continue
                if urgent or first.in_retry or len(dq) > 1 or first.closed or now >= first.linger_due \
                        or first.builder.is_full():
                    ready.setdefault(leader, []).append(pq)
                else:
                    next_check = min(next_check, first.linger_due - now)
            if sizes is not None:
                state.sticky.update_load_stats(sizes, ids, state.num_partitions)
        return ready, max(0.0, next_check), unknown

    def sendable(self, pq: PartitionQueue, now: float) -> bool:
        """Whether ``pq``'s first batch may be drained now (what :meth:`ready` checks per
        partition, for a leader already known to be ready)."""
        dq = pq.batches
        if not dq or pq.muted:
            return False
        try:
            first = dq[0]
        except IndexError:
            return False
        if first.retry_at > now:
            return False
        return (self.flushes_in_progress > 0 or self.closed or self.pool.waiters > 0 or first.in_retry
                or len(dq) > 1 or first.closed or now >= first.linger_due or first.builder.is_full())

    def drain(self, node: int, queues: list[PartitionQueue], max_size: int, now: float,
              allowed: Callable[[PartitionQueue, ProducerBatch], bool] | None = None) -> list[ProducerBatch]:
        """Take at most one batch per partition for ``node``, up to ``max_size`` bytes."""
        out: list[ProducerBatch] = []
        size = 0
        n = len(queues)
        start = self._drain_index.get(node, 0) % n if n else 0
        for i in range(n):
            pq = queues[(start + i) % n]
            with pq.lock:
                dq = pq.batches
                if not dq:
                    continue
                first = dq[0]
                if first.retry_at > now:
                    continue
                estimate = first.estimated_size()
                if out and size + estimate > max_size:
                    self._drain_index[node] = (start + i) % n
                    break
                if allowed is not None and not allowed(pq, first):
                    continue
                dq.popleft()
                first.closed = True
            out.append(first)
            size += estimate
        else:
            self._drain_index[node] = start + 1
        return out

    def reenqueue(self, batch: ProducerBatch, now: float, backoff_s: float) -> None:
        """Put a batch back at the front of its queue for a retry (sequence order kept)."""
        batch.attempts += 1
        batch.in_retry = True
        batch.retry_at = now + backoff_s
        state = self.topics[batch.topic]
        pq = state.queues[batch.partition]
        with pq.lock:
            dq = pq.batches
            if batch.base_sequence >= 0:
                # Before the first batch without a sequence or with a higher one.
                pos = 0
                for existing in dq:
                    if existing.base_sequence < 0 or existing.base_sequence > batch.base_sequence:
                        break
                    pos += 1
                dq.insert(pos, batch)
            else:
                dq.appendleft(batch)

    def update_compression_ratio(self, batch: ProducerBatch) -> None:
        if not self.compression:
            return
        observed = batch.builder.compression_ratio
        current = self._ratio.get(batch.topic, 1.0)
        if observed > current:
            self._ratio[batch.topic] = max(current + _RATIO_WORSE_STEP, observed)
        elif observed < current:
            self._ratio[batch.topic] = max(current - _RATIO_BETTER_STEP, observed)

    def expired(self, now: float) -> list[ProducerBatch]:
        """Remove and return queued batches whose delivery.timeout.ms has passed."""
        out: list[ProducerBatch] = []
        for state in list(self.topics.values()):
            for pq in state.queues:
                if not pq.batches:
                    continue
                with pq.lock:
                    dq = pq.batches
                    while dq and dq[0].delivery_deadline <= now:
                        batch = dq.popleft()
                        batch.closed = True
                        out.append(batch)
        return out

    def next_expiry(self) -> float:
        """The soonest delivery deadline of a queued batch (inf when none is queued)."""
        soonest = float("inf")
        for state in list(self.topics.values()):
            for pq in state.queues:
                dq = pq.batches
                if dq:
                    try:
                        soonest = min(soonest, dq[0].delivery_deadline)
                    except IndexError:
                        pass
        return soonest

    def remove_all(self, predicate: Callable[[ProducerBatch], bool] | None = None) -> list[ProducerBatch]:
        """Take every queued (not in-flight) batch out, e.g. to abort them."""
        out: list[ProducerBatch] = []
        for state in list(self.topics.values()):
            for pq in state.queues:
                with pq.lock:
                    keep: deque[ProducerBatch] = deque()
                    for batch in pq.batches:
                        if predicate is None or predicate(batch):
                            batch.closed = True
                            out.append(batch)
                        else:
                            keep.append(batch)
                    pq.batches = keep
        return out

    def batch_done(self, batch: ProducerBatch) -> None:
        """Bookkeeping after a batch completed: memory back, not incomplete any more.

        The batch's bytes go too: its records' futures keep the batch for its outcome
        (offset, error), and flush() keeps every batch it waits for until the last one
        is settled; neither may keep the records resident beyond ``buffer.memory``.
        """
        self.incomplete.discard(batch)
        batch.wire = None
        batch.builder.discard_records()
        if batch.reserved:
            self.pool.release(batch.reserved)
            batch.reserved = 0

    def has_queued(self) -> bool:
        return any(pq.batches for state in list(self.topics.values()) for pq in state.queues)

    def queued_topics(self) -> Iterable[str]:
        return [s.topic for s in list(self.topics.values()) if any(pq.batches for pq in s.queues)]
