"""The transactional producer's state machine (no I/O).

States and the transitions allowed between them follow the Java client's
``TransactionManager``::

    UNINITIALIZED --init_transactions--> INITIALIZING --InitProducerId--> READY
    READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit--> COMMITTING --EndTxn--> READY
    IN_TRANSACTION / ABORTABLE_ERROR --abort--> ABORTING --EndTxn (+ epoch bump)--> READY
    IN_TRANSACTION / COMMITTING --abortable error--> ABORTABLE_ERROR
    any --fatal error--> FATAL_ERROR   (fenced, unauthorized: close the producer)

Errors are classed as the Java client does: *fatal* (PRODUCER_FENCED,
INVALID_PRODUCER_EPOCH from the coordinator, TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
UNSUPPORTED_VERSION, ...) put the producer in FATAL_ERROR for good; *abortable*
(a record that failed or timed out, TRANSACTION_ABORTABLE, topic/group authorization)
require ``abort_transaction()`` before anything else; *retriable* ones
(COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS, timeouts) are
retried by the request handlers and never reach the user unless time runs out.

Transactions v2 (KIP-890 part 2, the broker's finalized ``transaction.version`` >= 2):
partitions and offsets join the transaction implicitly (Produce v12+, TxnOffsetCommit
v5) instead of through AddPartitionsToTxn / AddOffsetsToTxn, and EndTxn v5 bumps the
producer epoch at the end of every transaction, so a late Produce or EndTxn of an
earlier transaction is fenced by the broker and can never land in the next one.
With v1, a transaction that had an unknown outcome (a produce request that timed out)
is aborted and then the epoch is bumped with InitProducerId (KIP-360) for the same
reason.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Iterable

from kafkalite.errors import (
    ApiError,
    ClusterAuthorizationError,
    IllegalStateError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    KafkaError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionalIdAuthorizationError,
    UnsupportedForMessageFormatError,
    UnsupportedVersionError,
)

log = logging.getLogger("kafkalite.producer")

__all__ = ["TransactionManager", "TxnState", "classify"]


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING = "COMMITTING_TRANSACTION"
    ABORTING = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


S = TxnState
_VALID_SOURCES: dict[TxnState, frozenset[TxnState]] = {
    S.UNINITIALIZED: frozenset({S.READY}),
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.ABORTING, S.INITIALIZING}),
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING, S.ABORTING}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.COMMITTING: frozenset({S.IN_TRANSACTION}),
    S.ABORTING: frozenset({S.IN_TRANSACTION, S.ABORTABLE_ERROR}),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.COMMITTING, S.ABORTABLE_ERROR}),
}

_FATAL_TYPES: tuple[type[BaseException], ...] = (
    ProducerFencedError,
    TransactionalIdAuthorizationError,
    ClusterAuthorizationError,
    UnsupportedVersionError,
    UnsupportedForMessageFormatError,
    InvalidTxnStateError,
)


def classify(error: BaseException, *, from_coordinator: bool = True) -> str:
    """'fatal', 'abortable' or 'retriable' for an error met during a transaction."""
    if isinstance(error, KafkaError) and error.fatal:
        return "fatal"
    if isinstance(error, _FATAL_TYPES):
        return "fatal"
    if isinstance(error, InvalidProducerEpochError):
        # From the transaction coordinator it means another producer took over.
        return "fatal" if from_coordinator else "abortable"
    if isinstance(error, KafkaError) and error.retriable:
        return "retriable"
    return "abortable"


class TransactionManager:
    """State, partitions and errors of one transactional producer."""

    def __init__(self, transactional_id: str, transaction_timeout_ms: int) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.state = TxnState.UNINITIALIZED
        self.last_error: KafkaError | None = None
        self.tv2 = False
        self.partitions_in_txn: set[tuple[str, int]] = set()
        self.new_partitions: set[tuple[str, int]] = set()
        self.pending_partitions: set[tuple[str, int]] = set()
        self.offsets_sent = False
        self.started_on_broker = False  # the coordinator knows of this transaction (EndTxn needed)
        self.epoch_bump_required = False  # an outcome was unknown: bump after EndTxn(abort)
        self.pending_operation: str | None = None  # a commit/abort whose result is still unknown
        self._lock = threading.Lock()

    # -------------------------------------------------------------- transitions

    def _transition(self, target: TxnState, error: KafkaError | None = None) -> None:
        current = self.state
        if target is not TxnState.FATAL_ERROR:
            if current is TxnState.FATAL_ERROR:
                raise self._fatal_error()
            if current not in _VALID_SOURCES[target]:
                raise IllegalStateError(
                    f"invalid transaction transition from {current.value} to {target.value}",
                    transactional_id=self.transactional_id,
                )
        if error is not None:
            self.last_error = error
        elif target in (TxnState.READY, TxnState.IN_TRANSACTION):
            self.last_error = None
        log.debug("transaction %s: %s -> %s", self.transactional_id, current.value, target.value)
        self.state = target

    def _fatal_error(self) -> KafkaError:
        err = self.last_error
        if err is None:
            err = KafkaError("the transactional producer hit a fatal error", fatal=True)
        return err

    def start_init(self) -> None:
        with self._lock:
            if self.state is TxnState.INITIALIZING:
                return  # a retried init_transactions() continues the same request
            self._transition(TxnState.INITIALIZING)

    def init_done(self) -> None:
        with self._lock:
            self._transition(TxnState.READY)
            self.pending_operation = None
            self._clear_transaction()

    def begin(self) -> None:
        with self._lock:
            self._check_no_pending("begin_transaction")
            self.fail_if_error()
            if self.state is not TxnState.READY:
                raise IllegalStateError(
                    f"begin_transaction() needs state READY (after init_transactions() or the "
                    f"previous commit/abort), not {self.state.value}",
                    transactional_id=self.transactional_id,
                )
            self._transition(TxnState.IN_TRANSACTION)

    def begin_commit(self) -> bool:
        """Move to COMMITTING; False if a commit that timed out is being retried."""
        with self._lock:
            if self.pending_operation == "commit" and self.state is TxnState.COMMITTING:
                return False
            self._check_no_pending("commit_transaction")
            self.fail_if_error()
            if self.state is not TxnState.IN_TRANSACTION:
                raise IllegalStateError(
                    f"commit_transaction() outside a transaction (state {self.state.value})",
                    transactional_id=self.transactional_id,
                )
            self._transition(TxnState.COMMITTING)
            self.pending_operation = "commit"
            return True

    def begin_abort(self) -> bool:
        """Move to ABORTING; False if an abort that timed out is being retried."""
        with self._lock:
            if self.pending_operation == "abort" and self.state is TxnState.ABORTING:
                return False
            self._check_no_pending("abort_transaction")
            if self.state is TxnState.FATAL_ERROR:
                raise self._fatal_error()
            if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
                raise IllegalStateError(
                    f"abort_transaction() outside a transaction (state {self.state.value})",
                    transactional_id=self.transactional_id,
                )
            self._transition(TxnState.ABORTING)
            self.new_partitions.clear()
            self.pending_operation = "abort"
            return True

    def _check_no_pending(self, what: str) -> None:
        pending = self.pending_operation
        if pending is not None and self.state in (TxnState.COMMITTING, TxnState.ABORTING):
            raise IllegalStateError(
                f"cannot {what}: the previous {pending}_transaction() did not complete within its "
                f"timeout and its outcome is unknown; call {pending}_transaction() again",
                transactional_id=self.transactional_id,
            )

    def end_done(self) -> None:
        """EndTxn (and any epoch bump) succeeded."""
        with self._lock:
            self._transition(TxnState.READY)
            self.pending_operation = None
            self._clear_transaction()

    def _clear_transaction(self) -> None:
        self.partitions_in_txn.clear()
        self.new_partitions.clear()
        self.pending_partitions.clear()
        self.offsets_sent = False
        self.started_on_broker = False

    def abortable_error(self, error: KafkaError) -> None:
        with self._lock:
            if self.state in (TxnState.ABORTING, TxnState.FATAL_ERROR, TxnState.READY,
                              TxnState.UNINITIALIZED, TxnState.INITIALIZING):
                if self.state is TxnState.ABORTING:
                    # Records of an aborting transaction may fail; the abort goes on.
                    self.epoch_bump_required = self.epoch_bump_required or _unknown_outcome(error)
                return
            error.abortable = True
            error.with_context(transactional_id=self.transactional_id)
            self._transition(TxnState.ABORTABLE_ERROR, error)
            if _unknown_outcome(error):
                self.epoch_bump_required = True

    def fatal_error(self, error: KafkaError) -> None:
        with self._lock:
            error.fatal = True
            error.with_context(transactional_id=self.transactional_id)
            self._transition(TxnState.FATAL_ERROR, error)

    def handle_error(self, error: BaseException, *, from_coordinator: bool = True) -> str:
        """Apply an error met by a request; returns its class."""
        kind = classify(error, from_coordinator=from_coordinator)
        if not isinstance(error, KafkaError):
            error = KafkaError(f"transaction failed: {error!r}")
        if kind == "fatal":
            if isinstance(error, InvalidProducerEpochError):
                error = ProducerFencedError(
                    "another producer with the same transactional.id took over (producer fenced); "
                    "close this producer", transactional_id=self.transactional_id,
                )
            self.fatal_error(error)
        elif kind == "abortable":
            self.abortable_error(error)
        return kind

    # -------------------------------------------------------------- queries

    @property
    def has_error(self) -> bool:
        return self.state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR)

    @property
    def is_fatal(self) -> bool:
        return self.state is TxnState.FATAL_ERROR

    @property
    def in_transaction(self) -> bool:
        return self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING, TxnState.ABORTING,
                              TxnState.ABORTABLE_ERROR)

    def fail_if_error(self) -> None:
        if self.state is TxnState.FATAL_ERROR:
            raise self._fatal_error()
        if self.state is TxnState.ABORTABLE_ERROR:
            err = self.last_error
            raise KafkaError(
                f"the transaction must be aborted (abort_transaction()) because an earlier "
                f"operation failed: {err}", transactional_id=self.transactional_id, abortable=True,
            ) from err

    def check_send(self) -> None:
        """send() is allowed only inside a transaction without errors."""
        state = self.state
        if state is TxnState.IN_TRANSACTION:
            return
        self.fail_if_error()
        if state in (TxnState.UNINITIALIZED, TxnState.INITIALIZING):
            raise IllegalStateError("call init_transactions() before send() on a transactional producer",
                                    transactional_id=self.transactional_id)
        raise IllegalStateError(
            f"send() on a transactional producer needs begin_transaction() first (state {state.value})",
            transactional_id=self.transactional_id,
        )

    def check_send_offsets(self) -> None:
        self.fail_if_error()
        if self.state is not TxnState.IN_TRANSACTION:
            raise IllegalStateError(
                f"send_offsets_to_transaction() outside a transaction (state {self.state.value})",
                transactional_id=self.transactional_id,
            )

    # -------------------------------------------------------------- partitions

    def maybe_add_partition(self, tp: tuple[str, int]) -> None:
        """Called for every appended record's partition (cheap when already known)."""
        if tp in self.partitions_in_txn or tp in self.new_partitions or tp in self.pending_partitions:
            return
        with self._lock:
            if self.tv2:
                self.partitions_in_txn.add(tp)  # Produce v12+ adds it implicitly
            elif tp not in self.partitions_in_txn and tp not in self.pending_partitions:
                self.new_partitions.add(tp)

    def take_new_partitions(self) -> list[tuple[str, int]]:
        with self._lock:
            taken = sorted(self.new_partitions)
            self.pending_partitions.update(taken)
            self.new_partitions.clear()
            return taken

    def partitions_added(self, partitions: Iterable[tuple[str, int]]) -> None:
        with self._lock:
            for tp in partitions:
                self.pending_partitions.discard(tp)
                self.partitions_in_txn.add(tp)
            self.started_on_broker = True

    def partitions_not_added(self, partitions: Iterable[tuple[str, int]], retry: bool) -> None:
        with self._lock:
            for tp in partitions:
                self.pending_partitions.discard(tp)
                if retry and self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
                    self.new_partitions.add(tp)

    def is_send_allowed(self, tp: tuple[str, int]) -> bool:
        if self.state is TxnState.FATAL_ERROR:
            return False
        return tp in self.partitions_in_txn

    @property
    def has_partitions_to_add(self) -> bool:
        return bool(self.new_partitions or self.pending_partitions)


def _unknown_outcome(error: BaseException) -> bool:
    """Errors after which a request may or may not have been applied by the broker."""
    from kafkalite.errors import KafkaConnectionError, KafkaTimeoutError, RequestTimedOutError

    return isinstance(error, (KafkaTimeoutError, KafkaConnectionError, RequestTimedOutError)) or (
        isinstance(error, ApiError) and error.retriable
    ) or isinstance(error, TransactionAbortableError)
