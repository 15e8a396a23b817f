"""The fetcher's planning pass (Fetcher._plan) and its backoff after a failed fetch, without a broker.

Once per fetch answer it walks every assigned partition (10,000 at a time in the
many-partitions benchmark, issue 15): per partition the leader, leader epoch and topic
id come from the cluster metadata, partitions are grouped by leader, and a partition
whose topic has no leader asks for metadata instead.
"""

from __future__ import annotations

import time
import uuid

from kafkalite.consumer._frontend import resolve_settings
from kafkalite.consumer.fetch_buffer import FetchBuffer
from kafkalite.consumer.fetcher import Fetcher
from kafkalite.consumer.subscription import SubscriptionState
from kafkalite.net.cluster import ClusterMetadata
from kafkalite.protocol.messages.fetch import FetchResponse
from kafkalite.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkalite.protocol.primitives import ZERO_UUID
from kafkalite.types import TopicPartition

IDS = {"a": uuid.uuid4(), "b": uuid.uuid4()}


class _Client:
    def __init__(self, metadata: ClusterMetadata) -> None:
        self.metadata = metadata


def _metadata(leaders: dict[str, list[int]]) -> ClusterMetadata:
    topics = [
        MetadataResponseTopic(error_code=0, name=name, topic_id=IDS[name], is_internal=False, partitions=[
            MetadataResponsePartition(error_code=0, partition_index=i, leader_id=leader, leader_epoch=7,
                                      replica_nodes=[leader], isr_nodes=[leader], offline_replicas=[])
            for i, leader in enumerate(per_partition)])
        for name, per_partition in leaders.items()
    ]
    brokers = [MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9000 + n, rack=None) for n in (1, 2)]
    meta = ClusterMetadata()
    meta.update(MetadataResponse(throttle_time_ms=0, brokers=brokers, cluster_id="c", controller_id=1,
                                 topics=topics), None, 0.0)
    return meta


def _fetcher(meta: ClusterMetadata, partitions: list[TopicPartition]) -> tuple[Fetcher, list[set[str]]]:
    subs = SubscriptionState()
    subs.assign_from_user(partitions)
    for i, tp in enumerate(partitions):
        subs.set_position_if_unset(tp, 100 + i, leader_epoch=7)  # as from a committed offset
    needed: list[set[str]] = []
    fetcher = Fetcher(_Client(meta), subs, FetchBuffer(), resolve_settings({"bootstrap.servers": "x:1"}, {}),
                      lambda: None, lambda *a: None, needed.append)
    return fetcher, needed


def test_partitions_are_grouped_by_leader_with_their_topic_ids_offsets_and_epochs() -> None:
    meta = _metadata({"a": [1, 2, 1], "b": [2, 2]})
    partitions = [TopicPartition("a", p) for p in range(3)] + [TopicPartition("b", p) for p in range(2)]
    fetcher, needed = _fetcher(meta, partitions)
    plans, delay = fetcher._plan()
    assert delay is None and needed == []
    assert {node: sorted(wanted) for node, (wanted, _) in plans.items()} == {
        1: [TopicPartition("a", 0), TopicPartition("a", 2)],
        2: [TopicPartition("a", 1), TopicPartition("b", 0), TopicPartition("b", 1)],
    }
    data = plans[2][0][TopicPartition("b", 1)]
    assert (data.topic_id, data.fetch_offset, data.current_leader_epoch) == (IDS["b"], 104, 7)
    assert plans[1][0][TopicPartition("a", 2)].fetch_offset == 102
    # Planned partitions and their leaders are in flight: a second pass plans nothing.
    assert fetcher._plan()[0] == {}


def test_a_partition_without_metadata_asks_for_it_and_the_others_are_still_planned() -> None:
    meta = _metadata({"a": [1, -1]})
    partitions = [TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("gone", 0)]
    fetcher, needed = _fetcher(meta, partitions)
    plans, _ = fetcher._plan()
    assert list(plans) == [1] and list(plans[1][0]) == [TopicPartition("a", 0)]
    assert needed == [{"a", "gone"}]  # a leaderless partition and an unknown topic


def test_a_preferred_read_replica_is_fetched_from_even_when_its_topic_metadata_is_gone() -> None:
    # KIP-392: the replica's lease outlives a metadata answer without the topic; the
    # fetch goes on by topic name (topic id zero makes the request use Fetch v12).
    meta = _metadata({"a": [1]})
    fetcher, _ = _fetcher(meta, [TopicPartition("gone", 0)])
    state = fetcher.subs.state(TopicPartition("gone", 0))
    state.preferred_read_replica = 2
    state.preferred_replica_expires = float("inf")
    plans, _ = fetcher._plan()
    assert plans[2][0][TopicPartition("gone", 0)].topic_id == ZERO_UUID


def _fail_whole_fetch(fetcher: Fetcher, node: int, error_code: int) -> float | None:
    """Hand the fetcher an answer whose top-level error failed the whole fetch; the time
    it may fetch from the node again (None: at once)."""
    answer = FetchResponse(throttle_time_ms=0, error_code=error_code, session_id=0, responses=[], node_endpoints=[])
    fetcher._handle(node, fetcher._session(node), {}, {}, answer, 16, 0.0)
    return fetcher._retry_at.get(node)


def test_a_fetch_failed_as_a_whole_is_retried_after_a_backoff_that_grows() -> None:
    # A top-level error asked again at once repeats as fast as the broker answers (seen:
    # ~500 Fetches a second, each UNKNOWN_SERVER_ERROR); retry.backoff.ms .. .max.ms.
    fetcher, _ = _fetcher(_metadata({"a": [1]}), [TopicPartition("a", 0)])
    before = time.monotonic()
    first = _fail_whole_fetch(fetcher, 1, -1)  # UNKNOWN_SERVER_ERROR
    assert first is not None and first - before >= 0.1 * 0.8  # retry.backoff.ms 100, jitter 20 %
    second = _fail_whole_fetch(fetcher, 1, -1)
    assert second is not None and second - before >= 0.2 * 0.8
    assert fetcher._top_level_failures[1] == 2


def test_a_fetch_session_error_is_fetched_again_at_once_the_first_time_only() -> None:
    # KIP-227: FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH are settled by the
    # next request (a new session); the same again means something else is wrong.
    fetcher, _ = _fetcher(_metadata({"a": [1]}), [TopicPartition("a", 0)])
    assert _fail_whole_fetch(fetcher, 1, 70) is None
    assert _fail_whole_fetch(fetcher, 1, 71) is not None
    fetcher._retry_at.clear()
    # A good answer ends the run of failures: the next session error is again asked at once.
    ok = FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[], node_endpoints=[])
    fetcher._handle(1, fetcher._session(1), {}, {}, ok, 16, 0.0)
    assert 1 not in fetcher._top_level_failures
    assert _fail_whole_fetch(fetcher, 1, 70) is None
