"""Transaction scenarios on 3 nodes (RF 3, min.insync.replicas 2), checked by a
read_committed reader through the delivery checker:

* a consume-transform-produce copier (its own process) SIGKILLed and restarted several
  times while brokers are hard-bounced: the output holds every input record exactly
  once, in order per partition, and no record of an aborted transaction is visible;
* the transaction coordinator SIGKILLed during commits: every error the application
  sees is classed fatal, abortable or retriable (a timeout: call again) as
  docs/producer.md says, and handling it that way loses and repeats nothing;
* zombie fencing many times in a row: the fenced producer fails fatally and none of its
  records ever commits.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kafkalite import AdminClient, OffsetSpec, Producer, TopicPartition
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.testing.checker import Checker
from tests.faults.scenario_support import Chaos, Figures, GapMeter, Restarts, scale, wait_for_isr

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

COPIER = str(Path(__file__).with_name("copier.py"))
#: Fatal for a transactional producer, as in Java's TransactionManager: fenced by a newer
#: producer (or the coordinator's epoch bump), or EndTxn refused because the coordinator
#: already ended the transaction (e.g. aborted it at transaction.timeout.ms).
DOCUMENTED_FATAL = {"ProducerFencedError", "InvalidProducerEpochError", "InvalidTxnStateError"}


def fill(bootstrap: str, topic: str, partitions: int, count: int, checker: Checker) -> None:
    history = checker.producer("input")
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 10}) as producer:
        for i in range(count):
            record_id = history.next_id()
            producer.send(topic, b"v%d" % i, partition=i % partitions, headers=[checker.header(record_id)],
                          callback=history.callback(record_id))
        producer.flush(120)
    assert history.status.count(1) == count  # every input record acknowledged


def end_offsets(admin: AdminClient, topic: str, partitions: int) -> dict[TopicPartition, int]:
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    listed = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps})
    return {tp: listed[tp].result().offset for tp in tps}


class CopierProcess:
    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen([sys.executable, COPIER, *args, str(log)],
                                     stdout=subprocess.DEVNULL, stderr=open(str(log) + ".err", "a"))  # noqa: SIM115

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log.read_text().splitlines() if self.log.exists() else []:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line cut by SIGKILL
        return out


@pytest.mark.timeout(1200)
def test_copier_killed_and_brokers_bounced_copies_exactly_once(kafka_cluster: Any, unique_topic: str,
                                                              tmp_path: Path) -> None:
    partitions = 3
    source = kafka_cluster.create_topic(f"{unique_topic}-in", partitions, 3, {"min.insync.replicas": "2"})
    target = kafka_cluster.create_topic(f"{unique_topic}-out", partitions, 3, {"min.insync.replicas": "2"})
    group, txn_id = f"{unique_topic}-copier", f"{unique_topic}-txn"
    count = int(scale(6_000, 60_000))
    checker = Checker()
    fill(kafka_cluster.bootstrap, source, partitions, count, checker)
    log = tmp_path / "copier.log"
    args = [kafka_cluster.bootstrap, source, target, group, txn_id]
    figures = Figures("transactional copier SIGKILLed + brokers bounced")
    copier_kills = int(scale(3, 8))
    bounces = int(scale(1, 3))
    restarts = Restarts(down_s=2.0)
    rnd = random.Random(7)
    started = time.monotonic()
    progress = GapMeter()
    copier = CopierProcess(args, log)
    with AdminClient({"bootstrap.servers": kafka_cluster.bootstrap}) as admin:
        ends = end_offsets(admin, source, partitions)

        def copied() -> int:
            try:
                committed = admin.list_consumer_group_offsets([group])[group].result()
            except KafkaError:
                return -1
            return sum(om.offset for tp, om in committed.items() if tp.topic == source)

        def wait_for_progress(beyond: int, timeout: float) -> int:
            deadline = time.monotonic() + timeout
            while True:
                now = copied()
                if now > beyond or now >= count:
                    progress.tick()
                    return now
                if copier.proc.poll() is not None:
                    restart_after_fatal()
                assert time.monotonic() < deadline, f"no progress past {beyond} within {timeout}s"
                time.sleep(0.3)

        def restart_after_fatal() -> None:
            nonlocal copier
            # Exit code 3: a fatal error, handled as docs/producer.md says (close, a
            # new producer takes over): its supervisor starts a new copier.
            assert copier.proc.returncode == 3, f"the copier exited: {copier.events()[-5:]}"
            figures.notes["fatal_restarts"] = figures.notes.get("fatal_restarts", 0) + 1
            copier = CopierProcess(args, log)

        done = wait_for_progress(0, 180)
        faults: list[str] = ["kill"] * copier_kills + ["bounce"] * bounces
        rnd.shuffle(faults)
        for fault in faults:
            if done >= count:
                break
            if fault == "kill":
                copier.proc.send_signal(signal.SIGKILL)  # mid-transaction, most likely
                copier.proc.wait(30)
                figures.faults += 1
                copier = CopierProcess(args, log)  # fences the old transactional id, rewinds
            else:
                restarts.wait_all_back()
                wait_for_isr(kafka_cluster, target, partitions)
                restarts.kill(kafka_cluster.node(rnd.choice(kafka_cluster.node_ids)))
                figures.faults += 1
            done = wait_for_progress(done, 240)
        while copied() < count:
            wait_for_progress(copied(), 240)
        copier.proc.send_signal(signal.SIGTERM)
        assert copier.proc.wait(120) == 0, (Path(str(log) + ".err").read_text()[-3000:])
        restarts.join()
        final = admin.list_consumer_group_offsets([group])[group].result()
        assert {tp: final[tp].offset for tp in ends} == ends
    events = copier.events()
    died = [e for e in events if e["event"] == "died"]
    assert not died, died
    aborts = [e for e in events if e["event"] == "abort"]
    # Every abort followed an error the docs class as abortable (or a retriable one that
    # outlived its time); none was fatal.
    assert all(e["abortable"] or e["retriable"] for e in aborts), aborts
    report = checker.verify(kafka_cluster.live_bootstrap(), [target])
    figures.records = count
    figures.seconds = time.monotonic() - started
    figures.longest_stall_s = round(progress.finish(), 2)
    figures.recovery_s = round(max(restarts.recoveries), 2) if restarts.recoveries else None
    fatal = [e for e in events if e["event"] == "fatal"]
    assert all(e["type"] in DOCUMENTED_FATAL for e in fatal), fatal
    figures.notes.update({"commits": sum(1 for e in events if e["event"] == "commit"), "aborts": len(aborts),
                          "commit_retries": sum(1 for e in events if e["event"] == "commit-retry"),
                          "fatal": sorted({e["type"] for e in fatal})})
    figures.add_report(report).publish()
    total = report.total
    assert total.read == count and total.lost == 0 and total.duplicated == 0, str(report)
    assert report.ok, str(report)


@pytest.mark.timeout(900)
def test_transaction_coordinator_killed_during_commits(kafka_cluster: Any, unique_topic: str) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 3, 3, {"min.insync.replicas": "2"})
    txn_id = f"{unique_topic}-txn"
    checker = Checker()
    history = checker.producer("transactional")
    settings = {"bootstrap.servers": kafka_cluster.bootstrap, "transactional.id": txn_id,
                "linger.ms": 2, "request.timeout.ms": 6000, "delivery.timeout.ms": 30_000, "max.block.ms": 60_000}
    producer = Producer(settings)
    producer.init_transactions(timeout=120)
    restarts = Restarts(down_s=2.0)
    seen: list[KafkaError] = []
    lock = threading.Lock()
    figures = Figures("transaction coordinator SIGKILLed during commits")

    with AdminClient({"bootstrap.servers": kafka_cluster.bootstrap}) as admin:
        def kill_coordinator(round_: int) -> None:
            restarts.wait_all_back()
            wait_for_isr(kafka_cluster, topic, 3)
            coordinator = admin.describe_transactions([txn_id])[txn_id].result().coordinator_id
            restarts.kill(kafka_cluster.node(coordinator))

        def handle(error: KafkaError) -> str:
            with lock:
                seen.append(error)
            # docs/producer.md: fatal -> close, a new producer takes over; abortable ->
            # abort and redo; a timeout (retriable) -> call the same method again.
            if error.fatal:
                assert type(error).__name__ in DOCUMENTED_FATAL, repr(error)
                return "fatal"
            if error.abortable:
                return "abort"
            if isinstance(error, KafkaTimeoutError) or error.retriable:
                return "again"
            return "unclassified"

        def replace_producer() -> Producer:
            producer.close(10)
            fresh = Producer(settings)
            fresh.init_transactions(timeout=120)  # fences the old one, ends its transaction
            return fresh

        chaos = Chaos(scale(5, 6), kill_coordinator, first_after_s=2, name="coordinator-killer").start()
        started = time.monotonic()
        transactions = aborted = fatal_restarts = 0
        try:
            while time.monotonic() - started < scale(25, 75) or chaos.rounds < scale(2, 6):
                assert time.monotonic() - started < 600, "the scenario did not get its coordinator kills"
                producer.begin_transaction()
                history.begin_transaction()
                outcome = "commit"
                try:
                    for _ in range(20):
                        record_id = history.next_id()
                        producer.send(topic, b"t", headers=[checker.header(record_id)],
                                      callback=history.callback(record_id))
                except KafkaError as exc:
                    outcome = handle(exc)
                    assert outcome != "unclassified", repr(exc)
                    outcome = "fatal" if outcome == "fatal" else "abort"
                while outcome == "commit":
                    try:
                        producer.commit_transaction(timeout=20)
                        history.commit_transaction()
                        transactions += 1
                        break
                    except KafkaError as exc:
                        action = handle(exc)
                        assert action != "unclassified", repr(exc)
                        if action in ("abort", "fatal"):
                            outcome = action
                while outcome == "abort":
                    try:
                        producer.abort_transaction(timeout=20)
                        history.abort_transaction()
                        aborted += 1
                        break
                    except KafkaError as exc:
                        action = handle(exc)
                        assert action in ("again", "fatal"), repr(exc)
                        if action == "fatal":
                            outcome = "fatal"
                if outcome == "fatal":
                    # Whether the coordinator committed or aborted it is not known to this
                    # producer: the checker counts its records as ambiguous, never lost.
                    history.commit_transaction(outcome_known=False)
                    fatal_restarts += 1
                    producer = replace_producer()
        finally:
            figures.faults = chaos.stop()
            producer.close(30)
        restarts.join()
    report = checker.verify(kafka_cluster.live_bootstrap(), [topic])
    figures.records = len(history)
    figures.seconds = time.monotonic() - started
    figures.recovery_s = round(max(restarts.recoveries), 2) if restarts.recoveries else None
    figures.notes = {"committed_transactions": transactions, "aborted_transactions": aborted,
                     "fatal_restarts": fatal_restarts,
                     "errors": sorted({f"{type(e).__name__}(fatal={e.fatal}, abortable={e.abortable}, "
                                       f"retriable={e.retriable})" for e in seen})}
    figures.add_report(report).publish()
    assert transactions > 0 and report.ok, str(report)


@pytest.mark.timeout(900)
def test_zombie_fencing_again_and_again(kafka_cluster: Any, unique_topic: str) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 3, 3, {"min.insync.replicas": "2"})
    txn_id = f"{unique_topic}-txn"
    rounds = int(scale(10, 50))
    checker = Checker()
    settings = {"bootstrap.servers": kafka_cluster.bootstrap, "transactional.id": txn_id, "linger.ms": 1}
    current = Producer(settings)
    current.init_transactions(timeout=60)
    started = time.monotonic()
    fatal_errors: set[str] = set()
    for round_ in range(rounds):
        zombie, zombie_history = current, checker.producer(f"zombie-{round_}")
        zombie.begin_transaction()
        zombie_history.begin_transaction()
        for _ in range(5):  # written to the log (acknowledged), not committed
            record_id = zombie_history.next_id()
            metadata = zombie.send(topic, b"z", headers=[checker.header(record_id)]).result(30)
            zombie_history.acked(record_id, metadata.topic, metadata.partition, metadata.offset)
        successor = Producer(settings)
        successor.init_transactions(timeout=60)  # fences the zombie, aborts its transaction
        with pytest.raises(KafkaError) as info:
            zombie.commit_transaction(timeout=30)
        assert info.value.fatal, repr(info.value)
        fatal_errors.add(type(info.value).__name__)
        zombie_history.abort_transaction()
        with pytest.raises(KafkaError) as again:  # a fenced producer stays fenced
            zombie.begin_transaction()
        assert again.value.fatal, repr(again.value)
        zombie.close(10)
        history = checker.producer(f"successor-{round_}")
        with successor.transaction():
            history.begin_transaction()
            for _ in range(5):
                record_id = history.next_id()
                successor.send(topic, b"s", headers=[checker.header(record_id)], callback=history.callback(record_id))
        history.commit_transaction()
        current = successor
    current.close(10)
    report = checker.verify(kafka_cluster.live_bootstrap(), [topic])
    figures = Figures("zombie fencing", records=sum(len(h) for h in checker.producers), faults=rounds,
                      seconds=time.monotonic() - started, notes={"zombie_errors": sorted(fatal_errors)})
    figures.add_report(report).publish()
    assert report.total.read == 5 * rounds  # only the successors' records
    assert report.ok, str(report)
