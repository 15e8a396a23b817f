"""Sequence bookkeeping of the idempotent producer (KIP-360) without a broker."""

from __future__ import annotations

from kafkalite.errors import (
    KafkaTimeoutError,
    NotLeaderOrFollowerError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    UnknownProducerIdError,
)
from kafkalite.producer.idempotence import IdempotenceState
from kafkalite.protocol.record_builder import increment_sequence

TP = ("t", 0)


class Batch:
    def __init__(self, count: int, topic: str = "t", partition: int = 0) -> None:
        self.topic, self.partition, self.count = topic, partition, count
        self.producer_id = self.producer_epoch = self.base_sequence = -1
        self.transactional = False
        self.sequence_reset = False

    @property
    def record_count(self) -> int:
        return self.count

    def set_producer_state(self, pid: int, epoch: int, seq: int, transactional: bool) -> None:
        self.producer_id, self.producer_epoch, self.base_sequence, self.transactional = pid, epoch, seq, transactional

    def reset_producer_state(self, pid: int, epoch: int, seq: int) -> None:
        self.set_producer_state(pid, epoch, seq, self.transactional)
        self.sequence_reset = True


def state_with_batches(*counts: int) -> tuple[IdempotenceState, list[Batch]]:
    """Batches in flight on TP (the broker already knows this producer there)."""
    state = IdempotenceState()
    state.set_producer_id(42, 0)
    state.entry(TP).last_acked_sequence = 2**31 - 1  # as if a batch ending at seq -1 was acked
    batches = [Batch(c) for c in counts]
    for b in batches:
        assert not state.should_stop_drain(TP, b)
        state.assign(b)
    state.entry(TP).last_acked_sequence = -1
    return state, batches


def test_the_first_batch_of_an_epoch_must_be_acknowledged_before_another_goes() -> None:
    # A broker without state for the producer accepts any first sequence: pipelining a
    # second batch behind a first that fails (retriable) would reorder and duplicate.
    state = IdempotenceState()
    state.set_producer_id(1, 0)
    first, second = Batch(3), Batch(2)
    assert not state.should_stop_drain(TP, first)
    state.assign(first)
    assert state.should_stop_drain(TP, second)
    state.on_success(first, 0)
    assert not state.should_stop_drain(TP, second)
    state.assign(second)
    assert not state.should_stop_drain(TP, Batch(1))  # now pipelining is safe


def test_sequences_are_assigned_consecutively_per_partition() -> None:
    state, batches = state_with_batches(3, 5, 2)
    assert [b.base_sequence for b in batches] == [0, 3, 8]
    other = Batch(4, partition=1)
    state.assign(other)
    assert other.base_sequence == 0
    assert state.entry(TP).next_sequence == 10
    assert all(b.producer_id == 42 and b.producer_epoch == 0 for b in batches)


def test_sequences_wrap_at_int32_max() -> None:
    assert increment_sequence(2**31 - 1, 1) == 0
    state = IdempotenceState()
    state.set_producer_id(1, 0)
    state.entry(TP).next_sequence = 2**31 - 2
    b = Batch(5)
    state.assign(b)
    assert b.base_sequence == 2**31 - 2 and state.entry(TP).next_sequence == 3


def test_success_moves_last_acked_and_retries_go_in_sequence_order() -> None:
    state, (a, b, c) = state_with_batches(2, 2, 2)
    state.on_success(a, 100)
    assert state.entry(TP).last_acked_sequence == 1
    assert state.is_next_sequence(TP, 2)
    # b is retried: c (also in flight) must wait for b.
    assert not state.should_stop_drain(TP, b)
    assert state.should_stop_drain(TP, c)
    # A new batch (no sequence) may go while older ones are in flight (pipelining).
    assert not state.should_stop_drain(TP, Batch(1))


