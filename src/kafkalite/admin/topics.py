"""Topic calls: create, delete (by name or id), list, describe, create_partitions.

Creation, deletion and partition growth go to the controller (on KRaft: any broker,
which forwards); list and describe read Metadata from any broker (describe, asked
for, uses DescribeTopicPartitions, which adds eligible leader replicas, KIP-966). Each function takes
the :class:`~kafkalite.admin.core.AdminCore` and returns per-topic results.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

from kafkalite.admin.core import AdminCore, Fail, Outcome, outcome_for, raise_response_error
from kafkalite.admin.results import AdminResult
from kafkalite.admin.types import (
    ConfigEntry,
    ConfigSource,
    CreateTopicResult,
    NewPartitions,
    NewTopic,
    TopicDescription,
    TopicListing,
    TopicPartitionInfo,
    decode_authorized_operations,
)
from kafkalite.errors import ConfigError, UnknownTopicIdError, UnknownTopicOrPartitionError
from kafkalite.net.features import CREATE_TOPIC_DEFAULTS, unsupported
from kafkalite.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestCreatePartitionsAssignment,
    CreatePartitionsRequestCreatePartitionsTopic,
)
from kafkalite.protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
)
from kafkalite.protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
)
from kafkalite.protocol.messages.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsRequestCursor,
    DescribeTopicPartitionsRequestTopicRequest,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)
from kafkalite.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkalite.protocol.primitives import ZERO_UUID


def _topic_resource(key: Any) -> dict[str, Any]:
    return {"topic": str(key)}


async def create_topics(core: AdminCore, new_topics: Iterable[NewTopic], *, validate_only: bool = False,
                        timeout: float | None = None) -> AdminResult[str, CreateTopicResult]:
    topics = list(new_topics)
    by_name: dict[str, NewTopic] = {}
    for t in topics:
        if not isinstance(t, NewTopic):
            raise ConfigError(f"create_topics takes NewTopic objects, got {t!r}")
        if t.name in by_name:
            raise ConfigError(f"topic {t.name!r} is listed twice in create_topics")
        by_name[t.name] = t

    async def send(node: int, names: list[str], deadline: float) -> Mapping[str, Outcome[CreateTopicResult]]:
        out: dict[str, Outcome[CreateTopicResult]] = {}
        conn = await core.client.connection(node)
        # The broker's defaults (-1) need CreateTopics v4 (Kafka 2.4, KIP-464): before it,
        # Java's admin client fails those topics at once; so does this one.
        why = CREATE_TOPIC_DEFAULTS.missing(conn.versions) if conn.versions is not None else None
        if why is not None:
            for n in names:
                t = by_name[n]
                if not t.replica_assignment and (t.num_partitions == -1 or t.replication_factor == -1):
                    out[n] = Fail(unsupported(CREATE_TOPIC_DEFAULTS, why, broker=conn.address, topic=n))
            names = [n for n in names if n not in out]
            if not names:
                return out
        request = CreateTopicsRequest(
            topics=[_creatable(by_name[n]) for n in names],
            timeout_ms=core.remaining_ms(deadline),
            validate_only=validate_only,
        )
        response, _ = await core.send(node, request, deadline)
        for r in response.topics:
            outcome = outcome_for(r.error_code, r.error_message, topic=r.name)
            if outcome is not None:
                out[r.name] = outcome
                continue
            configs = {
                c.name: ConfigEntry(c.name, c.value, ConfigSource.of(c.config_source), c.is_sensitive, c.read_only)
                for c in r.configs or []
            }
            out[r.name] = CreateTopicResult(
                r.name, r.topic_id if r.topic_id != ZERO_UUID else None, r.num_partitions,
                r.replication_factor, configs,
            )
        return out

    return await core.run_batch("create_topics", list(by_name), core.route_controller, send, timeout,
                                resource_of=_topic_resource)


def _creatable(t: NewTopic) -> CreateTopicsRequestCreatableTopic:
    assignments = [
        CreateTopicsRequestCreatableReplicaAssignment(partition_index=int(p), broker_ids=[int(b) for b in brokers])
        for p, brokers in sorted((t.replica_assignment or {}).items())
    ]
    return CreateTopicsRequestCreatableTopic(
        name=t.name,
        num_partitions=-1 if assignments else t.num_partitions,
        replication_factor=-1 if assignments else t.replication_factor,
        assignments=assignments,
        configs=[CreateTopicsRequestCreatableTopicConfig(name=k, value=None if v is None else str(v))
                 for k, v in t.config.items()],
    )


async def delete_topics(core: AdminCore, topics: Iterable[str | uuid.UUID], *,
                        timeout: float | None = None) -> AdminResult[str | uuid.UUID, None]:
    """Delete topics named by name or by topic id (ids need DeleteTopics v6, Kafka 2.8+)."""
    keys = list(dict.fromkeys(topics))

    async def send(node: int, items: list[str | uuid.UUID], deadline: float) -> Mapping[str | uuid.UUID, Outcome[None]]:
        by_id = [k for k in items if isinstance(k, uuid.UUID)]
        names = [k for k in items if not isinstance(k, uuid.UUID)]
        conn = await core.client.connection(node)
        version = conn.api_version(DeleteTopicsRequest)
        if version >= 6:
            request = DeleteTopicsRequest(
                topics=[DeleteTopicsRequestDeleteTopicState(name=n) for n in names]
                + [DeleteTopicsRequestDeleteTopicState(name=None, topic_id=i) for i in by_id],
                timeout_ms=core.remaining_ms(deadline))
        else:
            if by_id:
                raise ConfigError("this broker cannot delete topics by id (needs DeleteTopics v6)")
            request = DeleteTopicsRequest(topic_names=names, timeout_ms=core.remaining_ms(deadline))
        response, _ = await core.send(node, request, deadline)
        out: dict[str | uuid.UUID, Outcome[None]] = {}
        for r in response.responses:
            key: Any = r.name if r.name in names else r.topic_id
            if key not in items and r.topic_id in by_id:
                key = r.topic_id
            # None (success) is the item's value.
            out[key] = outcome_for(r.error_code, r.error_message, topic=r.name or str(r.topic_id))
        return out

    return await core.run_batch("delete_topics", keys, core.route_controller, send, timeout,
                                resource_of=_topic_resource)


async def _metadata(core: AdminCore, node: int, deadline: float, topics: list[str] | None,
                    authorized_operations: bool = False) -> MetadataResponse:
    request = MetadataRequest(
        topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=authorized_operations,
    )
    response, _ = await core.send(node, request, deadline, min_version=8 if authorized_operations else 0)
    raise_response_error(response.error_code, None, "metadata")
    return response


async def list_topics(core: AdminCore, *, list_internal: bool = False,
                      timeout: float | None = None) -> dict[str, TopicListing]:
    """Every topic the caller may describe: ``{name: TopicListing}`` (sorted by name)."""

    async def send(node: int, deadline: float) -> dict[str, TopicListing]:
        response = await _metadata(core, node, deadline, None)
        listings = {
            t.name: TopicListing(t.name, t.topic_id or ZERO_UUID, t.is_internal)
            for t in response.topics
            if t.name is not None and not t.error_code and (list_internal or not t.is_internal)
        }
        return dict(sorted(listings.items()))

    return await core.run_single("list_topics", core.route_any, send, timeout)


async def describe_topics(core: AdminCore, topics: Iterable[str], *, include_authorized_operations: bool = False,
                          use_describe_topic_partitions: bool = False,
                          partition_size_limit_per_response: int | None = None,
                          timeout: float | None = None) -> AdminResult[str, TopicDescription]:
    """Describe topics by name, with Metadata or (asked for) DescribeTopicPartitions.

    DescribeTopicPartitions (KIP-966, Kafka 3.8+) also reports eligible leader replicas
    and pages through many partitions with a cursor; a broker without it is asked with
    Metadata instead, as Java's admin client falls back.
    """
    names = list(dict.fromkeys(topics))
    limit = 2000 if partition_size_limit_per_response is None else int(partition_size_limit_per_response)
    if limit < 1:
        raise ConfigError(f"partition_size_limit_per_response must be at least 1, got {limit}")

    async def send(node: int, items: list[str], deadline: float) -> Mapping[str, Outcome[TopicDescription]]:
        if use_describe_topic_partitions:
            conn = await core.client.connection(node)
            if conn.versions is None or conn.versions.supports(DescribeTopicPartitionsRequest):
                return await _describe_topic_partitions(core, node, items, deadline, limit,
                                                        include_authorized_operations)
        response = await _metadata(core, node, deadline, items, include_authorized_operations)
        out: dict[str, Outcome[TopicDescription]] = {}
        for name, t in _answered(response.topics, items, out):
            parts = [_partition_info(p) for p in sorted(t.partitions, key=lambda p: p.partition_index)]
            out[name] = TopicDescription(
                name, t.topic_id or ZERO_UUID, t.is_internal, parts,
                decode_authorized_operations(t.topic_authorized_operations)
                if include_authorized_operations else None,
            )
        return out

    return await core.run_batch("describe_topics", names, core.route_any, send, timeout,
                                resource_of=_topic_resource)


DescribedTopic = TypeVar("DescribedTopic", MetadataResponseTopic, DescribeTopicPartitionsResponseTopic)


def _answered(topics: Iterable[DescribedTopic], items: list[str],
              out: dict[str, Outcome[TopicDescription]]) -> Iterator[tuple[str, DescribedTopic]]:
    """(name, topic) of the topics of a Metadata or DescribeTopicPartitions answer that
    were asked for and came without an error; the errors go to ``out``."""
    for t in topics:
        name = t.name
        if name is None or name not in items:
            continue
        outcome = outcome_for(t.error_code, f"cannot describe topic {name!r}", topic=name)
        if outcome is not None:
            out[name] = outcome
            continue
        yield name, t


def _partition_info(p: MetadataResponsePartition | DescribeTopicPartitionsResponsePartition) -> TopicPartitionInfo:
    """A partition of Metadata or DescribeTopicPartitions (which adds the eligible leader
    replicas, KIP-966) as a TopicPartitionInfo."""
    elr = last_elr = None
    if isinstance(p, DescribeTopicPartitionsResponsePartition):
        elr = None if p.eligible_leader_replicas is None else list(p.eligible_leader_replicas)
        last_elr = None if p.last_known_elr is None else list(p.last_known_elr)
    return TopicPartitionInfo(
        p.partition_index, p.leader_id if p.leader_id >= 0 else None, list(p.replica_nodes),
        list(p.isr_nodes), list(p.offline_replicas or []), p.leader_epoch, elr, last_elr,
    )


async def _describe_topic_partitions(core: AdminCore, node: int, items: list[str], deadline: float, limit: int,
                                     authorized_operations: bool) -> dict[str, Outcome[TopicDescription]]:
    """DescribeTopicPartitions, following ``next_cursor`` until every partition is in."""
    out: dict[str, Outcome[TopicDescription]] = {}
    found: dict[str, tuple[DescribeTopicPartitionsResponseTopic, list[TopicPartitionInfo]]] = {}
    cursor: DescribeTopicPartitionsRequestCursor | None = None
    while True:
        request = DescribeTopicPartitionsRequest(
            topics=[DescribeTopicPartitionsRequestTopicRequest(name=n) for n in items],
            response_partition_limit=limit, cursor=cursor)
        response, _ = await core.send(node, request, deadline)
        for name, t in _answered(response.topics, items, out):
            _topic, parts = found.setdefault(name, (t, []))
            parts.extend(_partition_info(p) for p in t.partitions)
        next_cursor = response.next_cursor
        if next_cursor is None:
            break
        cursor = DescribeTopicPartitionsRequestCursor(topic_name=next_cursor.topic_name,
                                                      partition_index=next_cursor.partition_index)
    for name, (t, parts) in found.items():
        out[name] = TopicDescription(
            name, t.topic_id or ZERO_UUID, t.is_internal, sorted(parts, key=lambda p: p.partition),
            decode_authorized_operations(t.topic_authorized_operations) if authorized_operations else None,
        )
    return out


async def create_partitions(core: AdminCore, new_partitions: Mapping[str, NewPartitions | int], *,
                            validate_only: bool = False,
                            timeout: float | None = None) -> AdminResult[str, None]:
    """Grow topics to a new total partition count. Shrinking is INVALID_PARTITIONS per topic."""
    wanted = {name: (np if isinstance(np, NewPartitions) else NewPartitions(int(np)))
              for name, np in new_partitions.items()}

    async def send(node: int, names: list[str], deadline: float) -> Mapping[str, Outcome[None]]:
        request = CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequestCreatePartitionsTopic(
                    name=n, count=wanted[n].total_count,
                    assignments=None if not wanted[n].new_assignments else [
                        CreatePartitionsRequestCreatePartitionsAssignment(broker_ids=[int(b) for b in a])
                        for a in wanted[n].new_assignments or []
                    ],
                )
                for n in names
            ],
            timeout_ms=core.remaining_ms(deadline),
            validate_only=validate_only,
        )
        response, _ = await core.send(node, request, deadline)
        return {r.name: outcome_for(r.error_code, r.error_message, topic=r.name) for r in response.results}

    return await core.run_batch("create_partitions", list(wanted), core.route_controller, send, timeout,
                                resource_of=_topic_resource)


async def topic_names_by_id(core: AdminCore, deadline: float) -> dict[uuid.UUID, str]:
    """Topic ids -> names from a full Metadata request (for responses that carry ids only)."""
    node = core.client.least_loaded_node()
    response = await _metadata(core, node, deadline, None)
    return {t.topic_id: t.name for t in response.topics if t.topic_id and t.name}


def unknown_topic(name: str) -> Fail:
    return Fail(UnknownTopicOrPartitionError("this topic does not exist", topic=name))


def unknown_topic_id(topic_id: uuid.UUID) -> Fail:
    return Fail(UnknownTopicIdError(f"topic id {topic_id} does not exist"))
