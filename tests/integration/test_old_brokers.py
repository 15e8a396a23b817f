"""Features an older broker lacks: each works through Java's fallback or fails at once
with a typed error naming the feature and the release it needs (issue: every Kafka people
run). The brokers are real: the oldest supported release (2.1.1, ZooKeeper mode) and
3.9.1 (KRaft, KIP-848 only as a preview that is off)."""

from __future__ import annotations

import time

import pytest

from kafkalite import AdminClient, Consumer, Producer
from kafkalite.admin.group_types import GroupState, GroupType
from kafkalite.errors import UnsupportedFeatureError
from kafkalite.types import TopicPartition

pytestmark = pytest.mark.broker


def first_error(consumer: Consumer, deadline_s: float) -> BaseException | None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            consumer.poll(0.5)
        except Exception as exc:
            return exc
    return None


@pytest.mark.timeout(90)
def test_kip848_groups_on_a_zookeeper_broker_fail_at_once(kafka_broker_zk, topic_factory) -> None:
    """Kafka 2.x/3.x ZooKeeper brokers serve no ConsumerGroupHeartbeat: poll() used to
    return nothing forever (the cause logged only at DEBUG)."""
    topic = topic_factory(on=kafka_broker_zk, replication_factor=1)
    started = time.monotonic()
    with Consumer({"bootstrap.servers": kafka_broker_zk.bootstrap, "group.id": "kip848-on-zk",
                   "group.protocol": "consumer"}) as consumer:
        consumer.subscribe([topic])
        err = first_error(consumer, 30.0)
        assert isinstance(err, UnsupportedFeatureError), err
        # "at once": the first heartbeat's connection, not a time-out (generous for a busy machine)
        assert time.monotonic() - started < 30
        text = str(err)
        assert "group.protocol=consumer (KIP-848) needs Apache Kafka 4.0 or later" in text
        assert "does not serve ConsumerGroupHeartbeat" in text and kafka_broker_zk.bootstrap in text
        assert err.minimum_release == "4.0" and err.group_id == "kip848-on-zk"
        # The member is dead: every later call says so instead of quietly doing nothing.
        with pytest.raises(UnsupportedFeatureError):
            consumer.poll(0.1)
        with pytest.raises(UnsupportedFeatureError):
            consumer.commit({TopicPartition(topic, 0): 0})


@pytest.mark.timeout(120)
def test_a_live_classic_group_is_described_on_a_broker_without_kip848(kafka_broker_39, topic_factory) -> None:
    """Kafka 3.9.1 serves ConsumerGroupDescribe but, with the consumer protocol off
    (its default), answers UNSUPPORTED_VERSION for every group: the admin client asks
    DescribeGroups then, as Java's does (it raised UnsupportedVersionError before)."""
    bootstrap = kafka_broker_39.bootstrap
    topic = topic_factory(partitions=2, on=kafka_broker_39)
    group = "classic-on-39-" + topic
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        producer.send(topic, b"x", partition=0).result(30)
    with Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                   "client.id": "live-member"}) as member, AdminClient({"bootstrap.servers": bootstrap}) as admin:
        member.subscribe([topic])
        deadline = time.monotonic() + 60
        while not member.assignment():
            member.poll(0.2)
            assert time.monotonic() < deadline, "the member never got its assignment"
        description = admin.describe_consumer_groups([group])[group].result()
        assert description.type is GroupType.CLASSIC and description.state is GroupState.STABLE
        assert [m.client_id for m in description.members] == ["live-member"]
        assert description.members[0].assignment == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
