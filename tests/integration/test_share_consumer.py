"""kafkalite.ShareConsumer against a real broker (KIP-932 share groups).

The test brokers allow short acquisition locks (``group.share.min.record.lock.duration.ms``
is lowered by the harness); each test sets its group's lock and limits with group configs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kafkalite import AcknowledgeType, AdminClient, ShareConsumer
from kafkalite.errors import IllegalStateError, InvalidRecordStateError, WakeupError
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

ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


def poll_until(consumer: ShareConsumer, want: int, timeout: float = 30.0, handle=None) -> list:
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < want:
        assert time.monotonic() < deadline, f"got {len(got)} of {want} records"
        for r in consumer.poll(0.5):
            got.append(r)
            if handle is not None:
                handle(r)
    return got


@pytest.mark.timeout(90)
def test_three_members_share_one_partition_record_by_record(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group()
    configure_group(bs, group)
    cfg = settings(bs, group, max_poll_records=4, share_acquire_mode="record_limit")
    members = [Member(cfg, topic, pause=0.01) for _ in range(3)]
    for m in members:
        m.start()
    tp = TopicPartition(topic, 0)
    try:
        with AdminClient({"bootstrap.servers": bs}) as admin:
            def all_joined():
                d = admin.describe_share_groups([group])[group]
                return d.ok and len(d.value.members) == 3 and all(x.assignment == {tp} for x in d.value.members)
            wait_until(all_joined, 60, "three members with the same partition")
        values = [b"job-%d" % i for i in range(90)]
        produce_values(bs, topic, values, per_batch=2)
        wait_until(lambda: sum(len(m.snapshot()) for m in members) >= 90, 60, "every record delivered")
    finally:
        for m in members:
            m.stop()
    got = [r for m in members for r in m.records]
    # Records are shared, not partitions: every member got some, none twice.
    assert all(m.records for m in members), [len(m.records) for m in members]
    assert sorted(r.offset for r in got) == list(range(90))
    assert sorted(r.value for r in got) == sorted(values)
    assert {r.delivery_count for r in got} == {1}
    assert all(m.consumer.metrics()["records-fetched-total"] >= len(m.records) for m in members)
    # Closing accepted the last poll's records: nothing is left for the group.
    wait_until(lambda: (o := offsets_of(bs, group, tp)) is not None and o.lag == 0, 30, "the group to be drained")


@pytest.mark.timeout(60)
def test_release_comes_back_with_a_higher_delivery_count_reject_never(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group()
    configure_group(bs, group)
    produce_values(bs, topic, [b"a", b"b", b"c", b"d"], per_batch=4)
    cfg = settings(bs, group, share_acknowledgement_mode="explicit")
    outcomes: list = []
    tp = TopicPartition(topic, 0)
    with ShareConsumer(cfg) as consumer:
        consumer.set_acknowledgement_commit_callback(lambda offsets, error: outcomes.append((offsets, error)))
        consumer.subscribe([topic])
        first = poll_until(consumer, 4)
        assert [(r.offset, r.delivery_count) for r in first] == [(0, 1), (1, 1), (2, 1), (3, 1)]
        with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
            consumer.acknowledge(topic, ACCEPT, partition=0, offset=99)
        consumer.acknowledge(first[0], RELEASE)
        consumer.acknowledge(first[1], REJECT)
        consumer.acknowledge(first[2])              # ACCEPT
        with pytest.raises(IllegalStateError, match="not acknowledged"):
            consumer.poll(0.1)                      # offset 3 is still unsettled
        consumer.acknowledge(first[3], "accept")
        assert consumer.commit_sync() == {tp: None}
        assert consumer.acquisition_lock_timeout_ms and consumer.acquisition_lock_timeout_ms > 0
        again = poll_until(consumer, 1)
        assert [(r.offset, r.value, r.delivery_count) for r in again] == [(0, b"a", 2)]
        consumer.acknowledge(again[0])
        produce_values(bs, topic, [b"e"])
        later = poll_until(consumer, 1)             # the REJECTed offset 1 never comes back
        assert [(r.offset, r.delivery_count) for r in later] == [(4, 1)]
        consumer.acknowledge(later[0])
        consumer.commit_sync()
        assert all(error is None for _, error in outcomes) and outcomes
        assert {o for offsets, _ in outcomes for o in offsets[tp]} == {0, 1, 2, 3, 4}
        assert consumer.metrics()["acknowledgements-send-total"] >= 6
    wait_until(lambda: (o := offsets_of(bs, group, tp)) is not None and o.lag == 0, 30, "the group to be drained")


@pytest.mark.timeout(60)
def test_delivery_count_limit_archives_a_record_released_too_often(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group()
    configure_group(bs, group, delivery_limit=2)
    produce_values(bs, topic, [b"poison"])
    with ShareConsumer(settings(bs, group, share_acknowledgement_mode="explicit")) as consumer:
        consumer.subscribe([topic])
        for attempt in (1, 2):
            (r,) = poll_until(consumer, 1)
            assert (r.offset, r.delivery_count) == (0, attempt)
            consumer.acknowledge(r, RELEASE)
        consumer.commit_sync()
        produce_values(bs, topic, [b"next"])
        (r,) = poll_until(consumer, 1)
        assert (r.offset, r.value, r.delivery_count) == (1, b"next", 1)  # offset 0 was archived
        consumer.acknowledge(r)


@pytest.mark.timeout(60)
def test_lock_timeout_hands_unacknowledged_records_to_another_member(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group()
    configure_group(bs, group, lock_ms=2000)
    produce_values(bs, topic, [b"x0", b"x1", b"x2"], per_batch=3)
    explicit = settings(bs, group, share_acknowledgement_mode="explicit")
    stuck = ShareConsumer(explicit)
    other = ShareConsumer(explicit)
    try:
        stuck.subscribe([topic])
        started = time.monotonic()  # the records are acquired (and their 2 s locks start) after this
        held = poll_until(stuck, 3)            # acquired, never acknowledged in time
        assert stuck.acquisition_lock_timeout_ms == 2000
        other.subscribe([topic])
        again = poll_until(other, 3, timeout=30)
        # Only once the lock ran out (2 s after the acquisition; a little slack for the
        # broker's timer), however long the steps above took.
        assert time.monotonic() - started >= 1.5
        assert [(r.offset, r.delivery_count) for r in again] == [(0, 2), (1, 2), (2, 2)]
        # The stuck member's acknowledgements come too late: the records are another
        # member's now, and the broker refuses them.
        for r in held:
            stuck.acknowledge(r)
        result = stuck.commit_sync()
        assert isinstance(result[TopicPartition(topic, 0)], InvalidRecordStateError)
        for r in again:
            other.acknowledge(r)
        assert other.commit_sync() == {TopicPartition(topic, 0): None}
    finally:
        stuck.close(10)
        other.close(10)


_KILLED_MEMBER = textwrap.dedent("""
    import sys, time
    from kafkalite import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([sys.argv[3]])
    n = 0
    while n < 5:
        n += len(c.poll(0.5))
    print("HELD", n, flush=True)
    time.sleep(600)
