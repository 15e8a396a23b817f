"""Consumer group calls: list, describe, delete, offsets (list / alter / delete), remove members.

Every call but ``list_groups`` goes to the group's coordinator (found with
FindCoordinator, forgotten on NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE, retried on
COORDINATOR_LOAD_IN_PROGRESS). ``list_groups`` asks every broker, since each one only
knows the groups it coordinates.

Describe tries ConsumerGroupDescribe (KIP-848 groups) first and falls back to
DescribeGroups for classic groups (the broker answers GROUP_ID_NOT_FOUND for a group
that is not a consumer-protocol group, and a 3.7-3.9 broker without the consumer
protocol enabled UNSUPPORTED_VERSION for every group), as the Java client does; classic member
assignments are decoded from the consumer protocol's bytes.

OffsetFetch / OffsetCommit v10 name topics by id only: the ids come from metadata (and
the names of the ids in an answer too); brokers before v10, and topics that metadata
cannot give an id for, go by name at v9.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from kafkalite.admin.core import AdminCore, Fail, Outcome, coordinator_outcome, outcome_for
from kafkalite.admin.group_types import (
    ConsumerGroupDescription,
    GroupListing,
    GroupState,
    GroupType,
    MemberDescription,
    MemberToRemove,
)
from kafkalite.admin.results import AdminResult, ListResult
from kafkalite.admin.types import Node, decode_authorized_operations
from kafkalite.errors import (
    ConfigError,
    GroupIdNotFoundError,
    KafkaError,
    ProtocolError,
    UnsupportedVersionError,
    UnsupportedVersionForClientError,
)
from kafkalite.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponseDescribedGroup,
)
from kafkalite.protocol.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from kafkalite.protocol.messages.consumer_protocol_subscription import ConsumerProtocolSubscription
from kafkalite.protocol.messages.delete_groups import DeleteGroupsRequest
from kafkalite.protocol.messages.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponseDescribedGroup,
)
from kafkalite.protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
)
from kafkalite.protocol.messages.list_groups import ListGroupsRequest
from kafkalite.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kafkalite.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kafkalite.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from kafkalite.protocol.primitives import ZERO_UUID
from kafkalite.types import OffsetAndMetadata, TopicPartition

# Per-group answers of ConsumerGroupDescribe after which Java's DescribeConsumerGroupsHandler
# asks DescribeGroups instead: GROUP_ID_NOT_FOUND (a classic group, or none) and
# UNSUPPORTED_VERSION (a 3.7-3.9 broker serves the API, but its
# group.coordinator.rebalance.protocols leaves out consumer, so it answers that for every
# group, classic ones included).
_ASK_DESCRIBE_GROUPS = frozenset({GroupIdNotFoundError.code, UnsupportedVersionError.code})
# OffsetFetch / OffsetCommit v10 (KIP-848, Kafka 4.1+) name topics by id only.
_TOPIC_ID_VERSION = 10

#: A group's committed offsets, as list_consumer_group_offsets returns them.
CommittedOffsets = dict[TopicPartition, OffsetAndMetadata]


def _group_resource(group: Any) -> dict[str, Any]:
    return {"group_id": str(group)}


def _node(core: AdminCore, node_id: int) -> Node | None:
    b = core.metadata.broker(node_id)
    return Node(b.node_id, b.host, b.port, b.rack) if b else None


# ------------------------------------------------------------------ list


async def list_groups(core: AdminCore, *, states: Iterable[GroupState | str] | None = None,
                      types: Iterable[GroupType | str] | None = None,
                      timeout: float | None = None) -> ListResult[GroupListing]:
    """Groups of every broker, filtered by state and type (sorted by group id).

    Each broker knows only the groups it coordinates, so a broker that cannot answer
    in time leaves a gap: the result is a :class:`ListResult` of what the others
    answered, with ``.errors`` naming each broker that did not (``.all()`` raises then).
    """
    state_names = [GroupState.parse(s).value if not isinstance(s, GroupState) else s.value for s in states or ()]
    type_names = [(t.value if isinstance(t, GroupType) else str(t).lower()) for t in types or ()]
    deadline = core.deadline(timeout)
    meta = await core.ensure_metadata(deadline)
    brokers = sorted(meta.brokers)

    async def send(node: int, items: list[int], deadline: float) -> Mapping[int, Outcome[list[GroupListing]]]:
        request = ListGroupsRequest(states_filter=state_names, types_filter=type_names)
        min_version = 5 if type_names else 4 if state_names else 0
        response, _ = await core.send(node, request, deadline, min_version=min_version)
        outcome = outcome_for(response.error_code, None, resource=f"broker {node}")
        if outcome is not None:
            return {node: outcome}
        return {node: [
            GroupListing(g.group_id, g.protocol_type, GroupState.parse(g.group_state), GroupType.parse(g.group_type))
            for g in response.groups
        ]}

    result = await core.run_batch("list_groups", brokers, core.route_to(lambda b: b), send, None, deadline=deadline,
                                  resource_of=lambda b: {"resource": f"broker {b}"})
    listings: dict[str, GroupListing] = {}
    for item in result.values():
        for g in item.value or []:
            listings[g.group_id] = g
    if not result.succeeded:
        result.raise_on_error()  # no broker answered: an empty list would read as "none"
    return ListResult("list_groups", [listings[k] for k in sorted(listings)], result)


# ------------------------------------------------------------------ describe


def decode_assignment(data: bytes | None) -> set[TopicPartition]:
    """Partitions in a classic consumer-protocol assignment (``ConsumerProtocolAssignment``)."""
    if not data:
        return set()
    try:
        (version,) = struct.unpack_from(">h", data, 0)
        assignment = ConsumerProtocolAssignment.decode(bytes(data[2:]), min(max(version, 0), 3))
    except (struct.error, ProtocolError, UnsupportedVersionForClientError) as exc:
        raise ProtocolError(f"cannot decode a member assignment: {exc}") from exc
    return {TopicPartition(t.topic, p) for t in assignment.assigned_partitions for p in t.partitions}


def decode_subscription(data: bytes | None) -> list[str] | None:
    if not data:
        return None
    try:
        (version,) = struct.unpack_from(">h", data, 0)
        sub = ConsumerProtocolSubscription.decode(bytes(data[2:]), min(max(version, 0), 3))
    except (struct.error, ProtocolError, UnsupportedVersionForClientError):
        return None
    return list(sub.topics)


class AssignedTopic(Protocol):
    """A topic's partitions in a KIP-848 or KIP-932 describe answer."""

    @property
    def topic_name(self) -> str: ...

    @property
    def partitions(self) -> list[int]: ...


