"""The producer's collaborators without a broker: Delivery, SenderWakeup, CustomPartitioning."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kafkalite.errors import ConfigError, KafkaError, KafkaTimeoutError, ProducerFencedError
from kafkalite.producer.accumulator import BufferPool, RecordAccumulator
from kafkalite.producer.batch import DoneSignal
from kafkalite.producer.delivery import Delivery
from kafkalite.producer.futures import RecordFuture
from kafkalite.producer.partitioner import CustomPartitioning
from kafkalite.producer.producer_metrics import ProducerMetrics
from kafkalite.producer.wakeup import SenderWakeup
from kafkalite.protocol import compression


def make_delivery(guarantee_order: bool = False) -> tuple[Delivery, RecordAccumulator, list[int]]:
    wakes: list[int] = []
    pool = BufferPool(1 << 20)
    acc = RecordAccumulator(batch_size=200, linger_ms=10, compression=compression.NONE, compression_level=None,
                            delivery_timeout_ms=1000, pool=pool, signal=DoneSignal(), wakeup=lambda: None)
    acc.update_topic("t", 2, [0, 1])
    metrics = ProducerMetrics("c", 30_000, 2, pool, acc)
    delivery = Delivery(acc, metrics, in_flight=set(), wake=lambda: wakes.append(1),
                        guarantee_order=guarantee_order)
    return delivery, acc, wakes


def append(acc: RecordAccumulator, partition: int) -> RecordFuture:
    future = acc.append(acc.topics["t"], partition, 1000, None, b"v", None, -1, 1, RecordFuture, None, None, 40)
    assert future is not None
    return future


def test_complete_and_fail_settle_the_batch_and_give_its_memory_back() -> None:
    delivery, acc, _ = make_delivery()
    ok, bad = append(acc, 0), append(acc, 1)
    sent = acc.drain(1, list(acc.topics["t"].queues), 1 << 20, time.monotonic())
    delivery.in_flight.update(sent)
    delivery.complete(ok._batch, 7, -1)
    delivery.fail(bad._batch, KafkaError("refused"))
    assert ok.result(0).offset == 7
    with pytest.raises(KafkaError, match="refused") as info:
        bad.result(0)
    assert (info.value.topic, info.value.partition) == ("t", 1)  # the batch's partition named
    assert not delivery.in_flight and not acc.incomplete and acc.pool.available == acc.pool.total
    snapshot = delivery.metrics.snapshot()
    assert snapshot["record-send-total"] == 1 and snapshot["record-error-total"] == 1


def test_fail_queued_gives_every_batch_its_own_error() -> None:
    delivery, acc, _ = make_delivery()
    futures = [append(acc, 0), append(acc, 1)]
    delivery.fail_queued(lambda: KafkaError("aborted", abortable=True))
    errors = [f.exception(0) for f in futures]
    assert errors[0] is not errors[1]
    assert [(e.topic, e.partition) for e in errors] == [("t", 0), ("t", 1)]
    assert all(e.abortable for e in errors) and not acc.incomplete


def test_fail_all_fails_queued_and_in_flight_batches() -> None:
    delivery, acc, _ = make_delivery()
    in_flight = append(acc, 0)
    delivery.in_flight.update(acc.drain(1, [acc.topics["t"].queues[0]], 1 << 20, time.monotonic()))
    queued = append(acc, 1)
    fenced = ProducerFencedError("fenced")
    delivery.fail_all(fenced)
    assert in_flight.exception(0) is fenced and queued.exception(0) is fenced
    assert not delivery.in_flight and not delivery.unacknowledged()


def test_ordering_mutes_a_partition_until_its_batch_is_settled() -> None:
    delivery, acc, _ = make_delivery(guarantee_order=True)
    f = append(acc, 0)
    queue = acc.topics["t"].queues[0]
    delivery.mute(f._batch)
    assert queue.muted
    delivery.complete(f._batch, 0, -1)
    assert not queue.muted
    unordered, acc2, _ = make_delivery(guarantee_order=False)
    unordered.mute(append(acc2, 0)._batch)
    assert not acc2.topics["t"].queues[0].muted


def test_flush_makes_batches_urgent_and_waits_for_them() -> None:
    delivery, acc, wakes = make_delivery()
    future = append(acc, 0)

    async def main() -> None:
        with pytest.raises(KafkaTimeoutError, match=r"1 record\(s\) are still unacknowledged"):
            await delivery.flush(0.05)
        assert acc.flushes_in_progress == 0 and wakes == [1]
        flushing = asyncio.ensure_future(delivery.flush(None))
        await asyncio.sleep(0)
        assert acc.flushes_in_progress == 1 and not flushing.done()
        delivery.complete(future._batch, 3, -1)
        await asyncio.wait_for(flushing, 5)
        assert acc.flushes_in_progress == 0
        await delivery.flush(0)  # nothing buffered: returns at once

    asyncio.run(main())


def test_sender_wakeup_from_threads_is_one_call_while_pending() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        wakeup = SenderWakeup()
        wakeup.bind(loop)
        calls: list[object] = []
        original = loop.call_soon_threadsafe

        def counting(callback, *args):  # type: ignore[no-untyped-def]
            calls.append(callback)
            return original(callback, *args)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        caller = threading.Thread(target=lambda: [wakeup.wake_threadsafe() for _ in range(5)])
        caller.start()
        caller.join(10)
        assert len(calls) == 1  # the later ones found one on its way
        wakeup.begin_pass()
        await asyncio.sleep(0)  # the pending call runs: woken
        assert wakeup.pending
        wakeup.wake_threadsafe()  # a new request after it ran goes out again
        assert len(calls) == 2
        await asyncio.sleep(0)

        started = time.monotonic()
        sleeping = asyncio.ensure_future(wakeup.sleep_until(time.monotonic() + 30))
        await asyncio.sleep(0)
        wakeup.wake()
        await asyncio.wait_for(sleeping, 5)
        assert time.monotonic() - started < 5  # woken, not the 30 s timer
        await wakeup.sleep_until(time.monotonic() + 0.01)  # and the timer alone ends it too

    asyncio.run(main())


def test_sender_wakeup_keeps_one_timer_while_its_due_time_stays() -> None:
    # issue 27: a pass woken early (a response, a send()) mostly sleeps until the same
    # linger deadline again; the timer armed for it is kept, not cancelled and armed anew.
    async def main() -> None:
        loop = asyncio.get_running_loop()
        wakeup = SenderWakeup()
        wakeup.bind(loop)
        armed: list[float] = []
        original = loop.call_at

        def counting(when, callback, *args, **kwargs):  # type: ignore[no-untyped-def]
            if callback == wakeup._on_timer:  # not wait_for()'s own timers
                armed.append(when)
            return original(when, callback, *args, **kwargs)

        loop.call_at = counting  # type: ignore[method-assign]
        due = time.monotonic() + 0.05
        sleeping = asyncio.ensure_future(wakeup.sleep_until(due))
        await asyncio.sleep(0)
        wakeup.wake()  # woken early
        await asyncio.wait_for(sleeping, 5)
        assert len(armed) == 1
        await wakeup.sleep_until(due)  # the same due time: the same timer ends it
        assert len(armed) == 1 and time.monotonic() >= due
        await wakeup.sleep_until(time.monotonic() + 0.001)  # a new due time: armed anew
        assert len(armed) == 2
        sleeping = asyncio.ensure_future(wakeup.sleep_until(time.monotonic() + 30))
        await asyncio.sleep(0)
        wakeup.wake()
        await asyncio.wait_for(sleeping, 5)
        wakeup.close()  # the sender stopped: no timer left on the loop
        assert wakeup._timer is None
        handles = [h for h in loop._scheduled  # type: ignore[attr-defined]
                   if not h.cancelled() and h._callback == wakeup._on_timer]
        assert handles == []

    asyncio.run(main())


class _Cluster:
    def partition_count(self, topic: str) -> int:
        return 3

    def available_partitions(self, topic: str) -> list[int]:
        return [0, 2]


def test_custom_partitioning_checks_the_partitioner_and_its_answer() -> None:
    class Fixed:
        def __init__(self, answer: object) -> None:
            self.answer = answer

        def partition(self, topic, key, key_bytes, value, value_bytes, cluster):  # type: ignore[no-untyped-def]
            if isinstance(self.answer, BaseException):
                raise self.answer
            assert cluster.available_partitions(topic) == [0, 2]
            return self.answer

    assert CustomPartitioning(Fixed(2), _Cluster()).partition("t", "k", b"k", "v", b"v", 3) == 2
    with pytest.raises(ConfigError, match=r"partitioner.class\) returned 3; topic 't' has partitions 0..2"):
        CustomPartitioning(Fixed(3), _Cluster()).partition("t", None, None, None, None, 3)
    with pytest.raises(ConfigError, match=r"partitioner.class\) returned '1'"):
        CustomPartitioning(Fixed("1"), _Cluster()).partition("t", None, None, None, None, 3)
    with pytest.raises(ConfigError, match=r"partitioner.class\) failed: ZeroDivisionError"):
        CustomPartitioning(Fixed(ZeroDivisionError("x")), _Cluster()).partition("t", None, None, None, None, 3)
    fenced = ProducerFencedError("its own Kafka error")
    with pytest.raises(ProducerFencedError) as info:
        CustomPartitioning(Fixed(fenced), _Cluster()).partition("t", None, None, None, None, 3)
    assert info.value is fenced
