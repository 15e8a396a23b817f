"""``kafkalite topics --describe`` on a 3-node cluster: eligible leader replicas
(KIP-966) from DescribeTopicPartitions, the min-ISR filters, and reassignments, line
for line as ``kafka-topics --describe`` of Kafka 4 prints them."""

from __future__ import annotations

import json

import pytest

from kafkalite import AdminClient
from kafkalite.admin.types import NewTopic
from kafkalite.testing.cluster import LocalCluster
from kafkalite.testing.topics import unique_topic_name, wait_for_topic
from tests.integration.admin_support import kafkalite, tool, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.cluster]


def _lines(text: str, topic: str) -> list[str]:
    return [line for line in text.splitlines() if f"Topic: {topic}\t" in line]


@pytest.mark.timeout(240)
def test_elr_after_the_isr_shrinks_below_min_isr(kafka_cluster: LocalCluster) -> None:
    topic = unique_topic_name("cli-elr")
    with AdminClient({"bootstrap.servers": kafka_cluster.bootstrap, "request.timeout.ms": 5000}) as admin:
        admin.create_topics([NewTopic(topic, replica_assignment={0: [1, 2, 3]},
                                      config={"min.insync.replicas": "3"})]).all()
    wait_for_topic(kafka_cluster.bootstrap, topic, timeout=60)
    healthy = kafkalite("topics", "--bootstrap-server", kafka_cluster.bootstrap, "--describe", "--topic", topic)
    assert _lines(healthy.stdout, topic)[1] == (f"\tTopic: {topic}\tPartition: 0\tLeader: 1\tReplicas: 1,2,3"
                                                "\tIsr: 1,2,3\tElr: \tLastKnownElr: ")
    at_min = kafkalite("topics", "--bootstrap-server", kafka_cluster.bootstrap, "--describe", "--topic", topic,
                       "--at-min-isr-partitions")
    assert at_min.stdout.splitlines() == _lines(healthy.stdout, topic)[1:]

    kafka_cluster.node(3).stop()  # a clean shutdown: the replica leaves the ISR, into the ELR
    try:
        live = kafka_cluster.live_bootstrap()

        def shrunk() -> dict | None:
            done = kafkalite("topics", "--bootstrap-server", live, "--describe", "--topic", topic, "--json")
            if done.returncode != 0:
                return None
            (p,) = json.loads(done.stdout)[0]["partitions"]
            return p if p["isr"] == [1, 2] and p["elr"] == [3] else None

        p = wait_until(shrunk, timeout=90, what="broker 3 to move from the ISR to the ELR")
        assert (p["leader"], p["replicas"], p["last_known_elr"]) == (1, [1, 2, 3], [])

        ours = kafkalite("topics", "--bootstrap-server", live, "--describe", "--topic", topic)
        java = tool(kafka_cluster, "kafka-topics", "--describe", "--topic", topic, bootstrap=live)
        assert _lines(ours.stdout, topic) == _lines(java, topic)
        assert _lines(ours.stdout, topic)[1].endswith("\tIsr: 1,2\tElr: 3\tLastKnownElr: ")

        under = kafkalite("topics", "--bootstrap-server", live, "--describe", "--topic", topic,
                          "--under-min-isr-partitions")
        java_under = tool(kafka_cluster, "kafka-topics", "--describe", "--topic", topic,
                          "--under-min-isr-partitions", bootstrap=live)
        assert under.stdout.splitlines() == _lines(java_under, topic) == _lines(ours.stdout, topic)[1:]
        replicated = kafkalite("topics", "--bootstrap-server", live, "--describe", "--topic", topic,
                               "--under-replicated-partitions")
        assert replicated.stdout.splitlines() == _lines(ours.stdout, topic)[1:]
        assert kafkalite("topics", "--bootstrap-server", live, "--describe", "--topic", topic,
                         "--at-min-isr-partitions").stdout == ""
    finally:
        kafka_cluster.heal()