def test_out_of_order_for_a_later_batch_is_simply_retried() -> None:
    state, (_a, b) = state_with_batches(2, 2)
    # a is being retried (e.g. NOT_LEADER), b got OUT_OF_ORDER: not the next sequence.
    assert state.can_retry(b, OutOfOrderSequenceError("gap"))
    assert not state.epoch_bump_required


def test_out_of_order_for_the_next_sequence_bumps_the_epoch_and_rewrites_in_flight() -> None:
    state, (a, b, c) = state_with_batches(2, 3, 4)
    state.on_success(a, 10)
    # The broker lost our state: b is the next sequence yet rejected (KIP-360).
    assert state.can_retry(b, OutOfOrderSequenceError("gap"))
    assert state.epoch_bump_required
    assert not state.bump_epoch_if_needed()
    assert state.epoch == 1
    assert (b.producer_epoch, b.base_sequence, b.sequence_reset) == (1, 0, True)
    assert (c.producer_epoch, c.base_sequence) == (1, 3)
    assert state.entry(TP).next_sequence == 7
    # Retrying with a rewritten sequence is allowed without another bump.
    assert state.can_retry(b, OutOfOrderSequenceError("gap"))
    assert not state.epoch_bump_required


def test_unknown_producer_id_bumps_the_epoch_for_the_idempotent_producer() -> None:
    state, (a,) = state_with_batches(1)
    assert state.can_retry(a, UnknownProducerIdError("expired"))
    assert state.epoch_bump_required
    txn = IdempotenceState(transactional=True)
    txn.set_producer_id(9, 3)
    b = Batch(1)
    txn.assign(b)
    assert not txn.can_retry(b, UnknownProducerIdError("expired"))  # abortable for transactions
    assert not txn.bump_epoch_if_needed()


def test_stale_epoch_batches_are_retried_and_new_batches_wait_for_them() -> None:
    state, (a, b) = state_with_batches(1, 1)
    state.request_epoch_bump(("t", 1))  # another partition's trouble bumps the epoch
    state.bump_epoch_if_needed()
    assert state.can_retry(a, NotLeaderOrFollowerError("moved"))
    new = Batch(1)
    # t-0 still has old-epoch batches in flight: a new-epoch batch must wait.
    assert state.should_stop_drain(TP, new)
    state.on_success(a, 1)
    state.on_success(b, 2)
    assert not state.should_stop_drain(TP, new)
    state.assign(new)
    assert (new.producer_epoch, new.base_sequence) == (1, 0)


def test_unknown_outcome_leaves_the_partition_unresolved_until_a_later_batch_succeeds() -> None:
    state, (a, b) = state_with_batches(2, 2)
    state.on_failure(a, KafkaTimeoutError("expired"), written_unknown=True)
    assert TP in state.unresolved
    assert state.should_stop_drain(TP, Batch(1))  # no new sequences meanwhile
    state.on_success(b, 50)  # b followed a, so a was written
    assert TP not in state.unresolved and not state.epoch_bump_required


def test_unknown_outcome_with_nothing_after_it_bumps_the_epoch() -> None:
    state, (a,) = state_with_batches(2)
    state.on_failure(a, KafkaTimeoutError("expired"), written_unknown=True)
    assert state.epoch_bump_required
    state.bump_epoch_if_needed()
    assert TP not in state.unresolved and state.epoch == 1


def test_rejected_batch_reuses_its_sequences_or_bumps_when_others_follow() -> None:
    state, (a,) = state_with_batches(3)
    state.on_failure(a, RecordTooLargeError("too big"), written_unknown=False)
    assert state.entry(TP).next_sequence == 0 and not state.epoch_bump_required
    state2, (x, _y) = state_with_batches(3, 3)
    state2.on_failure(x, RecordTooLargeError("too big"), written_unknown=False)
    assert state2.epoch_bump_required


def test_epoch_exhaustion_needs_a_new_producer_id() -> None:
    state = IdempotenceState()
    state.set_producer_id(5, 32767)
    state.request_epoch_bump(TP)
    assert state.bump_epoch_if_needed()
    assert not state.has_producer_id and state.reset_required
