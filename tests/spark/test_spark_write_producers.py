"""A Python worker's write tasks share a producer (pyspark_kafkalite.producers): the task
code (send_all) run twice in this process as a reused Spark worker runs it, against a
real broker; a failed task's producer is never lent again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark_kafkalite.options import WriteOptions
from pyspark_kafkalite.producers import POOL, ProducerPool, settings_key
from pyspark_kafkalite.sending import send_all

from kafkalite import Producer
from kafkalite.errors import ClientClosedError, RecordTooLargeError
from tests.spark.test_spark_write import read_back

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]


def batches(values: list[bytes]) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_arrays([pa.array(values, pa.binary())], ["value"])


def idle_producers() -> list[Producer]:
    return [producer for producer, _ in POOL._idle.values()]


def test_tasks_of_one_worker_share_a_producer_and_a_failed_task_closes_its_own(
        kafka_broker: Any, topic_factory: Any) -> None:
    topic = topic_factory(partitions=2)
    opts = WriteOptions.parse({"kafka.bootstrap.servers": kafka_broker.bootstrap, "topic": topic,
                               "kafka.max.request.size": "100000", "kafka.client.id": f"pool-{topic}"})
    POOL.close_all()

    assert send_all(opts, batches([b"a%d" % i for i in range(500)])) == 500
    [first] = idle_producers()
    assert send_all(opts, batches([b"b%d" % i for i in range(500)])) == 500
    assert idle_producers() == [first]  # the second task was lent the first task's producer

    # A record the broker refuses fails its task with the Kafka error; the producer it
    # used is closed, not kept for the next task.
    with pytest.raises(RecordTooLargeError):
        send_all(opts, batches([b"c", b"x" * 200_000]))
    assert idle_producers() == []
    with pytest.raises(ClientClosedError):
        first.send(topic, b"never")

    # The next task starts a new producer and sees none of the failed task's errors.
    assert send_all(opts, batches([b"d%d" % i for i in range(500)])) == 500
    [second] = idle_producers()
    assert second is not first
    values = sorted(r.value for r in read_back(kafka_broker.bootstrap, topic, 2, 1501))
    expected = sorted([b"a%d" % i for i in range(500)] + [b"b%d" % i for i in range(500)]
                      + [b"d%d" % i for i in range(500)])
    # "c" went in the failed task's batch with the refused record or on its own: at least once.
    assert [v for v in values if v != b"c"] == expected
    POOL.close_all()
    with pytest.raises(ClientClosedError):
        second.send(topic, b"never")


def test_the_pool_keeps_few_idle_producers_for_a_while_and_never_a_transactional_one(kafka_broker: Any) -> None:
    now = [0.0]
    pool = ProducerPool(max_idle=2, idle_timeout_s=60.0, clock=lambda: now[0])
    settings = [{"bootstrap.servers": kafka_broker.bootstrap, "client.id": f"pool-{i}"} for i in range(3)]
    producers = [pool.lend(s) for s in settings]
    assert len({id(p) for p in producers}) == 3
    for s, p in zip(settings, producers):
        pool.give_back(s, p)
    # Beyond max_idle the longest idle one is closed.
    assert len(pool) == 2
    with pytest.raises(ClientClosedError):
        producers[0].send("t", b"v")
    assert pool.lend(settings[1]) is producers[1]
    extra = pool.lend(dict(settings[1]))
    assert extra is not producers[1]  # lent out: a new one
    # One idle past the timeout is closed at the next lend, not lent.
    now[0] = 61.0
    fresh = pool.lend(settings[2])
    assert fresh is not producers[2]
    with pytest.raises(ClientClosedError):
        producers[2].send("t", b"v")
    assert settings_key({"bootstrap.servers": "b:9092", "transactional.id": "tx"}) is None
    assert settings_key({"bootstrap.servers": "b:9092", "oauth_cb": lambda config: ("token", 0.0)}) is None
    assert settings_key({"bootstrap.servers": "b:9092", "linger.ms": 5}) == settings_key(
        {"linger.ms": 5, "bootstrap.servers": "b:9092"})
    transactional = {"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": "pool-tx"}
    producer = pool.lend(transactional)
    pool.give_back(transactional, producer)  # closed, not kept: one id is one producer identity
    assert len(pool) == 0
    with pytest.raises(ClientClosedError):
        producer.send("t", b"v")
    for p in (producers[1], extra, fresh):
        p.close()
