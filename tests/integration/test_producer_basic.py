"""The blocking producer against the real broker: delivery, ordering, headers, codecs,
acks, bad input, backpressure, timeouts and interrupts."""

from __future__ import annotations

import collections
import re
import threading
import time

import pytest

from kafkalite import Producer
from kafkalite.errors import (
    ClientClosedError,
    ConfigError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
    UnknownTopicOrPartitionError,
)
from kafkalite.producer.interceptors import ProducerRecord
from kafkalite.producer.partitioner import partition_for_key
from tests.helpers.interrupts import interrupt_main_when, main_thread_waits_in
from tests.integration.producer_support import read_back, throttled_client_id, wait_until

pytestmark = pytest.mark.broker


def producer(bootstrap: str, **settings: object) -> Producer:
    conf: dict[str, object] = {"bootstrap.servers": bootstrap}
    conf.update({k.replace("_", "."): v for k, v in settings.items()})
    return Producer(conf)


def test_send_result_callbacks_in_order_and_read_back(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    calls: dict[int, list[int]] = collections.defaultdict(list)
    with producer(kafka_broker.bootstrap, linger_ms=20) as p:
        futures = []
        for i in range(3000):
            key = b"k%d" % (i % 50)
            futures.append(p.send(topic, value=b"v%d" % i, key=key,
                                  callback=lambda md, err, i=i: calls[md.partition].append(i)))
        first = futures[0].result(timeout=30)
        assert first.topic == topic and first.offset >= 0 and first.timestamp > 0
        assert first.serialized_key_size == 2 and first.serialized_value_size == 2
    # Leaving the with block flushed everything.
    assert all(f.done() and f.exception() is None for f in futures)
    by_partition = collections.defaultdict(list)
    for i, f in enumerate(futures):
        md = f.result()
        assert md.partition == partition_for_key(b"k%d" % (i % 50), 3)
        by_partition[md.partition].append((md.offset, i))
    for partition, pairs in by_partition.items():
        # Offsets follow send order per partition, and so did the callbacks.
        assert [i for _, i in sorted(pairs)] == [i for _, i in pairs]
        assert calls[partition] == [i for _, i in pairs]
    back = read_back(kafka_broker.bootstrap, topic)
    assert sum(len(v) for v in back.values()) == 3000
    for partition, records in back.items():
        assert [r.offset for r in records] == [o for o, _ in by_partition[partition]]
        assert [r.value for r in records] == [b"v%d" % i for _, i in by_partition[partition]]
        assert all(r.producer_id >= 0 for r in records)  # idempotent by default


def test_headers_tombstones_and_timestamps_round_trip(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    headers = [("trace", b"1"), ("trace", b"2"), ("empty", b""), ("null", None), ("ünï", "text")]
    with producer(kafka_broker.bootstrap) as p:
        p.send(topic, value=None, key=b"gone")  # a tombstone
        p.send(topic, value=b"", key=b"")  # empty, not null
        p.send(topic, value=b"h", headers=headers, timestamp=1_600_000_000_123)
        md = p.send(topic, value=b"x", headers={"a": b"b"}).result(30)
        assert md.offset == 3
    records = read_back(kafka_broker.bootstrap, topic)[0]
    assert (records[0].key, records[0].value) == (b"gone", None)
    assert (records[1].key, records[1].value) == (b"", b"")
    assert records[2].headers == [("trace", b"1"), ("trace", b"2"), ("empty", b""), ("null", None),
                                  ("ünï", b"text")]
    assert records[2].timestamp == 1_600_000_000_123
    assert records[3].headers == [("a", b"b")]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_read_back(kafka_broker, topic_factory, codec) -> None:
    topic = topic_factory(partitions=1)
    with producer(kafka_broker.bootstrap, compression_type=codec, linger_ms=20) as p:
        for i in range(500):
            p.send(topic, b"value-%d-" % i + b"x" * 200)
        p.flush(30)
        metrics = p.metrics()
    assert metrics["compression-rate-avg"] < 0.5
    records = read_back(kafka_broker.bootstrap, topic)[0]
    assert [r.value for r in records] == [b"value-%d-" % i + b"x" * 200 for i in range(500)]


def test_acks_zero_reports_offset_minus_one_and_acks_one_works(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    with producer(kafka_broker.bootstrap, acks="0") as p:
        assert p.config["enable.idempotence"] is False  # silently off: acks=0 was explicit
        mds = [p.send(topic, b"a%d" % i).result(30) for i in range(3)]
        assert [md.offset for md in mds] == [-1, -1, -1]
    with producer(kafka_broker.bootstrap, acks="1") as p:
        assert p.send(topic, b"b").result(30).offset >= 0
    wait_until(lambda: len(read_back(kafka_broker.bootstrap, topic)[0]) == 4, 30, "4 records")


def test_serializers_and_bad_values_fail_in_send(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    with producer(kafka_broker.bootstrap, key_serializer="str", value_serializer="json") as p:
        md = p.send(topic, key="k", value={"n": 1}).result(30)
        assert md.partition == partition_for_key(b"k", 2)
        with pytest.raises(SerializationError,
                           match=rf"key serializer failed: expected str, got int \(topic '{re.escape(topic)}'\)"):
            p.send(topic, key=1, value={"n": 1})
        with pytest.raises(SerializationError, match="value serializer failed: cannot serialize set as JSON"):
            p.send(topic, key="k", value={1, 2})
    with producer(kafka_broker.bootstrap) as p:
        with pytest.raises(SerializationError, match="value.serializer"):
            p.send(topic, "not bytes")
        with pytest.raises(SerializationError, match="header 'h' value must be bytes, str or None, got int"):
            p.send(topic, b"v", headers=[("h", 5)])
    back = read_back(kafka_broker.bootstrap, topic)
    assert [r.value for rs in back.values() for r in rs] == [b'{"n":1}']


def test_record_too_large_unknown_topic_and_bad_partition_raise_from_send(kafka_broker, topic_factory,
                                                                         unique_topic) -> None:
    topic = topic_factory(partitions=2)
    with producer(kafka_broker.bootstrap, max_request_size=10_000, max_block_ms=1500) as p:
        with pytest.raises(RecordTooLargeError,
                           match=r"the record is \d+ bytes when serialized, larger than max.request.size \(10000\)") as info:
            p.send(topic, b"x" * 20_000)
        assert info.value.topic == topic
        with pytest.raises(UnknownTopicOrPartitionError, match="partition 5") as info:
            p.send(topic, b"x", partition=5)
        assert info.value.partition == 5 and info.value.topic == topic
        started = time.monotonic()
        # UnknownTopicOrPartitionError once the broker said so, KafkaTimeoutError if no
        # metadata answer came in time at all; either names the topic and the wait.
        with pytest.raises((UnknownTopicOrPartitionError, KafkaTimeoutError),
                           match=rf"topic '{re.escape(unique_topic)}' not present in metadata after 1500 ms"):
            p.send(unique_topic, b"x")  # auto-creation is off on the test broker
        assert 1.0 < time.monotonic() - started < 10  # max.block.ms (1.5 s), generously bounded
        assert p.send(topic, b"still fine").result(30).offset == 0


def test_unknown_and_contradictory_settings_fail_at_construction(kafka_broker) -> None:
    with pytest.raises(ConfigError, match=r"unknown setting 'linger.msec'; did you mean 'linger\.ms'\?"):
        producer(kafka_broker.bootstrap, **{"linger.msec": 5})
    with pytest.raises(ConfigError, match="'acks' = '1' contradicts enable.idempotence=true"):
        Producer({"bootstrap.servers": kafka_broker.bootstrap, "enable.idempotence": True, "acks": "1"})
    with pytest.raises(ConfigError, match="'delivery.timeout.ms' = 100 must be at least linger.ms"):
        Producer({"bootstrap.servers": kafka_broker.bootstrap, "delivery.timeout.ms": 100})


def _hold_back(p: Producer, topic: str) -> None:
    """Send one large record: the quota then mutes the producer's connection for minutes."""
    p.send(topic, b"h" * 60_000).result(30)
    assert p.metrics()["produce-throttle-time-max"] > 10_000


def test_full_buffer_blocks_send_then_raises_timeout_from_send(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    p = producer(kafka_broker.bootstrap, client_id=throttled_client_id(kafka_broker.bootstrap),
                 buffer_memory=100_000, batch_size=16384, max_block_ms=800, linger_ms=0)
    try:
        _hold_back(p, topic)
        futures = []
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="buffer.memory"):
            for _ in range(100):
                futures.append(p.send(topic, b"x" * 15_000))
        assert 0.7 < time.monotonic() - started < 5  # max.block.ms (0.8 s), generously bounded
        assert 2 <= len(futures) <= 7
        assert p.metrics()["buffer-available-bytes"] < 16384
        assert p.metrics()["waiting-threads"] == 0
        # Ctrl-C while send() waits for memory.
        interrupt_main_when(lambda: p.metrics()["waiting-threads"] == 1)
        with pytest.raises(KeyboardInterrupt):
            p.send(topic, b"x" * 15_000)
    finally:
        started = time.monotonic()
        p.close(timeout=1.0)
        assert time.monotonic() - started < 5  # close(timeout=1) honours its timeout (generously)
    assert all(isinstance(f.exception(), KafkaError) for f in futures)
    with pytest.raises(ClientClosedError):
        p.send(topic, b"x")


def _bytes_held(batch) -> int:
    """The record bytes ``batch`` keeps resident: its wire copy and its builder's buffer."""
    wire = len(batch.wire) if batch.wire is not None else 0
    building = batch.builder.uncompressed_size_in_bytes if hasattr(batch.builder, "_buf") else 0
    return wire + building


def test_records_resident_stay_within_buffer_memory_through_flush(kafka_broker, topic_factory) -> None:
    # Issue 15: settled batches kept both their builder's buffer and their wire copy
    # while flush() (and every record future) still referenced them, so a producer fed
    # faster than the broker takes peaked at ~2x buffer.memory during flush(). Every
    # batch reachable from a future is summed at each completion (on the I/O thread).
    topic = topic_factory(partitions=2)
    buffer_memory = 256 * 1024
    samples: list[int] = []
    futures: list = []
    lock = threading.Lock()

    def sample(_metadata, _error) -> None:
        with lock:
            batches = {id(f._batch): f._batch for f in futures}
        samples.append(sum(_bytes_held(b) for b in batches.values()))

    with producer(kafka_broker.bootstrap, buffer_memory=buffer_memory, batch_size=16384,
                  linger_ms=50) as p:
        value = b"v" * 1024
        for i in range(2000):  # 2 MB: eight times buffer.memory
            future = p.send(topic, value, callback=sample if i % 20 == 0 else None)
            with lock:
                futures.append(future)
        p.flush(timeout=60)
        assert all(f.exception() is None for f in futures)
        held_after = sum(_bytes_held(b) for b in {id(f._batch): f._batch for f in futures}.values())
    assert len(samples) == 100
    # bytearrays over-allocate as they grow (CPython: up to ~1/8); nothing else may count.
    assert max(samples) <= buffer_memory * 1.2, f"{max(samples)} bytes resident > buffer.memory"
    assert held_after == 0
    assert sum(len(records) for records in read_back(kafka_broker.bootstrap, topic).values()) == 2000


def test_a_large_batch_size_costs_memory_only_as_batches_grow(kafka_broker, topic_factory) -> None:
    # batch.size 1 MB against a 512 KiB buffer.memory, 20 partitions: reserving
    # batch.size per batch up front (Java's BufferPool) could not start one batch; each
    # batch here reserves 16 KiB and doubles its room as it fills.
    topic = topic_factory(partitions=20)
    with producer(kafka_broker.bootstrap, batch_size=1_000_000, buffer_memory=512 * 1024,
                  max_block_ms=20_000, linger_ms=100) as p:
        futures = [p.send(topic, b"v" * 200, key=str(i).encode()) for i in range(4000)]
        p.flush(timeout=60)
        assert all(f.exception() is None for f in futures)
        assert p.metrics()["buffer-available-bytes"] == 512 * 1024
    per_partition = read_back(kafka_broker.bootstrap, topic)
    assert sum(len(v) for v in per_partition.values()) == 4000 and len(per_partition) == 20
    # One partition, fed in a tight loop: the batches grow far past the first 16 KiB.
    single = topic_factory(partitions=1)
    with producer(kafka_broker.bootstrap, batch_size=1_000_000, linger_ms=2000) as p:
        for _ in range(3000):
            p.send(single, b"w" * 1024)
        p.flush(timeout=60)
        assert p.metrics()["batch-size-avg"] > 256 * 1024
    assert len(read_back(kafka_broker.bootstrap, single)[0]) == 3000


def test_ctrl_c_interrupts_blocked_send_and_flush(kafka_broker, topic_factory) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.fail("must run in the main thread to receive KeyboardInterrupt")
    topic = topic_factory(partitions=1)
    p = producer(kafka_broker.bootstrap, client_id=throttled_client_id(kafka_broker.bootstrap),
                 max_block_ms=60000, linger_ms=0)
    try:
        # Prompt is the point: max.block.ms is 60 s and the flush has no bound at all; the
        # wait notices Ctrl-C within a slice (0.1 s); 5 s leaves room for a busy machine.
        interrupt_main_when(main_thread_waits_in("send"))
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            p.send(topic + "-missing", b"x")  # blocks on metadata for up to max.block.ms
        assert time.monotonic() - started < 5
        _hold_back(p, topic)
        p.send(topic, b"held back")
        interrupt_main_when(main_thread_waits_in("flush"))
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            p.flush()
        assert time.monotonic() - started < 5
        with pytest.raises(KafkaTimeoutError):
            p.flush(timeout=0.3)
        assert p.send(topic, b"still usable") is not None
    finally:
        started = time.monotonic()
        p.close(timeout=0.5)
        assert time.monotonic() - started < 4  # close(timeout=0.5) honours its timeout (generously)


def test_batches_split_after_message_too_large(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1, configs={"max.message.bytes": "20000"})
    with producer(kafka_broker.bootstrap, batch_size=200_000, linger_ms=200, max_request_size=1_000_000) as p:
        futures = [p.send(topic, b"%05d-" % i + b"y" * 200) for i in range(800)]
        p.flush(60)
        assert [f.result().offset for f in futures] == list(range(800))
        assert p.metrics()["batch-split-total"] >= 1
    records = read_back(kafka_broker.bootstrap, topic)[0]
    assert [r.value[:5] for r in records] == [b"%05d" % i for i in range(800)]


def test_interceptors_and_custom_partitioner(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=4)
    acks: list[tuple[int, object]] = []

    class Tracing:
        def on_send(self, record: ProducerRecord) -> ProducerRecord:
            return record._replace(headers=[*(record.headers or []), ("traced", b"yes")])

        def on_acknowledgement(self, metadata, error) -> None:
            acks.append((metadata.offset, error))

    class LastPartition:
        closed = False

        def partition(self, topic, key, key_bytes, value, value_bytes, cluster):
            return cluster.partition_count(topic) - 1

        def close(self):
            LastPartition.closed = True

    with producer(kafka_broker.bootstrap, interceptor_classes=[Tracing()], partitioner_class=LastPartition) as p:
        mds = [p.send(topic, b"v%d" % i, key=b"any").result(30) for i in range(5)]
    assert {md.partition for md in mds} == {3}
    assert LastPartition.closed
    assert sorted(o for o, _ in acks) == [0, 1, 2, 3, 4] and all(e is None for _, e in acks)
    records = read_back(kafka_broker.bootstrap, topic)[3]
    assert all(r.headers == [("traced", b"yes")] for r in records) and len(records) == 5


def test_round_robin_partitioner_and_ignore_keys(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    with producer(kafka_broker.bootstrap, partitioner_class="round_robin") as p:
        parts = [p.send(topic, b"v", key=b"same").result(30).partition for _ in range(6)]
    assert parts == [parts[0], (parts[0] + 1) % 3, (parts[0] + 2) % 3] * 2
    with producer(kafka_broker.bootstrap, partitioner_ignore_keys=True, batch_size=100, linger_ms=0) as p:
        futures = [p.send(topic, b"x" * 60, key=b"same") for _ in range(60)]
        p.flush(30)
    assert len({f.result().partition for f in futures}) > 1  # sticky switching, keys ignored


def test_partitions_for_metrics_and_new_partitions_after_metadata_refresh(kafka_broker, topic_factory) -> None:
    from kafkalite import AdminClient, NewPartitions

    topic = topic_factory(partitions=2)
    with producer(kafka_broker.bootstrap, metadata_max_age_ms=500) as p:
        assert p.partitions_for(topic) == [0, 1]
        p.send(topic, b"x", key=b"key-1").result(30)
        metrics = p.metrics()
        for name in ("record-send-rate", "record-error-rate", "record-retry-rate", "request-latency-avg",
                     "batch-size-avg", "compression-rate-avg", "buffer-available-bytes",
                     "records-per-request-avg", "record-send-total"):
            assert name in metrics, name
        assert metrics["record-send-total"] == 1 and metrics["buffer-available-bytes"] > 0
        admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
        try:
            admin.create_partitions({topic: NewPartitions(7)}).raise_on_error()
        finally:
            admin.close()
        wait_until(lambda: p.partitions_for(topic) == list(range(7)), 30, "7 partitions seen by the producer")
        keys = [b"key-%d" % i for i in range(40)]
        mds = [p.send(topic, b"v", key=k).result(30) for k in keys]
        assert [md.partition for md in mds] == [partition_for_key(k, 7) for k in keys]


def test_many_threads_share_one_producer(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=4)
    per_thread = 5000
    errors: list[BaseException] = []
    with producer(kafka_broker.bootstrap, linger_ms=2) as p:
        results: dict[int, list] = {}

        def work(t: int) -> None:
            try:
                results[t] = [p.send(topic, b"%d-%d" % (t, i), key=b"thread-%d" % t) for i in range(per_thread)]
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        p.flush(60)
    assert not errors
    for futures in results.values():
        offsets = [f.result().offset for f in futures]
        assert offsets == sorted(offsets) and len(set(offsets)) == per_thread  # one key: one partition, in order
    back = read_back(kafka_broker.bootstrap, topic)
    assert sum(len(rs) for rs in back.values()) == 4 * per_thread


def test_send_many_delivers_in_order_and_reports_the_failed_record(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    values = [b"v%d" % i for i in range(5000)]
    keys = [b"k%d" % (i % 40) for i in range(5000)]
    with producer(kafka_broker.bootstrap, linger_ms=5) as p:
        outcome = p.send_many(topic, values, keys)
        more = p.send_many(topic, [b"unkeyed-%d" % i for i in range(1000)])
        assert outcome.result(timeout=60) == 5000 and more.result(timeout=60) == 1000
        assert outcome.failures() == [] and outcome.done()
    back = read_back(kafka_broker.bootstrap, topic)
    assert sum(len(v) for v in back.values()) == 6000
    for partition, records in back.items():
        keyed = [r for r in records if r.key is not None]
        expect = [v for k, v in zip(keys, values) if partition_for_key(k, 3) == partition]
        assert [r.value for r in keyed] == expect  # send order per partition
    # A record the topic refuses fails alone; the rest of the call is delivered.
    small = topic_factory(partitions=1, configs={"max.message.bytes": "2000"})
    batch = [b"ok-%d" % i for i in range(50)]
    batch[20] = b"x" * 5000
    with producer(kafka_broker.bootstrap, linger_ms=50) as p:
        outcome = p.send_many(small, batch)
        p.flush(60)
        failures = outcome.failures(timeout=60)
        assert [i for i, _ in failures] == [20]
        assert isinstance(failures[0][1], RecordTooLargeError)
        with pytest.raises(RecordTooLargeError):
            outcome.result()
    assert [r.value for r in read_back(kafka_broker.bootstrap, small)[0]] == batch[:20] + batch[21:]
