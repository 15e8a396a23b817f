"""Share group calls (KIP-932): describe, and list / alter / delete their start offsets.

List share groups with ``list_groups(types=["share"])``; delete them with
``delete_groups``. Each call goes to the group coordinator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.admin.core import AdminCore, Outcome, coordinator_outcome
from kafkalite.admin.group_types import (
    GroupState,
    MemberDescription,
    ShareGroupDescription,
    SharePartitionOffset,
)
from kafkalite.admin.groups import _node, _tps
from kafkalite.admin.results import AdminResult
from kafkalite.admin.types import decode_authorized_operations
from kafkalite.errors import ConfigError
from kafkalite.protocol.messages.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from kafkalite.protocol.messages.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
)
from kafkalite.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
)
from kafkalite.protocol.messages.share_group_describe import ShareGroupDescribeRequest
from kafkalite.types import TopicPartition


def _group(key: Any) -> dict[str, Any]:
    return {"group_id": str(key)}


async def describe_share_groups(core: AdminCore, group_ids: Iterable[str], *,
                                include_authorized_operations: bool = False,
                                timeout: float | None = None) -> AdminResult[str, ShareGroupDescription]:
    keys = list(dict.fromkeys(group_ids))

    async def send(node: int, items: list[str], deadline: float) -> Mapping[str, Outcome[ShareGroupDescription]]:
        request = ShareGroupDescribeRequest(group_ids=items,
                                            include_authorized_operations=include_authorized_operations)
        response, _ = await core.send(node, request, deadline)
        out: dict[str, Outcome[ShareGroupDescription]] = {}
        for g in response.groups:
            outcome = coordinator_outcome(core.client, g.error_code, g.error_message, g.group_id)
            if outcome is not None:
                out[g.group_id] = outcome
                continue
            members = [MemberDescription(m.member_id, None, m.client_id, m.client_host,
                                         _tps(m.assignment.topic_partitions if m.assignment else None),
                                         member_epoch=m.member_epoch, rack_id=m.rack_id,
                                         subscribed_topics=list(m.subscribed_topic_names or []))
                       for m in g.members]
            out[g.group_id] = ShareGroupDescription(
                g.group_id, members, GroupState.parse(g.group_state), _node(core, node),
                decode_authorized_operations(g.authorized_operations) if include_authorized_operations else None,
                g.group_epoch, g.assignment_epoch, g.assignor_name)
        return out

    return await core.run_batch("describe_share_groups", keys, core.route_coordinators(str), send, timeout,
                                resource_of=_group)


async def list_share_group_offsets(
    core: AdminCore, groups: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str], *,
    timeout: float | None = None,
) -> AdminResult[str, dict[TopicPartition, SharePartitionOffset]]:
    """Start offsets (and lag, Kafka 4.1+) per share group and partition."""
    specs = ({g: (None if p is None else list(p)) for g, p in groups.items()} if isinstance(groups, Mapping)
             else {g: None for g in groups})

    async def send(node: int, items: list[str], deadline: float) -> Mapping[str, Outcome[dict[TopicPartition, SharePartitionOffset]]]:
        def topics(g: str) -> list[DescribeShareGroupOffsetsRequestTopic] | None:
            parts = specs[g]
            if parts is None:
                return None
            by_topic: dict[str, list[int]] = {}
            for tp in parts:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            return [DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps) for t, ps in by_topic.items()]

        request = DescribeShareGroupOffsetsRequest(groups=[
            DescribeShareGroupOffsetsRequestGroup(group_id=g, topics=topics(g)) for g in items])
        need_all = any(specs[g] is None for g in items)
        response, _ = await core.send(node, request, deadline, min_version=1 if need_all else 0)
        out: dict[str, Outcome[dict[TopicPartition, SharePartitionOffset]]] = {}
        for g in response.groups:
            outcome = coordinator_outcome(core.client, g.error_code, g.error_message, g.group_id)
            if outcome is not None:
                out[g.group_id] = outcome
                continue
            offsets: dict[TopicPartition, SharePartitionOffset] = {}
            for t in g.topics:
                for p in t.partitions:
                    if p.error_code:
                        continue
                    offsets[TopicPartition(t.topic_name, p.partition_index)] = SharePartitionOffset(
                        p.start_offset, p.leader_epoch if p.leader_epoch >= 0 else None,
                        p.lag if getattr(p, "lag", -1) >= 0 else None)
            out[g.group_id] = dict(sorted(offsets.items()))
        return out

    return await core.run_batch("list_share_group_offsets", list(specs), core.route_coordinators(str), send,
                                timeout, resource_of=_group)


async def alter_share_group_offsets(core: AdminCore, group_id: str, offsets: Mapping[TopicPartition, int], *,
                                    timeout: float | None = None) -> AdminResult[TopicPartition, None]:
    """Set the start offsets of an empty share group."""
    wanted = {TopicPartition(*tp): int(o) for tp, o in offsets.items()}
    for tp, o in wanted.items():
        if o < 0:
            raise ConfigError(f"share group start offset for {tp} must be >= 0, got {o}")

    async def send(node: int, items: list[TopicPartition], deadline: float) -> Mapping[TopicPartition, Outcome[None]]:
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in items:
            by_topic.setdefault(tp.topic, []).append(tp)
        request = AlterShareGroupOffsetsRequest(group_id=group_id, topics=[
            AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=[
                AlterShareGroupOffsetsRequestPartition(partition_index=tp.partition, start_offset=wanted[tp])
                for tp in tps]) for t, tps in by_topic.items()])
        response, _ = await core.send(node, request, deadline)
        top = coordinator_outcome(core.client, response.error_code, response.error_message, group_id)
        if top is not None:
            return {tp: top for tp in items}
        return {TopicPartition(t.topic_name, p.partition_index): coordinator_outcome(
            core.client, p.error_code, p.error_message, group_id, topic=t.topic_name, partition=p.partition_index)
            for t in response.responses for p in t.partitions}

    return await core.run_batch("alter_share_group_offsets", list(wanted),
                                core.route_coordinators(lambda _tp: group_id), send, timeout,
                                resource_of=lambda _k: {"group_id": group_id})


async def delete_share_group_offsets(core: AdminCore, group_id: str, topics: Iterable[str], *,
                                     timeout: float | None = None) -> AdminResult[str, None]:
    """Forget a share group's state for whole topics (the group must be empty)."""
    keys = list(dict.fromkeys(topics))

    async def send(node: int, items: list[str], deadline: float) -> Mapping[str, Outcome[None]]:
        request = DeleteShareGroupOffsetsRequest(group_id=group_id, topics=[
            DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in items])
        response, _ = await core.send(node, request, deadline)
        top = coordinator_outcome(core.client, response.error_code, response.error_message, group_id)
        if top is not None:
            return {t: top for t in items}
        return {t.topic_name: coordinator_outcome(core.client, t.error_code, t.error_message, group_id,
                                                  topic=t.topic_name) for t in response.responses}

    return await core.run_batch("delete_share_group_offsets", keys, core.route_coordinators(lambda _t: group_id),
                                send, timeout, resource_of=lambda t: {"group_id": group_id, "topic": t})
