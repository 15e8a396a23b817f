"""A 3-node LocalCluster of the session's release (ZooKeeper or KRaft): a node killed,
another paused, both back, and an acks=all producer and a consumer losing nothing."""

from __future__ import annotations

import os

import pytest

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.testing.cluster import LocalCluster
from kafkalite.testing.topics import unique_topic_name
from tests.matrix.support import wait_until


def wait_for_isr(cluster: LocalCluster, topic: str, size: int) -> None:
    from kafkalite import AdminClient

    with AdminClient({"bootstrap.servers": cluster.live_bootstrap()}) as admin:
        wait_until(lambda: all(len(p.isr) >= size for p in admin.describe_topics([topic])[topic].result().partitions),
                   180, f"{size} in-sync replicas of {topic}")

pytestmark = [pytest.mark.broker, pytest.mark.cluster]


@pytest.mark.timeout(600)
def test_a_three_node_cluster_survives_a_kill_and_a_pause(kafka_broker) -> None:
    with LocalCluster(3, kafka_broker.version, mode=os.environ.get("KAFKALITE_KAFKA_MODE") or None) as cluster:
        topic = cluster.create_topic(unique_topic_name("cluster"), partitions=1, replication_factor=3,
                                     configs={"min.insync.replicas": "2"})
        sent = 0
        with Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                       "delivery.timeout.ms": 120_000}) as producer:
            def send(n: int) -> None:
                nonlocal sent
                futures = [producer.send(topic, b"%d" % (sent + i)) for i in range(n)]
                for f in futures:
                    f.result(150)
                sent += n

            send(50)
            victim = cluster.leader(topic, 0)
            victim.kill()
            send(50)  # the new leader takes over (ZooKeeper: once the victim's session expires)
            victim.restart()
            wait_for_isr(cluster, topic, 3)
            leader = cluster.leader(topic, 0)
            follower = next(b for b in cluster if b is not leader)
            follower.pause()
            assert follower.is_paused
            follower.resume()
            cluster.wait_ready()
            wait_for_isr(cluster, topic, 3)
            send(50)
        tp = TopicPartition(topic, 0)
        with Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": unique_topic_name("cluster")}) as c:
            c.assign([tp])
            c.seek(tp, 0)
            seen: list = []
            wait_until(lambda: seen.extend(c.poll(0.5)) or len(seen) >= sent, 120, f"{sent} records")
        assert [int(r.value) for r in seen] == list(range(sent))
