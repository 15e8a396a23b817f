"""What becomes of a batch once it is taken for sending: completed, failed, waited for (no I/O).

:class:`Delivery` is the one place where a batch's outcome is settled, whoever
decides it: the sender (a Produce answer, a delivery timeout, a fatal error), the
transaction client (aborting the queued batches of a transaction) or the producer's
close (forced). Settling a batch also tells the idempotence state (sequences, KIP-360)
and the transaction manager (a failed record makes the transaction abortable), counts
it in the metrics, unmutes its partition when ordering is guaranteed
(``max.in.flight.requests.per.connection=1``) and hands its memory back.

:meth:`Delivery.flush` is how everything waits for the batches buffered now: it makes
them urgent for the sender and waits until each is acknowledged or failed.

Example::

    delivery = Delivery(acc, metrics, in_flight=set(), wake=sender_wakeup.wake)
    delivery.complete(batch, base_offset=42, log_append_time=-1)
    delivery.fail(other, KafkaTimeoutError("..."), written_unknown=True)
    await delivery.flush(timeout_s=10.0)
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkalite.errors import KafkaError, KafkaTimeoutError

if TYPE_CHECKING:
    from kafkalite.producer.accumulator import RecordAccumulator
    from kafkalite.producer.batch import ProducerBatch
    from kafkalite.producer.idempotence import IdempotenceState
    from kafkalite.producer.producer_metrics import ProducerMetrics
    from kafkalite.producer.transactions import TransactionManager

__all__ = ["Delivery"]


class Delivery:
    """Settles batches: complete, fail, fail what is queued, wait for all (see the module doc).

    ``in_flight`` is the set of batches sent and not answered yet (the sender adds to
    it, settling removes from it); ``wake`` wakes the sender (engine loop).
    """

    def __init__(self, acc: RecordAccumulator, metrics: ProducerMetrics, *, in_flight: set[ProducerBatch],
                 wake: Callable[[], None], idem: IdempotenceState | None = None,
                 txn: TransactionManager | None = None, guarantee_order: bool = False) -> None:
        self.acc = acc
        self.metrics = metrics
        self.in_flight = in_flight
        self.wake = wake
        self.idem = idem
        self.txn = txn
        self.guarantee_order = guarantee_order

    # -------------------------------------------------------------- outcomes

    def complete(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        """The broker appended ``batch`` at ``base_offset`` (-1 with acks=0)."""
        self.in_flight.discard(batch)
        self.unmute(batch)
        if self.idem is not None:
            self.idem.on_success(batch, base_offset)
        if batch.complete(base_offset, log_append_time, None):
            self.metrics.record_success(batch)
        self._done(batch)

    def fail(self, batch: ProducerBatch, error: BaseException, written_unknown: bool = False) -> None:
        """``batch`` failed for good; ``written_unknown``: it was sent and may have been written."""
        self.in_flight.discard(batch)
        self.unmute(batch)
        if batch.done:
            return
        if isinstance(error, KafkaError):
            if written_unknown and not error.outcome_unknown:
                # Its own copy: one error object may fail batches that were never sent too.
                error = copy.copy(error)
                error.outcome_unknown = True
                error.message = f"{error.message}; it was sent to the broker, so it may have been written"
            error.with_context(topic=batch.topic, partition=batch.partition)
        if self.idem is not None:
            self.idem.on_failure(batch, error, written_unknown)
        txn = self.txn
        if txn is not None and isinstance(error, KafkaError):
            # A failed record fails the transaction: abortable (or fatal when fenced).
            if txn.handle_error(error, from_coordinator=False) == "retriable":
                txn.abortable_error(error)
        batch.complete(-1, -1, error)
        self.metrics.record_error(batch.record_count)
        self._done(batch)

    def fail_queued(self, make_error: Callable[[], KafkaError]) -> None:
        """Fail every batch still queued (not sent), each with its own ``make_error()``
        (Java's abortUndrainedBatches)."""
        for batch in self.acc.remove_all():
            self.fail(batch, make_error())

    def fail_all(self, error: KafkaError) -> None:
        """Fail every incomplete batch, queued or in flight (forced close, fatal error)."""
        for batch in self.acc.remove_all():
            self.fail(batch, error)
        for batch in list(self.acc.incomplete):
            if not batch.done and not batch.children:
                self.fail(batch, error)

    def _done(self, batch: ProducerBatch) -> None:
        self.acc.batch_done(batch)
        parent = batch.parent
        while parent is not None and parent.done:  # the pieces of a split batch are all done
            self.acc.batch_done(parent)
            parent = parent.parent

    # -------------------------------------------------------------- ordering

    def mute(self, batch: ProducerBatch) -> None:
        """``batch`` was sent: with guaranteed ordering its partition sends nothing more until it is settled."""
        if self.guarantee_order:
            self.acc.topics[batch.topic].queues[batch.partition].muted = True

    def unmute(self, batch: ProducerBatch) -> None:
        if self.guarantee_order:
            state = self.acc.topics.get(batch.topic)
            if state is not None:
                state.queues[batch.partition].muted = False

    # -------------------------------------------------------------- waiting

    def unacknowledged(self) -> list[ProducerBatch]:
        """The batches not settled yet."""
        return [b for b in list(self.acc.incomplete) if not b.done]

    async def flush(self, timeout_s: float | None) -> None:
        """Send everything buffered now and wait until it is settled (engine loop).

        Raises KafkaTimeoutError after ``timeout_s`` (None: no limit), naming how
        many records are still unacknowledged; they stay buffered.
        """
        pending = self.unacknowledged()
        if not pending:
            return
        self.acc.flushes_in_progress += 1
        self.wake()
        try:
            await asyncio.wait_for(_all_done(pending), timeout_s)
        except asyncio.TimeoutError:
            left = sum(b.record_count for b in pending if not b.done)
            raise KafkaTimeoutError(f"flush() did not complete within {timeout_s:.3f}s; "
                                    f"{left} record(s) are still unacknowledged") from None
        finally:
            self.acc.flushes_in_progress -= 1


async def _all_done(batches: list[ProducerBatch]) -> None:
    for batch in batches:
        if not batch.done:
            await batch.async_waiter()
