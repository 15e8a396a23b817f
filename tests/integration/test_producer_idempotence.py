"""Idempotence against the real broker: connections cut mid-stream lose and duplicate nothing."""

from __future__ import annotations

import collections

import pytest

from kafkalite import Producer
from tests.integration.producer_support import ConnectionCutter, read_back

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.mark.timeout(400)
def test_connection_cuts_mid_stream_keep_exactly_once_and_order(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    total = 100_000
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 5, "batch.size": 16384,
                  "retry.backoff.ms": 20, "retry.backoff.max.ms": 200, "reconnect.backoff.ms": 10,
                  "reconnect.backoff.max.ms": 100})
    try:
        futures = []
        with ConnectionCutter(p, every_s=0.03) as cutter:
            for i in range(total):
                futures.append(p.send(topic, value=b"%d" % i, key=b"k%d" % (i % 97)))
                if i % 10_000 == 9_999:
                    p.flush(120)  # let the cutter hit in-flight requests of every phase
            p.flush(180)
        assert cutter.cuts >= 3, f"only {cutter.cuts} connection cuts happened"
        metrics = p.metrics()
        assert metrics["record-retry-total"] > 0
        acked = [f.result(0) for f in futures]  # every record was acknowledged
        sent_order: dict[int, list[int]] = collections.defaultdict(list)
        for i, md in enumerate(acked):
            sent_order[md.partition].append(i)
    finally:
        p.close(30)
    back = read_back(kafka_broker.bootstrap, topic)
    assert sum(len(rs) for rs in back.values()) == total, "lost or duplicated records"
    for partition, records in back.items():
        values = [int(r.value) for r in records]
        assert values == sent_order[partition], f"partition {partition} is out of order or has duplicates"
        # Offsets reported to the futures are where the records really are.
        by_value = {int(r.value): r.offset for r in records}
        assert all(acked[i].offset == by_value[i] for i in sent_order[partition][:1000])


def test_a_restart_gets_a_new_producer_id(kafka_broker, topic_factory) -> None:
    # Idempotence covers one producer session: a new producer is a new producer id.
    topic = topic_factory(partitions=1)
    ids = []
    for _ in range(2):
        with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as p:
            p.send(topic, b"x").result(30)
    for r in read_back(kafka_broker.bootstrap, topic)[0]:
        ids.append((r.producer_id, r.producer_epoch))
    assert len(ids) == 2 and ids[0][0] != ids[1][0] and all(pid >= 0 for pid, _ in ids)