def _tps(topic_partitions: Sequence[AssignedTopic] | None) -> set[TopicPartition]:
    return {TopicPartition(t.topic_name, p) for t in topic_partitions or () for p in t.partitions}


async def describe_consumer_groups(core: AdminCore, group_ids: Iterable[str], *,
                                   include_authorized_operations: bool = False,
                                   timeout: float | None = None) -> AdminResult[str, ConsumerGroupDescription]:
    groups = list(dict.fromkeys(group_ids))

    async def send(node: int, items: list[str], deadline: float) -> Mapping[str, Outcome[ConsumerGroupDescription]]:
        out: dict[str, Outcome[ConsumerGroupDescription]] = {}
        classic = list(items)
        conn = await core.client.connection(node)
        if conn.versions is not None and conn.versions.supports(ConsumerGroupDescribeRequest):
            request = ConsumerGroupDescribeRequest(group_ids=items,
                                                   include_authorized_operations=include_authorized_operations)
            try:
                response, _ = await core.send(node, request, deadline)
            except UnsupportedVersionError:
                response = None
            if response is not None:
                classic = []
                for g in response.groups:
                    if g.error_code in _ASK_DESCRIBE_GROUPS:
                        classic.append(g.group_id)  # maybe a classic group: ask DescribeGroups
                        continue
                    outcome = coordinator_outcome(core.client, g.error_code, g.error_message, g.group_id)
                    out[g.group_id] = outcome if outcome is not None else _consumer_group(core, node, g,
                                                                                        include_authorized_operations)
        if classic:
            request2 = DescribeGroupsRequest(groups=classic,
                                             include_authorized_operations=include_authorized_operations)
            response2, _ = await core.send(node, request2, deadline)
            for cg in response2.groups:
                outcome = coordinator_outcome(core.client, cg.error_code, cg.error_message, cg.group_id)
                if outcome is None and GroupState.parse(cg.group_state) is GroupState.DEAD and not cg.members:
                    outcome = Fail(GroupIdNotFoundError("the group does not exist", group_id=cg.group_id))
                if outcome is None and cg.protocol_type not in ("consumer", ""):
                    outcome = Fail(GroupIdNotFoundError(
                        f"the group is not a consumer group (protocol type {cg.protocol_type!r})",
                        group_id=cg.group_id))
                out[cg.group_id] = outcome if outcome is not None else _classic_group(core, node, cg,
                                                                                    include_authorized_operations)
        return out

    return await core.run_batch("describe_consumer_groups", groups, core.route_coordinators(str), send, timeout,
                                resource_of=_group_resource)


