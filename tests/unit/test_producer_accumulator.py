"""The accumulator and per-record futures without a broker."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kafkalite.errors import IllegalStateError, KafkaError, KafkaTimeoutError
from kafkalite.producer.accumulator import INITIAL_ROOM, BufferPool, RecordAccumulator
from kafkalite.producer.futures import AsyncRecordFuture, DoneSignal, RecordFuture
from kafkalite.protocol import compression
from kafkalite.protocol.records import RecordBatch


def make_acc(batch_size: int = 200, linger_ms: int = 10, memory: int = 10_000, **kw) -> tuple[RecordAccumulator, list]:
    wakeups: list[int] = []
    acc = RecordAccumulator(
        batch_size=batch_size, linger_ms=linger_ms, compression=kw.get("codec", compression.NONE),
        compression_level=None, delivery_timeout_ms=kw.get("delivery_ms", 1000), pool=BufferPool(memory),
        signal=DoneSignal(), wakeup=lambda: wakeups.append(1),
    )
    partitions = kw.get("partitions", 3)
    acc.update_topic("t", partitions, list(range(partitions)))
    return acc, wakeups


def append(acc: RecordAccumulator, partition: int, value: bytes, cb=None, cls=RecordFuture):
    state = acc.topics["t"]
    return acc.append(state, partition, 1000, None, value, None, -1, len(value), cls, cb, None, len(value) + 32)


def test_records_fill_one_batch_then_start_another_with_one_wakeup_per_batch() -> None:
    acc, wakeups = make_acc(batch_size=200)
    futures = [append(acc, 0, b"x" * 30) for _ in range(12)]
    batches = list(acc.topics["t"].queues[0].batches)
    assert len(batches) >= 2
    assert len(wakeups) == len(batches)
    assert sum(b.record_count for b in batches) == 12
    assert [f._index for f in futures[: batches[0].record_count]] == list(range(batches[0].record_count))
    assert batches[0].closed and not batches[-1].closed
    assert acc.pool.available == 10_000 - 200 * len(batches)


def test_ready_honours_linger_full_batches_and_flush() -> None:
    acc, _ = make_acc(batch_size=200, linger_ms=50)
    append(acc, 0, b"a")
    now = time.monotonic()
    leader = lambda topic, partition: 7  # noqa: E731
    ready, delay, unknown = acc.ready(leader, now)
    assert ready == {} and 0 < delay <= 0.05 and not unknown
    ready, _, _ = acc.ready(leader, now + 0.06)
    assert list(ready) == [7]
    # A full batch (another one behind it) is ready at once.
    for _ in range(10):
        append(acc, 1, b"b" * 40)
    ready, _, _ = acc.ready(leader, now)
    assert [pq.partition for pq in ready[7]] == [1]
    acc.flushes_in_progress += 1
    ready, _, _ = acc.ready(leader, now)
    assert sorted(pq.partition for pq in ready[7]) == [0, 1]
    # No leader: the topic is reported for a metadata refresh.
    _, _, unknown = acc.ready(lambda t, p: None, now)
    assert unknown == {"t"}


def test_drain_takes_one_batch_per_partition_within_max_request_size() -> None:
    acc, _ = make_acc(batch_size=200, memory=100_000)
    for p in range(3):
        for _ in range(10):
            append(acc, p, b"z" * 40)
    queues = acc.topics["t"].queues
    drained = acc.drain(1, list(queues), 10_000, time.monotonic())
    assert sorted(b.partition for b in drained) == [0, 1, 2]
    assert all(b.closed for b in drained)
    small = acc.drain(1, list(queues), 50, time.monotonic())
    assert len(small) == 1  # the first batch always goes, even when over the limit


def test_pool_exhaustion_returns_none_and_completion_frees_memory() -> None:
    acc, _ = make_acc(batch_size=1000, memory=2000)
    assert append(acc, 0, b"x") is not None
    assert append(acc, 1, b"x") is not None
    assert append(acc, 2, b"x") is None  # a third batch needs memory
    batch = acc.topics["t"].queues[0].batches[0]
    done = threading.Event()

    def waiter() -> None:
        assert acc.pool.wait_blocking(1000, time.monotonic() + 5)
        done.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    deadline = time.monotonic() + 10
    while acc.pool.waiters != 1 and time.monotonic() < deadline:  # the waiter is blocked now
        time.sleep(0.01)
    assert not done.is_set() and acc.pool.waiters == 1
    batch.complete(0, -1, None)
    acc.batch_done(batch)
    thread.join(5)
    assert done.is_set()
    assert append(acc, 2, b"x") is not None
    assert not acc.pool.wait_blocking(5000, time.monotonic() + 0.05)


def test_a_batch_reserves_memory_as_it_grows_not_batch_size_up_front() -> None:
    # batch.size 1 MB, buffer.memory 100 kB: with Java's up-front reservation no batch
    # could start; here each starts with INITIAL_ROOM (1 KiB) and doubles it on demand.
    assert INITIAL_ROOM == 1024
    acc, _ = make_acc(batch_size=1_000_000, memory=100_000)
    for p in range(3):
        assert append(acc, p, b"x" * 100) is not None
    assert acc.pool.available == 100_000 - 3 * INITIAL_ROOM
    batch = acc.topics["t"].queues[0].batches[0]
    for _ in range(300):  # ~33 kB more into partition 0: its room doubles six times, to 64 KiB
        assert append(acc, 0, b"x" * 100) is not None
    assert len(acc.topics["t"].queues[0].batches) == 1 and not batch.closed
    assert batch.builder.room == batch.reserved == 64 * INITIAL_ROOM
    assert batch.builder.uncompressed_size_in_bytes <= batch.builder.room
    assert acc.pool.available == 100_000 - 66 * INITIAL_ROOM
    # The pool cannot double the room again: it grows by what the next record needs,
    # and once not even that is left the batch is closed as full.
    results = [append(acc, 0, b"x" * 100) for _ in range(1000)]
    first_refused = results.index(None)  # a new batch would need memory
    assert all(r is not None for r in results[:first_refused])
    assert acc.pool.available < 132  # not even one more record's room (its size hint) was left
    assert batch.closed and batch.record_count == 301 + first_refused
    assert batch.builder.uncompressed_size_in_bytes <= batch.builder.room == batch.reserved
    batch.complete(0, -1, None)
    acc.batch_done(batch)
    assert acc.pool.available == 100_000 - 2 * INITIAL_ROOM


def test_ten_thousand_partitions_with_a_record_each_fit_the_default_buffer_memory() -> None:
    # Issue 15: at 16 KiB per new batch, 10,000 partitions needed 160 MiB of the 32 MiB
    # default, so a producer spreading records over them waited for memory at every send.
    acc, _ = make_acc(batch_size=1_000_000, memory=32 * 1024 * 1024, partitions=10_000)
    for p in range(10_000):
        assert append(acc, p, b"x" * 100) is not None
    assert acc.pool.available == 32 * 1024 * 1024 - 10_000 * INITIAL_ROOM


def test_a_compressed_batch_reserves_its_uncompressed_records() -> None:
    # 16 KiB batch.size, lz4 on compressible values: the ratio estimate lets ~100x
    # batch.size of records into one batch; buffer.memory counts what is held.
    acc, _ = make_acc(batch_size=16384, memory=1_000_000, codec=compression.LZ4)
    acc._ratio["t"] = 0.01
    for _ in range(2000):
        assert append(acc, 0, b"x" * 200) is not None
    batches = list(acc.topics["t"].queues[0].batches)
    held = sum(b.builder.uncompressed_size_in_bytes for b in batches)
    assert held > 10 * 16384
    assert sum(b.reserved for b in batches) >= held
    assert acc.pool.available == 1_000_000 - sum(b.reserved for b in batches)


def test_a_send_waits_for_the_first_room_not_batch_size() -> None:
    acc, _ = make_acc(batch_size=1_000_000, memory=100_000)
    assert acc.first_room(100) == INITIAL_ROOM
    assert acc.first_room(50_000) == 50_000  # one record larger than the first room
    small, _ = make_acc(batch_size=200)
    assert small.first_room(10) == 200  # batch.size below the first room: batch.size


def test_futures_resolve_from_the_batch_base_offset_and_callbacks_run_in_order() -> None:
    acc, _ = make_acc(batch_size=10_000)
    order: list[tuple[int, object]] = []
    futures = [append(acc, 0, b"v%d" % i, cb=lambda md, err, i=i: order.append((i, md.offset))) for i in range(5)]
    batch = futures[0]._batch
    assert not futures[0].done()
    with pytest.raises(KafkaTimeoutError):
        futures[0].result(timeout=0.05)
    seen: list[int] = []
    futures[2].add_done_callback(lambda f: seen.append(f.result().offset))
    batch.complete(100, -1, None)
    assert [f.result().offset for f in futures] == [100, 101, 102, 103, 104]
    assert order == [(i, 100 + i) for i in range(5)]
    assert seen == [102]
    md = futures[3].result()
    assert (md.topic, md.partition, md.timestamp, md.serialized_value_size) == ("t", 0, 1000, 2)
    late: list[int] = []
    futures[4].add_done_callback(lambda f: late.append(f.result().offset))
    assert late == [104]  # already done: runs at once


def test_failed_batch_fails_exactly_its_futures() -> None:
    acc, _ = make_acc(batch_size=10_000, memory=100_000)
    a = append(acc, 0, b"a")
    b = append(acc, 1, b"b")
    errors = []
    c = append(acc, 0, b"c", cb=lambda md, err: errors.append((md.offset, err)))
    a._batch.complete(-1, -1, KafkaError("boom"))
    assert isinstance(a.exception(), KafkaError) and c.failed() and not b.done()
    with pytest.raises(KafkaError, match="boom"):
        c.result()
    assert errors and errors[0][0] == -1 and str(errors[0][1]) == "boom"


def test_result_blocks_until_completed_from_another_thread() -> None:
    acc, _ = make_acc()
    f = append(acc, 0, b"a")
    threading.Timer(0.1, lambda: f._batch.complete(5, 77, None)).start()
    md = f.result(timeout=5)
    assert md.offset == 5 and md.timestamp == 77  # log-append time wins


def test_async_future_awaits_the_batch() -> None:
    acc, _ = make_acc()

    async def main() -> None:
        f = append(acc, 0, b"a", cls=AsyncRecordFuture)
        g = append(acc, 0, b"b", cls=AsyncRecordFuture)
        with pytest.raises(IllegalStateError, match="not acknowledged yet; await the future"):
            f.result()
        asyncio.get_running_loop().call_later(0.05, f._batch.complete, 10, -1, None)
        md = await f
        assert md.offset == 10 and (await g).offset == 11
        assert g.result().offset == 11
        with pytest.raises(KafkaTimeoutError):
            await append(acc, 1, b"c", cls=AsyncRecordFuture).wait(0.05)

    asyncio.run(main())


def test_expired_batches_leave_the_queue() -> None:
    acc, _ = make_acc(delivery_ms=50)
    # Both batches are made after `before`: due at before + 50 ms at the earliest, however
    # long a busy machine takes between the lines below.
    before = time.monotonic()
    append(acc, 0, b"a")
    append(acc, 2, b"b")
    assert acc.expired(before) == []
    expired = acc.expired(time.monotonic() + 0.1)
    assert sorted(b.partition for b in expired) == [0, 2]
    assert not acc.has_queued()


def test_reenqueue_keeps_sequence_order_at_the_front() -> None:
    acc, _ = make_acc(batch_size=60, memory=100_000)
    for _ in range(6):
        append(acc, 0, b"q" * 40)
    queue = acc.topics["t"].queues[0]
    drained = []
    while queue.batches:
        drained.extend(acc.drain(0, [queue], 1 << 20, time.monotonic()))
    for seq, batch in enumerate(drained):
        batch.set_producer_state(1, 0, seq, False)
    acc.update_topic("t", 3, [0, 1, 2])
    append(acc, 0, b"new")
    for batch in (drained[2], drained[0], drained[1]):
        acc.reenqueue(batch, time.monotonic(), 0.0)
    seqs = [b.base_sequence for b in queue.batches]
    assert seqs[:3] == [0, 1, 2] and seqs[3] == -1
    assert all(b.attempts == 1 and b.in_retry for b in drained[:3])


def test_split_batch_futures_resolve_through_the_pieces() -> None:
    acc, _ = make_acc(batch_size=100_000, memory=1_000_000)
    futures = [append(acc, 0, b"%05d" % i + b"." * 100) for i in range(50)]
    batch = futures[0]._batch
    children = acc.split(batch, 1000, time.monotonic())
    assert len(children) > 3 and sum(c.record_count for c in children) == 50
    # Each piece holds its records in order (decode them back).
    first = RecordBatch(children[0].wire_bytes()).records()
    assert first[0].value.startswith(b"00000")
    offset = 1000
    for child in children:
        child.complete(offset, -1, None)
        offset += 10_000
    assert batch.done
    offsets = [f.result().offset for f in futures]
    assert offsets[0] == 1000 and offsets[children[0].record_count] == 11_000
    assert len(set(offsets)) == 50


def test_compression_ratio_estimate_moves_like_java() -> None:
    acc, _ = make_acc(batch_size=100_000, memory=1_000_000, codec=compression.GZIP)
    f = append(acc, 0, b"a" * 5000)
    batch = f._batch
    batch.wire_bytes()
    acc.update_compression_ratio(batch)
    assert acc._ratio["t"] < 1.0
    assert acc._ratio["t"] == pytest.approx(max(1.0 - 0.005, batch.builder.compression_ratio))
