"""Group churn on 3 nodes, for eager, cooperative and KIP-848 groups: consumer processes
whose loop is poll -> process -> commit (catching only errors whose ``retriable`` is
true) while members are SIGKILLed and restarted and the group coordinator is bounced,
and a producer writes steadily. Then a broker bounce under the stable group.

What must hold (from the members' own logs and the group's committed offsets):
* no member whose process was not killed ever dies (RebalanceInProgressError is
  retriable; CommitFailedError only for members really removed);
* no partition has two owners at any moment;
* nothing processed and committed is lost: in the end every record was processed and
  the committed offsets are the end offsets; committed offsets only move forward and
  never past what the committing member processed;
* no partition stalls longer than the session timeout plus a few seconds;
* a broker bounce under a stable group causes no rebalance.
"""

from __future__ import annotations

import itertools
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kafkalite import AdminClient, OffsetSpec, Producer, TopicPartition
from kafkalite.errors import KafkaError
from tests.faults.scenario_support import Figures, Restarts, scale, wait_for_isr
from tests.integration.test_consumer_groups import PARTITIONS, Member, check_single_owner

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SESSION_S = 10.0


def member_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), MEMBER_COMMIT_EACH_POLL="1",
                MEMBER_SESSION_TIMEOUT_MS=str(int(SESSION_S * 1000)))