""")


@pytest.mark.timeout(90)
def test_records_of_a_killed_member_are_redelivered(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group()
    configure_group(bs, group, lock_ms=2000)
    produce_values(bs, topic, [b"k%d" % i for i in range(5)], per_batch=5)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_MEMBER, bs, group, topic], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split() == ["HELD", "5"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        with ShareConsumer(settings(bs, group)) as consumer:
            consumer.subscribe([topic])
            got = poll_until(consumer, 5, timeout=45)
        assert sorted(r.offset for r in got) == [0, 1, 2, 3, 4]
        assert {r.delivery_count for r in got} == {2}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.timeout(60)
def test_close_accepts_in_implicit_mode_and_releases_in_explicit_mode(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group()
    configure_group(bs, group, lock_ms=60000)   # a lock that never runs out during the test
    produce_values(bs, topic, [b"i0", b"i1"], per_batch=2)
    tp = TopicPartition(topic, 0)
    with ShareConsumer(settings(bs, group)) as implicit:
        implicit.subscribe([topic])
        assert len(poll_until(implicit, 2)) == 2
        with pytest.raises(IllegalStateError, match="explicit"):
            implicit.acknowledge(topic, ACCEPT, partition=0, offset=0)
    # close() accepted them: the group has read everything
    wait_until(lambda: (o := offsets_of(bs, group, tp)) is not None and o.lag == 0, 30, "implicit acceptance")
    produce_values(bs, topic, [b"e0", b"e1"], per_batch=2)
    with ShareConsumer(settings(bs, group, share_acknowledgement_mode="explicit")) as explicit:
        explicit.subscribe([topic])
        held = poll_until(explicit, 2)
        assert [r.offset for r in held] == [2, 3]
    # close() without acknowledging ended the share session: the broker released them at
    # once (well before the 60 s lock), so the next member gets them as second deliveries.
    with ShareConsumer(settings(bs, group, share_acknowledgement_mode="explicit")) as next_member:
        next_member.subscribe([topic])
        again = poll_until(next_member, 2, timeout=30)
        assert [(r.offset, r.delivery_count) for r in again] == [(2, 2), (3, 2)]
        for r in again:
            next_member.acknowledge(r)


@pytest.mark.timeout(60)
def test_describe_offsets_show_progress_and_wakeup_interrupts_poll(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group()
    configure_group(bs, group)
    produce_values(bs, topic, [b"p%d" % i for i in range(10)], per_batch=10)
    tp = TopicPartition(topic, 0)
    with ShareConsumer(settings(bs, group, share_acknowledgement_mode="explicit")) as consumer:
        consumer.subscribe([topic])
        records = poll_until(consumer, 10)
        for r in records[:6]:
            consumer.acknowledge(r)
        for r in records[6:]:
            consumer.acknowledge(r, RELEASE)
        consumer.commit_sync()
        # Six accepted, four released: four records are still to be read (the persisted
        # start offset itself moves lazily, with the broker's share-state snapshots).
        progress = wait_until(lambda: (o := offsets_of(bs, group, tp)) is not None and o.lag == 4 and o,
                              30, "a lag of 4")
        assert 0 <= progress.start_offset <= 6
        assert consumer.member_id and consumer.assignment() == {tp} and consumer.subscription() == {topic}
        again = poll_until(consumer, 4)
        for r in again:
            consumer.acknowledge(r)
        consumer.commit_sync()
        wait_until(lambda: (o := offsets_of(bs, group, tp)) is not None and o.lag == 0, 30, "everything read")
        consumer.wakeup()
        with pytest.raises(WakeupError):
            consumer.poll(5.0)
        assert consumer.poll(0.2) == []
