"""Transactions against the real broker: commit/abort visibility, fencing, failures,
consume-transform-produce exactly once, and transactions v1 on a Kafka 3.9 broker."""

from __future__ import annotations

import time

import pytest

from kafkalite import Consumer, OffsetAndMetadata, Producer, TopicPartition
from kafkalite.errors import (
    IllegalStateError,
    KafkaError,
    ProducerFencedError,
    RecordTooLargeError,
)
from tests.integration.producer_support import read_back, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def txn_producer(bootstrap: str, txn_id: str, **settings: object) -> Producer:
    conf: dict[str, object] = {"bootstrap.servers": bootstrap, "transactional.id": txn_id}
    conf.update({k.replace("_", "."): v for k, v in settings.items()})
    return Producer(conf)


def values(records) -> list[bytes]:
    return [r.value for r in records]


def _java_read_committed(broker, topic: str, expected: int) -> list[str]:
    done = broker.run_tool("kafka-console-consumer", [
        "--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning",
        "--isolation-level", "read_committed", "--max-messages", str(expected), "--timeout-ms", "20000",
    ], timeout=120)
    return [line for line in done.stdout.splitlines() if line]


@pytest.mark.timeout(300)
def test_aborted_records_never_reach_read_committed_consumers(kafka_broker, topic_factory, unique_topic) -> None:
    topic = topic_factory(partitions=3)
    with txn_producer(kafka_broker.bootstrap, unique_topic) as p:
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(10):
            p.send(topic, b"committed-a-%d" % i, key=b"%d" % i)
        p.commit_transaction(30)
        p.begin_transaction()
        aborted = [p.send(topic, b"aborted-%d" % i, key=b"%d" % i) for i in range(20)]
        p.flush(30)
        assert all(f.exception() is None for f in aborted)  # written, then aborted
        p.abort_transaction(30)
        with p.transaction():
            for i in range(10):
                p.send(topic, b"committed-b-%d" % i, key=b"%d" % i)
        with pytest.raises(RuntimeError), p.transaction():  # the block fails: the transaction aborts
            p.send(topic, b"aborted-on-error")
            raise RuntimeError("processing failed")
    expected = sorted([b"committed-a-%d" % i for i in range(10)] + [b"committed-b-%d" % i for i in range(10)])
    # Everything was written: a read_uncommitted reader sees the aborted records too.
    uncommitted = [r.value for rs in read_back(kafka_broker.bootstrap, topic).values() for r in rs]
    assert sorted(v for v in uncommitted if v.startswith(b"aborted-") and v != b"aborted-on-error") == sorted(
        b"aborted-%d" % i for i in range(20))
    # The last record may have been aborted before it was sent (the pure-Python build,
    # slower to the send, found it sent).
    assert uncommitted.count(b"aborted-on-error") in (0, 1) and len(uncommitted) in (40, 41)
    # Kafka's Java consumer with read_committed sees only the committed ones.
    java = _java_read_committed(kafka_broker, topic, 20)
    assert sorted(v.encode() for v in java) == expected
    # And so does kafkalite's consumer.
    tps = [TopicPartition(topic, p) for p in range(3)]
    with Consumer({"bootstrap.servers": kafka_broker.bootstrap, "isolation.level": "read_committed",
                   "auto.offset.reset": "earliest"}) as c:
        c.assign(tps)
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            got.extend(r.value for r in c.poll(1.0))
        got.extend(r.value for r in c.poll(1.0))
    assert sorted(got) == expected


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(kafka_broker, topic_factory,
                                                                          unique_topic) -> None:
    topic = topic_factory(partitions=1)
    first = txn_producer(kafka_broker.bootstrap, unique_topic)
    second = txn_producer(kafka_broker.bootstrap, unique_topic)
    try:
        first.init_transactions(30)
        first.begin_transaction()
        first.send(topic, b"zombie").result(30)
        # The second init_transactions fences the first and aborts its open transaction.
        second.init_transactions(60)
        with pytest.raises(ProducerFencedError) as info:
            first.commit_transaction(30)
        assert info.value.fatal and info.value.transactional_id == unique_topic
        with pytest.raises(ProducerFencedError):
            first.send(topic, b"after fencing")
        with pytest.raises(ProducerFencedError):
            first.begin_transaction()
        with second.transaction():
            second.send(topic, b"survivor")
    finally:
        first.close(5)
        second.close(30)
    committed = read_back(kafka_broker.bootstrap, topic, read_committed=True)[0]
    assert values(committed) == [b"survivor"]


