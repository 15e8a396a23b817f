"""Idempotent-producer bookkeeping: producer id, epoch and per-partition sequences (no I/O).

With ``enable.idempotence`` (the default) every batch carries the producer id, epoch
and the base sequence of its first record; the broker appends a batch only if its
sequence follows the last one it appended for that (producer, partition), answers
a repeat of one of the last five batches with success, and rejects a gap with
OUT_OF_ORDER_SEQUENCE_NUMBER. This module is the client half, following the Java
client's ``TransactionManager`` and KIP-360:

* sequences are assigned when a batch is drained and the batch is tracked as
  in flight until it completes; retries keep their sequence and are sent strictly in
  sequence order (:meth:`should_stop_drain`);
* OUT_OF_ORDER_SEQUENCE_NUMBER for a batch that is not the next expected one is just
  retried (an earlier batch is being retried); for the next expected one it means
  the broker lost our state: the idempotent producer bumps its own epoch and rewrites
  the in-flight sequences of that partition from 0 (KIP-360), so nothing acked is
  lost and nothing is written twice;
* UNKNOWN_PRODUCER_ID (state expired on the broker) likewise bumps the epoch;
* a batch that failed after being sent with an unknown outcome (delivery timeout)
  leaves the partition *unresolved*: no new sequence is assigned there until a later
  in-flight batch succeeds (the lost one was written) or none is left, in which case
  the epoch is bumped;
* a batch the broker rejected (not written) shifts the later in-flight sequences of
  its partition down, or bumps the epoch for the idempotent producer.

Transactional producers never bump the epoch here: their errors become abortable and
the transaction manager bumps the epoch with InitProducerId when aborting.
"""

from __future__ import annotations

import bisect
import logging
from typing import Protocol

from kafkalite.errors import OutOfOrderSequenceError, UnknownProducerIdError
from kafkalite.protocol.record_builder import increment_sequence

log = logging.getLogger("kafkalite.producer")

__all__ = ["IdempotenceState", "PartitionSequences"]

NO_SEQUENCE = -1
_EPOCH_MAX = 32767


class SequencedBatch(Protocol):
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    sequence_reset: bool

    @property
    def record_count(self) -> int: ...

    def set_producer_state(self, producer_id: int, epoch: int, base_sequence: int,
                           transactional: bool) -> None: ...

    def reset_producer_state(self, producer_id: int, epoch: int, base_sequence: int) -> None: ...


class PartitionSequences:
    """Sequence state of one partition."""

    __slots__ = ("epoch", "in_flight", "last_acked_offset", "last_acked_sequence", "next_sequence", "producer_id")

    def __init__(self, producer_id: int, epoch: int) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.next_sequence = 0
        self.last_acked_sequence = NO_SEQUENCE
        self.last_acked_offset = -1
        self.in_flight: list[SequencedBatch] = []  # sorted by base_sequence

    def add(self, batch: SequencedBatch) -> None:
        keys = [b.base_sequence for b in self.in_flight]
        self.in_flight.insert(bisect.bisect_right(keys, batch.base_sequence), batch)

    def remove(self, batch: SequencedBatch) -> None:
        try:
            self.in_flight.remove(batch)
        except ValueError:
            pass