class SteadyProducer:
    """Writes ``rate`` records/s spread over the partitions until stopped."""

    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic, self.rate = topic, rate
        self.sent = 0
        self._stop = threading.Event()
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for _ in range(max(1, self.rate // 10)):
                self.producer.send(self.topic, b"r%d" % self.sent, partition=self.sent % PARTITIONS,
                                   callback=lambda md, err: err is not None and self.errors.append(err))
                self.sent += 1
            self._stop.wait(0.1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.producer.flush(120)
        self.producer.close(30)


class CommittedWatch:
    """Samples the group's committed offsets: each partition's must only move forward,
    except just after the group's coordinator moved. The new coordinator answers from its
    log up to the high watermark, and a new partition leader's high watermark can lag what
    the old one had acknowledged until its followers fetch again: for a moment it shows an
    earlier commit (seen here: 670 acknowledged by the killed coordinator, 620 from the
    new one for about a second, both records in both logs). Those are counted, not failed;
    a commit that really lands behind a later one (a late or zombie commit) shows up
    without a coordinator change."""

    FAILOVER_WINDOW_S = 15.0

    def __init__(self, admin: AdminClient, group: str) -> None:
        self.admin, self.group = admin, group
        self.backwards: list[str] = []
        self.after_failover = 0
        self.last: dict[TopicPartition, int] = {}
        self._coordinator: int | None = None
        self._moved_at = float("-inf")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                before = coordinator_of(self.admin, self.group)
                committed = self.admin.list_consumer_group_offsets([self.group])[self.group].result()
                after = coordinator_of(self.admin, self.group)
            except KafkaError:
                continue  # the coordinator may be moving
            if self._coordinator is not None and {before, after} != {self._coordinator}:
                self._moved_at = time.monotonic()
            self._coordinator = after
            for tp, om in committed.items():
                before_offset = self.last.get(tp, -1)
                if om.offset < before_offset:
                    if time.monotonic() - self._moved_at < self.FAILOVER_WINDOW_S:
                        self.after_failover += 1
                        continue  # keep the higher mark: it must come back
                    self.backwards.append(f"{tp.topic}-{tp.partition}: {before_offset} -> {om.offset}")
                self.last[tp] = max(before_offset, om.offset)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def rebalance_events(members: list[Member], since: float, until: float) -> list[dict[str, Any]]:
    return [e for m in members for e in m.events()
            if e["event"] in ("assigned", "revoked", "lost") and since <= e["t"] <= until]


def longest_partition_stall(members: list[Member]) -> tuple[float, int, float]:
    """The longest time between two processed batches of the same partition, with that
    partition and when the gap began."""
    times: dict[int, list[float]] = {}
    for m in members:
        for e in m.events():
            if e["event"] == "records":
                for p in {p for p, _ in e["records"]}:
                    times.setdefault(p, []).append(e["t"])
    longest = (0.0, -1, 0.0)
    for p, ts in times.items():
        ts.sort()
        for a, b in itertools.pairwise(ts):
            if b - a > longest[0]:
                longest = (b - a, p, a)
    return longest


def balanced(members: list[Member]) -> bool:
    """Every live member has had its assignment (it logged one) and the shares differ by at
    most one partition: what range, cooperative-sticky and KIP-848's uniform assignor all
    converge to with one topic. A member still starting or joining has no share yet, so the
    group is not settled even when the others own every partition."""
    shares = []
    for m in members:
        if not any(e["event"] == "assigned" for e in m.events()):
            return False
        shares.append(len(m.owned()))
    return bool(shares) and max(shares) - min(shares) <= 1


def coordinator_of(admin: AdminClient, group: str) -> int:
    return admin.describe_consumer_groups([group])[group].result().coordinator.id


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("protocol", "strategy"), [
    ("classic", "range"), ("classic", "cooperative-sticky"), ("consumer", "-")],
    ids=["eager", "cooperative", "kip848"])
def test_group_churn(kafka_cluster: Any, unique_topic: str, tmp_path: Path, protocol: str, strategy: str) -> None:
    topic = kafka_cluster.create_topic(unique_topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    group = f"{unique_topic}-g"
    bootstrap = kafka_cluster.bootstrap
    args = [bootstrap, topic, group, protocol, strategy]
    n_members = int(scale(4, 6))
    kills = int(scale(2, 8))
    coordinator_bounces = int(scale(1, 2))
    rnd = random.Random(hash((protocol, strategy)) & 0xFFFF)
    members = [Member(f"m{i}", args, tmp_path / f"m{i}.log", member_env()) for i in range(n_members)]
    everyone = list(members)
    restarts = Restarts(down_s=2.0)
    figures = Figures(f"group churn ({protocol}/{strategy})")
    producer = SteadyProducer(bootstrap, topic, rate=int(scale(300, 600)))
    started = time.monotonic()
    fault_log: list[str] = []  # for the failure messages

    def live() -> list[Member]:
        return [m for m in members if m.proc.poll() is None and m.killed_at is None]

    def all_owned() -> bool:
        return sorted(p for m in live() for p in m.owned()) == list(range(PARTITIONS))

    def progressed_since(t: float) -> bool:
        done = {p for m in live() for e in m.events() if e["event"] == "records" and e["t"] > t
                for p, _ in e["records"]}
        return len(done) == PARTITIONS

    def wait_owned(timeout: float = 120, since: float | None = None) -> None:
        """Every partition owned again and, with ``since``, processed after that moment: the
        group has recovered from one fault before the next, so a stall measures one fault
        (a coordinator killed while a new owner still fetches its committed offsets would
        add the coordinator's failover to the member's session timeout)."""
        deadline = time.monotonic() + timeout
        while not all_owned() or (since is not None and not progressed_since(since)):
            for m in live():
                died = [e for e in m.events() if e["event"] == "died"]
                assert not died, f"{m.name} died: {died}"
            assert time.monotonic() < deadline, "the group did not own and process every partition again"
            time.sleep(0.2)

    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        watch = CommittedWatch(admin, group)
        try:
            wait_owned(180)
            faults = ["kill"] * kills + ["coordinator"] * coordinator_bounces
            rnd.shuffle(faults)
            for i, fault in enumerate(faults):
                fault_time = time.time()
                if fault == "kill":
                    victim = rnd.choice(live())
                    victim.kill()
                    fault_log.append(f"{victim.killed_at:.2f} killed {victim.name}")
                    time.sleep(rnd.uniform(0.5, 3.0))  # the replacement comes a little later
                    replacement = Member(f"r{i}", args, tmp_path / f"r{i}.log", member_env())
                    members.append(replacement)
                    everyone.append(replacement)
                else:
                    restarts.wait_all_back()
                    wait_for_isr(kafka_cluster, topic, PARTITIONS)
                    coordinator = coordinator_of(admin, group)
                    fault_time = time.time()
                    fault_log.append(f"{time.time():.2f} killed the coordinator, node {coordinator}")
                    restarts.kill(kafka_cluster.node(coordinator))
                figures.faults += 1
                restarts.wait_all_back()
                wait_owned(since=fault_time)
            # A broker bounce under the stable group: no rebalance.
            restarts.wait_all_back()
            wait_for_isr(kafka_cluster, topic, PARTITIONS)
            # Stable: no assignment change for a few seconds (a last cooperative round ...).
            quiet_deadline = time.monotonic() + 60
            while (rebalance_events(everyone, time.time() - 3, time.time()) or not all_owned()
                   or not balanced(live())):
                assert time.monotonic() < quiet_deadline, "the group did not settle"
                time.sleep(0.3)
            coordinator = coordinator_of(admin, group)
            other = next(n for n in kafka_cluster.node_ids if n != coordinator)
            bounce_start = time.time()
            fault_log.append(f"{bounce_start:.2f} killed node {other} (not the coordinator)")
            restarts.kill(kafka_cluster.node(other))
            restarts.wait_all_back()
            wait_for_isr(kafka_cluster, topic, PARTITIONS)
            # Past a session timeout after the bounce: a rebalance would have shown by now.
            deadline = time.monotonic() + SESSION_S + 2
            while time.monotonic() < deadline:
                time.sleep(0.5)
            bounce_rebalances = rebalance_events(everyone, bounce_start, time.time())
            figures.faults += 1
        finally:
            producer.stop()
            ends = {tp: info.result().offset for tp, info in admin.list_offsets(
                {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)}).items()}
            # Let the live members catch up and commit everything, then stop them cleanly.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                committed = admin.list_consumer_group_offsets([group])[group].result()
                if all(tp in committed and committed[tp].offset >= end for tp, end in ends.items()):
                    break
                time.sleep(0.5)
            for m in live():
                m.stop()
            for m in everyone:
                if m.proc.poll() is None:
                    m.proc.kill()
            watch.stop()
            restarts.join()
        committed = admin.list_consumer_group_offsets([group])[group].result()
    assert not producer.errors, producer.errors[:3]
    died = [(m.name, e) for m in everyone for e in m.events() if e["event"] == "died"]
    assert not died, died
    assert {tp: committed[tp].offset for tp in ends} == ends, "the group did not commit everything"
    processed = {(p, o) for m in everyone for e in m.events() if e["event"] == "records" for p, o in e["records"]}
    missing = [(tp.partition, o) for tp, end in ends.items() for o in range(end) if (tp.partition, o) not in processed]
    assert not missing, f"{len(missing)} committed records never processed, e.g. {missing[:5]}"
    assert not watch.backwards, watch.backwards
    assert not committed_past_processed(everyone)
    check_single_owner(everyone)
    stall, stalled_partition, stall_began = longest_partition_stall(everyone)
    retries = [e for m in everyone for e in m.events() if e["event"] == "retry"]
    figures.records = producer.sent
    figures.longest_stall_s = round(stall, 2)
    figures.recovery_s = round(max(restarts.recoveries), 2) if restarts.recoveries else None
    figures.seconds = time.monotonic() - started
    figures.notes = {"members": len(everyone), "retries": len(retries),
                     "retry_types": sorted({e["type"] for e in retries}),
                     "rebalances_after_broker_bounce": len(bounce_rebalances),
                     "committed_behind_after_failover": watch.after_failover}
    figures.publish()
    assert not bounce_rebalances, (bounce_rebalances, fault_log)
    assert all(e["type"] != "CommitFailedError" for e in retries), retries
    assert stall <= SESSION_S + 8, (
        f"partition {stalled_partition} stalled for {stall:.1f}s from {stall_began:.2f}; faults: {fault_log}; "
        f"its owners: {owners_of(everyone, stalled_partition)}")


def owners_of(members: list[Member], partition: int) -> list[str]:
    """When each member was given, and gave up, ``partition`` (for failure messages)."""
    out = []
    for m in members:
        for e in m.events():
            if e["event"] in ("assigned", "revoked", "lost") and partition in e["partitions"]:
                out.append(f"{e['t']:.2f} {m.name} {e['event']}")
        if m.killed_at is not None:
            out.append(f"{m.killed_at:.2f} {m.name} killed")
    return sorted(out)


def committed_past_processed(members: list[Member]) -> list[str]:
    """Commits whose position was beyond every record of that partition that any member
    had processed by then (a commit of unprocessed records: a loss waiting to happen)."""
    events = sorted((e for m in members for e in m.events() if e["event"] in ("records", "committed")),
                    key=lambda e: e["t"])
    top: dict[int, int] = {}
    bad = []
    for e in events:
        if e["event"] == "records":
            for p, o in e["records"]:
                top[p] = max(top.get(p, -1), o)
        else:
            for p, pos in e["positions"].items():
                if pos > top.get(int(p), -1) + 1 and pos > 0:
                    bad.append(f"partition {p} committed at {pos}, processed up to {top.get(int(p), -1)}")
    return bad
