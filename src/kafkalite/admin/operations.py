"""Operational calls: leader elections, partition reassignments, log dirs, producers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kafkalite.admin.core import (
    AdminCore,
    Fail,
    K,
    Outcome,
    Retry,
    V,
    outcome_for,
    raise_response_error,
)
from kafkalite.admin.ops_types import (
    ElectionType,
    LogDirDescription,
    PartitionReassignment,
    ProducerState,
    ReplicaInfo,
)
from kafkalite.admin.results import AdminResult, ItemResult
from kafkalite.errors import error_for_code
from kafkalite.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
)
from kafkalite.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from kafkalite.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersRequestTopicRequest,
)
from kafkalite.protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
)
from kafkalite.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequestListPartitionReassignmentsTopics,
)
from kafkalite.types import TopicPartition


def _by_topic(items: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in items:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


async def elect_leaders(core: AdminCore, election_type: ElectionType | str = ElectionType.PREFERRED,
                        partitions: Iterable[TopicPartition] | None = None, *,
                        timeout: float | None = None) -> AdminResult[TopicPartition, None]:
    """Run preferred or unclean leader elections (``partitions=None``: every partition).

    A partition whose preferred leader already leads fails with ELECTION_NOT_NEEDED.
    """
    etype = election_type if isinstance(election_type, ElectionType) else ElectionType[str(election_type).upper()]
    wanted = None if partitions is None else list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))

    async def send(node: int, deadline: float) -> dict[TopicPartition, Outcome[None]]:
        request = ElectLeadersRequest(
            election_type=int(etype), timeout_ms=core.remaining_ms(deadline),
            topic_partitions=None if wanted is None else [
                ElectLeadersRequestTopicPartitions(topic=t, partitions=ps) for t, ps in _by_topic(wanted).items()])
        response, _ = await core.send(node, request, deadline, min_version=1 if etype else 0)
        raise_response_error(response.error_code, None, "elect_leaders")
        return {TopicPartition(r.topic, p.partition_id): outcome_for(p.error_code, p.error_message, topic=r.topic,
                                                                     partition=p.partition_id)
                for r in response.replica_election_results for p in r.partition_result}

    outcomes = await core.run_single("elect_leaders", core.route_controller, send, timeout)
    return settled("elect_leaders", wanted if wanted is not None else sorted(outcomes), outcomes)


def settled(what: str, keys: Sequence[K], outcomes: Mapping[K, Outcome[V]]) -> AdminResult[K, V]:
    items: dict[K, ItemResult[V]] = {}
    for k in keys:
        o = outcomes.get(k, None)
        if isinstance(o, (Fail, Retry)):  # Retry: a retriable error at the end of a one-shot call
            items[k] = ItemResult(error=o.error)
        else:
            items[k] = ItemResult(o)
    return AdminResult(what, items)


async def alter_partition_reassignments(
    core: AdminCore, reassignments: Mapping[TopicPartition, Sequence[int] | None], *,
    timeout: float | None = None,
) -> AdminResult[TopicPartition, None]:
    """Move partitions to new replica lists (None cancels an ongoing reassignment)."""
    wanted = {TopicPartition(*tp): (None if r is None else [int(b) for b in r]) for tp, r in reassignments.items()}

    async def send(node: int, items: list[TopicPartition], deadline: float) -> Mapping[TopicPartition, Outcome[None]]:
        request = AlterPartitionReassignmentsRequest(
            timeout_ms=core.remaining_ms(deadline),
            topics=[AlterPartitionReassignmentsRequestReassignableTopic(name=t, partitions=[
                AlterPartitionReassignmentsRequestReassignablePartition(partition_index=p,
                                                                        replicas=wanted[TopicPartition(t, p)])
                for p in ps]) for t, ps in _by_topic(items).items()])
        response, _ = await core.send(node, request, deadline)
        top = outcome_for(response.error_code, response.error_message)
        if top is not None:
            return {tp: top for tp in items}
        return {TopicPartition(t.name, p.partition_index): outcome_for(p.error_code, p.error_message,
                                                                       topic=t.name, partition=p.partition_index)
                for t in response.responses for p in t.partitions}

    return await core.run_batch("alter_partition_reassignments", list(wanted), core.route_controller, send,
                                timeout)


async def list_partition_reassignments(core: AdminCore, partitions: Iterable[TopicPartition] | None = None, *,
                                       timeout: float | None = None) -> dict[TopicPartition, PartitionReassignment]:
    """Ongoing reassignments (of ``partitions``, or all)."""
    wanted = None if partitions is None else list(partitions)

    async def send(node: int, deadline: float) -> dict[TopicPartition, PartitionReassignment]:
        request = ListPartitionReassignmentsRequest(
            timeout_ms=core.remaining_ms(deadline),
            topics=None if wanted is None else [
                ListPartitionReassignmentsRequestListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
                for t, ps in _by_topic(wanted).items()])
        response, _ = await core.send(node, request, deadline)
        raise_response_error(response.error_code, response.error_message, "list_partition_reassignments")
        return {TopicPartition(t.name, p.partition_index): PartitionReassignment(
            list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions}

    return await core.run_single("list_partition_reassignments", core.route_controller, send,
                                 timeout)


async def describe_log_dirs(core: AdminCore, broker_ids: Iterable[int] | None = None, *,
                            timeout: float | None = None) -> AdminResult[int, dict[str, LogDirDescription]]:
    """Log directories of each broker (default: every broker) with replica sizes."""
    deadline = core.deadline(timeout)
    if broker_ids is None:
        broker_ids = sorted((await core.ensure_metadata(deadline)).brokers)
    ids = list(dict.fromkeys(int(b) for b in broker_ids))

    async def send(node: int, items: list[int], deadline: float) -> Mapping[int, Outcome[dict[str, LogDirDescription]]]:
        response, _ = await core.send(node, DescribeLogDirsRequest(topics=None), deadline)
        top = outcome_for(response.error_code, None, resource=f"broker {node}")
        if top is not None:
            return {node: top}
        dirs: dict[str, LogDirDescription] = {}
        for r in response.results:
            d = LogDirDescription(
                r.log_dir, error_for_code(r.error_code, None, resource=f"broker {node} log dir {r.log_dir}")
                if r.error_code else None,
                total_bytes=r.total_bytes if r.total_bytes >= 0 else None,
                usable_bytes=r.usable_bytes if r.usable_bytes >= 0 else None)
            for t in r.topics:
                for p in t.partitions:
                    d.replicas[TopicPartition(t.name, p.partition_index)] = ReplicaInfo(
                        p.partition_size, p.offset_lag, p.is_future_key)
            dirs[r.log_dir] = d
        return {node: dirs}

    return await core.run_batch("describe_log_dirs", ids, core.route_to(lambda b: b), send, None, deadline=deadline,
                                resource_of=lambda b: {"resource": f"broker {b}"})


async def describe_producers(core: AdminCore, partitions: Iterable[TopicPartition], *,
                             timeout: float | None = None) -> AdminResult[TopicPartition, list[ProducerState]]:
    """Active idempotent / transactional producers per partition (from its leader)."""
    keys = list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))

    async def send(node: int, items: list[TopicPartition], deadline: float) -> Mapping[TopicPartition, Outcome[list[ProducerState]]]:
        request = DescribeProducersRequest(topics=[
            DescribeProducersRequestTopicRequest(name=t, partition_indexes=ps) for t, ps in _by_topic(items).items()])
        response, _ = await core.send(node, request, deadline)
        out: dict[TopicPartition, Outcome[list[ProducerState]]] = {}
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                outcome = outcome_for(p.error_code, p.error_message, topic=t.name, partition=p.partition_index)
                out[tp] = outcome if outcome is not None else [
                    ProducerState(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
                                  s.coordinator_epoch if s.coordinator_epoch >= 0 else None,
                                  s.current_txn_start_offset if s.current_txn_start_offset >= 0 else None)
                    for s in p.active_producers]
        return out

    return await core.run_batch("describe_producers", keys, core.route_leaders, send, timeout)