def _consumer_group(core: AdminCore, node: int, g: ConsumerGroupDescribeResponseDescribedGroup,
                    auth: bool) -> ConsumerGroupDescription:
    members = [
        MemberDescription(
            m.member_id, m.instance_id, m.client_id, m.client_host,
            _tps(m.assignment.topic_partitions if m.assignment else None),
            _tps(m.target_assignment.topic_partitions if m.target_assignment else None),
            m.member_epoch, m.rack_id, list(m.subscribed_topic_names or []), m.subscribed_topic_regex,
            m.member_type != 0,
        )
        for m in g.members
    ]
    return ConsumerGroupDescription(
        g.group_id, False, members, g.assignor_name, GroupType.CONSUMER, GroupState.parse(g.group_state),
        _node(core, node), decode_authorized_operations(g.authorized_operations) if auth else None,
        g.group_epoch, g.assignment_epoch,
    )


def _classic_group(core: AdminCore, node: int, g: DescribeGroupsResponseDescribedGroup,
                   auth: bool) -> ConsumerGroupDescription:
    members = [
        MemberDescription(
            m.member_id, m.group_instance_id, m.client_id, m.client_host,
            decode_assignment(m.member_assignment) if g.protocol_type == "consumer" else set(),
            subscribed_topics=decode_subscription(m.member_metadata) if g.protocol_type == "consumer" else None,
        )
        for m in g.members
    ]
    return ConsumerGroupDescription(
        g.group_id, g.protocol_type == "", members, g.protocol_data, GroupType.CLASSIC,
        GroupState.parse(g.group_state), _node(core, node),
        decode_authorized_operations(g.authorized_operations) if auth else None,
    )


# ------------------------------------------------------------------ delete


async def delete_groups(core: AdminCore, group_ids: Iterable[str], *,
                        timeout: float | None = None) -> AdminResult[str, None]:
    """Delete groups (a group with members fails with NON_EMPTY_GROUP, per group)."""
    groups = list(dict.fromkeys(group_ids))

    async def send(node: int, items: list[str], deadline: float) -> Mapping[str, Outcome[None]]:
        response, _ = await core.send(node, DeleteGroupsRequest(groups_names=items), deadline)
        return {r.group_id: coordinator_outcome(core.client, r.error_code, r.error_message, r.group_id) for r in response.results}

    return await core.run_batch("delete_groups", groups, core.route_coordinators(str), send, timeout,
                                resource_of=_group_resource)


