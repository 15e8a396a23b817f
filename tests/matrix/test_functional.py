"""The main user paths against the session's broker, whatever its release (2.1.1 to 4.4.0):
produce, consume, groups, transactions, offsets and timestamps, admin, the console tools,
and interop with the release's own Java tools. See tests/matrix/README.md."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter

import pytest

from kafkalite import (
    AdminClient,
    ConfigResource,
    Consumer,
    NewPartitions,
    NewTopic,
    Producer,
    TopicPartition,
)
from kafkalite.admin.group_types import GroupType
from kafkalite.testing.releases import release_of
from kafkalite.testing.topics import unique_topic_name
from tests.matrix.support import settings, wait_until

pytestmark = pytest.mark.broker


def consume_all(broker, topic: str, expected: int, **more) -> list:
    records: list = []
    with Consumer(settings(broker, **{"group.id": unique_topic_name("reader"), "auto.offset.reset": "earliest",
                                      **more})) as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(records) < expected and time.monotonic() < deadline:
            records += consumer.poll(0.5)
    return records


@pytest.mark.timeout(120)
def test_idempotent_produce_and_consume_keep_order_per_key(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    keys = [f"k{i % 7}".encode() for i in range(600)]
    with Producer(settings(kafka_broker, **{"enable.idempotence": True, "acks": "all",
                                            "compression.type": "lz4"})) as producer:
        futures = [producer.send(topic, value=str(i).encode(), key=k) for i, k in enumerate(keys)]
        producer.flush(60)
        partition_of = {}
        for k, f in zip(keys, futures):
            metadata = f.result(30)
            assert partition_of.setdefault(k, metadata.partition) == metadata.partition
    records = consume_all(kafka_broker, topic, 600)
    assert len(records) == 600
    by_key: dict[bytes, list[int]] = {}
    for r in records:
        by_key.setdefault(r.key, []).append(int(r.value))
    for values in by_key.values():
        assert values == sorted(values)  # idempotence: no reorder, no duplicate
    assert sum(len(v) for v in by_key.values()) == len({int(r.value) for r in records}) == 600


@pytest.mark.timeout(150)
def test_transactions_and_read_committed(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    with Producer(settings(kafka_broker, **{"transactional.id": unique_topic_name("txn")})) as producer:
        producer.init_transactions(60)
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic, value=b"committed-%d" % i, partition=i % 2)
        producer.commit_transaction(60)
        producer.begin_transaction()
        for i in range(5):
            producer.send(topic, value=b"aborted-%d" % i, partition=i % 2)
        producer.flush(60)
        producer.abort_transaction(60)
        producer.begin_transaction()
        producer.send(topic, value=b"last", partition=0)
        producer.commit_transaction(60)
    committed = consume_all(kafka_broker, topic, 11, **{"isolation.level": "read_committed"})
    assert sorted(r.value for r in committed) == sorted([b"committed-%d" % i for i in range(10)] + [b"last"])
    everything = consume_all(kafka_broker, topic, 16)
    assert Counter(r.value.split(b"-")[0] for r in everything) == {b"committed": 10, b"aborted": 5, b"last": 1}


@pytest.mark.timeout(180)
def test_a_cooperative_group_shares_partitions_and_commits(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=4)
    group = unique_topic_name("coop")
    with Producer(settings(kafka_broker)) as producer:
        for i in range(40):
            producer.send(topic, value=b"%d" % i, partition=i % 4)
        producer.flush(30)
    config = settings(kafka_broker, **{"group.id": group, "auto.offset.reset": "earliest",
                                       "partition.assignment.strategy": "cooperative-sticky",
                                       "enable.auto.commit": False})
    seen: list = []
    with Consumer(config) as first, Consumer(config) as second:
        first.subscribe([topic])
        second.subscribe([topic])

        def shared() -> bool:
            seen.extend(first.poll(0.2))
            seen.extend(second.poll(0.2))
            return len(first.assignment()) == 2 and len(second.assignment()) == 2

        wait_until(shared, 120, "both members with two partitions each")
        wait_until(lambda: seen.extend(first.poll(0.2)) or seen.extend(second.poll(0.2)) or len(seen) >= 40,
                   60, "all 40 records")
        first.commit()
        second.commit()
        everything = first.assignment() | second.assignment()
        committed = first.committed(sorted(everything), timeout=30)
    assert {r.value for r in seen} == {b"%d" % i for i in range(40)}
    assert {tp: om.offset for tp, om in committed.items()} == {TopicPartition(topic, p): 10 for p in range(4)}


@pytest.mark.timeout(120)
def test_offsets_timestamps_and_seeks(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    base = int(time.time() * 1000) - 100_000
    with Producer(settings(kafka_broker)) as producer:
        for i in range(10):
            producer.send(topic, value=b"%d" % i, timestamp=base + i * 1000)
        producer.flush(30)
    tp = TopicPartition(topic, 0)
    with Consumer(settings(kafka_broker, **{"group.id": unique_topic_name("seek")})) as consumer:
        assert consumer.beginning_offsets([tp], timeout=30) == {tp: 0}
        assert consumer.end_offsets([tp], timeout=30) == {tp: 10}
        found = consumer.offsets_for_times({tp: base + 4500}, timeout=30)[tp]
        assert found is not None and (found.offset, found.timestamp) == (5, base + 5000)
        consumer.assign([tp])
        consumer.seek(tp, 7)
        records = wait_until(lambda: consumer.poll(0.5), 30, "records after the seek")
        assert [r.offset for r in records][:1] == [7] and records[0].timestamp == base + 7000


@pytest.mark.timeout(180)
def test_admin_topics_configs_and_cluster(kafka_broker) -> None:
    name = unique_topic_name("admin")
    with AdminClient(settings(kafka_broker)) as admin:
        created = admin.create_topics([NewTopic(name, 2, 1, config={"cleanup.policy": "compact"})], timeout=60)
        assert created[name].ok, created[name].error
        wait_until(lambda: name in admin.list_topics(), 30, "the new topic")
        description = wait_until(lambda: admin.describe_topics([name])[name].result(), 30, "its description")
        assert len(description.partitions) == 2
        assert admin.create_partitions({name: NewPartitions(3)}, timeout=60)[name].ok
        wait_until(lambda: len(admin.describe_topics([name])[name].result().partitions) == 3, 30, "3 partitions")
        resource = ConfigResource("topic", name)
        configs = admin.describe_configs([resource])[resource].result()
        assert configs["cleanup.policy"].value == "compact"
        cluster = admin.describe_cluster()
        assert [n.port for n in cluster.nodes] == [kafka_broker.port] and cluster.controller is not None
        assert admin.delete_topics([name], timeout=60)[name].ok
        wait_until(lambda: name not in admin.list_topics(), 60, "the topic gone")


@pytest.mark.timeout(180)
def test_group_admin(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    group = unique_topic_name("grp-admin")
    with Producer(settings(kafka_broker)) as producer:
        producer.send(topic, b"x", partition=0)
        producer.flush(30)
    with AdminClient(settings(kafka_broker)) as admin:
        with Consumer(settings(kafka_broker, **{"group.id": group, "auto.offset.reset": "earliest"})) as member:
            member.subscribe([topic])
            wait_until(lambda: member.poll(0.5), 60, "the member's first record")
            member.commit()
            description = admin.describe_consumer_groups([group])[group].result()
            assert description.type is GroupType.CLASSIC and len(description.members) == 1
            assert group in {g.group_id for g in admin.list_groups()}
        offsets = admin.list_consumer_group_offsets([group])[group].result()
        assert offsets[TopicPartition(topic, 0)].offset == 1
        assert admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): 0}).ok
        assert admin.list_consumer_group_offsets([group])[group].result()[TopicPartition(topic, 0)].offset == 0
        assert admin.delete_groups([group])[group].ok


@pytest.mark.timeout(180)
def test_kafkas_own_tools_read_kafkalite_and_the_other_way_round(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    with Producer(settings(kafka_broker)) as producer:
        for i in range(5):
            producer.send(topic, value=b"from-kafkalite-%d" % i, key=b"k%d" % i)
        producer.flush(30)
    out = kafka_broker.run_tool("kafka-console-consumer", [
        "--bootstrap-server", kafka_broker.bootstrap, "--topic", topic, "--from-beginning",
        "--max-messages", "5", "--property", "print.key=true", "--timeout-ms", "60000"], timeout=120)
    lines = [line for line in out.stdout.splitlines() if "\t" in line]
    assert lines == [f"k{i}\tfrom-kafkalite-{i}" for i in range(5)], out.stderr[-2000:]
    # --bootstrap-server arrived in the console producer with Kafka 2.5 (KIP-499)
    where = "--bootstrap-server" if release_of(kafka_broker.version) >= (2, 5) else "--broker-list"
    done = kafka_broker.run_tool("kafka-console-producer", [where, kafka_broker.bootstrap, "--topic", topic],
                                 input="".join(f"from-java-{i}\n" for i in range(3)), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    values = [r.value for r in consume_all(kafka_broker, topic, 8)]
    assert values[5:] == [b"from-java-0", b"from-java-1", b"from-java-2"]


@pytest.mark.timeout(240)
def test_the_console_tools(kafka_broker) -> None:
    topic = unique_topic_name("cli")

    def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "kafkalite.cli.main", *args, "--bootstrap-server",
                               kafka_broker.bootstrap], input=stdin, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"kafkalite {' '.join(args)}: {done.stderr}"
        return done

    cli("topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    assert topic in cli("topics", "--list").stdout
    cli("produce", "--topic", topic, stdin="a\nb\nc\n")
    out = cli("consume", "--topic", topic, "--from-beginning", "--max-messages", "3", "--group", topic).stdout
    assert sorted(out.split()) == ["a", "b", "c"]
    assert topic in cli("groups", "--describe", "--group", topic).stdout


@pytest.mark.timeout(180)
def test_a_read_of_many_fetches_reaches_the_end(kafka_broker, topic_factory) -> None:
    """Many fetches per partition (small fetch sizes), so every later Fetch carries what
    the earlier answers taught the consumer (leader and last fetched epochs): on Kafka
    2.1 a field its Fetch v10 cannot carry stalled the consumer at its second fetch."""
    topic = topic_factory(partitions=3)
    with Producer(settings(kafka_broker, **{"enable.idempotence": True, "linger.ms": 20})) as producer:
        for i in range(30_000):
            producer.send(topic, b"%d" % i, partition=i % 3)
        producer.flush(60)
    records = consume_all(kafka_broker, topic, 30_000, **{"max.partition.fetch.bytes": 16_384,
                                                         "fetch.max.bytes": 65_536})
    assert len(records) == 30_000
    assert sorted(int(r.value) for r in records) == list(range(30_000))
