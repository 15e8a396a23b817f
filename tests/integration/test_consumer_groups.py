"""Consumer groups on the real broker: members (subprocesses) join, leave cleanly and are
SIGKILLed; their own logs of assignments must show at most one owner per partition at
every moment, no record lost, and (cooperative, KIP-848) no retained partition revoked.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kafkalite import Consumer, TopicPartition
from kafkalite.errors import (
    FencedInstanceIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from tests.integration.consumer_support import produce_spread, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.slow]

MEMBER = str(Path(__file__).with_name("group_member.py"))
PARTITIONS = 6


class Member:
    def __init__(self, name: str, args: list[str], log: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log = log
        self.proc = subprocess.Popen([sys.executable, MEMBER, *args, str(log)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=open(str(log) + ".err", "w"))  # noqa: SIM115
        self.killed_at: float | None = None

    def events(self) -> list[dict]:
        if not self.log.exists():
            return []
        out = []
        for line in self.log.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line cut by SIGKILL
        return out

    def owned(self) -> set[int]:
        owned: set[int] = set()
        for e in self.events():
            if e["event"] == "assigned":
                owned = set(e["owned"])
            elif e["event"] in ("revoked", "lost"):
                owned -= set(e["partitions"])
            elif e["event"] == "closed":
                owned = set()
        return owned if self.proc.poll() is None else set()

    def kill(self) -> None:
        self.killed_at = time.time()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(60) == 0, (self.log.with_suffix(".log.err").read_text()
                                         if Path(str(self.log) + ".err").exists() else "")


def timeline(member: Member) -> list[tuple[float, set[int]]]:
    """(time, owned partitions from then on) steps of one member, ending with its death."""
    steps: list[tuple[float, set[int]]] = []
    owned: set[int] = set()
    for e in member.events():
        if e["event"] == "assigned":
            owned = set(e["owned"])
        elif e["event"] in ("revoked", "lost"):
            owned = owned - set(e["partitions"])
        elif e["event"] == "closed":
            owned = set()
        else:
            continue
        steps.append((e["t"], set(owned)))
    end = member.killed_at
    if end is not None:
        steps.append((end, set()))
    return steps


def check_single_owner(members: list[Member]) -> None:
    changes = sorted((t, m.name, owned) for m in members for t, owned in timeline(m))
    current: dict[str, set[int]] = {}
    for t, name, owned in changes:
        current[name] = owned
        for p in range(PARTITIONS):
            owners = [n for n, o in current.items() if p in o]
            assert len(owners) <= 1, f"partition {p} owned by {owners} at {t}"


def check_cooperative(members: list[Member]) -> None:
    for m in members:
        events = [e for e in m.events() if e["event"] in ("assigned", "revoked")]
        for i, e in enumerate(events):
            if e["event"] != "revoked":
                continue
            assert e["partitions"], f"{m.name}: cooperative revocation with an empty set"
            following = next((x for x in events[i + 1:] if x["event"] == "assigned"), None)
            if following is not None:
                kept = set(following["owned"]) & set(e["partitions"])
                assert not kept, f"{m.name} revoked {sorted(kept)} and kept them in the same rebalance"


def consumed(members: list[Member]) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    for m in members:
        for e in m.events():
            if e["event"] == "records":
                out.update((p, o) for p, o in e["records"])
    return out


@pytest.mark.timeout(300)
@pytest.mark.parametrize("protocol,strategy", [
    ("classic", "range"), ("classic", "cooperative-sticky"), ("consumer", "-")],
    ids=["eager-range", "cooperative-sticky", "kip848"])
def test_members_join_leave_and_die(kafka_broker, topic_factory, tmp_path, protocol, strategy) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    bootstrap = kafka_broker.bootstrap
    group = f"g-{topic}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    produce_spread(bootstrap, topic, PARTITIONS, 100)
    members: dict[str, Member] = {}

    def start(name: str) -> None:
        members[name] = Member(name, [bootstrap, topic, group, protocol, strategy], tmp_path / f"{name}.log", env)

    def alive() -> list[Member]:
        return [m for m in members.values() if m.proc.poll() is None]

    def settled(names: set[str]) -> bool:
        live = [members[n] for n in names]
        owned = [m.owned() for m in live]
        return all(owned) and set().union(*owned) == set(range(PARTITIONS)) and \
            sum(len(o) for o in owned) == PARTITIONS

    try:
        for name in ("a", "b", "c"):
            start(name)
        wait_until(lambda: settled({"a", "b", "c"}), 120, 0.2, "3 members to share the partitions")
        start("d")
        wait_until(lambda: settled({"a", "b", "c", "d"}), 120, 0.2, "the 4th member to get partitions")
        produce_spread(bootstrap, topic, PARTITIONS, 100)
        members["b"].kill()
        wait_until(lambda: settled({"a", "c", "d"}), 120, 0.2, "the killed member's partitions to move")
        members["a"].stop()
        wait_until(lambda: settled({"c", "d"}), 120, 0.2, "the closed member's partitions to move")
        produce_spread(bootstrap, topic, PARTITIONS, 100)
        everything = {(p, o) for p in range(PARTITIONS) for o in range(300)}
        wait_until(lambda: everything <= consumed(list(members.values())), 120, 0.2, "every record")
        for m in alive():
            m.stop()
    finally:
        for m in members.values():
            if m.proc.poll() is None:
                m.proc.kill()
    everyone = list(members.values())
    for m in everyone:
        errors = [e for e in m.events() if e["event"] == "error"]
        assert not errors, f"{m.name}: {errors}"
    check_single_owner(everyone)
    assert consumed(everyone) >= everything  # nothing lost (a SIGKILL may cause re-delivery)
    if protocol == "consumer" or strategy == "cooperative-sticky":
        check_cooperative(everyone)
    else:
        # eager: every rebalance of a member in a generation starts by revoking all it owns
        revocations = 0
        for m in everyone:
            owned: set[int] = set()
            for e in m.events():
                if e["event"] == "assigned":
                    owned = set(e["owned"])
                elif e["event"] == "revoked":
                    assert set(e["partitions"]) == owned, f"{m.name} revoked {e['partitions']} of {owned}"
                    owned = set()
                    revocations += 1
        assert revocations >= 4


@pytest.mark.timeout(180)
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_duplicate_static_instance_id_is_a_typed_error(kafka_broker, topic_factory, protocol) -> None:
    topic = topic_factory(partitions=2)
    produce_spread(kafka_broker.bootstrap, topic, 2, 5)
    conf = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"g-{topic}", "group.protocol": protocol,
            "group.instance.id": "static-1", "auto.offset.reset": "earliest"}
    first = Consumer(conf)
    second = Consumer(conf)
    try:
        first.subscribe([topic])
        wait_until(lambda: (first.poll(0.2), len(first.assignment()) == 2)[1], 60, what="first member assigned")
        second.subscribe([topic])
        raised: dict[str, Exception] = {}
        deadline = time.monotonic() + 60
        while not raised and time.monotonic() < deadline:
            for name, member in (("first", first), ("second", second)):
                try:
                    member.poll(0.2)
                except (FencedInstanceIdError, UnreleasedInstanceIdError) as exc:
                    raised[name] = exc
        # classic: the newcomer takes the instance id over and the old member is fenced;
        # KIP-848: the id stays with the active member and the newcomer is refused.
        expected = {"first": FencedInstanceIdError} if protocol == "classic" else {"second": UnreleasedInstanceIdError}
        assert {name: type(exc) for name, exc in raised.items()} == expected, raised
        (error,) = raised.values()
        assert "static-1" in str(error) and f"g-{topic}" in str(error)
    finally:
        first.close(5)
        second.close(5)


@pytest.mark.timeout(120)
def test_static_member_does_not_leave_on_close(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    group = f"g-{topic}"
    conf = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": group, "group.instance.id": "keeper",
            "session.timeout.ms": 30000, "auto.offset.reset": "earliest"}
    with Consumer(conf) as c:
        c.subscribe([topic])
        wait_until(lambda: (c.poll(0.2), len(c.assignment()) == 2)[1], 60, what="assignment")
    described = kafka_broker.run_tool("kafka-consumer-groups", [
        "--bootstrap-server", kafka_broker.bootstrap, "--describe", "--group", group, "--members"], check=True).stdout
    assert "keeper" in described  # still a member after close (no LeaveGroup)


@pytest.mark.timeout(120)
def test_poll_interval_exceeded_leaves_and_next_poll_rejoins(kafka_broker, topic_factory, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalite.consumer.group")
    topic = topic_factory(partitions=1)
    produce_spread(kafka_broker.bootstrap, topic, 1, 10)
    events: list[tuple[str, set[TopicPartition]]] = []
    threads: set[int] = set()

    class Listener:
        def on_partitions_assigned(self, parts: set[TopicPartition]) -> None:
            threads.add(threading.get_ident())
            events.append(("assigned", parts))

        def on_partitions_revoked(self, parts: set[TopicPartition]) -> None:
            events.append(("revoked", parts))

        def on_partitions_lost(self, parts: set[TopicPartition]) -> None:
            threads.add(threading.get_ident())
            events.append(("lost", parts))

    conf = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"g-{topic}", "max.poll.interval.ms": 2000,
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest"}
    with Consumer(conf) as c:
        c.subscribe([topic], listener=Listener())
        wait_until(lambda: (c.poll(0.2), len(c.assignment()) == 1)[1], 60, what="assignment")
        # The application "processes" (does not poll) until the member leaves the group.
        wait_until(lambda: any("was not called for more than max.poll.interval.ms" in r.getMessage()
                               for r in caplog.records), 60, what="the member to leave after max.poll.interval.ms")
        metrics = {m.name: v for m, v in c.metrics().items()}
        assert metrics["last-poll-seconds-ago"] >= 2.0  # max.poll.interval.ms
        wait_until(lambda: (c.poll(0.2), ("lost", {TopicPartition(topic, 0)}) in events and
                            len(c.assignment()) == 1)[1], 60, what="rejoin after the poll timeout")
        assert [e[0] for e in events].count("assigned") >= 2
        assert threads == {threading.get_ident()}  # listener calls run in the polling thread


@pytest.mark.timeout(120)
def test_unsubscribe_revokes_leaves_and_allows_a_new_subscription(kafka_broker, topic_factory) -> None:
    first = topic_factory(partitions=2)
    second = topic_factory(partitions=1)
    produce_spread(kafka_broker.bootstrap, first, 2, 5)
    produce_spread(kafka_broker.bootstrap, second, 1, 5)
    revoked: list[set[TopicPartition]] = []

    class Listener:
        def on_partitions_revoked(self, parts: set[TopicPartition]) -> None:
            revoked.append(parts)

    conf = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"g-{first}", "auto.offset.reset": "earliest"}
    with Consumer(conf) as c:
        c.subscribe([first], listener=Listener())
        wait_until(lambda: (c.poll(0.2), len(c.assignment()) == 2)[1], 60, what="assignment")
        c.unsubscribe()
        assert c.assignment() == set() and c.subscription() == set()
        assert revoked[-1] == {TopicPartition(first, 0), TopicPartition(first, 1)}
        c.subscribe([second])
        got: list = []
        wait_until(lambda: (got.extend(c.poll(0.2)), len(got) >= 5)[1], 60, what="records of the new topic")
        assert {r.topic for r in got} == {second}


@pytest.mark.timeout(120)
def test_kip848_server_side_regex_and_remote_assignor(kafka_broker, topic_factory) -> None:
    base = topic_factory(partitions=1)
    a = topic_factory(partitions=2, name=f"{base}-rx-a")
    b = topic_factory(partitions=1, name=f"{base}-rx-b")
    for t in (a, b):
        produce_spread(kafka_broker.bootstrap, t, 1, 3)
    conf = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"g-{base}", "group.protocol": "consumer",
            "group.remote.assignor": "range", "auto.offset.reset": "earliest"}
    with Consumer(conf) as c:
        c.subscribe(pattern=f"{base}-rx-.*")  # evaluated by the broker (ConsumerGroupHeartbeat v1)
        got: list = []
        wait_until(lambda: (got.extend(c.poll(0.2)), len(got) >= 6)[1], 60, what="records of both topics")
        assert {r.topic for r in got} == {a, b}
        assert c.assignment() == {TopicPartition(a, 0), TopicPartition(a, 1), TopicPartition(b, 0)}
    bad = {**conf, "group.id": f"g2-{base}", "group.remote.assignor": "no-such-assignor"}
    with Consumer(bad) as c:
        c.subscribe([a])
        with pytest.raises(UnsupportedAssignorError) as info:
            for _ in range(100):
                c.poll(0.2)
        assert f"g2-{base}" in str(info.value)
