"""Network faults between the clients and the 3-node cluster (kafkalite.testing.netfaults
proxies; the brokers among themselves are unaffected):

* black-holed connections (accepted, never answered): no blocking call hangs past its
  timeout, and once the hole closes producer and consumer recover by themselves within
  request.timeout.ms + session.timeout.ms;
* corrupted bytes on the wire: record batch CRCs reject them in Fetch responses (a typed
  CorruptRecordsError naming topic, partition and offset; seeking to the position
  fetches again); not one corrupted record reaches the application, and nothing is
  lost or duplicated.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkalite import AdminClient, Consumer, Producer, TopicPartition
from kafkalite.errors import CorruptRecordsError, KafkaError
from kafkalite.testing.checker import Checker, parse_id
from tests.faults.scenario_support import Figures, scale

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REQUEST_TIMEOUT_MS = 5000
SESSION_TIMEOUT_MS = 10000
#: what a bounded call may take beyond its timeout on a busy 2-core machine
SLACK_S = 5.0


def timed(what: str, bound_s: float, call: Any, calls: dict[str, float]) -> Any:
    """Run ``call``; it may raise a KafkaError (typed errors only) but must return within
    ``bound_s`` (+ slack): the bound is the point of the scenario."""
    started = time.monotonic()
    try:
        return call()
    except KafkaError as exc:
        return exc
    finally:
        elapsed = time.monotonic() - started
        calls[what] = round(elapsed, 2)
        assert elapsed <= bound_s + SLACK_S, f"{what} took {elapsed:.1f}s (bound {bound_s}s)"


@pytest.mark.timeout(600)
def test_black_holed_connections_never_hang_and_recover_by_themselves(kafka_cluster: Any, network_faults: Any,
                                                                      unique_topic: str) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 3, 3, {"min.insync.replicas": "2"})
    group = f"{unique_topic}-g"
    proxied = network_faults.bootstrap
    common = {"bootstrap.servers": proxied, "request.timeout.ms": REQUEST_TIMEOUT_MS,
              "reconnect.backoff.max.ms": 1000}
    producer = Producer({**common, "linger.ms": 5, "delivery.timeout.ms": 4 * REQUEST_TIMEOUT_MS,
                         "max.block.ms": 5000})
    consumer = Consumer({**common, "group.id": group, "session.timeout.ms": SESSION_TIMEOUT_MS,
                         "heartbeat.interval.ms": 1000, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "default.api.timeout.ms": 5000})
    admin = AdminClient({**common, "default.api.timeout.ms": 5000})
    figures = Figures("black-holed connections", faults=1)
    calls: dict[str, float] = {}
    started = time.monotonic()
    try:
        for i in range(100):
            producer.send(topic, b"before-%d" % i)
        producer.flush(60)
        consumer.subscribe([topic])
        got: list[Any] = []
        deadline = time.monotonic() + 120
        while len(got) < 100:
            assert time.monotonic() < deadline, "warm-up read incomplete"
            got += consumer.poll(1.0)
        consumer.commit()
        tps = [TopicPartition(topic, p) for p in range(3)]

        with network_faults.black_hole():
            hole_opened = time.monotonic()
            pending = producer.send(topic, b"into-the-hole")
            timed("future.result(3)", 3, lambda: pending.result(timeout=3), calls)
            timed("flush(3)", 3, lambda: producer.flush(3), calls)
            timed("poll(1)", 1, lambda: consumer.poll(1.0), calls)
            failed = timed("commit(timeout=3)", 3, lambda: consumer.commit(timeout=3), calls)
            assert isinstance(failed, KafkaError), "a commit into a black hole cannot succeed"
            timed("committed(timeout=3)", 3, lambda: consumer.committed(tps, timeout=3), calls)
            timed("admin.list_topics(timeout=3)", 3, lambda: admin.list_topics(timeout=3), calls)
            timed("partitions_for(timeout=3)", 3, lambda: producer.partitions_for(topic, timeout=3), calls)
            # Keep the hole open past request.timeout.ms: requests time out, connections die.
            while time.monotonic() - hole_opened < 1.5 * REQUEST_TIMEOUT_MS / 1000:
                timed("poll(1) in the hole", 1, lambda: consumer.poll(1.0), calls)
        closed = time.monotonic()
        # Recovery, by itself: a send gets acknowledged, the consumer reads it.
        bound = (REQUEST_TIMEOUT_MS + SESSION_TIMEOUT_MS) / 1000
        acked_at = read_at = None
        while acked_at is None or read_at is None:
            assert time.monotonic() - closed < bound + 30, (
                f"no recovery {time.monotonic() - closed:.0f}s after the hole closed: producer "
                f"{'acknowledged' if acked_at else 'not acknowledged'}, consumer {'read' if read_at else 'did not read'}")
            if acked_at is None:
                try:
                    producer.send(topic, b"after", partition=0).result(timeout=2)
                    acked_at = time.monotonic()
                except KafkaError:
                    pass
            try:
                if any(r.value == b"after" for r in consumer.poll(0.5)):
                    read_at = time.monotonic()
            except KafkaError as exc:
                assert exc.retriable, repr(exc)
        figures.recovery_s = round(max(acked_at, read_at) - closed, 2)
        figures.notes = {"bounded_calls_s": calls, "bound_s": bound}
        figures.records = len(got) + 2  # the warm-up, the record sent into the hole, "after"
        assert acked_at - closed <= bound + SLACK_S and read_at - closed <= bound + SLACK_S, figures.recovery_s
        # The record sent into the hole was either delivered or failed, never lost silently.
        assert pending.done()
    finally:
        figures.seconds = time.monotonic() - started
        figures.publish()
        admin.close()
        consumer.close(10)
        producer.close(10)


@pytest.mark.timeout(600)
def test_corrupted_bytes_never_reach_the_application(kafka_cluster: Any, network_faults: Any,
                                                     unique_topic: str) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 3, 3, {"min.insync.replicas": "2"})
    count = int(scale(20_000, 200_000))
    checker = Checker()
    history = checker.producer("through-corruption")
    payload = {}
    figures = Figures("corrupted bytes on the wire")
    started = time.monotonic()
    # Written directly (the Produce path has no CRC over topic and partition: flipped
    # bytes there are the TCP checksum's business, not the client's).
    # Batches of Java's default size (16 KiB): a fetch that meets a corrupt batch
    # re-reads it whole, and kafkalite's own default (up to 1 MB) lets a fast producer
    # put a whole partition into one ~300 KB batch, which at this rate is almost never
    # read back clean (P = e^-6): the consumer would be stuck on it, rightly.
    with Producer({"bootstrap.servers": kafka_cluster.bootstrap, "linger.ms": 5, "batch.size": 16384}) as producer:
        for i in range(count):
            record_id = history.next_id()
            body = b"%d-" % i * 8
            payload[record_id] = body
            producer.send(topic, checker.value(record_id, body), partition=i % 3,
                          callback=history.callback(record_id))
        producer.flush(300)
    # Read through proxies that flip bytes covered by record CRCs in Fetch responses.
    corrupt_errors = 0
    bad_values = 0
    tps = [TopicPartition(topic, p) for p in range(3)]
    reader = {"bootstrap.servers": network_faults.bootstrap, "max.partition.fetch.bytes": 65536}
    corrupted_before = sum(p.stats.corrupted for p in network_faults.proxies.values())
    with network_faults.corrupt(2e-5, records_only=True), Consumer(reader) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(tps)
        ends = consumer.end_offsets(tps)
        deadline = time.monotonic() + 300
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, "could not read through the corruption"
            try:
                records = consumer.poll(1.0)
            except CorruptRecordsError as exc:
                corrupt_errors += 1
                assert exc.topic == topic and exc.partition in range(3), repr(exc)
                assert "offset" in str(exc), str(exc)
                tp = TopicPartition(topic, exc.partition)
                consumer.seek(tp, consumer.position(tp))  # fetch it again
                continue
            for r in records:
                parsed = parse_id(r.value)
                record_id = r.value.split(b"|", 1)[0] if parsed else None
                if record_id is None or r.value.split(b"|", 1)[1] != payload.get(record_id):
                    bad_values += 1
                checker.observe(r.topic, r.partition, r.offset, r.value, r.headers)
    fetch_corrupted = sum(p.stats.corrupted for p in network_faults.proxies.values()) - corrupted_before
    report = checker.report(read_committed=False)
    figures.records = count
    figures.faults = corrupt_errors
    figures.seconds = time.monotonic() - started
    figures.notes = {"bytes_corrupted": fetch_corrupted,
                     "crc_errors_raised": corrupt_errors, "corrupt_values_delivered": bad_values}
    figures.add_report(report).publish()
    assert fetch_corrupted > 0 and corrupt_errors > 0, "the corruption never happened: nothing was tested"
    assert bad_values == 0, f"{bad_values} corrupted records reached the application"
    assert report.ok and report.total.ambiguous == 0 and report.total.read == count, str(report)
    # Outside the proxies the log holds exactly what was sent.
    clean = checker.verify(kafka_cluster.bootstrap, [topic], read_committed=False)
    assert clean.ok and clean.total.read == count, str(clean)
