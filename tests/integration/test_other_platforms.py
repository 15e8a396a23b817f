"""A produce/consume round trip on the paths other systems take (docs/platforms.md), run
on Linux against the real broker: no epoll (the engine runs the event loop policy's
own loop), no prctl (the timer slack left alone), and the plain select(2) loop, which
asyncio runs where neither epoll nor kqueue exists."""

from __future__ import annotations

import asyncio
import selectors

import pytest

from kafkalite import Consumer, Producer
from kafkalite.net import timers
from tests.integration.consumer_support import consume_n

pytestmark = pytest.mark.broker


class _SelectLoopPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.SelectorEventLoop(selectors.SelectSelector())


@pytest.mark.parametrize("loop", ["policy's default loop", "select(2) loop"])
def test_round_trip_without_epoll_or_prctl(kafka_broker, topic_factory, monkeypatch: pytest.MonkeyPatch,
                                           loop: str) -> None:
    monkeypatch.setattr(timers, "HAVE_EPOLL", False)
    monkeypatch.setattr(timers, "HAVE_PRCTL", False)
    previous = asyncio.get_event_loop_policy()
    if loop == "select(2) loop":
        asyncio.set_event_loop_policy(_SelectLoopPolicy())
    try:
        topic = topic_factory(partitions=3)
        # linger.ms: the sender's timers run on this loop, and must fire (not too early).
        with Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 5}) as producer:
            selector = producer._engine.loop._selector  # type: ignore[attr-defined]
            assert not isinstance(selector, getattr(timers, "PreciseEpollSelector", ()))
            if loop == "select(2) loop":
                assert isinstance(selector, selectors.SelectSelector)
            futures = [producer.send(topic, value=b"v%d" % i, key=b"k%d" % (i % 7)) for i in range(500)]
            producer.flush(60)
            assert all(f.result().offset >= 0 for f in futures)
        with Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"{topic}-g",
                       "auto.offset.reset": "earliest"}) as consumer:
            consumer.subscribe([topic])  # the group protocol's heartbeats and timers, too
            records = consume_n(consumer, 500)
            consumer.commit()
        assert sorted(r.value for r in records) == sorted(b"v%d" % i for i in range(500))
        assert len({(r.partition, r.offset) for r in records}) == 500
    finally:
        asyncio.set_event_loop_policy(previous)