# ------------------------------------------------------------------ offsets


async def list_consumer_group_offsets(
    core: AdminCore, groups: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str], *,
    require_stable: bool = False, timeout: float | None = None,
) -> AdminResult[str, dict[TopicPartition, OffsetAndMetadata]]:
    """Committed offsets per group: ``{group: {tp: OffsetAndMetadata}}``.

    ``groups`` maps a group id to the partitions to read (None: every partition with a
    committed offset), or is a list of group ids. Partitions asked for without a
    committed offset are left out.

    OffsetFetch v10 (Kafka 4.1+) names topics by id: ids come from metadata, and the
    ids in an answer for all partitions are named from metadata too. A topic that
    metadata does not know (it has no id yet, or a broker before v10) uses v9 and names.
    """
    specs: dict[str, list[TopicPartition] | None] = (
        {g: (None if p is None else list(p)) for g, p in groups.items()} if isinstance(groups, Mapping)
        else {g: None for g in groups}
    )

    async def send(node: int, items: list[str], deadline: float) -> Mapping[str, Outcome[CommittedOffsets]]:
        out: dict[str, Outcome[CommittedOffsets]] = {}
        conn = await core.client.connection(node)
        best = conn.api_version(OffsetFetchRequest)
        for group in items:
            parts = specs[group]
            by_topic: dict[str, list[int]] = {}
            for tp in parts or ():
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            ids: dict[str, uuid.UUID] = {}
            if best >= _TOPIC_ID_VERSION and by_topic:
                meta = await core.ensure_metadata(deadline, by_topic)
                ids = {t: meta.topic_id(t) for t in by_topic}
            version = best if ZERO_UUID not in ids.values() else _TOPIC_ID_VERSION - 1
            answer = await _fetch_offsets(core, node, group, by_topic if parts is not None else None, ids, version,
                                          require_stable, deadline)
            if answer is None:  # v10 named a topic id metadata does not know: ask again by name
                answer = await _fetch_offsets(core, node, group, by_topic if parts is not None else None, {},
                                              min(best, _TOPIC_ID_VERSION - 1), require_stable, deadline)
            if answer is not None:
                out[group] = answer  # else not answered: the driver reports it
        return out

    return await core.run_batch("list_consumer_group_offsets", list(specs), core.route_coordinators(str), send,
                                timeout, resource_of=_group_resource)


async def _fetch_offsets(core: AdminCore, node: int, group: str, by_topic: dict[str, list[int]] | None,
                         ids: dict[str, uuid.UUID], version: int, require_stable: bool,
                         deadline: float) -> Outcome[CommittedOffsets] | None:
    """One OffsetFetch for one group at ``version`` or lower; None when a v10 answer has a
    topic id that even fresh metadata cannot name."""
    if version >= 8:
        request = OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(
                group_id=group, member_id=None, member_epoch=-1,
                topics=None if by_topic is None else [
                    OffsetFetchRequestTopics(name=t, topic_id=ids.get(t, ZERO_UUID), partition_indexes=ps)
                    for t, ps in by_topic.items()])],
            require_stable=require_stable)
    else:
        request = OffsetFetchRequest(
            group_id=group, require_stable=require_stable,
            topics=None if by_topic is None else [
                OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()])
    response, used = await core.send(node, request, deadline, max_version=version)
    topics: list[OffsetFetchResponseTopics] | list[OffsetFetchResponseTopic]
    if used >= 8:
        g = response.groups[0]
        code, topics = g.error_code, g.topics
    else:
        code, topics = response.error_code, response.topics
    outcome = coordinator_outcome(core.client, code, None, group)
    if outcome is not None:
        return outcome
    names: dict[uuid.UUID, str] = {}
    if used >= _TOPIC_ID_VERSION:
        names = {i: t for t, i in ids.items()}
        unknown = {_topic_id(t) for t in topics if _topic_id(t) not in names}
        if unknown:
            meta = core.metadata
            if any(meta.topic_name(i) is None for i in unknown):
                meta = await core.client.refresh_metadata(all_topics=True, timeout_s=core.request_timeout_s(deadline))
            for i in unknown:
                name = meta.topic_name(i)
                if name is None:
                    return None
                names[i] = name
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    error: KafkaError | None = None
    for t in topics:
        topic = names[_topic_id(t)] if used >= _TOPIC_ID_VERSION else t.name
        for p in t.partitions:
            if p.error_code:
                err = coordinator_outcome(core.client, p.error_code, None, group,
                                          topic=topic, partition=p.partition_index)
                error = error or getattr(err, "error", None)
                continue
            if p.committed_offset < 0:
                continue
            epoch = p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None
            offsets[TopicPartition(topic, p.partition_index)] = OffsetAndMetadata(
                p.committed_offset, p.metadata or "", epoch)
    return Fail(error) if error is not None else dict(sorted(offsets.items()))


