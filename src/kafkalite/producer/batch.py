"""One batch of records for one partition, and what its records' futures read (no I/O).

A :class:`ProducerBatch` holds the record buffer being filled (a
:class:`~kafkalite.protocol.record_builder.RecordBatchBuilder`), the callbacks of its
records and, once the broker answered, one base offset or one error for all of them:
every record's metadata is ``base offset + index`` (:func:`record_metadata`), as the
Java client's ``FutureRecordMetadata`` does. A batch split after MESSAGE_TOO_LARGE
hands its records to child batches; :func:`resolve` finds the one holding a record.

The accumulator creates and queues batches, the sender completes them, and the
per-record futures of :mod:`kafkalite.producer.futures` read them; this module
depends on none of those.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

from kafkalite.errors import KafkaTimeoutError
from kafkalite.producer.append_kernel import BatchBase, FastLock, FutureBase
from kafkalite.protocol.record_builder import RecordBatchBuilder, rewrite_producer_state
from kafkalite.types import RecordMetadata

#: (the record's future, the function, CB_SEND / CB_FUTURE / ...): what runs when the
#: batch completes; the function's signature depends on the kind.
BatchCallback = tuple[FutureBase, Callable[..., object], int]

log = logging.getLogger("kafkalite.producer")

__all__ = ["CB_FUTURE", "CB_SEND", "DoneSignal", "ProducerBatch", "record_metadata", "resolve"]

CB_SEND = 0  # fn(metadata, error)
CB_FUTURE = 1  # fn(future)
_SLOW_CALLBACKS_S = 1.0
_WAIT_SLICE_S = 0.1


class DoneSignal:
    """Wakes threads blocked in ``RecordFuture.result()`` / ``flush()`` when batches complete.

    One per producer. Completing a batch costs one attribute read when nobody waits.

    Example::

        import threading
        from kafkalite.producer.futures import DoneSignal
        signal, flag = DoneSignal(), []
        threading.Timer(0.1, lambda: (flag.append(1), signal.notify())).start()
        signal.wait_until(lambda: bool(flag), timeout=10, what="the flag")   # returns once it is set
    """

    __slots__ = ("_cond", "waiters")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self.waiters = 0

    def notify(self) -> None:
        """Wake every thread waiting for a batch to complete (called by the engine when one does).

        Example::

            from kafkalite.producer.futures import DoneSignal
            signal = DoneSignal()
            signal.notify()                  # wakes every wait_until() to test its predicate again
        """
        if self.waiters:
            with self._cond:
                self._cond.notify_all()

    def wait_until(self, predicate: Callable[[], bool], timeout: float | None, what: str) -> None:
        """Block until ``predicate()`` is true; KafkaTimeoutError after ``timeout`` s.

        Waits in slices so that KeyboardInterrupt is raised promptly.

        Example::

            from kafkalite.producer.futures import DoneSignal
            try:
                DoneSignal().wait_until(lambda: False, timeout=0.2, what="nothing")
            except KafkaTimeoutError as exc:
                print(exc)                   # nothing did not complete within 0.200s
        """
        if predicate():
            return
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        cond = self._cond
        with cond:
            self.waiters += 1
            try:
                while not predicate():
                    if deadline is None:
                        slice_s = _WAIT_SLICE_S
                    else:
                        slice_s = min(_WAIT_SLICE_S, deadline - time.monotonic())
                        if slice_s <= 0:
                            raise KafkaTimeoutError(f"{what} did not complete within {timeout:.3f}s")
                    cond.wait(slice_s)
            finally:
                self.waiters -= 1


def resolve(batch: ProducerBatch, index: int) -> tuple[ProducerBatch, int]:
    """The batch (and index in it) holding record ``index`` of ``batch`` after splits."""
    while batch.children:
        for start, child in reversed(batch.children):
            if index >= start:
                batch, index = child, index - start
                break
    return batch, index


def record_metadata(batch: ProducerBatch, index: int, timestamp: int, key_size: int,
                    value_size: int) -> RecordMetadata:
    """The metadata of record ``index`` of ``batch`` (offset -1 until acknowledged or when failed)."""
    if batch.children:  # the batch was split after MESSAGE_TOO_LARGE
        batch, index = resolve(batch, index)
    offset = batch.base_offset
    if offset >= 0:
        offset += index
    ts = batch.log_append_time if batch.log_append_time >= 0 else timestamp
    return RecordMetadata(batch.topic, batch.partition, offset, ts, key_size, value_size)


class ProducerBatch(BatchBase):
    """One batch for one partition: the builder, its records' callbacks and its outcome."""

    # builder, callbacks, closed and done are BatchBase's (the append path's fields).
    __slots__ = (
        "_waiters", "attempts", "base_offset", "base_sequence", "children",
        "created", "delivery_deadline", "error", "in_retry", "last_error", "linger_due", "lock",
        "log_append_time", "parent", "partition", "producer_epoch", "producer_id", "reserved",
        "retry_at", "sent_once", "sequence_reset", "signal", "topic", "transactional", "wire",
        "wire_state",
    )

    def __init__(self, topic: str, partition: int, builder: RecordBatchBuilder, now: float,
                 signal: DoneSignal, lock: FastLock, reserved: int, delivery_deadline: float) -> None:
        self.topic = topic
        self.partition = partition
        self.builder: RecordBatchBuilder = builder
        self.created = now
        self.linger_due = now  # the accumulator sets it for a new batch (RecordAccumulator.linger_due)
        self.signal = signal
        self.lock = lock
        self.reserved = reserved
        self.delivery_deadline = delivery_deadline
        self.done: bool = False
        self.closed: bool = False
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        self.last_error: BaseException | None = None
        self.callbacks: list[BatchCallback] | None = None
        self._waiters: list[asyncio.Future[None]] | None = None
        self.attempts = 0
        self.retry_at = 0.0
        self.in_retry = False
        self.sent_once = False
        self.wire: bytes | None = None
        self.wire_state: tuple[int, int, int, bool] | None = None
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.transactional = False
        self.sequence_reset = False
        self.children: list[tuple[int, ProducerBatch]] | None = None
        self.parent: ProducerBatch | None = None

    def __repr__(self) -> str:
        return (f"<ProducerBatch {self.topic}-{self.partition} records={self.builder.record_count} "
                f"seq={self.base_sequence} attempts={self.attempts} done={self.done}>")

    @property
    def record_count(self) -> int:
        return self.builder.record_count

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def estimated_size(self) -> int:
        if self.wire is not None:
            return len(self.wire)
        return self.builder.estimated_size_in_bytes()

    # -------------------------------------------------------------- producer state

    def set_producer_state(self, producer_id: int, epoch: int, base_sequence: int, transactional: bool) -> None:
        self.producer_id = producer_id
        self.producer_epoch = epoch
        self.base_sequence = base_sequence
        self.transactional = transactional

    def reset_producer_state(self, producer_id: int, epoch: int, base_sequence: int) -> None:
        """New sequence after an epoch bump (KIP-360); the wire bytes are rewritten on send."""
        self.set_producer_state(producer_id, epoch, base_sequence, self.transactional)
        self.sequence_reset = True

    def wire_bytes(self) -> bytes:
        """The batch as sent: built once (the builder then lets go of its buffer), header
        rewritten if the producer state changed."""
        state = (self.producer_id, self.producer_epoch, self.base_sequence, self.transactional)
        if self.wire is None:
            self.builder.set_producer_state(*state)
            self.wire = self.builder.seal()
            self.wire_state = state
        elif self.wire_state != state:
            self.wire = rewrite_producer_state(self.wire, *state)
            self.wire_state = state
        return self.wire

    # -------------------------------------------------------------- callbacks

    def add_callback(self, future: FutureBase, fn: Callable[..., object], kind: int) -> None:
        """Register a callback (under the partition lock, while appending)."""
        cbs = self.callbacks
        if cbs is None:
            self.callbacks = [(future, fn, kind)]
        else:
            cbs.append((future, fn, kind))

    def add_future_callback(self, future: FutureBase, fn: Callable[..., object]) -> bool:
        """Register ``fn(future)``; False if the batch is already done (caller runs it)."""
        with self.lock:
            if self.done:
                return False
            self.add_callback(future, fn, CB_FUTURE)
            return True

    def async_waiter(self) -> asyncio.Future[None]:
        """A future (of the running loop) resolved when this batch completes."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.done:
            fut.set_result(None)
            return fut
        if self._waiters is None:
            self._waiters = [fut]
        else:
            self._waiters.append(fut)
        return fut

    # -------------------------------------------------------------- completion

    def complete(self, base_offset: int, log_append_time: int, error: BaseException | None) -> bool:
        """Record the outcome and run callbacks in record order. False if already done."""
        if self.done:
            return False
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.error = error
        with self.lock:
            self.done = True
            callbacks, self.callbacks = self.callbacks, None
        self._finish(callbacks)
        parent = self.parent
        if parent is not None and all(child.done for _, child in parent.children or ()):
            parent.complete(-1, -1, None)
        return True

    def _finish(self, callbacks: list[BatchCallback] | None) -> None:
        self.signal.notify()
        waiters, self._waiters = self._waiters, None
        if waiters:
            for w in waiters:
                if not w.done():
                    w.set_result(None)
        if not callbacks:
            return
        started = time.monotonic()
        for future, fn, kind in callbacks:
            try:
                if kind == CB_SEND:
                    index = future._index
                    fn(record_metadata(self, index, future._timestamp, future._key_size, future._value_size),
                       resolve(self, index)[0].error)
                else:
                    fn(future)
            except Exception:
                log.exception("a producer callback for %s-%d raised", self.topic, self.partition)
        took = time.monotonic() - started
        if took > _SLOW_CALLBACKS_S:
            log.warning(
                "callbacks of one batch to %s-%d took %.2fs on the producer's I/O thread; "
                "nothing is sent or acknowledged meanwhile: move slow work out of callbacks",
                self.topic, self.partition, took,
            )
