"""Transaction calls: list, describe, abort (a hanging transaction), fence producers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.admin.core import AdminCore, Outcome, coordinator_outcome, outcome_for
from kafkalite.admin.ops_types import (
    AbortTransactionSpec,
    ProducerIdAndEpoch,
    TransactionDescription,
    TransactionListing,
)
from kafkalite.admin.results import AdminResult, ListResult
from kafkalite.net.client import COORDINATOR_TRANSACTION
from kafkalite.protocol.messages.describe_transactions import DescribeTransactionsRequest
from kafkalite.protocol.messages.init_producer_id import InitProducerIdRequest
from kafkalite.protocol.messages.list_transactions import ListTransactionsRequest
from kafkalite.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestWritableTxnMarker,
    WriteTxnMarkersRequestWritableTxnMarkerTopic,
)
from kafkalite.types import TopicPartition


def _txn(key: Any) -> dict[str, Any]:
    return {"transactional_id": str(key)}


async def list_transactions(core: AdminCore, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                            duration_ms: int | None = None, transactional_id_pattern: str | None = None,
                            timeout: float | None = None) -> ListResult[TransactionListing]:
    """Transactions known to every broker's transaction coordinator, with filters
    (states such as 'Ongoing', producer ids, open longer than ``duration_ms`` (KIP-994),
    a transactional id regex (KIP-1152)).

    Each broker knows only the transactions it coordinates: the result is a
    :class:`ListResult` of what the brokers that answered know, with ``.errors``
    naming each broker that did not (``.all()`` raises then)."""
    deadline = core.deadline(timeout)
    brokers = sorted((await core.ensure_metadata(deadline)).brokers)
    state_list, pid_list = list(states), [int(p) for p in producer_ids]

    async def send(node: int, items: list[int], deadline: float) -> Mapping[int, Outcome[list[TransactionListing]]]:
        request = ListTransactionsRequest(
            state_filters=state_list, producer_id_filters=pid_list,
            duration_filter=-1 if duration_ms is None else int(duration_ms),
            transactional_id_pattern=transactional_id_pattern)
        min_version = 2 if transactional_id_pattern else 1 if duration_ms is not None else 0
        response, _ = await core.send(node, request, deadline, min_version=min_version)
        outcome = outcome_for(response.error_code, None, resource=f"broker {node}")
        if outcome is not None:
            return {node: outcome}
        return {node: [TransactionListing(t.transactional_id, t.producer_id, t.transaction_state)
                       for t in response.transaction_states]}

    result = await core.run_batch("list_transactions", brokers, core.route_to(lambda b: b), send, None,
                                  deadline=deadline, resource_of=lambda b: {"resource": f"broker {b}"})
    out = {t.transactional_id: t for item in result.values() for t in item.value or []}
    if not result.succeeded:
        result.raise_on_error()  # no broker answered: an empty list would read as "none"
    return ListResult("list_transactions", [out[k] for k in sorted(out)], result)


async def describe_transactions(core: AdminCore, transactional_ids: Iterable[str], *,
                                timeout: float | None = None) -> AdminResult[str, TransactionDescription]:
    keys = list(dict.fromkeys(transactional_ids))

    async def send(node: int, items: list[str], deadline: float) -> Mapping[str, Outcome[TransactionDescription]]:
        response, _ = await core.send(node, DescribeTransactionsRequest(transactional_ids=items), deadline)
        out: dict[str, Outcome[TransactionDescription]] = {}
        for t in response.transaction_states:
            outcome = coordinator_outcome(core.client, t.error_code, None, t.transactional_id, COORDINATOR_TRANSACTION)
            out[t.transactional_id] = outcome if outcome is not None else TransactionDescription(
                node, t.transaction_state, t.producer_id, t.producer_epoch, t.transaction_timeout_ms,
                t.transaction_start_time_ms if t.transaction_start_time_ms >= 0 else None,
                {TopicPartition(d.topic, p) for d in t.topics for p in d.partitions})
        return out

    return await core.run_batch("describe_transactions", keys,
                                core.route_coordinators(str, COORDINATOR_TRANSACTION), send, timeout,
                                resource_of=_txn)


async def abort_transaction(core: AdminCore, spec: AbortTransactionSpec, *, timeout: float | None = None) -> None:
    """Abort a hanging transaction on one partition by writing an abort marker there
    (WriteTxnMarkers to the partition leader, as ``kafka-transactions abort`` does)."""
    tp = TopicPartition(*spec.topic_partition)

    async def send(node: int, items: list[TopicPartition], deadline: float) -> Mapping[TopicPartition, Outcome[None]]:
        request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequestWritableTxnMarker(
            producer_id=spec.producer_id, producer_epoch=spec.producer_epoch, transaction_result=False,
            coordinator_epoch=spec.coordinator_epoch,
            topics=[WriteTxnMarkersRequestWritableTxnMarkerTopic(name=tp.topic, partition_indexes=[tp.partition])])])
        response, _ = await core.send(node, request, deadline)
        return {TopicPartition(t.name, p.partition_index): outcome_for(p.error_code, None, topic=t.name,
                                                                       partition=p.partition_index)
                for m in response.markers for t in m.topics for p in t.partitions}

    result = await core.run_batch("abort_transaction", [tp], core.route_leaders, send, timeout)
    result[tp].result()


async def fence_producers(core: AdminCore, transactional_ids: Iterable[str], *,
                          timeout: float | None = None) -> AdminResult[str, ProducerIdAndEpoch]:
    """Bump the epoch of each transactional id so that its current producer is fenced
    (KIP-664; an InitProducerId from the admin client, as Java's fenceProducers)."""
    keys = list(dict.fromkeys(transactional_ids))

    async def send(node: int, items: list[str], deadline: float) -> Mapping[str, Outcome[ProducerIdAndEpoch]]:
        out: dict[str, Outcome[ProducerIdAndEpoch]] = {}
        for txn_id in items:
            request = InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000,
                                            producer_id=-1, producer_epoch=-1)
            response, _ = await core.send(node, request, deadline)
            outcome = coordinator_outcome(core.client, response.error_code, None, txn_id, COORDINATOR_TRANSACTION)
            out[txn_id] = outcome if outcome is not None else ProducerIdAndEpoch(response.producer_id,
                                                                                response.producer_epoch)
        return out

    return await core.run_batch("fence_producers", keys, core.route_coordinators(str, COORDINATOR_TRANSACTION),
                                send, timeout, resource_of=_txn)