class IdempotenceState:
    """The producer id/epoch and every partition's sequences."""

    def __init__(self, transactional: bool = False) -> None:
        self.transactional = transactional
        self.producer_id = -1
        self.epoch = -1
        self.partitions: dict[tuple[str, int], PartitionSequences] = {}
        self.unresolved: dict[tuple[str, int], int] = {}
        self.to_rewrite: set[tuple[str, int]] = set()
        self.epoch_bump_required = False
        self.reset_required = False  # epoch exhausted: get a new producer id

    # -------------------------------------------------------------- producer id

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0 and self.epoch >= 0

    def set_producer_id(self, producer_id: int, epoch: int, reset: bool = True) -> None:
        log.info("producer id %d, epoch %d", producer_id, epoch)
        self.producer_id = producer_id
        self.epoch = epoch
        self.reset_required = False
        if reset:
            self.reset_sequences()

    def reset_sequences(self) -> None:
        self.partitions.clear()
        self.unresolved.clear()
        self.to_rewrite.clear()
        self.epoch_bump_required = False

    def request_epoch_bump(self, tp: tuple[str, int]) -> None:
        self.epoch_bump_required = True
        self.to_rewrite.add(tp)

    def bump_epoch_if_needed(self) -> bool:
        """For the idempotent (not transactional) producer: apply a requested epoch bump.

        Returns True when a new producer id is needed instead (epoch exhausted).
        """
        if self.transactional or not self.epoch_bump_required:
            return False
        self.epoch_bump_required = False
        if self.epoch >= _EPOCH_MAX:
            self.producer_id, self.epoch = -1, -1
            self.reset_required = True
            return True
        self.epoch += 1
        log.info("bumped producer epoch to %d (producer id %d) to restart sequences (KIP-360)",
                 self.epoch, self.producer_id)
        for tp in self.to_rewrite:
            self.restart_sequences(tp)
            self.unresolved.pop(tp, None)
        self.to_rewrite.clear()
        return False

    def restart_sequences(self, tp: tuple[str, int]) -> None:
        """Give ``tp``'s in-flight batches the current epoch and sequences from 0."""
        entry = self.partitions.get(tp)
        if entry is None:
            return
        sequence = 0
        for batch in entry.in_flight:
            batch.reset_producer_state(self.producer_id, self.epoch, sequence)
            sequence = increment_sequence(sequence, batch.record_count)
        entry.producer_id, entry.epoch = self.producer_id, self.epoch
        entry.next_sequence = sequence
        entry.last_acked_sequence = NO_SEQUENCE

    # -------------------------------------------------------------- sending

    def entry(self, tp: tuple[str, int]) -> PartitionSequences:
        entry = self.partitions.get(tp)
        if entry is None:
            entry = self.partitions[tp] = PartitionSequences(self.producer_id, self.epoch)
        return entry

    def _stale(self, entry: PartitionSequences) -> bool:
        return entry.producer_id != self.producer_id or entry.epoch != self.epoch

    def should_stop_drain(self, tp: tuple[str, int], batch: SequencedBatch) -> bool:
        """Whether ``batch`` (the first queued for ``tp``) must wait before being sent."""
        entry = self.partitions.get(tp)
        if batch.base_sequence == NO_SEQUENCE:
            if entry is not None and entry.in_flight:
                if self._stale(entry):
                    return True  # finish the old epoch's batches before sequences restart
                if entry.last_acked_sequence == NO_SEQUENCE:
                    # Nothing acknowledged yet for this producer epoch here: a broker with
                    # no state for us accepts ANY first sequence, so a later batch must not
                    # overtake a first one that fails with a retriable error (it would be
                    # written out of order, and the retry would duplicate it).
                    return True
            if tp in self.unresolved:
                return True
        if entry is not None and entry.in_flight and batch.base_sequence != NO_SEQUENCE:
            # Retries go strictly in sequence order: only the lowest in flight.
            return entry.in_flight[0].base_sequence != batch.base_sequence
        return False

    def assign(self, batch: SequencedBatch) -> None:
        """Give a drained batch its producer id, epoch and sequence (first send only)."""
        tp = (batch.topic, batch.partition)
        entry = self.entry(tp)
        if self._stale(entry) and not entry.in_flight:
            entry.producer_id, entry.epoch = self.producer_id, self.epoch
            entry.next_sequence = 0
            entry.last_acked_sequence = NO_SEQUENCE
        batch.set_producer_state(self.producer_id, self.epoch, entry.next_sequence, self.transactional)
        entry.next_sequence = increment_sequence(entry.next_sequence, batch.record_count)
        entry.add(batch)

    def add_in_flight(self, batch: SequencedBatch) -> None:
        """Track a batch that already has a sequence (the pieces of a split batch)."""
        self.entry((batch.topic, batch.partition)).add(batch)

    def remove_in_flight(self, batch: SequencedBatch) -> None:
        entry = self.partitions.get((batch.topic, batch.partition))
        if entry is not None:
            entry.remove(batch)

    # -------------------------------------------------------------- outcomes

    def on_success(self, batch: SequencedBatch, base_offset: int) -> None:
        tp = (batch.topic, batch.partition)
        entry = self.partitions.get(tp)
        if entry is None or batch.base_sequence == NO_SEQUENCE:
            return
        entry.remove(batch)
        if (batch.producer_id, batch.producer_epoch) != (entry.producer_id, entry.epoch):
            return
        last = increment_sequence(batch.base_sequence, batch.record_count - 1)
        if last > entry.last_acked_sequence:
            entry.last_acked_sequence = last
        if base_offset >= 0:
            entry.last_acked_offset = max(entry.last_acked_offset, base_offset + batch.record_count - 1)
        unresolved = self.unresolved.get(tp)
        if unresolved is not None and entry.last_acked_sequence >= unresolved - 1:
            # A later batch was written, so the one whose outcome was unknown was too.
            del self.unresolved[tp]
        self._maybe_bump_for_unresolved(tp)

    def on_failure(self, batch: SequencedBatch, error: BaseException, written_unknown: bool) -> None:
        """A batch with a sequence failed for good.

        ``written_unknown``: it was sent and may have been written (timeout); else the
        broker rejected it (not written) or it was never sent.
        """
        tp = (batch.topic, batch.partition)
        entry = self.partitions.get(tp)
        if entry is None or batch.base_sequence == NO_SEQUENCE:
            return
        entry.remove(batch)
        if self.transactional:
            return  # the transaction is aborted and the epoch bumped by the abort
        if (batch.producer_id, batch.producer_epoch) != (entry.producer_id, entry.epoch):
            return  # sequences were restarted since; nothing to adjust
        if written_unknown:
            self.unresolved[tp] = increment_sequence(batch.base_sequence, batch.record_count)
            self._maybe_bump_for_unresolved(tp)
        elif isinstance(error, OutOfOrderSequenceError) or entry.in_flight or entry.next_sequence != \
                increment_sequence(batch.base_sequence, batch.record_count):
            self.request_epoch_bump(tp)
        else:
            # Nothing after it: reuse its sequences for the next batch.
            entry.next_sequence = batch.base_sequence

    def _maybe_bump_for_unresolved(self, tp: tuple[str, int]) -> None:
        entry = self.partitions.get(tp)
        if tp in self.unresolved and (entry is None or not entry.in_flight):
            # No later batch can tell us whether the lost one was written: start over.
            self.request_epoch_bump(tp)

    def is_next_sequence(self, tp: tuple[str, int], sequence: int) -> bool:
        entry = self.partitions.get(tp)
        last = entry.last_acked_sequence if entry is not None else NO_SEQUENCE
        return sequence == increment_sequence(last, 1) if last >= 0 else sequence == 0

    def can_retry(self, batch: SequencedBatch, error: BaseException) -> bool:
        """Whether a sequence error on ``batch`` is retried (maybe after an epoch bump)."""
        tp = (batch.topic, batch.partition)
        if (batch.producer_id, batch.producer_epoch) != (self.producer_id, self.epoch):
            return True  # its sequence was restarted under a new epoch: send again
        if isinstance(error, UnknownProducerIdError):
            if self.transactional:
                return False
            self.request_epoch_bump(tp)
            return True
        if isinstance(error, OutOfOrderSequenceError):
            unresolved = self.unresolved.get(tp)
            if unresolved is None and (batch.sequence_reset or not self.is_next_sequence(tp, batch.base_sequence)):
                return True  # an earlier batch is being retried; this one follows it
            if not self.transactional:
                if unresolved is None or batch.base_sequence == unresolved:
                    self.request_epoch_bump(tp)
                return True
            return False
        return False
