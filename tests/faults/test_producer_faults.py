"""The producer under broker faults on a 3-node cluster: leaders killed mid-stream, ISR
too small. Acknowledged records are never lost or duplicated; failures name the last
broker error."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from kafkalite import Producer
from kafkalite.errors import KafkaTimeoutError, NotEnoughReplicasError
from tests.integration.producer_support import read_back, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.mark.timeout(400)
def test_leader_killed_mid_stream_loses_and_duplicates_nothing(kafka_cluster, unique_topic) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 3, 3, {"min.insync.replicas": "2"})
    total = 30_000
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "linger.ms": 5, "retry.backoff.ms": 50,
                  "reconnect.backoff.max.ms": 500})
    try:
        victim = kafka_cluster.leader(topic, 0)
        futures = []
        for i in range(total):
            futures.append(p.send(topic, b"%d" % i, key=b"k%d" % (i % 31)))
            if i == total // 3:
                # Mid-stream: the victim has acknowledged records of partition 0, more are
                # in flight or waiting, and the rest come after the crash.
                wait_until(lambda: any(f.done() and f.result().partition == 0 for f in futures), 60,
                           "an acknowledgement from the victim")
                victim.kill()
            elif i % 3000 == 2999:
                time.sleep(0.1)  # spread the sends over the failover
        p.flush(180)
        acked = [f.result(0) for f in futures]
        assert p.metrics()["record-error-total"] == 0
    finally:
        p.close(30)
    sent_order: dict[int, list[int]] = {}
    for i, md in enumerate(acked):
        sent_order.setdefault(md.partition, []).append(i)
    back = wait_until(lambda: read_back(kafka_cluster.live_bootstrap(), topic), 60, "reading back")
    assert sum(len(rs) for rs in back.values()) == total
    for partition, records in back.items():
        assert [int(r.value) for r in records] == sent_order[partition]
    # The failover happened mid-stream: partition 0 holds records appended by the
    # victim and, after them, by its successor (a later leader epoch).
    epochs = [r.leader_epoch for r in back[0]]
    assert epochs == sorted(epochs) and len(set(epochs)) >= 2, sorted(set(epochs))


@pytest.mark.timeout(300)
def test_not_enough_replicas_is_retried_until_the_delivery_timeout(kafka_cluster, unique_topic) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1, 3, {"min.insync.replicas": "3"})
    leader = kafka_cluster.leader(topic, 0)
    follower = next(b for b in kafka_cluster if b.node_id != leader.node_id)
    with Producer({"bootstrap.servers": kafka_cluster.bootstrap, "linger.ms": 0}) as p:
        p.send(topic, b"before").result(30)
    follower.kill()
    # The controller drops the dead broker from the ISR once its session times out.
    with Producer({"bootstrap.servers": kafka_cluster.live_bootstrap(), "linger.ms": 0,
                   "delivery.timeout.ms": 12_000, "request.timeout.ms": 10_000,
                   "retry.backoff.ms": 100}) as p:
        def refused() -> bool:
            try:
                p.send(topic, b"probe").result(30)
            except (NotEnoughReplicasError, KafkaTimeoutError):
                return True
            return False

        wait_until(refused, 120, "NOT_ENOUGH_REPLICAS after the follower died", interval=0.5)
        started = time.monotonic()
        future = p.send(topic, b"never")
        with pytest.raises(NotEnoughReplicasError) as info:
            future.result(60)
        assert time.monotonic() - started >= 10  # retried, not failed at once
        assert info.value.topic == topic and info.value.retriable
        assert p.metrics()["record-retry-total"] > 0
