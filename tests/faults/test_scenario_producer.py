"""Producer scenarios on 3 nodes (RF 3, min.insync.replicas 2, acks=all), checked from
outside by the delivery checker (every record has an id; a fresh read_committed reader
reads everything back):

* an idempotent producer while the leaders of its partitions are SIGKILLed and
  restarted every few seconds: 0 lost, 0 duplicated, 0 reordered;
* the leader SIGSTOPped for longer than request.timeout.ms: the sends that fail are
  reported as failed with their outcome unknown (they may have been written), and
  nothing is written twice.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

from kafkalite import Producer
from kafkalite.errors import KafkaError
from kafkalite.testing.checker import Checker
from tests.faults.scenario_support import (
    Chaos,
    Figures,
    GapMeter,
    Restarts,
    scale,
    wait_for_isr,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PARTITIONS = 6


@pytest.mark.timeout(900)
def test_idempotent_producer_through_leader_kills(kafka_cluster: Any, unique_topic: str) -> None:
    topic = kafka_cluster.create_topic(unique_topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    duration = scale(24, 75)
    target = int(scale(30_000, 200_000))
    checker = Checker()
    history = checker.producer("idempotent")
    acks = GapMeter()
    rnd = random.Random(13)
    restarts = Restarts(down_s=2.0)

    def kill_a_leader(round_: int) -> None:
        # Never two nodes down at once, and never a partition under min.insync.replicas:
        # then every acks=all write can go through (the scenario is about failover).
        restarts.wait_all_back()
        wait_for_isr(kafka_cluster, topic, PARTITIONS)
        victim = kafka_cluster.leader(topic, rnd.randrange(PARTITIONS))
        restarts.kill(victim)

    figures = Figures(f"idempotent producer, leader SIGKILL every {scale(8, 10):.0f} s")
    started = time.monotonic()
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "linger.ms": 5,
                         "delivery.timeout.ms": 300_000, "request.timeout.ms": 15_000,
                         "retry.backoff.ms": 100, "reconnect.backoff.max.ms": 1000})
    lock = threading.Lock()
    errors: list[BaseException] = []

    def on_delivery(record_id: bytes) -> Any:
        record = history.callback(record_id)

        def done(metadata: Any, error: BaseException | None) -> None:
            record(metadata, error)
            if error is None:
                acks.tick()
            else:
                with lock:
                    errors.append(error)
        return done

    chaos = Chaos(scale(8, 10), kill_a_leader, name="leader-killer").start()
    try:
        sent = 0
        min_kills = int(scale(2, 6))
        while (time.monotonic() - started < duration or sent < target or chaos.rounds < min_kills) \
                and time.monotonic() - started < duration * 4:
            record_id = history.next_id()
            producer.send(topic, b"payload-%d" % sent, key=b"k%d" % (sent % 97),
                          headers=[checker.header(record_id)], callback=on_delivery(record_id))
            sent += 1
            if sent % 2000 == 0:
                time.sleep(0.01)  # keep the callbacks' thread in step on 2 cores
        figures.faults = chaos.stop()
        producer.flush(300)
    finally:
        chaos.stop()
        producer.close(60)
    figures.seconds = time.monotonic() - started
    figures.longest_stall_s = round(acks.finish(), 2)
    restarts.join()
    figures.recovery_s = round(max(restarts.recoveries), 2) if restarts.recoveries else None
    assert not errors, f"{len(errors)} sends failed, e.g. {errors[:3]}"
    report = checker.verify(kafka_cluster.live_bootstrap(), [topic])
    figures.records = report.total.acked
    figures.add_report(report).publish()
    assert figures.faults >= min_kills
    assert report.total.acked == sent >= target
    assert report.ok and report.total.ambiguous == 0, str(report)


@pytest.mark.timeout(600)
def test_stopped_leader_sends_fail_as_unknown_outcome_and_nothing_is_written_twice(kafka_cluster: Any,
                                                                                    unique_topic: str) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1, 3, {"min.insync.replicas": "2"})
    checker = Checker()
    history = checker.producer("during-pause")
    request_timeout_ms = 3000
    # The delivery timeout as short as allowed (linger + request timeout): a request stuck
    # in the stopped leader cannot be retried elsewhere in time, so its records fail
    # with their outcome unknown, and records still queued fail as never sent.
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "linger.ms": 5,
                         "request.timeout.ms": request_timeout_ms, "delivery.timeout.ms": request_timeout_ms + 5,
                         "retry.backoff.ms": 100, "max.block.ms": 60_000})
    figures = Figures("leader SIGSTOP > request.timeout.ms")
    started = time.monotonic()
    outcomes: dict[bytes, BaseException | None] = {}
    lock = threading.Lock()

    def send_one(i: int) -> None:
        record_id = history.next_id()
        record = history.callback(record_id)

        def done(metadata: Any, error: BaseException | None) -> None:
            with lock:
                outcomes[record_id] = error
            if error is not None and not getattr(error, "outcome_unknown", True):
                history.failed(record_id, definite=True)  # never sent: cannot be written
            else:
                record(metadata, error)
        producer.send(topic, b"v%d" % i, headers=[checker.header(record_id)], callback=done)

    try:
        for i in range(200):
            send_one(i)
        producer.flush(60)
        leader = kafka_cluster.leader(topic, 0)
        leader.pause()
        figures.faults = 1
        paused_at = time.monotonic()
        try:
            for i in range(200, 400):  # sent into the paused leader
                send_one(i)
                time.sleep(0.01)
            # Longer than request.timeout.ms (and the delivery timeout): those sends fail.
            deadline = paused_at + 3 * request_timeout_ms / 1000
            while time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            leader.resume()
        recovered = time.monotonic()
        for i in range(400, 600):  # after the pause: a new leader, or the old one back
            send_one(i)
        producer.flush(120)
        figures.recovery_s = round(time.monotonic() - recovered, 2)
    finally:
        producer.close(60)
    failed = {rid: err for rid, err in outcomes.items() if err is not None}
    assert failed, "no send failed: the leader was not stopped long enough"
    for err in failed.values():
        # Typed, naming the partition, and saying that the outcome is unknown.
        assert isinstance(err, KafkaError) and err.topic == topic and err.partition == 0, repr(err)
        if err.outcome_unknown:
            assert "may have been written" in str(err), str(err)
    assert any(err.outcome_unknown for err in failed.values()), [str(e) for e in failed.values()][:3]
    report = checker.verify(kafka_cluster.live_bootstrap(), [topic])
    figures.records = len(outcomes)
    figures.seconds = time.monotonic() - started
    figures.notes = {"failed": len(failed), "failed_but_written": report.total.ambiguous_read}
    figures.add_report(report).publish()
    assert report.ok, str(report)  # 0 lost, 0 duplicated (a timed-out send is never repeated)
    assert report.total.duplicated == 0 and report.total.lost == 0
    assert report.total.ambiguous == sum(1 for e in failed.values() if e.outcome_unknown)
