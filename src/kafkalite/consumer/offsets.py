"""Offset requests of the consumer: ListOffsets, OffsetFetch and OffsetCommit (asyncio).

* :meth:`OffsetsClient.list_offsets` asks partition leaders for the offset at a
  timestamp (or the earliest / latest one); used by ``auto.offset.reset``,
  ``beginning_offsets``, ``end_offsets`` and ``offsets_for_times``. Stale-leader errors
  refresh metadata and retry until the deadline.
* :meth:`OffsetsClient.fetch_committed` reads a group's committed offsets from the
  group coordinator (``require_stable``, KIP-447: offsets of an open transaction are
  retried rather than returned stale).
* :meth:`OffsetsClient.start_commit` / :meth:`OffsetsClient.finish_commit` store
  offsets in two steps (written under the caller's ordering lock, awaited outside it);
  each partition's error becomes a typed error naming the partition. Group errors
  (generation, member, rebalance) keep their code: the group member classes them
  (``ConsumerCore.commit``).

The committed offset is the NEXT offset to read, as in every Kafka client. Requests to
the coordinator go on its own channel (``COORDINATOR_CHANNEL``) so that they never wait
behind a long fetch.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from kafkalite.backoff import ExponentialBackoff
from kafkalite.config import Config
from kafkalite.errors import (
    ApiError,
    CommitFailedError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    error_for_code,
)
from kafkalite.net.client import COORDINATOR_CHANNEL, NetworkClient
from kafkalite.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestListOffsetsPartition,
    ListOffsetsRequestListOffsetsTopic,
)
from kafkalite.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
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

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3

# Error codes handled by name below.
_NOT_COORDINATOR = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_COORDINATOR_MOVED = {15, 16}
_REBALANCE_IN_PROGRESS = 27
_GROUP_MEMBER_GONE = {22, 25, 110}  # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH
_UNSTABLE_OFFSET_COMMIT = 88
_UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
_STALE_METADATA = {3, 5, 6, 9, 56, 74, 75, 100, 103}


class ListedOffset(NamedTuple):
    offset: int
    timestamp: int
    leader_epoch: int | None


class Generation(NamedTuple):
    """Who commits: the group generation (classic) or member epoch (KIP-848)."""

    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


def _deadline(timeout_s: float) -> float:
    return time.monotonic() + timeout_s


def _remaining(deadline: float) -> float:
    return max(0.001, deadline - time.monotonic())


class OffsetsClient:
    """ListOffsets / OffsetFetch / OffsetCommit for one consumer."""

    def __init__(self, client: NetworkClient, cfg: Config, group_id: str | None) -> None:
        self.client = client
        self.cfg = cfg
        self.group_id = group_id
        self.isolation_level = 1 if cfg["isolation.level"] == "read_committed" else 0
        self._backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])

    # ------------------------------------------------------------ ListOffsets

    async def list_offsets(self, timestamps: Mapping[TopicPartition, int], timeout_s: float,
                           *, isolation_level: int | None = None) -> dict[TopicPartition, ListedOffset | None]:
        """Offsets at ``timestamps`` (ms, or EARLIEST_TIMESTAMP / LATEST_TIMESTAMP).

        None for a partition means no record at or after the timestamp.
        """
        deadline = _deadline(timeout_s)
        pending = dict(timestamps)
        result: dict[TopicPartition, ListedOffset | None] = {}
        attempt = 0
        level = self.isolation_level if isolation_level is None else isolation_level
        last_error: KafkaError | None = None
        while pending:
            meta = self.client.metadata
            missing = {tp.topic for tp in pending if meta.leader_for(tp.topic, tp.partition) is None}
            if missing:
                await self._refresh(missing, deadline)
                meta = self.client.metadata
            by_leader: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
            for tp, ts in pending.items():
                leader = meta.leader_for(tp.topic, tp.partition)
                if leader is None:
                    if meta.partition_count(tp.topic) is not None and tp.partition >= (meta.partition_count(tp.topic) or 0):
                        raise error_for_code(3, f"partition {tp.partition} does not exist in topic {tp.topic!r}",
                                             topic=tp.topic, partition=tp.partition)
                    continue
                by_leader[leader][tp] = ts
            results = await asyncio.gather(
                *(self._list_from(node, parts, level, deadline) for node, parts in by_leader.items()),
                return_exceptions=True,
            )
            retry_topics: set[str] = set()
            for outcome in results:
                if isinstance(outcome, BaseException):
                    if isinstance(outcome, (KafkaConnectionError, KafkaTimeoutError)):
                        last_error = outcome
                        continue
                    raise outcome
                done, retry, err = outcome
                result.update(done)
                for tp in done:
                    pending.pop(tp, None)
                retry_topics.update(tp.topic for tp in retry)
                if err is not None:
                    last_error = err
            if not pending:
                break
            attempt += 1
            delay = self._backoff.delay_s(attempt - 1)
            if time.monotonic() + delay >= deadline:
                names = ", ".join(sorted(f"{tp.topic}-{tp.partition}" for tp in pending))
                raise KafkaTimeoutError(
                    f"could not list offsets of {names} within {timeout_s:.1f}s"
                    + (f": {last_error}" if last_error else "")
                )
            await asyncio.sleep(delay)
            await self._refresh({tp.topic for tp in pending} | retry_topics, deadline)
        return result

    async def _refresh(self, topics: set[str], deadline: float) -> None:
        try:
            await self.client.refresh_metadata(topics, timeout_s=_remaining(deadline))
        except KafkaTimeoutError:
            pass

    async def _list_from(self, node: int, parts: dict[TopicPartition, int], level: int, deadline: float
                         ) -> tuple[dict[TopicPartition, ListedOffset | None], list[TopicPartition], KafkaError | None]:
        meta = self.client.metadata
        topics: dict[str, list[ListOffsetsRequestListOffsetsPartition]] = defaultdict(list)
        for tp, ts in parts.items():
            topics[tp.topic].append(ListOffsetsRequestListOffsetsPartition(
                partition_index=tp.partition, current_leader_epoch=meta.leader_epoch(tp.topic, tp.partition),
                timestamp=ts))
        request = ListOffsetsRequest(
            replica_id=-1, isolation_level=level,
            topics=[ListOffsetsRequestListOffsetsTopic(name=t, partitions=p) for t, p in topics.items()],
            timeout_ms=int(_remaining(deadline) * 1000),
        )
        conn = await asyncio.wait_for(self.client.connection(node), _remaining(deadline))
        version = conn.api_version(ListOffsetsRequest)
        if any(ts == MAX_TIMESTAMP for ts in parts.values()) and version < 7:
            raise error_for_code(35, "the broker does not support listing the max timestamp offset")
        response = await conn.request(request, api_version=version,
                                      timeout_ms=min(self.cfg["request.timeout.ms"], _remaining(deadline) * 1000))
        done: dict[TopicPartition, ListedOffset | None] = {}
        retry: list[TopicPartition] = []
        err: KafkaError | None = None
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if tp not in parts:
                    continue
                code = p.error_code
                if code == 0:
                    if p.offset < 0:
                        done[tp] = None
                    else:
                        done[tp] = ListedOffset(p.offset, p.timestamp, p.leader_epoch if p.leader_epoch >= 0 else None)
                elif code == _UNSUPPORTED_FOR_MESSAGE_FORMAT:
                    done[tp] = None
                else:
                    exc = error_for_code(code, "listing offsets failed", topic=tp.topic, partition=tp.partition)
                    if exc.retriable or code in _STALE_METADATA:
                        retry.append(tp)
                        err = exc
                    else:
                        raise exc
        return done, retry, err

    # ------------------------------------------------------------ OffsetFetch

    async def coordinator(self, deadline: float) -> int:
        assert self.group_id is not None
        return await self.client.find_coordinator(self.group_id, timeout_s=_remaining(deadline))

    async def fetch_committed(self, partitions: Iterable[TopicPartition], timeout_s: float,
                              generation: Generation | None = None,
                              ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where nothing is committed)."""
        assert self.group_id is not None
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        deadline = _deadline(timeout_s)
        attempt = 0
        while True:
            try:
                return await self._fetch_committed_once(wanted, deadline, generation)
            except (KafkaConnectionError, KafkaTimeoutError, asyncio.TimeoutError, ApiError) as exc:
                if isinstance(exc, ApiError) and not exc.retriable:
                    raise
                if (isinstance(exc, ApiError) and exc.code in _COORDINATOR_MOVED) or isinstance(exc, KafkaConnectionError):
                    self.client.invalidate_coordinator(self.group_id)
                attempt += 1
                delay = self._backoff.delay_s(attempt - 1)
                if time.monotonic() + delay >= deadline:
                    raise KafkaTimeoutError(
                        f"could not fetch committed offsets of group {self.group_id!r} within {timeout_s:.1f}s: {exc}",
                        group_id=self.group_id,
                    ) from None
                await asyncio.sleep(delay)

    async def _fetch_committed_once(self, wanted: list[TopicPartition], deadline: float,
                                    generation: Generation | None) -> dict[TopicPartition, OffsetAndMetadata | None]:
        node = await self.coordinator(deadline)
        conn = await asyncio.wait_for(self.client.connection(node, COORDINATOR_CHANNEL), _remaining(deadline))
        version = conn.api_version(OffsetFetchRequest)
        meta = self.client.metadata
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in wanted:
            by_topic[tp.topic].append(tp.partition)
        ids = {t: meta.topic_id(t) for t in by_topic}
        if version >= 10 and any(i == ZERO_UUID for i in ids.values()):
            version = 9
        if version >= 8:
            group = OffsetFetchRequestGroup(
                group_id=self.group_id or "",
                topics=[OffsetFetchRequestTopics(name=t, topic_id=ids[t], partition_indexes=p) for t, p in by_topic.items()],
            )
            if version >= 9 and generation is not None and generation.generation_id >= 0 and generation.member_id:
                group.member_id = generation.member_id
                group.member_epoch = generation.generation_id
            request = OffsetFetchRequest(groups=[group], require_stable=version >= 7)
        else:
            request = OffsetFetchRequest(
                group_id=self.group_id or "",
                topics=[OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in by_topic.items()],
                require_stable=version >= 7,
            )
        response = await conn.request(request, api_version=version,
                                      timeout_ms=min(self.cfg["request.timeout.ms"], _remaining(deadline) * 1000))
        topics: list[OffsetFetchResponseTopics] | list[OffsetFetchResponseTopic]
        if version >= 8:
            g = response.groups[0]
            if g.error_code:
                raise error_for_code(g.error_code, "fetching committed offsets failed", group_id=self.group_id)
            topics = g.topics
        else:
            if response.error_code:
                raise error_for_code(response.error_code, "fetching committed offsets failed", group_id=self.group_id)
            topics = response.topics
        names_by_id = {v: k for k, v in ids.items()}
        out: dict[TopicPartition, OffsetAndMetadata | None] = {}
        for t in topics:
            name = t.name or names_by_id.get(getattr(t, "topic_id", ZERO_UUID), "")
            for p in t.partitions:
                tp = TopicPartition(name, p.partition_index)
                if p.error_code:
                    exc = error_for_code(p.error_code, "fetching the committed offset failed",
                                         topic=tp.topic, partition=tp.partition, group_id=self.group_id)
                    raise exc
                if p.committed_offset >= 0:
                    epoch = p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None
                    out[tp] = OffsetAndMetadata(p.committed_offset, p.metadata or "", epoch)
                else:
                    out[tp] = None
        for tp in wanted:
            out.setdefault(tp, None)
        return out

    # ------------------------------------------------------------ OffsetCommit

    def retry_delay_s(self, attempt: int) -> float:
        """The backoff before retry number ``attempt`` (1-based) of a request."""
        return self._backoff.delay_s(attempt - 1)

    async def start_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], generation: Generation,
                           deadline: float) -> tuple[asyncio.Future[OffsetCommitResponse], dict[uuid.UUID, str]]:
        """Find the coordinator and write the OffsetCommit request; returns its response future.

        Callers that need commits to reach the broker in order call this under one lock
        and await :meth:`finish_commit` outside it.
        """
        try:
            node = await self.coordinator(deadline)
            conn = await asyncio.wait_for(self.client.connection(node, COORDINATOR_CHANNEL), _remaining(deadline))
        except asyncio.TimeoutError:
            raise KafkaTimeoutError(f"the coordinator of group {self.group_id!r} was not reachable in time",
                                    group_id=self.group_id) from None
        version = conn.api_version(OffsetCommitRequest)
        meta = self.client.metadata
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = defaultdict(list)
        for tp, om in offsets.items():
            if om.offset < 0:
                raise CommitFailedError(f"cannot commit negative offset {om.offset} for {tp.topic}-{tp.partition}",
                                        topic=tp.topic, partition=tp.partition, group_id=self.group_id)
            by_topic[tp.topic].append(OffsetCommitRequestPartition(
                partition_index=tp.partition, committed_offset=om.offset,
                committed_leader_epoch=om.leader_epoch if om.leader_epoch is not None else -1,
                committed_metadata=om.metadata or ""))
        ids: dict[str, uuid.UUID] = {t: meta.topic_id(t) for t in by_topic}
        if version >= 10 and any(i == ZERO_UUID for i in ids.values()):
            version = 9
        request = OffsetCommitRequest(
            group_id=self.group_id or "",
            generation_id_or_member_epoch=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=generation.group_instance_id,
            topics=[OffsetCommitRequestTopic(name=t, topic_id=ids[t], partitions=p) for t, p in by_topic.items()],
        )
        future = conn.send(request, api_version=version,
                           timeout_ms=min(self.cfg["request.timeout.ms"], _remaining(deadline) * 1000))
        return future, {v: k for k, v in ids.items()}

    async def finish_commit(self, pending: tuple[asyncio.Future[OffsetCommitResponse], dict[uuid.UUID, str]],
                            offsets: Mapping[TopicPartition, OffsetAndMetadata], generation: Generation) -> None:
        """Await the response written by :meth:`start_commit` and raise its errors."""
        future, names_by_id = pending
        try:
            response = await future
        except KafkaConnectionError:
            if self.group_id is not None:
                self.client.invalidate_coordinator(self.group_id)
            raise
        first: ApiError | None = None
        failed: list[str] = []
        for t in response.topics:
            name = t.name or names_by_id.get(getattr(t, "topic_id", ZERO_UUID), "")
            for p in t.partitions:
                if p.error_code and first is None:
                    first = error_for_code(p.error_code, "offset commit failed", topic=name,
                                           partition=p.partition_index, group_id=self.group_id)
                if p.error_code:
                    failed.append(f"{name}-{p.partition_index}")
        if first is None:
            return
        code = first.code
        if code in _COORDINATOR_MOVED and self.group_id is not None:
            self.client.invalidate_coordinator(self.group_id)
        if code in _GROUP_MEMBER_GONE or code == _REBALANCE_IN_PROGRESS:
            # The group member (if any) decides what these mean (see
            # ConsumerCore.commit); the broker's error keeps its code for it.
            raise error_for_code(code, f"commit of {', '.join(failed)} with generation "
                                       f"{generation.generation_id} failed", group_id=self.group_id)
        raise first