def _topic_id(topic: OffsetFetchResponseTopics | OffsetFetchResponseTopic) -> uuid.UUID:
    """A topic's id in an OffsetFetch answer (v10+ name topics by id; older ones have none)."""
    return topic.topic_id if isinstance(topic, OffsetFetchResponseTopics) else ZERO_UUID


def _epoch(om: OffsetAndMetadata) -> int:
    return -1 if om.leader_epoch is None else om.leader_epoch


async def alter_consumer_group_offsets(core: AdminCore, group_id: str,
                                       offsets: Mapping[TopicPartition, OffsetAndMetadata | int], *,
                                       timeout: float | None = None) -> AdminResult[TopicPartition, None]:
    """Commit offsets for a group with no active members (its members would overwrite them;
    the broker refuses with UNKNOWN_MEMBER_ID / STALE_MEMBER_EPOCH while it has some)."""
    wanted = {TopicPartition(*tp): (o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(int(o)))
              for tp, o in offsets.items()}
    for tp, om in wanted.items():
        if om.offset < 0:
            raise ConfigError(f"offset for {tp} must be >= 0, got {om.offset}")

    async def send(node: int, items: list[TopicPartition], deadline: float) -> Mapping[TopicPartition, Outcome[None]]:
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in items:
            by_topic.setdefault(tp.topic, []).append(tp)
        # OffsetCommit v10 (Kafka 4.1+) names topics by id; a topic without a known id
        # (missing, or metadata from a broker without ids) goes by name at v9, so a
        # missing topic fails as UNKNOWN_TOPIC_OR_PARTITION naming it.
        conn = await core.client.connection(node)
        ids: dict[str, uuid.UUID] = {}
        max_version: int | None = None
        if conn.api_version(OffsetCommitRequest) >= _TOPIC_ID_VERSION:
            meta = await core.ensure_metadata(deadline, by_topic)
            ids = {t: meta.topic_id(t) for t in by_topic}
        if not ids or ZERO_UUID in ids.values():
            max_version, ids = _TOPIC_ID_VERSION - 1, {}
        request = OffsetCommitRequest(
            group_id=group_id, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=[OffsetCommitRequestTopic(name=t, topic_id=ids.get(t, ZERO_UUID), partitions=[
                OffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=wanted[tp].offset,
                    committed_leader_epoch=_epoch(wanted[tp]),
                    committed_metadata=wanted[tp].metadata or "")
                for tp in tps]) for t, tps in by_topic.items()])
        response, used = await core.send(node, request, deadline, max_version=max_version)
        names = {i: t for t, i in ids.items()}
        out: dict[TopicPartition, Outcome[None]] = {}
        for t in response.topics:
            topic = names.get(t.topic_id, "") if used >= _TOPIC_ID_VERSION else t.name
            for p in t.partitions:
                out[TopicPartition(topic, p.partition_index)] = coordinator_outcome(
                    core.client, p.error_code, None, group_id, topic=topic, partition=p.partition_index)
        return out

    return await core.run_batch("alter_consumer_group_offsets", list(wanted),
                                core.route_coordinators(lambda _tp: group_id), send, timeout,
                                resource_of=lambda _k: {"group_id": group_id})


