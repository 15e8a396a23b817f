"""The transactional producer's operations and requests (asyncio).

:class:`TransactionClient` carries out ``init_transactions()``,
``send_offsets_to_transaction()``, ``commit_transaction()`` and
``abort_transaction()``: the state changes are the
:class:`~kafkalite.producer.transactions.TransactionManager`'s, the batches are waited
for (commit) or failed (abort) through :class:`TransactionBatches`, and there is one
handler per request kind. Each handler builds its request, sends it to the transaction
(or group) coordinator found with ``NetworkClient.find_coordinator``, and maps every
error code to an action: retry with backoff (after finding the coordinator again for
NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE; quickly for CONCURRENT_TRANSACTIONS), or
hand the error to the transaction manager as fatal or abortable. Timeouts bound every
operation; a timed-out commit or abort keeps running in the background so that calling
it again picks up the same outcome (an unknown outcome is never reported as success).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

from kafkalite.backoff import ExponentialBackoff
from kafkalite.errors import (
    ApiError,
    ConcurrentTransactionsError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    error_for_code,
)
from kafkalite.net.client import COORDINATOR_GROUP, COORDINATOR_TRANSACTION, NetworkClient
from kafkalite.net.features import GROUP_METADATA_COMMIT
from kafkalite.producer.idempotence import IdempotenceState
from kafkalite.producer.transactions import TransactionManager, TxnState
from kafkalite.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from kafkalite.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestAddPartitionsToTxnTopic,
)
from kafkalite.protocol.messages.end_txn import EndTxnRequest
from kafkalite.protocol.messages.init_producer_id import InitProducerIdRequest
from kafkalite.protocol.messages.produce import ProduceRequest
from kafkalite.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kafkalite.protocol.primitives import ZERO_UUID
from kafkalite.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

log = logging.getLogger("kafkalite.producer")

__all__ = ["TransactionBatches", "TransactionClient"]

T = TypeVar("T")

# Java retries the first AddPartitions of a transaction quickly after
# CONCURRENT_TRANSACTIONS: the previous transaction is still completing.
_CONCURRENT_TXN_BACKOFF_S = 0.02


class _Retry(Exception):
    """Internal: try again after ``delay`` seconds."""

    def __init__(self, error: BaseException, delay: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.delay = delay


class TransactionBatches(Protocol):
    """What the transaction client does with the producer's batches
    (:class:`~kafkalite.producer.delivery.Delivery` does it)."""

    async def flush(self, timeout_s: float | None) -> None:
        """Send everything buffered and wait until each batch is settled."""
        ...

    def fail_queued(self, make_error: Callable[[], KafkaError]) -> None:
        """Fail every batch not sent yet, each with its own error."""
        ...


class TransactionClient:
    """The transactional operations and requests of one producer (see the module doc).

    ``wake()`` wakes the sender (partitions were added, or could not be);
    ``max_block_s`` bounds AddPartitionsToTxn, and with the transaction timeout the
    end of a transaction.
    """

    def __init__(self, *, client: NetworkClient, txn: TransactionManager, idem: IdempotenceState,
                 batches: TransactionBatches, wake: Callable[[], None], backoff: ExponentialBackoff,
                 request_timeout_ms: int, max_block_s: float) -> None:
        self.client = client
        self.txn = txn
        self.idem = idem
        self.batches = batches
        self.wake = wake
        self.transactional_id = txn.transactional_id
        self._txn_key = (txn.transactional_id, COORDINATOR_TRANSACTION)
        self.request_timeout_ms = request_timeout_ms
        self.max_block_s = max_block_s
        self.backoff = backoff
        self.add_task: asyncio.Task[None] | None = None
        self.end_task: asyncio.Task[None] | None = None
        self.init_task: asyncio.Task[None] | None = None

    def tasks(self) -> list[asyncio.Task[None]]:
        """The background operations running or done (for the producer's close to stop)."""
        return [t for t in (self.init_task, self.add_task, self.end_task) if t is not None]

    # -------------------------------------------------------------- commit / abort

    async def commit(self, timeout_s: float | None) -> None:
        """commit_transaction(): flush, fail if any record failed, then EndTxn(commit)."""
        fresh = self.txn.begin_commit()
        if fresh or self.end_task is None or self.end_task.done():
            self.end_task = asyncio.ensure_future(self._finish(True))
        await _wait(self.end_task, timeout_s, "commit_transaction()")

    async def abort(self, timeout_s: float | None) -> None:
        """abort_transaction(): fail what is queued, wait for what is in flight, EndTxn(abort)."""
        fresh = self.txn.begin_abort()
        if fresh or self.end_task is None or self.end_task.done():
            self.end_task = asyncio.ensure_future(self._finish(False))
        await _wait(self.end_task, timeout_s, "abort_transaction()")

    async def _finish(self, commit: bool) -> None:
        txn = self.txn
        if not commit:
            self.batches.fail_queued(lambda: KafkaError("the transaction was aborted before the record was sent",
                                                        abortable=True, transactional_id=txn.transactional_id))
        await self.batches.flush(None)
        if commit and txn.has_error:
            txn.pending_operation = None
            txn.fail_if_error()
        deadline = time.monotonic() + max(self.max_block_s, txn.transaction_timeout_ms / 1000.0)
        if txn.started_on_broker:
            await self.end(commit, deadline)
        if not commit and txn.epoch_bump_required and not txn.tv2:
            # A request of the aborted transaction had an unknown outcome: fence it (KIP-360).
            await self.init_producer_id(deadline, bump=True)
        txn.epoch_bump_required = False
        txn.end_done()

    # -------------------------------------------------------------- plumbing

    async def _retrying(self, attempt: Callable[[], Awaitable[T]], deadline: float, what: str,
                        coordinator: tuple[str, int] | None = None) -> T:
        """Run ``attempt`` until it succeeds, raises a non-retriable error, or ``deadline``.

        ``coordinator`` (key, key type) is forgotten when the request could not be sent or
        got no answer, so the next attempt sends FindCoordinator again rather than waiting
        for the same (killed, restarted, or no longer elected) node. Java does the same:
        ``TransactionManager.TxnRequestHandler.onComplete`` calls ``lookupCoordinator``
        when ``response.wasDisconnected()`` (a request timeout disconnects too), and
        ``Sender.maybeSendAndPollTransactionalRequest`` does when the coordinator node is
        not ready (``maybeFindCoordinatorAndRetry``).
        """
        tries = 0
        last: BaseException | None = None
        while True:
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(
                    f"{what} did not complete in time" + (f"; last error: {last}" if last else ""),
                    transactional_id=self.transactional_id,
                )
            try:
                return await attempt()
            except _Retry as retry:
                last = retry.error
                delay = retry.delay if retry.delay is not None else self.backoff.delay_s(tries)
            except (KafkaConnectionError, KafkaTimeoutError, asyncio.TimeoutError) as exc:
                last = exc
                delay = self.backoff.delay_s(tries)
                if coordinator is not None:
                    self.client.invalidate_coordinator(*coordinator)
            tries += 1
            log.debug("%s: retrying after %s", what, last)
            await asyncio.sleep(max(0.0, min(delay, deadline - time.monotonic())))

    def _remaining_ms(self, deadline: float) -> float:
        return max(1.0, min(self.request_timeout_ms, (deadline - time.monotonic()) * 1000.0))

    async def _coordinator(self, deadline: float) -> int:
        return await self.client.find_coordinator(
            self.transactional_id, COORDINATOR_TRANSACTION, timeout_s=max(0.001, deadline - time.monotonic()))

    def _check(self, code: int, message: str | None, what: str, *, group: str | None = None,
               coordinator: int = COORDINATOR_TRANSACTION) -> None:
        """Raise _Retry for retriable codes, the error for others (caller classifies)."""
        if not code:
            return
        err = error_for_code(code, message or f"{what} failed", transactional_id=self.transactional_id,
                             group_id=group)
        if isinstance(err, (NotCoordinatorError, CoordinatorNotAvailableError)):
            self.client.invalidate_coordinator(group if group is not None else self.transactional_id, coordinator)
            raise _Retry(err)
        if isinstance(err, ConcurrentTransactionsError):
            raise _Retry(err, _CONCURRENT_TXN_BACKOFF_S)
        if err.retriable:
            raise _Retry(err)
        raise err

    # -------------------------------------------------------------- InitProducerId

    async def init_producer_id(self, deadline: float, bump: bool = False) -> None:
        """InitProducerId: a new producer id/epoch, or (``bump``) the next epoch (KIP-360)."""
        idem = self.idem
        producer_id, epoch = (idem.producer_id, idem.epoch) if bump else (-1, -1)

        async def attempt() -> None:
            node = await self._coordinator(deadline)
            conn = await self.client.connection(node)
            versions = conn.versions
            if versions is not None:
                level = versions.feature_level("transaction.version")
                self.txn.tv2 = level >= 2 and versions.supports(EndTxnRequest, 5) and \
                    versions.supports(ProduceRequest, 12)
            version = conn.api_version(InitProducerIdRequest)
            version = min(version, 5)  # v6 is KIP-939's two-phase commit
            if bump and version < 3:
                raise KafkaError("the broker is too old to bump the producer epoch (InitProducerId v3)")
            response = await conn.request(
                InitProducerIdRequest(
                    transactional_id=self.transactional_id,
                    transaction_timeout_ms=self.txn.transaction_timeout_ms,
                    producer_id=producer_id, producer_epoch=epoch,
                ),
                api_version=version, timeout_ms=self._remaining_ms(deadline),
            )
            self._check(response.error_code, None, "InitProducerId")
            idem.set_producer_id(response.producer_id, response.producer_epoch)

        try:
            await self._retrying(attempt, deadline, "InitProducerId", self._txn_key)
        except ApiError as exc:
            self.txn.handle_error(exc)
            raise self.txn.last_error or exc from None

    async def initialize(self, timeout_s: float) -> None:
        """init_transactions(): fence older producers with this id and get our epoch."""
        txn = self.txn
        txn.start_init()
        if self.init_task is None or self.init_task.done():
            deadline = time.monotonic() + timeout_s

            async def run() -> None:
                await self.init_producer_id(deadline)
                txn.init_done()
                log.info("transactional producer %r ready (transactions v%d)", self.transactional_id,
                         2 if txn.tv2 else 1)

            self.init_task = asyncio.ensure_future(run())
        await _wait(self.init_task, timeout_s, "init_transactions()")

    # -------------------------------------------------------------- AddPartitionsToTxn

    def schedule_add_partitions(self) -> None:
        if self.add_task is None or self.add_task.done():
            self.add_task = asyncio.ensure_future(self._add_partitions())

    async def _add_partitions(self) -> None:
        txn = self.txn
        partitions = txn.take_new_partitions()
        if not partitions:
            return
        deadline = time.monotonic() + self.max_block_s
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)

        async def attempt() -> None:
            node = await self._coordinator(deadline)
            conn = await self.client.connection(node)
            version = min(conn.api_version(AddPartitionsToTxnRequest), 3)  # v4+ are for brokers
            response = await conn.request(
                AddPartitionsToTxnRequest(
                    v3_and_below_transactional_id=self.transactional_id,
                    v3_and_below_producer_id=self.idem.producer_id,
                    v3_and_below_producer_epoch=self.idem.epoch,
                    v3_and_below_topics=[
                        AddPartitionsToTxnRequestAddPartitionsToTxnTopic(name=t, partitions=sorted(ps))
                        for t, ps in sorted(by_topic.items())
                    ],
                ),
                api_version=version, timeout_ms=self._remaining_ms(deadline),
            )
            first_error: ApiError | None = None
            for topic_result in response.results_by_topic_v3_and_below:
                for p in topic_result.results_by_partition:
                    code = p.partition_error_code
                    if code and code != 55 and first_error is None:  # 55: OPERATION_NOT_ATTEMPTED
                        first_error = error_for_code(code, "AddPartitionsToTxn failed", topic=topic_result.name,
                                                     partition=p.partition_index,
                                                     transactional_id=self.transactional_id)
            if first_error is None and response.error_code:
                first_error = error_for_code(response.error_code, "AddPartitionsToTxn failed",
                                             transactional_id=self.transactional_id)
            if first_error is not None:
                self._check(first_error.code, first_error.message, "AddPartitionsToTxn")

        try:
            await self._retrying(attempt, deadline, "AddPartitionsToTxn", self._txn_key)
        except KafkaError as exc:
            txn.partitions_not_added(partitions, retry=False)
            txn.handle_error(exc)
            if txn.state not in (TxnState.FATAL_ERROR, TxnState.ABORTABLE_ERROR, TxnState.ABORTING):
                txn.abortable_error(exc)
            self.wake()
            return
        except asyncio.CancelledError:
            txn.partitions_not_added(partitions, retry=True)
            raise
        txn.partitions_added(partitions)
        self.wake()
        if txn.new_partitions:
            self.add_task = asyncio.ensure_future(self._add_partitions())

    # -------------------------------------------------------------- offsets

    async def send_offsets(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                           group: ConsumerGroupMetadata, timeout_s: float) -> None:
        txn = self.txn
        txn.check_send_offsets()
        deadline = time.monotonic() + timeout_s
        try:
            if not txn.tv2:
                await self._add_offsets(group.group_id, deadline)
            await self._txn_offset_commit(offsets, group, deadline)
        except KafkaTimeoutError:
            raise
        except KafkaError as exc:
            if txn.handle_error(exc) == "retriable":
                txn.abortable_error(exc)
            raise
        txn.offsets_sent = True
        txn.started_on_broker = True

    async def _add_offsets(self, group_id: str, deadline: float) -> None:
        async def attempt() -> None:
            node = await self._coordinator(deadline)
            response = await self.client.send(
                node, AddOffsetsToTxnRequest(transactional_id=self.transactional_id,
                                             producer_id=self.idem.producer_id,
                                             producer_epoch=self.idem.epoch, group_id=group_id),
                timeout_ms=self._remaining_ms(deadline))
            self._check(response.error_code, None, "AddOffsetsToTxn", group=None)

        await self._retrying(attempt, deadline, "AddOffsetsToTxn", self._txn_key)
        self.txn.offsets_sent = True  # the transaction now spans the group's offsets
        self.txn.started_on_broker = True

    async def _txn_offset_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                 group: ConsumerGroupMetadata, deadline: float) -> None:
        pending = {TopicPartition(*tp): (o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(int(o)))
                   for tp, o in offsets.items()}

        async def attempt() -> None:
            node = await self.client.find_coordinator(group.group_id, COORDINATOR_GROUP,
                                                      timeout_s=max(0.001, deadline - time.monotonic()))
            conn = await self.client.connection(node)
            version = conn.api_version(TxnOffsetCommitRequest)
            if not self.txn.tv2:
                version = min(version, 4)  # v5 implies transactions v2 (implicit AddOffsetsToTxn)
            if version < 3 and (group.generation_id >= 0 or group.member_id or group.group_instance_id):
                # KIP-447's fencing by group generation needs TxnOffsetCommit v3 (Kafka 2.5):
                # as Java's TxnOffsetCommitRequest.Builder, refuse to drop it silently.
                conn.require(GROUP_METADATA_COMMIT, transactional_id=self.transactional_id)
            topics: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
            for tp, om in pending.items():
                topics.setdefault(tp.topic, []).append(TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=om.offset,
                    committed_leader_epoch=om.leader_epoch if om.leader_epoch is not None else -1,
                    committed_metadata=om.metadata,
                ))
            # v6 (Kafka 4.4, KIP-1319) names topics by id only; a topic whose id metadata
            # does not give goes by name at v5, as OffsetCommit does at v9.
            ids = {t: self.client.metadata.topic_id(t) for t in topics}
            if version >= 6 and ZERO_UUID in ids.values():
                version = 5
            names = {topic_id: t for t, topic_id in ids.items()}
            response = await conn.request(
                TxnOffsetCommitRequest(
                    transactional_id=self.transactional_id, group_id=group.group_id,
                    producer_id=self.idem.producer_id, producer_epoch=self.idem.epoch,
                    # the member epoch for a KIP-848 group member (ConsumerGroupMetadata's)
                    generation_id_or_member_epoch=group.generation_id, member_id=group.member_id,
                    group_instance_id=group.group_instance_id,
                    topics=[TxnOffsetCommitRequestTopic(name=t, topic_id=ids[t], partitions=ps)
                            for t, ps in topics.items()],
                ),
                api_version=version, timeout_ms=self._remaining_ms(deadline),
            )
            retry: BaseException | None = None
            for t in response.topics:
                name = names.get(t.topic_id, t.name) if version >= 6 else t.name
                for p in t.partitions:
                    if not p.error_code:
                        pending.pop(TopicPartition(name, p.partition_index), None)
                        continue
                    try:
                        self._check(p.error_code, None, "TxnOffsetCommit", group=group.group_id,
                                    coordinator=COORDINATOR_GROUP)
                    except _Retry as exc:
                        retry = exc
                    except ApiError as exc:
                        raise exc.with_context(topic=name, partition=p.partition_index) from None
            if pending and retry is not None:
                raise retry
            if pending:
                raise _Retry(KafkaError(f"TxnOffsetCommit had no answer for {sorted(pending)}"))

        await self._retrying(attempt, deadline, "TxnOffsetCommit", (group.group_id, COORDINATOR_GROUP))

    # -------------------------------------------------------------- EndTxn

    async def end(self, commit: bool, deadline: float) -> None:
        """EndTxn until it succeeds (retries keep the outcome; never assume success)."""
        txn = self.txn
        what = "EndTxn(commit)" if commit else "EndTxn(abort)"

        async def attempt() -> None:
            node = await self._coordinator(deadline)
            conn = await self.client.connection(node)
            version = conn.api_version(EndTxnRequest)
            if not txn.tv2:
                version = min(version, 4)
            response = await conn.request(
                EndTxnRequest(transactional_id=self.transactional_id, producer_id=self.idem.producer_id,
                              producer_epoch=self.idem.epoch, committed=commit),
                api_version=version, timeout_ms=self._remaining_ms(deadline),
            )
            self._check(response.error_code, None, what)
            if version >= 5 and response.producer_id >= 0:
                # Transactions v2: the coordinator bumped the epoch for the next transaction.
                self.idem.set_producer_id(response.producer_id, response.producer_epoch)

        try:
            await self._retrying(attempt, deadline, what, self._txn_key)
        except ApiError as exc:
            txn.handle_error(exc)
            raise txn.last_error or exc from None


async def _wait(task: asyncio.Future[T], timeout_s: float | None, what: str) -> T:
    """Await a background task for at most ``timeout_s``; it keeps running after a timeout."""
    try:
        return await asyncio.wait_for(asyncio.shield(task), timeout_s)
    except asyncio.TimeoutError:
        raise KafkaTimeoutError(
            f"{what} did not complete within {timeout_s:.3f}s; its outcome is unknown: call it again"
        ) from None
