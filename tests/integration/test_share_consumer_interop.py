"""A mixed share group: Kafka's own console share consumer (Java) and kafkalite members
read one partition together; every record is delivered, none twice except as a
redelivery (a higher delivery count)."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections import defaultdict

import pytest

from kafkalite import AdminClient
from kafkalite.types import TopicPartition
from tests.integration.share_support import (
    Member,
    configure_group,
    new_group,
    offsets_of,
    produce_values,
    settings,
    wait_until,
)

pytestmark = pytest.mark.broker


@pytest.mark.timeout(120)
def test_java_console_share_consumer_and_kafkalite_members_share_records(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group("share-interop")
    configure_group(bs, group)
    java = subprocess.Popen(kafka_broker.java_tool_command("kafka-console-share-consumer", [
        "--bootstrap-server", bs, "--topic", topic, "--group", group,
        "--formatter-property", "print.offset=true", "--formatter-property", "print.delivery=true",
        "--command-property", "max.poll.records=3", "--command-property", "share.acquire.mode=record_limit"]),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    java_lines: list[str] = []

    def read() -> None:
        assert java.stdout is not None
        for line in java.stdout:
            java_lines.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    cfg = settings(bs, group, max_poll_records=3, share_acquire_mode="record_limit")
    members = [Member(cfg, topic, pause=0.02) for _ in range(2)]
    for m in members:
        m.start()
    tp = TopicPartition(topic, 0)
    values = [b"m-%d" % i for i in range(120)]
    try:
        with AdminClient({"bootstrap.servers": bs}) as admin:
            def all_joined() -> bool:
                d = admin.describe_share_groups([group])[group]
                return d.ok and len(d.value.members) == 3 and all(x.assignment == {tp} for x in d.value.members)
            wait_until(all_joined, 90, "the Java member and two kafkalite members")
        produce_values(bs, topic, values, per_batch=2)

        def java_records() -> list[tuple[int, int, bytes]]:
            out = []
            for line in list(java_lines):
                offset, delivery, value = line.split("\t", 2)
                out.append((int(offset.removeprefix("Offset:")), int(delivery.removeprefix("Delivery:")),
                            value.encode()))
            return out

        def everything_seen() -> bool:
            seen = {v for _, _, v in java_records()} | {r.value for m in members for r in m.snapshot()}
            return seen >= set(values)

        wait_until(everything_seen, 60, "every record delivered to some member")
    finally:
        java.send_signal(signal.SIGTERM)  # a graceful close: accepts and leaves
        java.wait(30)
        reader.join(10)
        for m in members:
            m.stop()
    deliveries: dict[int, list[int]] = defaultdict(list)
    by_offset: dict[int, bytes] = {}
    for offset, count, value in java_records():
        deliveries[offset].append(count)
        by_offset[offset] = value
    for m in members:
        for r in m.records:
            deliveries[r.offset].append(r.delivery_count)
            by_offset[r.offset] = r.value
    assert sorted(deliveries) == list(range(120))
    assert [by_offset[o] for o in range(120)] == values
    # A record seen twice must have come back as a redelivery (count 1, then 2, ...).
    for offset, counts in deliveries.items():
        assert sorted(counts) == list(range(1, len(counts) + 1)), (offset, counts)
    assert java_records(), "the Java member got no record"
    assert any(m.records for m in members), "no kafkalite member got a record"
    wait_until(lambda: (o := offsets_of(bs, group, tp)) is not None and o.lag == 0, 30, "the group to be drained")