def test_a_failed_record_makes_commit_fail_then_abort_and_continue(kafka_broker, topic_factory,
                                                                  unique_topic) -> None:
    topic = topic_factory(partitions=1, configs={"max.message.bytes": "2000"})
    with txn_producer(kafka_broker.bootstrap, unique_topic, max_request_size=100_000) as p:
        p.init_transactions(30)
        p.begin_transaction()
        ok = p.send(topic, b"small")
        big = p.send(topic, b"b" * 10_000)  # the broker rejects it: MESSAGE_TOO_LARGE
        with pytest.raises(KafkaError) as info:
            p.commit_transaction(30)
        assert info.value.abortable
        assert isinstance(big.exception(), RecordTooLargeError)
        # Sent in one batch with the big one, split off (as Java) and acknowledged; the
        # abort marker hides it from read_committed readers (checked at the end).
        assert ok.result(0).offset == 0
        with pytest.raises(KafkaError, match="abort"):
            p.send(topic, b"more")
        p.abort_transaction(30)
        with p.transaction():
            p.send(topic, b"next transaction")
    committed = read_back(kafka_broker.bootstrap, topic, read_committed=True)[0]
    assert values(committed) == [b"next transaction"]


def test_transactional_api_misuse_is_reported(kafka_broker, topic_factory, unique_topic) -> None:
    topic = topic_factory(partitions=1)
    with txn_producer(kafka_broker.bootstrap, unique_topic) as p:
        with pytest.raises(IllegalStateError, match="init_transactions"):
            p.send(topic, b"x")
        p.init_transactions(30)
        with pytest.raises(IllegalStateError, match="begin_transaction"):
            p.send(topic, b"x")
        with pytest.raises(IllegalStateError):
            p.commit_transaction()
        p.begin_transaction()
        p.commit_transaction(30)  # an empty transaction commits
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as plain, \
            pytest.raises(IllegalStateError, match="transactional.id"):
        plain.begin_transaction()


@pytest.mark.timeout(300)
def test_consume_transform_produce_copies_exactly_once(kafka_broker, topic_factory, unique_topic) -> None:
    source = topic_factory(partitions=2)
    sink = topic_factory(partitions=2)
    group = "ctp-" + unique_topic
    total = 600
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as p:
        for i in range(total):
            p.send(source, b"%d" % i, key=b"k%d" % (i % 10))
    tps = [TopicPartition(source, 0), TopicPartition(source, 1)]
    producer = txn_producer(kafka_broker.bootstrap, unique_topic)
    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "max.poll.records": 70})
    try:
        producer.init_transactions(30)
        consumer.subscribe([source])
        copied = 0
        rounds = 0
        deadline = time.monotonic() + 120
        while copied < total and time.monotonic() < deadline:
            records = consumer.poll(1.0)
            if not records:
                continue
            rounds += 1
            producer.begin_transaction()
            for r in records:
                producer.send(sink, b"copy-" + r.value, key=r.key)
            positions = {tp: OffsetAndMetadata(consumer.position(tp)) for tp in consumer.assignment()}
            if rounds == 3:
                # A failure mid-way: abort, and rewind to the committed offsets.
                producer.abort_transaction(30)
                committed = consumer.committed(consumer.assignment())
                for tp in consumer.assignment():
                    om = committed.get(tp)
                    consumer.seek(tp, om.offset if om is not None else 0)
                continue
            producer.send_offsets_to_transaction(positions, consumer.group_metadata(), 30)
            producer.commit_transaction(30)
            copied += len(records)
        assert copied == total
        committed = consumer.committed(tps)
        assert {tp: committed[tp].offset for tp in tps} == consumer.end_offsets(tps)
    finally:
        consumer.close()
        producer.close(30)
    out = read_back(kafka_broker.bootstrap, sink, read_committed=True)
    copies = sorted(int(r.value[5:]) for rs in out.values() for r in rs)
    assert copies == list(range(total))  # every record exactly once
    assert rounds >= 4


@pytest.mark.timeout(300)
def test_transactions_v1_on_a_kafka_39_broker(kafka_broker_39, unique_topic) -> None:
    topic = kafka_broker_39.create_topic(unique_topic, 2)
    with txn_producer(kafka_broker_39.bootstrap, unique_topic) as p:
        p.init_transactions(60)
        assert p._core.txn.tv2 is False  # AddPartitionsToTxn / AddOffsetsToTxn path
        with p.transaction():
            for i in range(10):
                p.send(topic, b"c%d" % i, partition=i % 2)
        p.begin_transaction()
        for i in range(10):
            p.send(topic, b"a%d" % i, partition=i % 2)
        p.flush(30)
        p.abort_transaction(30)
        with p.transaction():
            p.send(topic, b"last", partition=0)
            p.send_offsets_to_transaction({TopicPartition(topic, 0): 5}, "v1-group-" + unique_topic)
    committed = read_back(kafka_broker_39.bootstrap, topic, read_committed=True)
    assert sorted(v for rs in committed.values() for v in values(rs)) == sorted(
        [b"c%d" % i for i in range(10)] + [b"last"])
    uncommitted = read_back(kafka_broker_39.bootstrap, topic)
    assert sum(len(rs) for rs in uncommitted.values()) == 21
    with Consumer({"bootstrap.servers": kafka_broker_39.bootstrap, "group.id": "v1-group-" + unique_topic}) as c:
        got = wait_until(lambda: c.committed([TopicPartition(topic, 0)]).get(TopicPartition(topic, 0)), 20,
                         "offsets committed by the transaction")
        assert got.offset == 5
