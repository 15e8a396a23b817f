"""kafkalite.aio.ShareConsumer against a real broker: two members on the caller's loop."""

from __future__ import annotations

import asyncio
import time

import pytest

from kafkalite import AcknowledgeType
from kafkalite.aio import ShareConsumer
from kafkalite.errors import IllegalStateError
from kafkalite.types import TopicPartition
from tests.integration.share_support import (
    configure_group,
    new_group,
    offsets_of,
    produce_values,
    settings,
)

pytestmark = pytest.mark.broker


async def poll_until(consumer: ShareConsumer, want: int, timeout: float = 30.0) -> list:
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < want:
        assert time.monotonic() < deadline, f"got {len(got)} of {want} records"
        got += await consumer.poll(0.5)
    return got


@pytest.mark.timeout(60)
async def test_async_members_release_accept_and_callbacks(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group()
    await asyncio.to_thread(configure_group, bs, group)
    await asyncio.to_thread(produce_values, bs, topic, [b"a0", b"a1", b"a2"], 3)
    tp = TopicPartition(topic, 0)
    outcomes: list = []

    async def on_commit(offsets, error) -> None:  # a coroutine callback is awaited
        outcomes.append((offsets, error))

    async with ShareConsumer(settings(bs, group, share_acknowledgement_mode="explicit")) as first:
        first.set_acknowledgement_commit_callback(on_commit)
        first.subscribe([topic])
        got = await poll_until(first, 3)
        assert [(r.offset, r.delivery_count) for r in got] == [(0, 1), (1, 1), (2, 1)]
        first.acknowledge(got[0])
        first.acknowledge(got[1], AcknowledgeType.RELEASE)
        first.acknowledge(got[2], AcknowledgeType.REJECT)
        assert await first.commit_sync() == {tp: None}
        assert outcomes == [({tp: {0, 1, 2}}, None)]
        async with ShareConsumer(settings(bs, group)) as second:   # implicit mode
            second.subscribe([topic])
            with pytest.raises(IllegalStateError, match="explicit"):
                second.acknowledge(topic, partition=0, offset=1)
            # The released record goes to whichever member fetches first.
            deadline = time.monotonic() + 30
            again: list = []
            holder = None
            while not again:
                assert time.monotonic() < deadline, "the released record did not come back"
                for member in (second, first):
                    again = await member.poll(0.3)
                    if again:
                        holder = member
                        break
            assert [(r.offset, r.value, r.delivery_count) for r in again] == [(1, b"a1", 2)]
            if holder is first:
                first.acknowledge(again[0])
                await first.commit_sync()
            assert second.metrics()["heartbeat-total"] >= 1
        # second closed: in implicit mode it accepted what it held
    for _ in range(60):
        o = await asyncio.to_thread(offsets_of, bs, group, tp)
        if o is not None and o.lag == 0:
            break
        await asyncio.sleep(0.5)
    else:
        pytest.fail("the group was not drained")

