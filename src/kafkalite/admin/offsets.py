"""Partition offset calls: list_offsets and delete_records, sent to partition leaders.

A leader change (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE ...) refreshes metadata and
retries the affected partitions only.

ListOffsets goes without the cached leader epoch (``current_leader_epoch`` -1), as Java's
``ListOffsetsHandler`` sends it: the admin client asks whichever broker leads the
partition now, it does not fence a read against its own view of the log as a consumer
does (KIP-320). With the epoch, a Metadata answer from a broker whose view lags kept
the admin on an epoch the leader had left, and every retry came back
FENCED_LEADER_EPOCH until the call timed out.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkalite.admin.core import AdminCore, Outcome, outcome_for
from kafkalite.admin.results import AdminResult
from kafkalite.admin.types import DeletedRecords, ListOffsetsResultInfo, OffsetSpec
from kafkalite.errors import ConfigError
from kafkalite.protocol.messages.delete_records import (
    DeleteRecordsRequest,
    DeleteRecordsRequestDeleteRecordsPartition,
    DeleteRecordsRequestDeleteRecordsTopic,
)
from kafkalite.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestListOffsetsPartition,
    ListOffsetsRequestListOffsetsTopic,
)
from kafkalite.types import IsolationLevel, TopicPartition

# NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH: the request went to
# a broker that does not lead the partition at the epoch the client knows.
_STALE_LEADER = frozenset({6, 74, 76})

# The ListOffsets version that first understands each special timestamp.
_MIN_VERSION = {OffsetSpec.MAX_TIMESTAMP: 7, OffsetSpec.EARLIEST_LOCAL: 8, OffsetSpec.LATEST_TIERED: 9}


def _group_by_topic(items: list[TopicPartition]) -> dict[str, list[TopicPartition]]:
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in items:
        by_topic.setdefault(tp.topic, []).append(tp)
    return by_topic


async def list_offsets(core: AdminCore, specs: Mapping[TopicPartition, OffsetSpec | str | int], *,
                       isolation_level: IsolationLevel | str = IsolationLevel.READ_UNCOMMITTED,
                       timeout: float | None = None) -> AdminResult[TopicPartition, ListOffsetsResultInfo]:
    """Offsets per partition for earliest / latest / max-timestamp / a timestamp.

    ``specs`` values may be :class:`OffsetSpec`, ``"earliest"`` / ``"latest"`` /
    ``"max_timestamp"``, or a timestamp in ms.

    Example::

        admin.list_offsets({TopicPartition("orders", 0): OffsetSpec.latest()})[tp].result().offset
    """
    wanted = {TopicPartition(*tp): _spec(s) for tp, s in specs.items()}
    level = _isolation(isolation_level)
    need = max((_MIN_VERSION.get(s.timestamp, 1) for s in wanted.values()), default=1)

    async def send(node: int, items: list[TopicPartition], deadline: float) -> Mapping[TopicPartition, Outcome[ListOffsetsResultInfo]]:
        request = ListOffsetsRequest(
            replica_id=-1, isolation_level=level,
            topics=[ListOffsetsRequestListOffsetsTopic(name=t, partitions=[
                ListOffsetsRequestListOffsetsPartition(
                    partition_index=tp.partition, timestamp=wanted[tp].timestamp,
                    current_leader_epoch=-1)
                for tp in tps]) for t, tps in _group_by_topic(items).items()],
            timeout_ms=core.remaining_ms(deadline),
        )
        response, _ = await core.send(node, request, deadline, min_version=need)
        out: dict[TopicPartition, Outcome[ListOffsetsResultInfo]] = {}
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                outcome = outcome_for(p.error_code, None, topic=t.name, partition=p.partition_index)
                if p.error_code in _STALE_LEADER:
                    # The cached leader is wrong: forget it, so the refreshed metadata's
                    # leader is taken whatever its epoch (ClusterMetadata.forget_leader).
                    core.metadata.forget_leader(t.name, p.partition_index)
                out[tp] = outcome if outcome is not None else ListOffsetsResultInfo(
                    p.offset, p.timestamp, p.leader_epoch if p.leader_epoch >= 0 else None)
        return out

    return await core.run_batch("list_offsets", list(wanted), core.route_leaders, send, timeout)


def _spec(s: OffsetSpec | str | int) -> OffsetSpec:
    if isinstance(s, OffsetSpec):
        return s
    if isinstance(s, bool):
        raise ConfigError(f"not an offset spec: {s!r}")
    if isinstance(s, int):
        return OffsetSpec.for_timestamp(s)
    name = str(s).strip().lower().replace("-", "_")
    factory = getattr(OffsetSpec, name, None)
    if name in ("latest", "earliest", "max_timestamp", "earliest_local", "latest_tiered") and factory:
        spec: OffsetSpec = factory()  # one of OffsetSpec's named constructors
        return spec
    raise ConfigError(f"unknown offset spec {s!r} (earliest, latest, max_timestamp, or a timestamp in ms)")


def _isolation(level: IsolationLevel | str) -> int:
    if isinstance(level, str):
        try:
            return int(IsolationLevel[level.upper()])
        except KeyError:
            raise ConfigError(f"isolation_level must be read_uncommitted or read_committed, got {level!r}") from None
    return int(level)


async def delete_records(core: AdminCore, before: Mapping[TopicPartition, int], *,
                         timeout: float | None = None) -> AdminResult[TopicPartition, DeletedRecords]:
    """Delete records before the given offsets (-1: the high watermark, i.e. everything).

    Each partition's result is its new low watermark.
    """
    wanted = {TopicPartition(*tp): int(o) for tp, o in before.items()}
    for tp, offset in wanted.items():
        if offset < -1:
            raise ConfigError(f"delete_records offset for {tp} must be >= -1, got {offset}")

    async def send(node: int, items: list[TopicPartition], deadline: float) -> Mapping[TopicPartition, Outcome[DeletedRecords]]:
        request = DeleteRecordsRequest(
            topics=[DeleteRecordsRequestDeleteRecordsTopic(name=t, partitions=[
                DeleteRecordsRequestDeleteRecordsPartition(partition_index=tp.partition, offset=wanted[tp])
                for tp in tps]) for t, tps in _group_by_topic(items).items()],
            timeout_ms=core.remaining_ms(deadline),
        )
        response, _ = await core.send(node, request, deadline)
        out: dict[TopicPartition, Outcome[DeletedRecords]] = {}
        for t in response.topics:
            for p in t.partitions:
                outcome = outcome_for(p.error_code, None, topic=t.name, partition=p.partition_index)
                out[TopicPartition(t.name, p.partition_index)] = (
                    outcome if outcome is not None else DeletedRecords(p.low_watermark))
        return out

    return await core.run_batch("delete_records", list(wanted), core.route_leaders, send, timeout)
