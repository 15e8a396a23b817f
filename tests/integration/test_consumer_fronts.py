"""The blocking and asyncio consumers behave the same: one body per test, run on both fronts.

Both fronts come from one definition (``tools/generate_fronts.py``); these tests check
the behaviour that lives in their base classes (callbacks, wakeup, closing) against a
real broker. ``call`` awaits what the asyncio front returns and takes the blocking
front's result as it is (the blocking consumer runs its engine on its own thread, so
blocking this test's loop meanwhile is harmless).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import kafkalite
from kafkalite import OffsetAndMetadata, TopicPartition, aio
from kafkalite.errors import ClientClosedError, IllegalStateError, WakeupError
from tests.integration.consumer_support import produce_spread
from tests.integration.share_support import configure_group, new_group, produce_values, settings

pytestmark = pytest.mark.broker

FRONTS = {"blocking": kafkalite.Consumer, "asyncio": aio.Consumer}
SHARE_FRONTS = {"blocking": kafkalite.ShareConsumer, "asyncio": aio.ShareConsumer}


async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    result = fn(*args, **kwargs)
    return await result if inspect.isawaitable(result) else result


async def until(cond: Callable[[], Any], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def wakeup_from_another_thread_ends_a_long_poll(consumer: Any) -> None:
    timer = threading.Timer(0.5, consumer.wakeup)
    timer.start()
    started = time.monotonic()
    with pytest.raises(WakeupError, match="poll"):
        await call(consumer.poll, 30)
    assert time.monotonic() - started < 15


async def poll_until(consumer: Any, n: int, timeout: float = 60.0) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, f"got {len(out)} of {n} records"
        out.extend(await call(consumer.poll, 0.5))
    return out


@pytest.mark.parametrize("front", sorted(FRONTS))
async def test_unsubscribe_commits_revokes_and_runs_queued_callbacks(front, kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    await asyncio.to_thread(produce_spread, kafka_broker.bootstrap, topic, 2, 20)
    events: list[tuple[str, Any]] = []

    class Listener:
        def on_partitions_assigned(self, parts: set[TopicPartition]) -> None:
            events.append(("assigned", parts))

        def on_partitions_revoked(self, parts: set[TopicPartition]) -> None:
            events.append(("revoked", parts))

    group = f"g-{topic}-{front}"
    c = FRONTS[front]({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group,
                       "auto.offset.reset": "earliest", "enable.auto.commit": True})
    try:
        c.subscribe([topic], listener=Listener())
        await poll_until(c, 40)
        owned = {TopicPartition(topic, p) for p in (0, 1)}
        assert c.assignment() == owned
        before = len(events)
        await call(c.unsubscribe)
        assert events[before:] == [("revoked", owned)]
        assert c.assignment() == set() and c.subscription() == set()
        with pytest.raises(IllegalStateError, match="not subscribed"):
            await call(c.poll, 0.1)
        committed = await call(c.committed, sorted(owned))
        assert {tp: om.offset for tp, om in committed.items()} == dict.fromkeys(owned, 20)  # auto-commit
        # A member owning nothing (a pattern that matches no topic) still runs what the
        # engine queued for it (here a commit callback) before unsubscribe() returns.
        c.subscribe(pattern=f"^nothing-matches-{topic}$")
        done: list[Any] = []

        def committed_callback(offsets: Any, error: Any) -> None:
            done.append((offsets, error))

        c.commit_async({}, callback=committed_callback)
        await until(lambda: any(q.fn is committed_callback for q in c._core.app_calls._calls),
                    "the commit callback to be queued")
        assert done == []
        await call(c.unsubscribe)
        assert done == [({}, None)]
    finally:
        await call(c.close, 10)


@pytest.mark.parametrize("front", sorted(FRONTS))
async def test_wakeup_interrupts_any_blocking_call_and_not_close(front, kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    await asyncio.to_thread(produce_spread, kafka_broker.bootstrap, topic, 1, 10)
    tp = TopicPartition(topic, 0)
    group = f"g-{topic}-{front}"
    c = FRONTS[front]({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group,
                       "auto.offset.reset": "earliest", "enable.auto.commit": True})
    try:
        c.subscribe([topic])
        assert len(await poll_until(c, 10)) == 10
        # A wakeup() made before a call is raised by that call (poll or any other), once.
        c.wakeup()
        with pytest.raises(WakeupError, match="committed"):
            await call(c.committed, [tp])
        assert set(await call(c.committed, [tp])) == {tp}  # the wakeup was used up: it answers again
        c.wakeup()
        with pytest.raises(WakeupError, match="commit"):
            await call(c.commit_sync, {tp: OffsetAndMetadata(3)})
        await call(c.commit_sync, {tp: OffsetAndMetadata(4)})
        assert (await call(c.committed, [tp]))[tp].offset == 4
        await wakeup_from_another_thread_ends_a_long_poll(c)  # would wait 30 s
        # close() ignores a pending wakeup (Java's too): the auto-commit still happens.
        c.wakeup()
    finally:
        await call(c.close, 10)
    with FRONTS["blocking"]({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group}) as probe:
        assert probe.committed([tp])[tp].offset == 10
    with pytest.raises(ClientClosedError):
        c.assignment()
    await call(c.close)  # idempotent


async def test_subscribe_to_nothing_unsubscribes_or_says_to_await_unsubscribe(kafka_broker, topic_factory) -> None:
    """Java's subscribe([]) is unsubscribe(): the blocking front does that; a plain method of
    the asyncio front cannot wait for the group, so it refuses and names the way out."""
    topic = topic_factory(partitions=1)
    cfg = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"g-{topic}"}
    with kafkalite.Consumer(cfg) as blocking:
        blocking.subscribe([topic])
        blocking.subscribe([])
        assert blocking.subscription() == set()
    async with aio.Consumer(cfg) as asynchronous:
        asynchronous.subscribe([topic])
        with pytest.raises(IllegalStateError, match="await consumer.unsubscribe"):
            asynchronous.subscribe([])
        assert asynchronous.subscription() == {topic}
        await asynchronous.unsubscribe()
        assert asynchronous.subscription() == set()
    async with aio.ShareConsumer(cfg) as share:
        with pytest.raises(IllegalStateError, match="await consumer.unsubscribe"):
            share.subscribe([])


@pytest.mark.parametrize("front", sorted(SHARE_FRONTS))
async def test_share_consumer_wakeup_and_close_alike(front, kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    c = SHARE_FRONTS[front]({"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"s-{topic}-{front}"})
    try:
        c.subscribe([topic])
        await wakeup_from_another_thread_ends_a_long_poll(c)
        c.wakeup()
        with pytest.raises(WakeupError):
            await call(c.poll, 30)
        assert await call(c.poll, 0.2) == []  # the wakeup was used up
    finally:
        c.wakeup()
        started = time.monotonic()
        await call(c.close, 10)  # not interrupted by the pending wakeup, bounded
        assert time.monotonic() - started < 15
    with pytest.raises(ClientClosedError):
        await call(c.poll, 0.1)
    assert "closed" in repr(c)


@pytest.mark.parametrize("front", sorted(SHARE_FRONTS))
async def test_share_commit_async_hands_finished_acknowledgements_to_the_callback(front, kafka_broker,
                                                                                 topic_factory) -> None:
    """Java's commitAsync() first reports the acknowledgements already answered; the
    asyncio front did only from poll() and commit_sync()."""
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group()
    await asyncio.to_thread(configure_group, bs, group)
    await asyncio.to_thread(produce_values, bs, topic, [b"a0", b"a1"], 2)
    tp = TopicPartition(topic, 0)
    outcomes: list[Any] = []
    c = SHARE_FRONTS[front](settings(bs, group, share_acknowledgement_mode="explicit"))
    try:
        c.set_acknowledgement_commit_callback(lambda offsets, error: outcomes.append((offsets, error)))
        c.subscribe([topic])
        got: list[Any] = []
        deadline = time.monotonic() + 60
        while len(got) < 2:
            assert time.monotonic() < deadline, f"got {len(got)} of 2 records"
            got += await call(c.poll, 0.5)
        for record in got:
            c.acknowledge(record)
        c.commit_async()
        await until(lambda: len(c._core.ack_results) == 1, "the acknowledgements' answer")
        assert outcomes == []
        c.commit_async()  # nothing new to send; the answer known goes to the callback now
        assert outcomes == [({tp: {0, 1}}, None)]
    finally:
        await call(c.close, 10)
