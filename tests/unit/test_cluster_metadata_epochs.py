"""ClusterMetadata and leader epochs (KIP-320): a lagging broker's older epoch does not
overwrite newer knowledge, but a bad value must not stick for good.

Found with the network-fault test that corrupts the stream towards a consumer
(tests/integration/test_network_faults.py): a leader forgotten after NOT_LEADER stayed
forgotten while every answer named an older epoch than the cached one, and a cached
epoch that no broker would ever reach (a damaged answer or leader hint) made every later
answer look stale: the consumer refreshed metadata ten times a second and fetched
nothing."""

from __future__ import annotations

import uuid

from kafkalite.net.cluster import (
    STALE_EPOCH_GIVE_UP_ANSWERS,
    STALE_EPOCH_GIVE_UP_S,
    ClusterMetadata,
)
from kafkalite.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

TOPIC = "orders"
TOPIC_ID = uuid.UUID(int=7)


def answer(leader: int, epoch: int) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9000 + n) for n in (1, 2, 3)],
        topics=[MetadataResponseTopic(name=TOPIC, topic_id=TOPIC_ID, partitions=[MetadataResponsePartition(
            partition_index=0, leader_id=leader, leader_epoch=epoch, replica_nodes=[1, 2, 3],
            isr_nodes=[1, 2, 3])])])


def cached(leader: int, epoch: int, now: float = 0.0) -> ClusterMetadata:
    meta = ClusterMetadata()
    meta.update(answer(leader, epoch), {TOPIC}, now)
    return meta


def state(meta: ClusterMetadata) -> tuple[int | None, int]:
    return meta.leader_for(TOPIC, 0), meta.leader_epoch(TOPIC, 0)


def test_a_lagging_brokers_older_epoch_does_not_replace_a_known_leader() -> None:
    meta = cached(2, 5)
    meta.update(answer(1, 4), {TOPIC}, 1.0)
    assert state(meta) == (2, 5)
    meta.update(answer(3, 6), {TOPIC}, 2.0)  # newer: taken
    assert state(meta) == (3, 6)


def test_a_forgotten_leader_takes_the_next_answers_leader_whatever_its_epoch() -> None:
    meta = cached(2, 5)
    meta.forget_leader(TOPIC, 0)  # NOT_LEADER_OR_FOLLOWER from 2
    assert state(meta) == (None, 5)
    meta.update(answer(2, 4), {TOPIC}, 1.0)
    # A leader rather than none: were it stale, it says NOT_LEADER (or fences) again.
    assert state(meta) == (2, 4)
    meta.update(answer(3, 6), {TOPIC}, 2.0)
    assert state(meta) == (3, 6)


def test_an_answer_without_a_leader_does_not_replace_a_forgotten_one_with_an_older_epoch() -> None:
    meta = cached(2, 5)
    meta.forget_leader(TOPIC, 0)
    meta.update(answer(-1, 4), {TOPIC}, 1.0)
    assert state(meta) == (None, 5)


def test_a_cached_epoch_that_answers_keep_contradicting_gives_way() -> None:
    meta = cached(2, 1_000_000)  # e.g. from a damaged answer: no broker will reach it
    now = 0.0
    for _ in range(STALE_EPOCH_GIVE_UP_ANSWERS * 3):  # many answers, but too soon
        now += STALE_EPOCH_GIVE_UP_S / (STALE_EPOCH_GIVE_UP_ANSWERS * 4)
        meta.update(answer(2, 0), {TOPIC}, now)
        assert state(meta) == (2, 1_000_000)
    meta.update(answer(2, 0), {TOPIC}, 2 * STALE_EPOCH_GIVE_UP_S)
    assert state(meta) == (2, 0)
    meta.update(answer(1, 0), {TOPIC}, 2 * STALE_EPOCH_GIVE_UP_S + 0.1)  # the same epoch again: taken as usual
    assert state(meta) == (1, 0)


def test_a_long_time_alone_does_not_give_way_without_enough_answers() -> None:
    meta = cached(2, 9)
    for i in range(STALE_EPOCH_GIVE_UP_ANSWERS - 1):
        meta.update(answer(1, 8), {TOPIC}, (i + 1) * STALE_EPOCH_GIVE_UP_S)
    assert state(meta) == (2, 9)
    meta.update(answer(1, 8), {TOPIC}, STALE_EPOCH_GIVE_UP_ANSWERS * STALE_EPOCH_GIVE_UP_S)
    assert state(meta) == (1, 8)


def test_an_answer_that_agrees_starts_the_count_again() -> None:
    meta = cached(2, 9)
    for i in range(STALE_EPOCH_GIVE_UP_ANSWERS - 1):
        meta.update(answer(1, 8), {TOPIC}, float(i))
    meta.update(answer(2, 9), {TOPIC}, STALE_EPOCH_GIVE_UP_S / 2)  # a broker that caught up
    meta.update(answer(1, 8), {TOPIC}, STALE_EPOCH_GIVE_UP_S + 1)
    assert state(meta) == (2, 9)  # one contradiction since, not enough


def test_a_leader_hint_with_a_damaged_epoch_gives_way_too() -> None:
    meta = cached(2, 3)
    assert meta.update_leader(TOPIC, 0, 2, 2**30)  # KIP-951 hint: any newer epoch is taken
    now = 0.0
    while state(meta) != (2, 3) and now < 10 * STALE_EPOCH_GIVE_UP_S:
        now += 1.0
        meta.update(answer(2, 3), {TOPIC}, now)
    assert state(meta) == (2, 3)
    assert now >= STALE_EPOCH_GIVE_UP_S


def test_a_leader_hint_naming_an_unknown_broker_is_ignored() -> None:
    meta = cached(2, 3)
    assert not meta.update_leader(TOPIC, 0, 77, 4)  # Java's updatePartitionLeadership ignores it too
    assert state(meta) == (2, 3)
    assert meta.update_leader(TOPIC, 0, 3, 4)
    assert state(meta) == (3, 4)
