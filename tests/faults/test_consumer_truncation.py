"""KIP-320 on a 3-node cluster: the consumer notices a leader change and validates its
position; when an out-of-sync replica became leader (unclean election) and the log was
truncated below the position, it resets to the divergent offset (a reset policy) or
raises LogTruncationError (auto.offset.reset=none), as the Java client does."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kafkalite import AdminClient, Consumer, TopicPartition
from kafkalite.admin.ops_types import ElectionType
from kafkalite.admin.types import NewTopic
from kafkalite.errors import KafkaError, LogTruncationError
from kafkalite.testing.wire import KafkaSocket
from tests.integration.consumer_support import consume_n, produce, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _partition(bootstrap: str, topic: str) -> Any:
    try:
        with KafkaSocket.to(bootstrap) as conn:
            info = conn.metadata([topic]).topics.get(topic)
    except OSError:
        return None
    return info.partitions[0] if info is not None and not info.error_code and info.partitions else None


def _consumer(bootstrap: str, reset: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": reset, "metadata.max.age.ms": 2000,
                     "retry.backoff.ms": 100, "reconnect.backoff.max.ms": 500, "fetch.max.wait.ms": 200})


@pytest.mark.timeout(400)
def test_unclean_leader_truncates_below_the_position(kafka_cluster, unique_topic) -> None:
    old_leader, follower = kafka_cluster.node(1), kafka_cluster.node(2)
    tp = TopicPartition(unique_topic, 0)
    with AdminClient({"bootstrap.servers": kafka_cluster.bootstrap}) as admin:
        admin.create_topics([NewTopic(unique_topic, replica_assignment={0: [1, 2]}, config={
            "min.insync.replicas": "1", "unclean.leader.election.enable": "true"})], timeout=60).raise_on_error()
    wait_until(lambda: (p := _partition(kafka_cluster.bootstrap, unique_topic)) and p.leader == 1
               and sorted(p.isr) == [1, 2], 60, what="both replicas in sync")
    produce(kafka_cluster.bootstrap, unique_topic, [(b"k", b"both-%d" % i) for i in range(50)], batch_size=10)
    # The follower stops replicating; the controller (a majority of nodes 1 and 3) drops it
    # from the ISR once its session times out.
    follower.pause()
    wait_until(lambda: (p := _partition(kafka_cluster.live_bootstrap(), unique_topic)) and p.isr == [1],
               90, interval=0.5, what="the ISR to shrink to the leader")
    produce(kafka_cluster.live_bootstrap(), unique_topic, [(b"k", b"leader-only-%d" % i) for i in range(50)],
            batch_size=10, acks=1)

    resetting = _consumer(kafka_cluster.bootstrap, "earliest")
    strict = _consumer(kafka_cluster.bootstrap, "none")
    try:
        resetting.assign([tp])
        strict.assign([tp])
        strict.seek(tp, 0)
        first = consume_n(resetting, 100)
        consume_n(strict, 100)
        assert [r.offset for r in first] == list(range(100))
        epoch = first[-1].leader_epoch
        assert epoch is not None and resetting.position(tp) == 100

        # The only in-sync replica dies; the out-of-sync one comes back and is elected
        # uncleanly: offsets 50..99 are gone, new records take their offsets.
        old_leader.kill()
        follower.resume()

        def new_leader() -> bool:
            p = _partition(kafka_cluster.live_bootstrap(), unique_topic)
            if p is not None and p.leader == 2:
                return True
            try:
                with AdminClient({"bootstrap.servers": kafka_cluster.live_bootstrap()}) as admin:
                    admin.elect_leaders(ElectionType.UNCLEAN, [tp], timeout=10)
            except KafkaError:
                pass
            return False

        wait_until(new_leader, 120, interval=1.0, what="node 2 elected (unclean)")
        produce(kafka_cluster.live_bootstrap(), unique_topic, [(b"k", b"after-%d" % i) for i in range(10)],
                acks=1)

        # With a reset policy: the position moves back to the first divergent offset
        # and consumption goes on with the new leader's records, nothing skipped.
        after = consume_n(resetting, 10, timeout=120)
        assert [(r.offset, r.value) for r in after] == [(50 + i, b"after-%d" % i) for i in range(10)]
        assert all(r.leader_epoch is not None and r.leader_epoch > epoch for r in after)

        # With auto.offset.reset=none: a typed error naming the partition and offsets,
        # raised again until the application seeks.
        def truncation() -> LogTruncationError | None:
            try:
                strict.poll(0.5)
            except LogTruncationError as exc:
                return exc
            return None

        err = wait_until(truncation, 120, interval=0.1, what="LogTruncationError")
        assert err.topic == unique_topic and err.partition == 0
        assert err.context["offsets"] == {tp: 100}
        assert {t: (om.offset, om.leader_epoch) for t, om in err.divergent_offsets.items()} == {tp: (50, epoch)}
        assert f"{unique_topic}-0" in str(err) and "offset 100" in str(err) and "offset 50" in str(err)
        assert wait_until(truncation, 30, interval=0.1, what="the error again") is not None
        strict.seek(tp, err.divergent_offsets[tp].offset)
        assert [r.value for r in consume_n(strict, 10, timeout=60)] == [b"after-%d" % i for i in range(10)]
    finally:
        resetting.close(10)
        strict.close(10)


@pytest.mark.timeout(300)
def test_clean_leader_change_validates_without_reset(kafka_cluster, unique_topic, caplog) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1, 3, {"min.insync.replicas": "2"})
    tp = TopicPartition(topic, 0)
    produce(kafka_cluster.bootstrap, topic, [(b"k", b"v%d" % i) for i in range(100)], batch_size=20)
    caplog.set_level(logging.DEBUG, logger="kafkalite.consumer")
    with _consumer(kafka_cluster.bootstrap, "earliest") as consumer:
        consumer.assign([tp])
        first = consume_n(consumer, 100)
        assert [r.offset for r in first] == list(range(100))
        epoch = first[-1].leader_epoch
        leader = kafka_cluster.leader(topic, 0)
        caplog.clear()
        leader.kill()
        wait_until(lambda: (p := _partition(kafka_cluster.live_bootstrap(), topic)) and p.leader not in (-1, leader.node_id),
                   90, interval=0.5, what="a new leader")
        produce(kafka_cluster.live_bootstrap(), topic, [(b"k", b"v%d" % i) for i in range(100, 110)])
        after = consume_n(consumer, 10, timeout=120)
        # No reset (earliest would re-read from 0), nothing skipped.
        assert [(r.offset, r.value) for r in after] == [(i, b"v%d" % i) for i in range(100, 110)]
        assert after[0].leader_epoch is not None and after[0].leader_epoch > (epoch or 0)
    validated = [r.getMessage() for r in caplog.records if "says epoch" in r.getMessage()]
    assert validated, "the position was not validated with OffsetsForLeaderEpoch after the leader change"
    assert f"epoch {epoch} ends at offset" in validated[0] and "position 100" in validated[0]
    assert not [r for r in caplog.records if "Truncation detected" in r.getMessage()]
