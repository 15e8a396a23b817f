"""commit() while the group rebalances: "retry after poll()", never a dead consumer.

Java's consumer commits only with a stable generation: while it is rejoining it raises
RebalanceInProgressException (call poll(), then commit again) and keeps
CommitFailedException for a member that was really removed. A commit sent with the old
generation while JoinGroup is outstanding waits behind the join on the coordinator
connection and comes back ILLEGAL_GENERATION, which used to kill the plainest correct
loop (poll -> process -> commit, catching retriable errors) at every cooperative
rebalance.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from kafkalite import AdminClient, Consumer, OffsetSpec, Producer, TopicPartition
from kafkalite.errors import CommitFailedError, KafkaError, RebalanceInProgressError
from tests.integration.consumer_support import produce_spread, wait_until
from tests.integration.test_consumer_groups import Member

pytestmark = [pytest.mark.broker, pytest.mark.slow]

PARTITIONS = 4


def member_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.update(extra)
    return env


@pytest.mark.timeout(240)
def test_commit_while_rejoining_is_retry_after_poll_and_the_loop_goes_on(kafka_broker, topic_factory,
                                                                        tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=PARTITIONS)
    group = f"{topic}-g"
    produce_spread(bootstrap, topic, PARTITIONS, 50)
    a = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "partition.assignment.strategy": "cooperative-sticky",
                  "session.timeout.ms": 10000, "heartbeat.interval.ms": 300,
                  "max.poll.interval.ms": 25000})
    members: list[Member] = []
    try:
        a.subscribe([topic])
        wait_until(lambda: a.poll(0.1) is not None and len(a.assignment()) == PARTITIONS, 60,
                   what="A owns every partition")
        a.commit()

        # M joins (cooperative: two rounds), then freezes with a long session: the next
        # rebalance waits for it, so A's JoinGroup stays outstanding for ~20 s.
        slow = Member("M", [bootstrap, topic, group, "classic", "cooperative-sticky"], tmp_path / "m.log",
                      member_env(MEMBER_SESSION_TIMEOUT_MS="20000", MEMBER_MAX_POLL_INTERVAL_MS="25000"))
        members.append(slow)
        wait_until(lambda: (a.poll(0.1) is not None and len(slow.owned()) == PARTITIONS // 2
                            and len(a.assignment()) == PARTITIONS // 2), 90, what="M owns half")
        a.commit()  # stable again
        slow.proc.send_signal(signal.SIGSTOP)

        # N joins: the group waits for A (rejoins at once) and for M (frozen).
        members.append(Member("N", [bootstrap, topic, group, "classic", "cooperative-sticky"],
                              tmp_path / "n.log", member_env(MEMBER_MAX_POLL_INTERVAL_MS="25000")))
        refused: RebalanceInProgressError | None = None
        refused_generation = -1
        deadline = time.monotonic() + 60
        while refused is None and time.monotonic() < deadline:
            a.poll(0.1)
            try:
                started = time.monotonic()
                a.commit()
            except RebalanceInProgressError as exc:
                refused = exc
                refused_generation = a.group_metadata().generation_id
                # Refused at once, not after waiting behind the join for M's session (20 s).
                assert time.monotonic() - started < 10
        assert refused is not None, "A never saw the rebalance (no RebalanceInProgressError)"
        assert refused.retriable and "poll()" in str(refused) and group in str(refused)

        # The plain loop: poll, commit, retry what is retriable. After M's session runs
        # out the rebalance completes and A's commits succeed again; A never fails.
        refused_in = refused_generation
        stable_again = False
        deadline = time.monotonic() + 120
        while not stable_again and time.monotonic() < deadline:
            a.poll(0.2)
            try:
                a.commit()
            except CommitFailedError as exc:  # the bug: a live member told it was removed
                pytest.fail(f"a live member's commit failed: {exc}")
            except KafkaError as exc:
                assert exc.retriable, exc
                continue
            stable_again = bool(members[1].owned()) and a.group_metadata().generation_id > refused_in
        assert stable_again, "the group never became stable again with A and N"
        slow.proc.send_signal(signal.SIGKILL)
        slow.proc.wait(10)

        # A's commits reached the broker: what it committed is its position.
        with Producer({"bootstrap.servers": bootstrap}) as producer:
            for p in range(PARTITIONS):
                producer.send(topic, b"more", partition=p)
        owned = set(a.assignment())
        wait_until(lambda: a.poll(0.1) is not None and all(
            a.position(tp) >= 51 for tp in owned), 60, what="A reads the new records")
        a.commit()
        committed = a.committed(owned)
        assert {tp: om.offset for tp, om in committed.items()} == {tp: a.position(tp) for tp in owned}
    finally:
        for m in members:
            if m.proc.poll() is None:
                m.proc.send_signal(signal.SIGCONT)
                m.proc.kill()
                m.proc.wait(10)
        a.close()


@pytest.mark.timeout(300)
def test_plain_commit_loops_survive_cooperative_churn(kafka_broker, topic_factory, tmp_path: Path) -> None:
    """Two members commit after every poll while a third is SIGKILLed and restarted and a
    fourth joins and leaves: the loops never die, and what they commit is what they read."""
    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=PARTITIONS)
    group = f"{topic}-g"
    args = [bootstrap, topic, group, "classic", "cooperative-sticky"]
    loops = [Member(f"L{i}", args, tmp_path / f"l{i}.log", member_env(MEMBER_COMMIT_EACH_POLL="1"))
             for i in range(2)]
    churn: list[Member] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent = 0

    def produce(n: int) -> None:
        nonlocal sent
        for _ in range(n):
            producer.send(topic, f"r{sent}".encode(), partition=sent % PARTITIONS)
            sent += 1
        producer.flush()

    def loops_alive() -> None:
        for m in loops:
            died = [e for e in m.events() if e["event"] == "died"]
            assert not died and m.proc.poll() is None, f"{m.name} died: {died or m.proc.returncode}"

    try:
        wait_until(lambda: sum(len(m.owned()) for m in loops) == PARTITIONS, 90, what="the loops own everything")
        for round_ in range(3):
            produce(200)
            victim = Member(f"K{round_}", args, tmp_path / f"k{round_}.log", member_env())
            churn.append(victim)
            wait_until(lambda v=victim: v.owned(), 90, what=f"{victim.name} owns partitions")
            loops_alive()
            produce(200)
            victim.kill()  # its partitions come back after its session timeout
            wait_until(lambda: sum(len(m.owned()) for m in loops) == PARTITIONS, 90,
                       what="the loops own everything again")
            loops_alive()
        produce(200)
        # Everything produced is read and committed by the live loops.
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            listed = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps})
            ends = {tp: listed[tp].result().offset for tp in tps}
            assert sum(ends.values()) == sent

            def group_committed() -> bool:
                loops_alive()
                got = admin.list_consumer_group_offsets([group])[group].result()
                return all(tp in got and got[tp].offset == ends[tp] for tp in tps)

            wait_until(group_committed, 90, what="the loops committed every record")
        retries = [e for m in loops for e in m.events() if e["event"] == "retry"]
        assert all(e["type"] != "CommitFailedError" for e in retries), retries
        for m in loops:
            m.stop()
    finally:
        producer.close()
        for m in loops + churn:
            if m.proc.poll() is None:
                m.proc.kill()
                m.proc.wait(10)
