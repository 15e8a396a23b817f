"""KIP-392 fetch from the closest replica, on a dedicated 3-node cluster with racks.

Each node has its own ``broker.rack`` and the brokers use Kafka's
``RackAwareReplicaSelector``; a consumer with ``client.rack`` is told by the leader to
read from the follower in its rack and does so (per-node fetch metrics show where the
bytes came from) until that replica fails, then goes back to the leader. Records are
the same either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite import AdminClient, Consumer, TopicPartition
from kafkalite.admin.types import NewTopic
from kafkalite.consumer.metrics import NODE
from kafkalite.testing.cluster import LocalCluster
from kafkalite.testing.pytest_plugin import KafkaTestSession
from kafkalite.testing.wire import KafkaSocket
from tests.integration.consumer_support import consume_n, produce, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


@pytest.fixture(scope="module")
def rack_cluster(kafkalite_session: KafkaTestSession) -> Iterator[LocalCluster]:
    """Nodes 1, 2, 3 in racks rack-1, rack-2, rack-3 (closed after this module)."""
    cluster = LocalCluster(
        3, run_dir=kafkalite_session.dir / "rack-cluster",
        extra_properties={"replica.selector.class": SELECTOR},
        node_properties={n: {"broker.rack": f"rack-{n}"} for n in (1, 2, 3)},
    )
    try:
        cluster.start(timeout=180)
        yield cluster
    finally:
        cluster.close(remove=False)


def _bytes_by_node(consumer: Consumer) -> dict[int, float]:
    out = {}
    for name, value in consumer.metrics().items():
        if name.group == NODE and name.name == "bytes-fetched-total":
            out[int(dict(name.tags)["node-id"].removeprefix("node-"))] = value
    return out


def _isr(cluster: LocalCluster, topic: str) -> list[int]:
    with KafkaSocket.to(cluster.live_bootstrap()) as conn:
        info = conn.metadata([topic]).topics.get(topic)
    return sorted(info.partitions[0].isr) if info is not None and info.partitions else []


@pytest.mark.timeout(420)
def test_reads_from_the_same_rack_follower_until_it_fails(rack_cluster: LocalCluster, unique_topic: str) -> None:
    tp = TopicPartition(unique_topic, 0)
    with AdminClient({"bootstrap.servers": rack_cluster.bootstrap}) as admin:
        admin.create_topics([NewTopic(unique_topic, replica_assignment={0: [1, 2, 3]})], timeout=60).raise_on_error()
    wait_until(lambda: _isr(rack_cluster, unique_topic) == [1, 2, 3], 60, what="all replicas in sync")
    assert rack_cluster.leader(unique_topic, 0).node_id == 1
    values = [b"r%d" % i for i in range(300)]
    produce(rack_cluster.bootstrap, unique_topic, [(b"k", v) for v in values[:200]], batch_size=20)

    consumer = Consumer({"bootstrap.servers": rack_cluster.bootstrap, "client.rack": "rack-2",
                         "auto.offset.reset": "earliest", "fetch.max.wait.ms": 200,
                         "reconnect.backoff.max.ms": 500, "retry.backoff.ms": 100})
    try:
        consumer.assign([tp])
        got = consume_n(consumer, 200, timeout=120)
        assert [(r.offset, r.value) for r in got] == list(enumerate(values[:200]))
        by_node = _bytes_by_node(consumer)
        fetches = consumer._core.metrics.fetches_by_node()
        # The leader (rack-1) answered the first fetch with the preferred replica and no
        # records; every record came from node 2, the follower in the consumer's rack.
        assert by_node.get(2, 0) > 0 and by_node.get(1, 0) == 0 and by_node.get(3, 0) == 0, by_node
        assert fetches.get(1, 0) >= 1 and fetches.get(2, 0) >= 1 and 3 not in fetches, fetches
        assert consumer._core.subs.state(tp).preferred_read_replica == 2

        # The follower fails: the consumer goes back to the leader and reads on.
        rack_cluster.node(2).kill()
        produce(rack_cluster.live_bootstrap(), unique_topic, [(b"k", v) for v in values[200:]], batch_size=20)
        more = consume_n(consumer, 100, timeout=180)
        assert [(r.offset, r.value) for r in more] == [(200 + i, v) for i, v in enumerate(values[200:])]
        after = _bytes_by_node(consumer)
        # Back to the leader (node 1): no replica is left in rack-2, and node 3 is in rack-3.
        assert after.get(1, 0) > 0 and after.get(3, 0) == 0, after
        assert consumer._core.subs.state(tp).preferred_read_replica != 2
    finally:
        consumer.close(10)


@pytest.mark.timeout(120)
def test_without_client_rack_the_leader_serves(rack_cluster: LocalCluster, unique_topic: str) -> None:
    rack_cluster.heal(120)
    rack_cluster.create_topic(unique_topic, 1, 3)
    leader = rack_cluster.leader(unique_topic, 0).node_id
    produce(rack_cluster.bootstrap, unique_topic, [(b"k", b"v%d" % i) for i in range(50)])
    with Consumer({"bootstrap.servers": rack_cluster.bootstrap, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(unique_topic, 0)])
        got = consume_n(consumer, 50)
        assert [r.value for r in got] == [b"v%d" % i for i in range(50)]
        by_node: dict[int, Any] = _bytes_by_node(consumer)
        assert set(k for k, v in by_node.items() if v > 0) == {leader}, by_node
