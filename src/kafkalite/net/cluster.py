"""What the client knows of the cluster: brokers, topics, partitions, leaders (no I/O).

Updated from Metadata responses by the network client; read by the producer's
partitioner and sender, the consumer's fetcher and the admin client. Partition leader
epochs only move forward: a response from a broker that lags behind (an older epoch for
a partition) does not overwrite newer knowledge (KIP-320), with two exceptions that keep
a bad value from sticking for good: a partition whose leader was forgotten (after
NOT_LEADER_OR_FOLLOWER) takes the next answer's leader, and a cached epoch that answers
keep contradicting for a while gives way (see :meth:`ClusterMetadata.update`).

Example::

    meta = ClusterMetadata()
    meta.update(metadata_response, requested_topics={"orders"}, now=time.monotonic())
    meta.leader_for("orders", 0)         # node id or None
    meta.partition_count("orders")       # 6
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from kafkalite.protocol.messages.metadata import MetadataResponse
from kafkalite.protocol.primitives import ZERO_UUID

log = logging.getLogger("kafkalite.net")

NO_LEADER = -1

#: How long, and by how many Metadata answers, a cached leader epoch must have been
#: contradicted (every answer naming an older epoch) before it gives way; see
#: :meth:`ClusterMetadata.update`. A broker's metadata lags the controller's by moments,
#: not by this long.
STALE_EPOCH_GIVE_UP_S = 10.0
STALE_EPOCH_GIVE_UP_ANSWERS = 5


@dataclass(frozen=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(slots=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    error_code: int = 0
    # Answers with an older leader epoch that this entry outlived (KIP-320), and since
    # when: bookkeeping of ClusterMetadata.update, not part of the metadata.
    contradicted: int = field(default=0, compare=False, repr=False)
    contradicted_since: float = field(default=0.0, compare=False, repr=False)


@dataclass
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: dict[int, PartitionMetadata] = field(default_factory=dict)
    error_code: int = 0

    @property
    def partition_count(self) -> int:
        return len(self.partitions)


class ClusterMetadata:
    """A snapshot of cluster metadata, updated in place; ``version`` counts updates."""

    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.controller_id: int = -1
        self.brokers: dict[int, BrokerNode] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self.topic_errors: dict[str, int] = {}
        self.names_by_id: dict[uuid.UUID, str] = {}
        self.version = 0
        self.last_update = 0.0
        self.last_full_update = 0.0

    # ------------------------------------------------------------ update

    def update(self, response: MetadataResponse, requested_topics: set[str] | None, now: float) -> None:
        """Apply a MetadataResponse.

        ``requested_topics`` None means the request asked for all topics: topics missing
        from the answer were deleted. Otherwise only the named topics are replaced.
        """
        self.cluster_id = response.cluster_id
        self.controller_id = response.controller_id
        if response.brokers:
            self.brokers = {
                b.node_id: BrokerNode(b.node_id, b.host, b.port, b.rack) for b in response.brokers
            }
        if requested_topics is None:
            seen = set()
        for t in response.topics:
            name = t.name
            if name is None:  # topic requested by id only
                name = self.names_by_id.get(t.topic_id)
                if name is None:
                    continue
            if t.error_code:
                self.topic_errors[name] = t.error_code
                # Keep what we knew while a leader election is in progress; forget a
                # topic that the broker says does not exist.
                if name in self.topics and t.error_code not in _TRANSIENT_TOPIC_ERRORS:
                    self._drop(name)
                continue
            self.topic_errors.pop(name, None)
            old = self.topics.get(name)
            topic = TopicMetadata(name, t.topic_id or ZERO_UUID, t.is_internal)
            for p in t.partitions:
                # The decoded lists are this answer's own (nothing else keeps it): no copies,
                # which with 10,000 partitions were a fifth of applying it (issue 15).
                new = PartitionMetadata(
                    name, p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes,
                    p.isr_nodes, p.offline_replicas, p.error_code,
                )
                if old is not None and old.topic_id == topic.topic_id:
                    prev = old.partitions.get(p.partition_index)
                    if prev is not None and prev.leader_epoch > new.leader_epoch >= 0 and _outlives(prev, new, now):
                        new = prev  # stale answer from a lagging broker (KIP-320)
                topic.partitions[p.partition_index] = new
            if old is not None and old.topic_id != topic.topic_id:
                self.names_by_id.pop(old.topic_id, None)
            self.topics[name] = topic
            if topic.topic_id != ZERO_UUID:
                self.names_by_id[topic.topic_id] = name
            if requested_topics is None:
                seen.add(name)
        if requested_topics is None:
            for name in list(self.topics):
                if name not in seen:
                    self._drop(name)
            self.last_full_update = now
        self.version += 1
        self.last_update = now

    def forget(self, name: str) -> None:
        """Drop what is known of topic ``name`` (the producer's metadata.max.idle.ms)."""
        self._drop(name)
        self.topic_errors.pop(name, None)

    def _drop(self, name: str) -> None:
        topic = self.topics.pop(name, None)
        if topic is not None:
            self.names_by_id.pop(topic.topic_id, None)

    def forget_leader(self, topic: str, partition: int) -> None:
        """Mark a leader as unknown after NOT_LEADER_OR_FOLLOWER until metadata says more.

        The next Metadata answer's leader replaces it whatever its epoch (see
        :meth:`update`): were it stale, that leader answers NOT_LEADER_OR_FOLLOWER or
        FENCED_LEADER_EPOCH in turn and metadata is asked again."""
        meta = self.topics.get(topic)
        if meta is not None and partition in meta.partitions:
            meta.partitions[partition].leader = NO_LEADER

    def update_leader(self, topic: str, partition: int, leader: int, leader_epoch: int) -> bool:
        """Apply a leader hint from a Produce/Fetch response (KIP-951); True if it was newer.

        As Java's ``Metadata.updatePartitionLeadership``, a hint naming a broker that
        neither the response's endpoints (added first by the caller) nor metadata know is
        ignored."""
        meta = self.topics.get(topic)
        if meta is None or partition not in meta.partitions or leader < 0 or leader not in self.brokers:
            return False
        p = meta.partitions[partition]
        if leader_epoch > p.leader_epoch:
            p.leader, p.leader_epoch = leader, leader_epoch
            p.contradicted = 0
            self.version += 1
            return True
        return False

    def add_broker(self, node: BrokerNode) -> None:
        self.brokers[node.node_id] = node

    # ------------------------------------------------------------ queries

    def broker(self, node_id: int) -> BrokerNode | None:
        return self.brokers.get(node_id)

    def topic(self, name: str) -> TopicMetadata | None:
        return self.topics.get(name)

    def topic_id(self, name: str) -> uuid.UUID:
        meta = self.topics.get(name)
        return meta.topic_id if meta else ZERO_UUID

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.names_by_id.get(topic_id)

    def partition_count(self, name: str) -> int | None:
        meta = self.topics.get(name)
        return meta.partition_count if meta else None

    def partitions_for(self, name: str) -> list[PartitionMetadata]:
        meta = self.topics.get(name)
        return [meta.partitions[p] for p in sorted(meta.partitions)] if meta else []

    def available_partitions(self, name: str) -> list[int]:
        """Partitions with a live leader (those unkeyed records can go to)."""
        meta = self.topics.get(name)
        if meta is None:
            return []
        return [p for p, m in sorted(meta.partitions.items()) if m.leader >= 0 and m.leader in self.brokers]

    def leader_for(self, name: str, partition: int) -> int | None:
        meta = self.topics.get(name)
        if meta is None:
            return None
        p = meta.partitions.get(partition)
        if p is None or p.leader < 0:
            return None
        return p.leader

    def leader_epoch(self, name: str, partition: int) -> int:
        meta = self.topics.get(name)
        p = meta.partitions.get(partition) if meta else None
        return p.leader_epoch if p else -1


def _outlives(prev: PartitionMetadata, new: PartitionMetadata, now: float) -> bool:
    """Whether cached ``prev`` stays against ``new``, an answer with an older leader epoch.

    KIP-320 keeps the cached entry: the answer comes from a broker whose metadata lags
    (Java's ``Metadata.updateLatestMetadata`` keeps the cached partition, librdkafka's
    ``rd_kafka_toppar_leader_update`` ignores the "outdated metadata update"). Neither
    has a way back from a cached epoch that no broker will ever reach (one from a damaged
    Metadata answer or KIP-951 leader hint, seen with the corrupting proxy of
    kafkalite.testing): every later answer looks stale and the partition keeps a leader
    that fences each request (UNKNOWN_LEADER_EPOCH) or none at all. Here:

    * a leaderless entry (forgotten after NOT_LEADER_OR_FOLLOWER, see
      :meth:`ClusterMetadata.forget_leader`) takes the answer: a leader beats none, and a
      stale one says NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH and metadata is asked
      again. Java does not forget the leader in the first place (it keeps the cached one
      and requests an update).
    * an epoch that answers have contradicted for :data:`STALE_EPOCH_GIVE_UP_S` and at
      least :data:`STALE_EPOCH_GIVE_UP_ANSWERS` times in a row gives way: a lagging
      broker catches up long before that.
    """
    if prev.leader < 0 <= new.leader:
        return False
    if prev.contradicted == 0:
        prev.contradicted_since = now
    prev.contradicted += 1
    if prev.contradicted >= STALE_EPOCH_GIVE_UP_ANSWERS and now - prev.contradicted_since >= STALE_EPOCH_GIVE_UP_S:
        log.warning("%s-%d: metadata answers have named leader epoch %d (leader %d), older than the cached %d "
                    "(leader %d), %d times over %.1f s: taking the answer", new.topic, new.partition,
                    new.leader_epoch, new.leader, prev.leader_epoch, prev.leader, prev.contradicted,
                    now - prev.contradicted_since)
        return False
    return True


# Topic errors that mean "ask again shortly" rather than "this topic is gone".
_TRANSIENT_TOPIC_ERRORS = {5, 6, 9, 56, 74, 75}  # LEADER_NOT_AVAILABLE, NOT_LEADER, REPLICA_NA, STORAGE, epochs
