"""The asyncio producer (kafkalite.aio.Producer) against the real broker."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from kafkalite.aio import Producer
from kafkalite.errors import (
    ClientClosedError,
    KafkaError,
    KafkaTimeoutError,
    SerializationError,
    UnknownTopicOrPartitionError,
)
from kafkalite.producer.futures import AsyncRecordFuture
from kafkalite.producer.partitioner import partition_for_key
from tests.integration.producer_support import read_back_async, throttled_client_id

pytestmark = pytest.mark.broker


async def test_send_appends_and_returns_an_awaitable_send_and_wait_acknowledges(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    order: list[int] = []
    async with Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 50}) as p:
        md = await p.send_and_wait(topic, b"first", key=b"k")
        assert md.offset == 0 and md.partition == partition_for_key(b"k", 2)
        started = time.monotonic()
        futures = [await p.send(topic, b"v%d" % i, key=b"k", callback=lambda m, e, i=i: order.append(i))
                   for i in range(2000)]
        assert time.monotonic() - started < 10  # appended without waiting for acknowledgements (generous)
        assert isinstance(futures[0], AsyncRecordFuture) and not futures[-1].done()  # appended, not yet sent
        await p.flush(30)
        assert all(f.done() for f in futures)
        offsets = [(await f).offset for f in futures]
        assert offsets == list(range(1, 2001))
        assert order == list(range(2000))
        assert await p.partitions_for(topic) == [0, 1]
        assert p.metrics()["record-send-total"] == 2001
    records = (await read_back_async(kafka_broker.bootstrap, topic))[partition_for_key(b"k", 2)]
    assert [r.value for r in records] == [b"first"] + [b"v%d" % i for i in range(2000)]


async def test_errors_are_raised_by_send_itself(kafka_broker, topic_factory, unique_topic) -> None:
    topic = topic_factory(partitions=1)
    async with Producer({"bootstrap.servers": kafka_broker.bootstrap, "max.block.ms": 1000,
                         "value.serializer": "json"}) as p:
        with pytest.raises(SerializationError, match="value serializer failed: cannot serialize object as JSON"):
            await p.send(topic, object())
        with pytest.raises((UnknownTopicOrPartitionError, KafkaTimeoutError),
                           match=rf"topic '{re.escape(unique_topic)}' not present in metadata after 1000 ms"):
            await p.send(unique_topic, {"a": 1})
        with pytest.raises(UnknownTopicOrPartitionError, match="partition 3"):
            await p.send(topic, {"a": 1}, partition=3)
        md = await p.send_and_wait(topic, {"ok": True})
        assert md.serialized_value_size == len(b'{"ok":true}')
    with pytest.raises(ClientClosedError):
        await p.send(topic, {"late": 1})


async def test_backpressure_waits_without_blocking_the_loop_then_times_out(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    client_id = throttled_client_id(kafka_broker.bootstrap)
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap, "client.id": client_id, "buffer.memory": 100_000,
                  "batch.size": 16384, "max.block.ms": 700, "linger.ms": 0})
    await p.start()
    try:
        await p.send_and_wait(topic, b"h" * 60_000)  # the quota now mutes our connection
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        tick_task = asyncio.ensure_future(ticker())
        futures = []
        with pytest.raises(KafkaTimeoutError, match="buffer.memory"):
            for _ in range(100):
                futures.append(await p.send(topic, b"x" * 15_000))
        tick_task.cancel()
        assert ticks >= 5  # the event loop kept running while send() waited
        # A caller's own timeout cancels a waiting send cleanly.
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(p.send(topic, b"x" * 15_000), 0.2)
        with pytest.raises(KafkaTimeoutError):
            await p.flush(0.3)
    finally:
        started = time.monotonic()
        await p.close(1.0)
        assert time.monotonic() - started < 5  # close(1.0) honours its timeout (generously)
    assert futures and all(isinstance(f.exception(), KafkaError) for f in futures)


async def test_async_transactions_commit_and_abort(kafka_broker, topic_factory, unique_topic) -> None:
    topic = topic_factory(partitions=2)
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": unique_topic})
    await p.init_transactions(30)
    async with p.transaction():
        for i in range(10):
            await p.send(topic, b"keep-%d" % i)
    p.begin_transaction()
    for i in range(10):
        await p.send(topic, b"drop-%d" % i)
    await p.abort_transaction(30)
    with pytest.raises(RuntimeError):
        async with p.transaction():
            await p.send(topic, b"drop-too")
            raise RuntimeError("failed")
    await p.close()
    committed = await read_back_async(kafka_broker.bootstrap, topic, read_committed=True)
    assert sorted(r.value for rs in committed.values() for r in rs) == sorted(b"keep-%d" % i for i in range(10))
