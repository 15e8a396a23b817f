"""Consumer.poll_batches against a real broker: the columnar read path's fetch hook."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from kafkalite import Consumer, TopicPartition, aio
from kafkalite.protocol import compression
from kafkalite.protocol.records import RecordBatch
from tests.integration.consumer_support import produce

pytestmark = pytest.mark.broker


def _drain(consumer: Consumer, until: dict[TopicPartition, int], timeout: float = 60.0) -> dict[Any, list[Any]]:
    got: dict[Any, list[Any]] = {tp: [] for tp in until}
    deadline = time.monotonic() + timeout
    while any(consumer.position(tp) < end for tp, end in until.items()):
        assert time.monotonic() < deadline, "poll_batches() did not reach the end offsets"
        for tp, batches in consumer.poll_batches(timeout=0.5):
            for b in batches:
                assert isinstance(b, RecordBatch)
                cols = b.columns()
                for i, off in enumerate(cols.offsets):
                    s, n = cols.value_starts[i], cols.value_lengths[i]
                    got[tp].append((off, bytes(cols.buffer[s:s + n])))
    return got


def test_poll_batches_returns_every_batch_from_the_sought_offset(kafka_broker: Any, topic_factory: Any) -> None:
    topic = topic_factory(partitions=2)
    produce(kafka_broker.bootstrap, topic, count=300, batch_size=50, partition=0)
    produce(kafka_broker.bootstrap, topic, count=120, batch_size=40, partition=1, codec=compression.ZSTD)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with Consumer({"bootstrap.servers": kafka_broker.bootstrap, "max.partition.fetch.bytes": 4096}) as consumer:
        consumer.assign([tp0, tp1])
        consumer.seek(tp0, 75)  # inside the second batch: it comes whole, starting at 50
        consumer.seek(tp1, 0)
        got = _drain(consumer, {tp0: 300, tp1: 120})
    offsets0 = [o for o, _ in got[tp0]]
    assert offsets0 == list(range(50, 300))  # whole batches, in order, nothing repeated
    assert [o for o, _ in got[tp1]] == list(range(120))
    assert dict(got[tp1])[7] == b"v7........"


def test_poll_batches_needs_an_assignment(kafka_broker: Any) -> None:
    from kafkalite.errors import IllegalStateError

    with Consumer({"bootstrap.servers": kafka_broker.bootstrap}) as consumer, \
            pytest.raises(IllegalStateError, match="no assigned partitions"):
        consumer.poll_batches(timeout=0.1)


async def test_the_asyncio_consumer_polls_batches_too(kafka_broker: Any, topic_factory: Any) -> None:
    topic = topic_factory(partitions=1)
    await asyncio.to_thread(produce, kafka_broker.bootstrap, topic, count=200, batch_size=50)
    tp = TopicPartition(topic, 0)
    async with aio.Consumer({"bootstrap.servers": kafka_broker.bootstrap, "max.partition.fetch.bytes": 4096}) as c:
        c.assign([tp])
        c.seek(tp, 120)  # inside the third batch: it comes whole, starting at 100
        offsets: list[int] = []
        deadline = time.monotonic() + 60
        while await c.position(tp) < 200:
            assert time.monotonic() < deadline, "poll_batches() did not reach the end offset"
            for got_tp, batches in await c.poll_batches(timeout=0.5, max_bytes=4096):
                assert got_tp == tp
                offsets += [off for b in batches for off in b.columns().offsets]
        assert offsets == list(range(100, 200))
        assert await c.poll_batches(timeout=0.2) == []  # nothing more: an empty list after the timeout
