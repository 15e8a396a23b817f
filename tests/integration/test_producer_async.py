"""The asyncio producer (kafkalite.aio.Producer) against the real broker."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from kafkalite.aio import Producer
from kafkalite.errors import (
    ClientClosedError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
    UnknownTopicOrPartitionError,
)
from kafkalite.producer.futures import AsyncRecordFuture, AsyncSendManyResult
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


async def test_send_many_delivers_in_order_and_reports_the_failed_record(kafka_broker, topic_factory) -> None:
    """kafkalite.aio.Producer.send_many: what the blocking producer's does, awaited."""
    topic = topic_factory(partitions=3)
    values = [b"v%d" % i for i in range(5000)]
    keys = [b"k%d" % (i % 40) for i in range(5000)]
    async with Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 5}) as p:
        outcome = await p.send_many(topic, values, keys)  # the first record waits for metadata
        more = await p.send_many(topic, (b"unkeyed-%d" % i for i in range(1000)))  # any iterable
        assert isinstance(outcome, AsyncSendManyResult) and len(more) == 1000
        assert not outcome.done()  # appended; the loop has not run the sender since
        with pytest.raises(IllegalStateError, match="not all acknowledged"):
            outcome.result()  # does not block the loop
        assert await outcome == 5000 and await more.wait(60) == 1000
        assert outcome.failures() == [] and outcome.done() and outcome.result() == 5000
        assert p.metrics()["record-send-total"] == 6000
    back = await read_back_async(kafka_broker.bootstrap, topic)
    assert sum(len(v) for v in back.values()) == 6000
    for partition, records in back.items():
        keyed = [r for r in records if r.key is not None]
        expect = [v for k, v in zip(keys, values) if partition_for_key(k, 3) == partition]
        assert [r.value for r in keyed] == expect  # send order per partition
        assert {r.key for r in keyed} <= {k for k in keys if partition_for_key(k, 3) == partition}
    # A record the topic refuses fails alone; the rest of the call is delivered.
    small = topic_factory(partitions=1, configs={"max.message.bytes": "2000"})
    batch = [b"ok-%d" % i for i in range(50)]
    batch[20] = b"x" * 5000
    async with Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 50}) as p:
        outcome = await p.send_many(small, batch)
        await p.flush(60)
        failures = outcome.failures()
        assert [i for i, _ in failures] == [20] and isinstance(failures[0][1], RecordTooLargeError)
        with pytest.raises(RecordTooLargeError):
            await outcome
        with pytest.raises(ValueError, match="2 keys for 3 values"):
            await p.send_many(small, [b"a", b"b", b"c"], keys=[b"1", b"2"])
    assert [r.value for r in (await read_back_async(kafka_broker.bootstrap, small))[0]] == batch[:20] + batch[21:]


async def test_send_many_serializes_and_honours_partition_and_timestamp(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    async with Producer({"bootstrap.servers": kafka_broker.bootstrap, "value.serializer": "json",
                         "key.serializer": "string"}) as p:
        outcome = await p.send_many(topic, [{"n": i} for i in range(10)], keys=[f"k{i}" for i in range(10)],
                                    partition=1, timestamp=1_700_000_000_000)
        assert await outcome.wait(30) == 10
        with pytest.raises(SerializationError, match=topic):
            await p.send_many(topic, [{"ok": 1}, object()])
    records = (await read_back_async(kafka_broker.bootstrap, topic))[1]
    assert [r.value for r in records][:10] == [b'{"n":%d}' % i for i in range(10)]
    assert [r.key for r in records][:10] == [b"k%d" % i for i in range(10)]
    assert {r.timestamp for r in records[:10]} == {1_700_000_000_000}
    assert records[10:] == []  # values are serialized before any is appended: none of that call was sent


def test_an_asyncio_producer_runs_on_the_engine_loop_that_keeps_timers_precise(kafka_broker, topic_factory) -> None:
    # docs/producer.md: an asyncio application may run on new_engine_loop() for ~0.1 ms
    # timers (linger.ms) instead of asyncio's rounding up to the next millisecond.
    from kafkalite.net.timers import new_engine_loop

    topic = topic_factory(partitions=1)

    async def main() -> list[int]:
        async with Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 3}) as p:
            futures = [await p.send(topic, b"v%d" % i) for i in range(50)]
            return [(await f).offset for f in futures]

    loop = new_engine_loop()
    try:
        assert loop.run_until_complete(main()) == list(range(50))
        records = loop.run_until_complete(read_back_async(kafka_broker.bootstrap, topic))[0]
    finally:
        loop.close()
    assert [r.value for r in records] == [b"v%d" % i for i in range(50)]
