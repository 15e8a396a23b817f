"""kafkalite.aio.Consumer against the real broker."""

from __future__ import annotations

import asyncio
import time

import pytest

from kafkalite import OffsetAndMetadata, TopicPartition, aio
from kafkalite.errors import KafkaTimeoutError, WakeupError
from tests.integration.consumer_support import produce, produce_spread

pytestmark = pytest.mark.broker


async def collect(consumer: aio.Consumer, n: int, timeout: float = 60.0) -> list:
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, f"got {len(out)} of {n}"
        out.extend(await consumer.poll(0.5))
    return out


async def test_assign_poll_seek_and_offsets(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    await asyncio.to_thread(produce, kafka_broker.bootstrap, topic, count=500, batch_size=50)
    tp = TopicPartition(topic, 0)
    async with aio.Consumer({"bootstrap.servers": kafka_broker.bootstrap, "auto.offset.reset": "earliest",
                             "max.poll.records": 100}) as c:
        c.assign([tp])
        got = await collect(c, 500)
        assert [r.offset for r in got] == list(range(500))
        assert await c.position(tp) == 500
        assert await c.end_offsets([tp]) == {tp: 500}
        c.seek(tp, 123)
        assert (await collect(c, 1))[0].offset == 123
        found = await c.offsets_for_times({tp: 0})
        assert found[tp] is not None and found[tp].offset == 0
        grouped = await c.getmany(timeout_ms=1000)
        assert set(grouped) <= {tp}


async def test_group_with_coroutine_listener_and_commits(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    await asyncio.to_thread(produce_spread, kafka_broker.bootstrap, topic, 3, 30)
    events: list[tuple[str, set[TopicPartition]]] = []
    loop_thread_task: list[asyncio.Task | None] = []

    class Listener:
        async def on_partitions_assigned(self, parts: set[TopicPartition]) -> None:
            await asyncio.sleep(0)
            loop_thread_task.append(asyncio.current_task())
            events.append(("assigned", parts))

        async def on_partitions_revoked(self, parts: set[TopicPartition]) -> None:
            events.append(("revoked", parts))

    group = f"g-{topic}"
    conf = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False}
    c = aio.Consumer(conf)
    try:
        c.subscribe([topic], listener=Listener())
        got = await collect(c, 90)
        assert {r.partition for r in got} == {0, 1, 2}
        assert events[0] == ("assigned", {TopicPartition(topic, p) for p in range(3)})
        assert loop_thread_task[0] is not None  # ran inside the polling task
        await c.commit()
        committed = await c.committed([TopicPartition(topic, p) for p in range(3)])
        assert all(v is not None and v.offset == 30 for v in committed.values())
        done: list[object] = []
        c.commit_async({TopicPartition(topic, 0): OffsetAndMetadata(7)}, callback=lambda o, e: done.append(e))
        deadline = time.monotonic() + 30
        while not done and time.monotonic() < deadline:
            await c.poll(0.1)
        assert done == [None]
        assert c.group_metadata().group_id == group and c.group_metadata().generation_id >= 1
    finally:
        await c.close(10)
    assert events[-1] == ("revoked", {TopicPartition(topic, p) for p in range(3)})


async def test_wakeup_and_timeouts() -> None:
    c = aio.Consumer({"bootstrap.servers": "127.0.0.1:1", "default.api.timeout.ms": 500})
    tp = TopicPartition("x", 0)
    c.assign([tp])
    started = time.monotonic()
    assert await c.poll(0.3) == []
    assert time.monotonic() - started < 10  # its timeout, not forever (generous for a busy machine)
    asyncio.get_running_loop().call_later(0.2, c.wakeup)
    with pytest.raises(WakeupError):
        await c.poll(30)
    with pytest.raises(KafkaTimeoutError):
        await c.end_offsets([tp], timeout=0.3)
    started = time.monotonic()
    await c.close(timeout=1)
    assert time.monotonic() - started < 10  # close(timeout) never hangs past its timeout (generously)


async def test_list_topics_commit_sync_and_commit_as_the_blocking_consumer(kafka_broker, topic_factory) -> None:
    """The methods the asyncio consumer lacked: list_topics(), commit_sync(offsets, timeout),
    commit(asynchronous=True, callback=...)."""
    topic = topic_factory(partitions=3)
    tps = [TopicPartition(topic, p) for p in range(3)]
    async with aio.Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"g-{topic}"}) as c:
        listed = await c.list_topics(timeout=30)
        assert listed[topic] == set(tps)
        assert await c.partitions_for(topic) == set(tps)
        c.assign(tps)
        await c.commit_sync({tps[0]: 5, tps[1]: OffsetAndMetadata(6, "meta")}, 30)
        committed = await c.committed(tps)
        assert committed[tps[0]].offset == 5 and committed[tps[1]].metadata == "meta" and committed[tps[2]] is None
        done: list[object] = []
        await c.commit({tps[2]: 7}, asynchronous=True, callback=lambda offsets, error: done.append((offsets, error)))
        deadline = time.monotonic() + 30
        while not done:
            assert time.monotonic() < deadline, "the commit callback did not run"
            await c.poll(0.1)
        assert done == [({tps[2]: OffsetAndMetadata(7)}, None)]
        await c.commit({tps[2]: 8}, timeout=30)
        assert (await c.committed(tps[2]))[tps[2]].offset == 8
