"""Settings that used to be accepted and ignored, against real brokers:
connections.max.idle.ms, metadata.max.idle.ms, allow.auto.create.topics (on a broker
with auto.create.topics.enable=true) and the consumer's interceptor.classes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import AdminClient, Consumer, Producer, TopicPartition
from kafkalite.testing import LocalBroker
from kafkalite.testing.topics import unique_topic_name
from tests.integration.admin_support import kafkalite
from tests.integration.consumer_support import consume_n, produce, wait_until

pytestmark = pytest.mark.broker


# ---------------------------------------------------------------- connections.max.idle.ms


def test_idle_connections_are_closed_and_reopened_on_demand(kafka_broker, topic_factory) -> None:
    topic = topic_factory()
    with AdminClient({"bootstrap.servers": kafka_broker.bootstrap, "connections.max.idle.ms": 1000}) as admin:
        stats = admin._core.client.stats
        assert topic in admin.list_topics()
        opened = stats.created
        wait_until(lambda: stats.active == 0, 15, interval=0.1, what="the idle connections to be closed")
        assert stats.closed >= opened
        assert topic in admin.list_topics()  # connects again
        assert stats.created > opened


def test_busy_connections_are_not_reaped(kafka_broker, topic_factory) -> None:
    topic = topic_factory()
    produce(kafka_broker.bootstrap, topic, count=5)
    with Consumer({"bootstrap.servers": kafka_broker.bootstrap, "connections.max.idle.ms": 800,
                   "fetch.max.wait.ms": 500, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consume_n(consumer, 5, timeout=30)
        client = consumer._core.client

        def fetch_connections() -> dict[int, object]:  # the leaders' (the bootstrap one may idle out)
            return {node: state.connection for (node, channel), state in client._nodes.items()
                    if node >= 0 and channel == "default" and state.connection is not None}

        before = fetch_connections()
        until = time.monotonic() + 3  # fetches keep going out (long polls of 0.5 s)
        while time.monotonic() < until:
            consumer.poll(0.2)
        assert before and fetch_connections() == before


# ---------------------------------------------------------------- metadata.max.idle.ms


def test_producer_forgets_metadata_of_idle_topics_and_fetches_it_again(kafka_broker, topic_factory) -> None:
    idle, busy = topic_factory(), topic_factory()
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "metadata.max.idle.ms": 5000,
                   "linger.ms": 0}) as producer:
        client = producer._core.client
        producer.send(idle, b"once").result(30)
        deadline = time.monotonic() + 30
        while idle in client.tracked_topics or idle in client.metadata.topics:
            producer.send(busy, b"keep busy").result(30)
            assert time.monotonic() < deadline, "the idle topic's metadata was never forgotten"
            time.sleep(0.5)
        assert busy in client.tracked_topics and busy in client.metadata.topics
        metadata = producer.send(idle, b"again").result(30)  # fetches its metadata first
        assert metadata.offset == 1
        assert idle in client.tracked_topics and idle in client.metadata.topics


# ---------------------------------------------------------------- allow.auto.create.topics


@pytest.fixture(scope="module")
def auto_create_broker(tmp_path_factory) -> Iterator[LocalBroker]:
    """A broker with Kafka's default auto.create.topics.enable=true (the session broker
    keeps it off so that tests notice topics they forgot to create)."""
    broker = LocalBroker(run_dir=Path(tmp_path_factory.mktemp("auto-create")), auto_create_topics=True)
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


def _exists(broker: LocalBroker, topic: str) -> bool:
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        return topic in admin.list_topics()


def test_subscribing_creates_the_topic_only_when_allowed(auto_create_broker, request) -> None:
    allowed, refused = (unique_topic_name(request.node.name + suffix) for suffix in ("-a", "-r"))
    for topic, allow in ((allowed, True), (refused, False)):
        with Consumer({"bootstrap.servers": auto_create_broker.bootstrap, "group.id": f"g-{topic}",
                       "allow.auto.create.topics": allow, "metadata.max.age.ms": 500}) as consumer:
            consumer.subscribe([topic])
            until = time.monotonic() + (30 if allow else 4)  # several metadata rounds
            while time.monotonic() < until and not (allow and _exists(auto_create_broker, topic)):
                consumer.poll(0.3)
    assert _exists(auto_create_broker, allowed)
    assert not _exists(auto_create_broker, refused)


def test_producer_creates_topics_by_using_them_as_java_does(auto_create_broker, request) -> None:
    topic = unique_topic_name(request.node.name)
    with Producer({"bootstrap.servers": auto_create_broker.bootstrap}) as producer:
        assert producer.send(topic, b"first").result(30).offset == 0
    assert _exists(auto_create_broker, topic)


def test_partitions_for_and_the_console_producer_let_the_broker_create_the_topic(auto_create_broker, request) -> None:
    """Java's partitionsFor asks with auto-creation allowed: the lookup creates the topic.
    A KRaft broker forwards the creation to the controller and answers the first lookup
    UNKNOWN_TOPIC_OR_PARTITION (AutoTopicCreationManager), so the topic appears to later
    lookups. The console producer's topic check is that lookup."""
    looked_up, produced = (unique_topic_name(request.node.name + suffix) for suffix in ("-l", "-p"))
    with Consumer({"bootstrap.servers": auto_create_broker.bootstrap}) as consumer:
        wait_until(lambda: consumer.partitions_for(looked_up, timeout=30) == {TopicPartition(looked_up, 0)}, 30,
                   what="the topic created by the lookup")
    kafkalite("produce", "--bootstrap-server", auto_create_broker.bootstrap, "--topic", produced, input="a\n")
    wait_until(lambda: _exists(auto_create_broker, produced), 30, what="the topic created by the console producer")
    done = kafkalite("produce", "--bootstrap-server", auto_create_broker.bootstrap, "--topic", produced,
                     input="b\nc\n")
    assert done.returncode == 0 and "Produced 2 record(s)" in done.stderr, done.stderr


# ---------------------------------------------------------------- consumer interceptors


class Audit:
    """Counts what poll() hands out, drops records valued b'secret', records commits."""

    def __init__(self) -> None:
        self.consumed = 0
        self.commits: list[dict[TopicPartition, int]] = []
        self.closed = False

    def on_consume(self, records):
        self.consumed += len(records)
        return [r for r in records if r.value != b"secret"]

    def on_commit(self, offsets):
        self.commits.append({tp: om.offset for tp, om in offsets.items()})

    def close(self) -> None:
        self.closed = True


def test_consumer_interceptors_see_polls_and_every_kind_of_commit(kafka_broker, topic_factory) -> None:
    topic = topic_factory()
    tp = TopicPartition(topic, 0)
    produce(kafka_broker.bootstrap, topic, [(None, b"a"), (None, b"secret"), (None, b"b")])
    audit = Audit()
    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "auto.commit.interval.ms": 200,
                         "interceptor.classes": [audit]})
    try:
        consumer.subscribe([topic])
        got = wait_until(lambda: consumer.poll(0.5), 60, what="records")
        assert [r.value for r in got] == [b"a", b"b"] and audit.consumed == 3
        consumer.commit({tp: 1})
        assert audit.commits[-1] == {tp: 1}  # sync: right after commit() returned
        consumer.commit({tp: 2}, asynchronous=True)
        wait_until(lambda: (consumer.poll(0.1), {tp: 2} in audit.commits)[1], 30, what="async commit seen")
        # Auto-commit of the position (3) within a later poll().
        wait_until(lambda: (consumer.poll(0.1), {tp: 3} in audit.commits)[1], 30, what="auto-commit seen")
    finally:
        consumer.close()
    assert audit.closed
