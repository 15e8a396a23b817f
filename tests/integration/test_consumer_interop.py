"""The consumer with Kafka's own Java clients: a mixed group with the Java console
consumer, and read_committed over transactions written by Java and by kafkalite."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from kafkalite import Consumer, Producer, TopicPartition
from tests.integration.consumer_support import consume_n, produce_spread, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.slow]


class JavaConsole:
    """kafka-console-consumer in a group, its printed (partition, offset, value) collected."""

    def __init__(self, broker, topic: str, group: str, properties: dict[str, str]) -> None:
        args = ["--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group,
                "--property", "print.partition=true", "--property", "print.offset=true"]
        for k, v in properties.items():
            args += ["--consumer-property", f"{k}={v}"]
        self.proc = subprocess.Popen(broker.java_tool_command("kafka-console-consumer", args),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.records: list[tuple[int, int, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            fields = dict(f.split(":", 1) for f in line.rstrip("\n").split("\t")[:2] if ":" in f)
            if "Partition" in fields and "Offset" in fields:
                self.records.append((int(fields["Partition"]), int(fields["Offset"]),
                                     line.rstrip("\n").split("\t")[-1]))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.mark.timeout(240)
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_mixed_group_with_the_java_console_consumer(kafka_broker, topic_factory, protocol) -> None:
    partitions = 6
    topic = topic_factory(partitions=partitions)
    group = f"g-{topic}"
    conf = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": group, "group.protocol": protocol,
            "auto.offset.reset": "earliest", "auto.commit.interval.ms": 200}
    java_props = {"auto.offset.reset": "earliest", "group.protocol": protocol}
    if protocol == "classic":
        conf["partition.assignment.strategy"] = "cooperative-sticky"
        java_props["partition.assignment.strategy"] = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
    ours = Consumer(conf)
    ours.subscribe([topic])
    java = JavaConsole(kafka_broker, topic, group, java_props)
    try:
        # wait until the group settles with both members owning partitions
        wait_until(lambda: (ours.poll(0.2), 0 < len(ours.assignment()) < partitions)[1], 120, 0.05,
                   "the Java member to take a share of the partitions")
        stable_since = time.monotonic()
        last = set(ours.assignment())
        while time.monotonic() - stable_since < 4:
            ours.poll(0.2)
            if ours.assignment() != last:
                last, stable_since = set(ours.assignment()), time.monotonic()
        mine = {tp.partition for tp in ours.assignment()}
        produce_spread(kafka_broker.bootstrap, topic, partitions, 20)
        got: dict[int, set[int]] = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for r in ours.poll(0.2):
                got.setdefault(r.partition, set()).add(r.offset)
            theirs: dict[int, set[int]] = {}
            for p, o, _ in java.records:
                theirs.setdefault(p, set()).add(o)
            if all(len(got.get(p, set()) | theirs.get(p, set())) == 20 for p in range(partitions)):
                break
        else:
            raise AssertionError(f"records missing: kafkalite {got}, java {theirs}")
        assert set(got) == mine  # we read exactly the partitions the group gave us
        assert set(theirs) == set(range(partitions)) - mine  # the Java member read the others
    finally:
        java.stop()
        ours.close(10)


def _copier(broker, args: list[str]) -> list[str]:
    return [str(broker.java.executable), "-Xmx256m", "-cp", broker.tools.classpath(),
            "org.apache.kafka.tools.TransactionalMessageCopier", *args]


@pytest.mark.timeout(240)
def test_read_committed_skips_aborted_transactions_written_by_java(kafka_broker, topic_factory) -> None:
    source = topic_factory(partitions=1)
    sink = topic_factory(partitions=1)
    produce_spread(kafka_broker.bootstrap, source, 1, 1500)
    # Kafka's own transactional copier (shipped in kafka-tools) aborts transactions at random
    # and copies their records again in a later transaction.
    done = subprocess.run(_copier(kafka_broker, [
        "--broker-list", kafka_broker.bootstrap, "--input-topic", source, "--input-partition", "0",
        "--output-topic", sink, "--transactional-id", f"copier-{sink}", "--consumer-group", f"cg-{sink}",
        "--transaction-size", "50", "--enable-random-aborts", "--max-messages", "1500"]),
        capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    tp = TopicPartition(sink, 0)
    conf = {"bootstrap.servers": kafka_broker.bootstrap, "auto.offset.reset": "earliest"}
    with Consumer({**conf, "isolation.level": "read_committed"}) as rc, \
            Consumer({**conf, "isolation.level": "read_uncommitted"}) as ru:
        rc.assign([tp])
        ru.assign([tp])
        end = ru.end_offsets([tp])[tp]
        committed = consume_n(rc, 1500, timeout=60)
        wait_until(lambda: rc.poll(0.2) == [] and rc.position(tp) == end, 30, what="read_committed at the end")
        everything = []
        while ru.position(tp) < end:
            everything.extend(ru.poll(1.0))
    values = [r.value for r in committed]
    assert sorted(values) == sorted(f"p0-{i}".encode().ljust(10, b".") for i in range(1500))
    assert len(everything) > len(committed), "the copier aborted no transaction (random aborts)"
    # offsets are not contiguous: transaction markers take offsets that are never returned
    offsets = [r.offset for r in committed]
    assert offsets == sorted(offsets) and offsets[-1] - offsets[0] + 1 > len(offsets)


@pytest.mark.timeout(120)
def test_read_committed_with_kafkalite_transactions(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    tp = TopicPartition(topic, 0)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": f"tx-{topic}"})
    try:
        producer.init_transactions()
        for i in range(6):
            producer.begin_transaction()
            for j in range(10):
                producer.send(topic, value=f"t{i}-{j}".encode(), partition=0)
            if i % 2:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, value=b"open", partition=0)
        producer.flush()
        conf = {"bootstrap.servers": kafka_broker.bootstrap, "auto.offset.reset": "earliest",
                "isolation.level": "read_committed"}
        with Consumer(conf) as c:
            c.assign([tp])
            got = consume_n(c, 30, timeout=60)
            assert [r.value for r in got] == [f"t{i}-{j}".encode() for i in (0, 2, 4) for j in range(10)]
            assert c.poll(1.0) == []  # the open transaction is past the last stable offset
            lso = c.end_offsets([tp])[tp]
            producer.commit_transaction()
            assert consume_n(c, 1, timeout=30)[0].value == b"open"
            assert c.end_offsets([tp])[tp] > lso
    finally:
        producer.close(10)