async def delete_consumer_group_offsets(core: AdminCore, group_id: str, partitions: Iterable[TopicPartition], *,
                                        timeout: float | None = None) -> AdminResult[TopicPartition, None]:
    """Delete committed offsets of partitions the group no longer consumes
    (GROUP_SUBSCRIBED_TO_TOPIC for a topic the group still subscribes to)."""
    keys = list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))

    async def send(node: int, items: list[TopicPartition], deadline: float) -> Mapping[TopicPartition, Outcome[None]]:
        by_topic: dict[str, list[int]] = {}
        for tp in items:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = OffsetDeleteRequest(group_id=group_id, topics=[
            OffsetDeleteRequestTopic(name=t, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps])
            for t, ps in by_topic.items()])
        response, _ = await core.send(node, request, deadline)
        top = coordinator_outcome(core.client, response.error_code, None, group_id)
        if top is not None:
            return {tp: top for tp in items}
        out: dict[TopicPartition, Outcome[None]] = {}
        for t in response.topics:
            for p in t.partitions:
                out[TopicPartition(t.name, p.partition_index)] = coordinator_outcome(
                    core.client, p.error_code, None, group_id, topic=t.name, partition=p.partition_index)
        return out

    return await core.run_batch("delete_consumer_group_offsets", keys, core.route_coordinators(lambda _tp: group_id),
                                send, timeout, resource_of=lambda _k: {"group_id": group_id})


# ------------------------------------------------------------------ members


async def remove_members_from_consumer_group(
    core: AdminCore, group_id: str, members: Iterable[MemberToRemove] | None = None, *,
    reason: str | None = None, timeout: float | None = None,
) -> AdminResult[MemberToRemove, None]:
    """Remove members from a classic group (LeaveGroup v3+); ``members=None`` removes all
    current members (described first, as kafka-consumer-groups --delete-offsets does)."""
    deadline = core.deadline(timeout)
    if members is None:
        remaining = max(0.0, deadline - time.monotonic())
        described = (await describe_consumer_groups(core, [group_id], timeout=remaining))[group_id].result()
        wanted = [MemberToRemove(group_instance_id=m.group_instance_id) if m.group_instance_id
                  else MemberToRemove(member_id=m.member_id) for m in described.members]
    else:
        wanted = list(dict.fromkeys(members))
    if not wanted:
        return AdminResult("remove_members_from_consumer_group", {})

    async def send(node: int, items: list[MemberToRemove], deadline: float) -> Mapping[MemberToRemove, Outcome[None]]:
        request = LeaveGroupRequest(group_id=group_id, members=[
            LeaveGroupRequestMemberIdentity(member_id=m.member_id or "", group_instance_id=m.group_instance_id,
                                            reason=reason or "removed by the admin client")
            for m in items])
        response, _ = await core.send(node, request, deadline, min_version=3)
        top = coordinator_outcome(core.client, response.error_code, None, group_id)
        if top is not None:
            return {m: top for m in items}
        out: dict[MemberToRemove, Outcome[None]] = {}
        for r in response.members:
            key = next((m for m in items if (m.group_instance_id and m.group_instance_id == r.group_instance_id)
                        or (not m.group_instance_id and m.member_id == r.member_id)), None)
            if key is not None:
                out[key] = coordinator_outcome(core.client, r.error_code, None, group_id, resource=str(key))
        return out

    return await core.run_batch("remove_members_from_consumer_group", wanted,
                                core.route_coordinators(lambda _m: group_id), send, None, deadline=deadline,
                                resource_of=lambda m: {"group_id": group_id, "resource": str(m)})
