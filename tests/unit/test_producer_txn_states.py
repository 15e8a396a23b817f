"""The transaction state machine and error classes, without a broker."""

from __future__ import annotations

import pytest

from kafkalite.errors import (
    ConcurrentTransactionsError,
    CoordinatorNotAvailableError,
    IllegalStateError,
    InvalidProducerEpochError,
    KafkaError,
    KafkaTimeoutError,
    ProducerFencedError,
    TopicAuthorizationError,
    TransactionAbortableError,
    TransactionalIdAuthorizationError,
)
from kafkalite.producer.transactions import TransactionManager, TxnState, classify


def ready() -> TransactionManager:
    txn = TransactionManager("tx-1", 60000)
    txn.start_init()
    txn.init_done()
    return txn


def test_happy_path_transitions() -> None:
    txn = TransactionManager("tx-1", 60000)
    assert txn.state is TxnState.UNINITIALIZED
    with pytest.raises(IllegalStateError, match="init_transactions"):
        txn.check_send()
    txn.start_init()
    txn.start_init()  # a retried init_transactions() continues
    txn.init_done()
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        txn.check_send()
    txn.begin()
    txn.check_send()
    txn.maybe_add_partition(("a", 0))
    txn.maybe_add_partition(("a", 0))
    assert txn.take_new_partitions() == [("a", 0)]
    assert not txn.is_send_allowed(("a", 0))
    txn.partitions_added([("a", 0)])
    assert txn.is_send_allowed(("a", 0)) and txn.started_on_broker
    assert txn.begin_commit()
    txn.end_done()
    assert txn.state is TxnState.READY and not txn.partitions_in_txn and not txn.started_on_broker


def test_transactions_v2_add_partitions_locally() -> None:
    txn = ready()
    txn.tv2 = True
    txn.begin()
    txn.maybe_add_partition(("a", 1))
    assert txn.is_send_allowed(("a", 1)) and not txn.new_partitions


def test_invalid_transitions_are_illegal_state_errors_naming_the_transactional_id() -> None:
    txn = ready()
    with pytest.raises(IllegalStateError, match="tx-1"):
        txn.begin_commit()
    with pytest.raises(IllegalStateError):
        txn.begin_abort()
    txn.begin()
    with pytest.raises(IllegalStateError):
        txn.begin()


def test_abortable_error_requires_abort_then_work_goes_on() -> None:
    txn = ready()
    txn.begin()
    txn.abortable_error(KafkaTimeoutError("record expired"))
    assert txn.state is TxnState.ABORTABLE_ERROR and txn.epoch_bump_required
    with pytest.raises(KafkaError, match="must be aborted") as info:
        txn.check_send()
    assert info.value.abortable
    with pytest.raises(KafkaError, match="must be aborted"):
        txn.begin_commit()
    assert txn.begin_abort()
    txn.end_done()
    txn.begin()


def test_commit_that_fails_with_an_abortable_error_moves_to_abortable() -> None:
    txn = ready()
    txn.begin()
    txn.begin_commit()
    txn.abortable_error(TransactionAbortableError("abortable"))
    assert txn.state is TxnState.ABORTABLE_ERROR


def test_fatal_error_is_final() -> None:
    txn = ready()
    txn.begin()
    kind = txn.handle_error(InvalidProducerEpochError("bumped by someone else"))
    assert kind == "fatal" and txn.is_fatal
    assert isinstance(txn.last_error, ProducerFencedError) and txn.last_error.fatal
    for call in (txn.check_send, txn.begin_commit, txn.begin_abort, txn.begin):
        with pytest.raises(ProducerFencedError):
            call()


def test_timed_out_commit_must_be_retried_not_replaced() -> None:
    txn = ready()
    txn.begin()
    assert txn.begin_commit() is True
    # The commit timed out; its outcome is unknown. Another commit continues it...
    assert txn.begin_commit() is False
    # ...and nothing else is allowed meanwhile.
    with pytest.raises(IllegalStateError, match="outcome is unknown"):
        txn.begin_abort()
    with pytest.raises(IllegalStateError, match="outcome is unknown"):
        txn.begin()


def test_error_classes() -> None:
    assert classify(ProducerFencedError("x")) == "fatal"
    assert classify(TransactionalIdAuthorizationError("x")) == "fatal"
    assert classify(InvalidProducerEpochError("x")) == "fatal"
    assert classify(InvalidProducerEpochError("x"), from_coordinator=False) == "abortable"
    assert classify(TopicAuthorizationError("x")) == "abortable"
    assert classify(TransactionAbortableError("x")) == "abortable"
    assert classify(ConcurrentTransactionsError("x")) == "retriable"
    assert classify(CoordinatorNotAvailableError("x")) == "retriable"
    assert classify(KafkaTimeoutError("x")) == "retriable"
