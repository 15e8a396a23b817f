"""The delivery checker against a real broker: a clean run is clean, and every kind of
problem it reports is caught when it really happens on the broker."""

from __future__ import annotations

import pytest

from kafkalite import AdminClient, Producer, TopicPartition
from kafkalite.testing.checker import Checker

pytestmark = pytest.mark.broker


def test_a_clean_idempotent_run_checks_out(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    checker = Checker()
    history = checker.producer("p1")
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 5}) as producer:
        for i in range(20_000):
            rid = history.next_id()
            producer.send(topic, b"payload-%d" % i, key=b"k%d" % (i % 17), headers=[checker.header(rid)],
                          callback=history.callback(rid))
    report = checker.verify(kafka_broker.bootstrap, [topic])
    assert report.ok, report
    total = report.total
    assert (total.read, total.acked, total.ambiguous) == (20_000, 20_000, 0)
    assert len(report.partitions) == 3


def test_every_kind_of_problem_is_caught_on_a_real_broker(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    checker = Checker()
    history = checker.producer("p")
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 0,
                   "enable.idempotence": False, "max.in.flight.requests.per.connection": 1}) as producer:
        def send(rid: bytes, partition: int) -> None:
            md = producer.send(topic, Checker.value(rid, b"x"), partition=partition).result(30)
            history.acked(rid, md.topic, md.partition, md.offset)

        ids = [history.next_id() for _ in range(20)]
        for rid in ids[:10]:
            send(rid, 0)
        send(ids[9], 0)                    # duplicated: the same record written twice
        send(ids[11], 1)                   # reordered: sent after ...
        send(ids[10], 1)                   # ... a record its producer handed out later
        for rid in ids[12:]:
            send(rid, 1)
        producer.send(topic, b"no id at all", partition=1).result(30)  # unexpected
    with AdminClient({"bootstrap.servers": kafka_broker.bootstrap}) as admin:
        admin.delete_records({TopicPartition(topic, 0): 3}).raise_on_error()  # lost: offsets 0-2
    tx_topic = topic_factory()
    tx = checker.producer("tx")
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": f"tx-{tx_topic}"}) as producer:
        producer.init_transactions()
        for commit in (True, False):
            producer.begin_transaction()
            tx.begin_transaction()
            for _ in range(5):
                rid = tx.next_id()
                producer.send(tx_topic, b"t", headers=[checker.header(rid)], callback=tx.callback(rid))
            if commit:
                producer.commit_transaction()
                tx.commit_transaction()
            else:
                producer.flush()
                producer.abort_transaction()
                tx.abort_transaction()

    committed = checker.verify(kafka_broker.bootstrap, [topic, tx_topic], read_committed=True)
    p0, p1 = committed.partitions[TopicPartition(topic, 0)], committed.partitions[TopicPartition(topic, 1)]
    assert (p0.lost, p0.duplicated, p0.reordered, p0.unexpected) == (3, 1, 0, 0), committed
    assert (p1.lost, p1.duplicated, p1.reordered, p1.unexpected) == (0, 0, 1, 1), committed
    txp = committed.partitions[TopicPartition(tx_topic, 0)]
    assert (txp.read, txp.acked, txp.aborted_visible, txp.lost) == (5, 5, 0, 0), committed
    # A read_uncommitted reader sees the aborted transaction's records.
    uncommitted = checker.verify(kafka_broker.bootstrap, [tx_topic], read_committed=False)
    assert uncommitted.partitions[TopicPartition(tx_topic, 0)].aborted_visible == 5, uncommitted
    assert not uncommitted.ok and "aborted_visible" in str(uncommitted)
