"""The blocking consumer against the real broker: fetching, positions, offsets, commits,
bad input, timeouts."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time

import pytest

from kafkalite import Consumer, OffsetAndMetadata, TopicPartition
from kafkalite.errors import (
    CommitFailedError,
    IllegalStateError,
    InvalidGroupIdError,
    InvalidRegularExpressionError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    WakeupError,
)
from kafkalite.protocol import compression
from tests.integration.consumer_support import consume_n, produce, wait_until

pytestmark = pytest.mark.broker


def consumer(bootstrap: str, **settings: object) -> Consumer:
    conf = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}
    conf.update({k.replace("_", "."): v for k, v in settings.items()})
    return Consumer(conf)


def test_assign_poll_in_order_with_positions_and_offsets(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    produce(kafka_broker.bootstrap, topic, count=1200, batch_size=100)
    tp = TopicPartition(topic, 0)
    with consumer(kafka_broker.bootstrap, max_poll_records=250) as c:
        c.assign([tp])
        assert c.assignment() == {tp}
        records = []
        while len(records) < 1200:
            batch = c.poll(60)  # returns as soon as records arrive
            assert 0 < len(batch) <= 250
            assert batch.partitions() == {tp}
            records.extend(batch)
        assert [r.offset for r in records] == list(range(1200))
        assert records[7].key == b"k7" and records[7].value.startswith(b"v7")
        assert records[0].topic == topic and records[0].partition == 0 and records[0].timestamp > 0
        assert c.position(tp) == 1200
        assert c.end_offsets([tp]) == {tp: 1200} and c.beginning_offsets([tp]) == {tp: 0}
        wait_until(lambda: c.lag(tp) == 0, 30, what="lag 0")
        metrics = {m.name: v for m, v in c.metrics().items()}
        assert metrics["records-consumed-total"] == 1200
        assert metrics["records-lag-max"] >= 0 and "fetch-latency-avg" in metrics
        assert c.poll(0.2) == []


def test_seek_seek_to_end_and_offsets_for_times(kafka_broker, topic_factory) -> None:
    # Records stamped in 1970 are past any time retention: without retention.ms -1 the
    # broker's periodic retention check (every 5 minutes in a long session) may delete
    # them mid-test, and offsets_for_times then finds nothing (seen once in CI).
    topic = topic_factory(partitions=1, configs={"retention.ms": "-1"})
    produce(kafka_broker.bootstrap, topic, count=100, batch_size=10, timestamp=1_000_000)
    produce(kafka_broker.bootstrap, topic, count=50, batch_size=10, timestamp=2_000_000)
    tp = TopicPartition(topic, 0)
    with consumer(kafka_broker.bootstrap) as c:
        c.assign([tp])
        c.seek(tp, 42)
        assert consume_n(c, 1)[0].offset == 42
        c.seek_to_end([tp])
        assert c.position(tp) == 150
        c.seek_to_beginning()
        assert c.position(tp) == 0
        found = c.offsets_for_times({tp: 1_500_000})
        assert found[tp] is not None and found[tp].offset == 100 and found[tp].timestamp == 2_000_000
        assert c.offsets_for_times({tp: 3_000_000})[tp] is None
        c.seek(tp, OffsetAndMetadata(found[tp].offset))
        assert consume_n(c, 1)[0].offset == 100


def test_pause_and_resume(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    produce(kafka_broker.bootstrap, topic, count=20, partition=0)
    produce(kafka_broker.bootstrap, topic, count=20, partition=1)
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with consumer(kafka_broker.bootstrap) as c:
        c.assign([p0, p1])
        c.pause([p1])
        assert c.paused() == {p1}
        got = consume_n(c, 20)
        assert {r.partition for r in got} == {0}
        assert c.poll(0.5) == []
        c.resume([p1])
        got = consume_n(c, 20)
        assert {r.partition for r in got} == {1}


@pytest.mark.parametrize("codec", [compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD])
def test_compressed_batches(kafka_broker, topic_factory, codec: int) -> None:
    topic = topic_factory(partitions=1)
    produce(kafka_broker.bootstrap, topic, count=300, batch_size=100, codec=codec, value_size=200)
    tp = TopicPartition(topic, 0)
    with consumer(kafka_broker.bootstrap) as c:
        c.assign([tp])
        c.seek(tp, 150)  # starts inside a compressed batch
        got = consume_n(c, 150)
        assert [r.offset for r in got] == list(range(150, 300))


def test_record_larger_than_fetch_limits_is_returned(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1, configs={"max.message.bytes": str(2 * 1024 * 1024)})
    big = b"x" * (600 * 1024)
    produce(kafka_broker.bootstrap, topic, [(b"small", b"1"), (b"big", big), (b"small", b"2")], batch_size=1)
    tp = TopicPartition(topic, 0)
    with consumer(kafka_broker.bootstrap, max_partition_fetch_bytes=1024, fetch_max_bytes=2048) as c:
        c.assign([tp])
        got = consume_n(c, 3, timeout=30)
        assert [r.value for r in got] == [b"1", big, b"2"]


def test_auto_offset_reset_none_and_out_of_range(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    produce(kafka_broker.bootstrap, topic, count=10)
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with consumer(kafka_broker.bootstrap, auto_offset_reset="none", group_id=f"g-{topic}") as c:
        c.assign([p0, p1])
        with pytest.raises(NoOffsetForPartitionError) as info:
            for _ in range(100):
                c.poll(0.2)
        assert set(info.value.partitions) == {p0, p1} and topic in str(info.value)
    with consumer(kafka_broker.bootstrap, auto_offset_reset="none") as c:
        c.assign([p0])
        c.seek(p0, 5000)
        with pytest.raises(OffsetOutOfRangeError) as oor:
            for _ in range(100):
                c.poll(0.2)
        assert oor.value.topic == topic and oor.value.partition == 0 and "5000" in str(oor.value)
        c.seek(p0, 3)
        assert consume_n(c, 1)[0].offset == 3
    with consumer(kafka_broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([p0])
        c.seek(p0, 5000)  # out of range: reset to earliest
        assert consume_n(c, 1)[0].offset == 0


def test_assign_then_seek_with_reset_none_never_reports_no_offset(kafka_broker, topic_factory) -> None:
    """assign() then seek() at once: the engine may look for a position in between, but
    poll() judges by the state when it runs (as Java's, which looks inside poll()): the
    partition has a position, so no NoOffsetForPartitionError, records from the seek."""
    topic = topic_factory(partitions=1)
    produce(kafka_broker.bootstrap, topic, count=5)
    tp = TopicPartition(topic, 0)
    for attempt in range(8):
        with consumer(kafka_broker.bootstrap, auto_offset_reset="none", group_id=f"g-{topic}-{attempt}") as c:
            c.assign([tp])
            if attempt % 2:  # the engine has found no committed offset (its error is queued) first
                wait_until(lambda: c._core.errors, 30, what="the engine to find no committed offset")
            c.seek(tp, 2)
            assert consume_n(c, 1)[0].offset == 2


def test_a_seek_while_the_committed_offset_lookup_runs_is_not_undone_by_the_reset(kafka_broker,
                                                                                   topic_factory) -> None:
    """assign() with a group.id starts a committed-offset lookup; a seek() before its
    answer is handled gives the partition its position. The group has no committed
    offset, and the auto.offset.reset (latest) that follows from that answer must not
    replace the seek: it did (found by CI under load), and the consumer silently started
    at the log end instead of the offset sought. The answer is held until after the seek."""
    topic = topic_factory(partitions=1)
    produce(kafka_broker.bootstrap, topic, count=5)
    tp = TopicPartition(topic, 0)
    with consumer(kafka_broker.bootstrap, auto_offset_reset="latest", group_id=f"g-{topic}") as c:
        core = c._core
        lookup = core.offsets.fetch_committed
        answered, release = threading.Event(), threading.Event()

        async def held(*args, **kwargs):
            committed = await lookup(*args, **kwargs)
            answered.set()
            while not release.is_set():
                await asyncio.sleep(0.01)
            return committed

        core.offsets.fetch_committed = held
        c.assign([tp])
        assert answered.wait(30), "the committed-offset lookup did not finish"
        c.seek(tp, 2)
        release.set()
        records = consume_n(c, 1, timeout=30)
        assert [r.offset for r in records] == list(range(2, 2 + len(records)))
        assert not core.subs.partitions_needing_reset()
        assert c.position(tp) == records[-1].offset + 1


def test_a_reset_whose_lookup_came_back_without_an_offset_is_tried_again(kafka_broker, topic_factory) -> None:
    """The offset lookup of auto.offset.reset can come back without an offset for a
    partition (a partition error; the network-fault tests corrupt such answers); the
    reset must be tried again, as Java's poll() does, not left pending for good."""
    topic = topic_factory(partitions=1)
    produce(kafka_broker.bootstrap, topic, count=3)
    tp = TopicPartition(topic, 0)
    with consumer(kafka_broker.bootstrap) as c:
        core = c._core
        lookup = core.offsets.list_offsets
        answers: list[object] = []

        async def first_ones_without_offset(stamps, *args, **kwargs):
            listed = await lookup(stamps, *args, **kwargs)
            answers.append(listed)
            return {p: None for p in listed} if len(answers) <= 5 else listed

        core.offsets.list_offsets = first_ones_without_offset
        c.assign([tp])
        assert [r.offset for r in consume_n(c, 3, timeout=30)] == [0, 1, 2]
        assert len(answers) >= 6


def test_bad_input_is_a_typed_error_naming_the_problem(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    with consumer(kafka_broker.bootstrap) as c:
        with pytest.raises(InvalidGroupIdError, match="group.id"):
            c.subscribe([topic])
        with pytest.raises(IllegalStateError, match="not subscribed"):
            c.poll(0)
        c.assign([TopicPartition(topic, 0)])
        with pytest.raises(IllegalStateError, match="not assigned"):
            c.seek(TopicPartition(topic, 5), 1)
        with pytest.raises(InvalidGroupIdError):
            c.commit({TopicPartition(topic, 0): 1})
    with consumer(kafka_broker.bootstrap, group_id=f"g-{topic}") as c:
        c.assign([TopicPartition(topic, 0)])
        with pytest.raises(IllegalStateError, match="mutually exclusive"):
            c.subscribe([topic])
        c.unsubscribe()
        with pytest.raises(InvalidRegularExpressionError,
                           match=r"invalid subscription pattern 'bad\[': unterminated character set"):
            c.subscribe(pattern="bad[")


def test_poll_wakeup_and_timeouts_with_no_broker() -> None:
    """Each call honours its own bound with nothing to answer it. The bounds are the
    point; their upper ends are generous (a busy machine) yet far below what a call
    that ignored them would take: 60 s (default.api.timeout.ms) or forever."""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "default.api.timeout.ms": 60_000})
    try:
        tp = TopicPartition("nowhere", 0)
        c.assign([tp])
        started = time.monotonic()
        assert c.poll(0.5) == []
        assert 0.4 < time.monotonic() - started < 10  # waited its timeout, not forever
        started = time.monotonic()
        # wakeup() once poll() is inside its wait loop (it stamps last_poll on each round).
        threading.Thread(target=lambda: (wait_until(lambda: c._core.last_poll > started, 30), c.wakeup()),
                         daemon=True).start()
        with pytest.raises(WakeupError):
            c.poll(30)
        assert time.monotonic() - started < 10  # well before the poll's 30 s
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError):
            c.end_offsets([tp], timeout=0.5)
        assert time.monotonic() - started < 10  # its own timeout, not default.api.timeout.ms
    finally:
        started = time.monotonic()
        c.close(timeout=1.0)
        assert time.monotonic() - started < 10  # close(timeout) never hangs past its timeout


def test_commits_are_the_next_offset_and_async_never_goes_backwards(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    produce(kafka_broker.bootstrap, topic, count=50)
    tp = TopicPartition(topic, 0)
    group = f"g-{topic}"
    with consumer(kafka_broker.bootstrap, group_id=group, enable_auto_commit=False) as c:
        c.assign([tp])
        got = consume_n(c, 50)
        c.commit()
        assert c.committed([tp]) == {tp: OffsetAndMetadata(got[-1].offset + 1, "", 0)}
        results: list[tuple[int, object, int]] = []
        poll_thread = threading.get_ident()
        for offset in range(1, 41):
            c.commit_async({tp: OffsetAndMetadata(offset, f"m{offset}")},
                           callback=lambda offs, err: results.append((offs[tp].offset, err, threading.get_ident())))
        wait_until(lambda: (c.poll(0.05), len(results) == 40)[1], 30, what="40 commit callbacks")
        assert [r[0] for r in results] == list(range(1, 41)) and all(r[1] is None for r in results)
        assert {r[2] for r in results} == {poll_thread}  # callbacks run in the polling thread
        assert c.committed([tp])[tp].offset == 40 and c.committed([tp])[tp].metadata == "m40"
    with consumer(kafka_broker.bootstrap, group_id=group) as c:
        c.assign([tp])
        assert consume_n(c, 1)[0].offset == 40  # resumes at the committed (next) offset


def test_auto_commit_commits_what_earlier_polls_returned(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    produce(kafka_broker.bootstrap, topic, count=30)
    tp = TopicPartition(topic, 0)
    group = f"g-{topic}"
    with consumer(kafka_broker.bootstrap, group_id=group, auto_commit_interval_ms=0, max_poll_records=10) as c:
        c.assign([tp])
        first = consume_n(c, 10)
        assert first[-1].offset == 9
        # An absence (no commit in the background): only a wait can give a wrong background
        # commit the chance to show, and it can never make the test fail spuriously.
        time.sleep(0.5)
        assert c.committed([tp])[tp] is None  # nothing committed before the next poll
        c.poll(0.5)  # commits the positions of what the previous polls returned
        wait_until(lambda: (c.committed([tp])[tp] or OffsetAndMetadata(-1)).offset >= 10, 30, what="auto-commit")
    with consumer(kafka_broker.bootstrap, group_id=group, enable_auto_commit=False) as c:
        # leaving the with block committed everything the first consumer returned
        c.assign([tp])
        assert c.committed([tp])[tp].offset == c.position(tp)


def test_auto_commit_writes_a_position_once_not_every_interval(kafka_broker, topic_factory) -> None:
    # librdkafka's rule (issue 27): an idle consumer sends no OffsetCommit per interval for
    # positions it committed already; a new position, or another commit, is written again.
    topic = topic_factory(partitions=1)
    produce(kafka_broker.bootstrap, topic, count=5)
    tp = TopicPartition(topic, 0)
    with consumer(kafka_broker.bootstrap, group_id=f"g-{topic}", auto_commit_interval_ms=50) as c:
        c.assign([tp])
        consume_n(c, 5)

        def commits() -> float:
            return c.metrics()["commit-total"]

        wait_until(lambda: (c.poll(0.1), (c.committed([tp])[tp] or OffsetAndMetadata(-1)).offset == 5)[1], 30,
                   what="the auto-commit of offset 5")
        settled = commits()
        for _ in range(10):  # ten polls, each at least one interval after the last
            c.poll(0.06)
        assert commits() == settled
        c.commit({tp: 3})  # someone else's commit: the position is written again
        wait_until(lambda: (c.poll(0.06), (c.committed([tp])[tp] or OffsetAndMetadata(-1)).offset == 5)[1], 30,
                   what="the position written again after another commit")
        produce(kafka_broker.bootstrap, topic, count=1)
        consume_n(c, 1)
        wait_until(lambda: (c.poll(0.06), (c.committed([tp])[tp] or OffsetAndMetadata(-1)).offset == 6)[1], 30,
                   what="the new position auto-committed")


def test_commit_of_a_partition_not_owned_fails_clearly(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    produce(kafka_broker.bootstrap, topic, count=5)
    with consumer(kafka_broker.bootstrap, group_id=f"g-{topic}") as c:
        c.subscribe([topic])
        wait_until(lambda: (c.poll(0.2), len(c.assignment()) == 2)[1], 60, what="assignment")
        other = TopicPartition(topic + "-other", 0)
        with pytest.raises(CommitFailedError, match="not assigned"):
            c.commit({other: OffsetAndMetadata(1)})


def test_consumer_groups_tool_sees_our_commits_and_we_resume_where_it_resets(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    produce(kafka_broker.bootstrap, topic, count=40, partition=0)
    produce(kafka_broker.bootstrap, topic, count=40, partition=1)
    group = f"g-{topic}"
    with consumer(kafka_broker.bootstrap, group_id=group, enable_auto_commit=False) as c:
        c.subscribe([topic])
        consume_n(c, 80, timeout=60)
        c.commit({TopicPartition(topic, 0): 17, TopicPartition(topic, 1): 33})
    described = kafka_broker.run_tool("kafka-consumer-groups", [
        "--bootstrap-server", kafka_broker.bootstrap, "--describe", "--group", group], check=True).stdout
    rows = {}
    for line in described.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1] == topic:
            rows[int(parts[2])] = int(parts[3])
    assert rows == {0: 17, 1: 33}
    kafka_broker.run_tool("kafka-consumer-groups", [
        "--bootstrap-server", kafka_broker.bootstrap, "--group", group, "--topic", topic,
        "--reset-offsets", "--to-offset", "5", "--execute"], check=True)
    with consumer(kafka_broker.bootstrap, group_id=group) as c:
        c.subscribe([topic])
        got = consume_n(c, 70, timeout=60)
        firsts = {}
        for r in got:
            firsts.setdefault(r.partition, r.offset)
        assert firsts == {0: 5, 1: 5}


def test_pattern_subscription_picks_up_new_topics(kafka_broker, topic_factory) -> None:
    prefix = re.sub(r"[^a-z0-9]", "", topic_factory(partitions=1)[:20]) + "pat"
    first = topic_factory(partitions=1, name=f"{prefix}-a")
    produce(kafka_broker.bootstrap, first, count=3)
    with consumer(kafka_broker.bootstrap, group_id=f"g-{prefix}", metadata_max_age_ms=1000) as c:
        c.subscribe(pattern=f"{prefix}-.*")
        got = consume_n(c, 3, timeout=60)
        assert {r.topic for r in got} == {first}
        second = topic_factory(partitions=1, name=f"{prefix}-b")
        produce(kafka_broker.bootstrap, second, count=4)
        got = consume_n(c, 4, timeout=60)
        assert {r.topic for r in got} == {second}
        assert c.subscription() == {first, second}


_CTRL_C_SCRIPT = """
import sys, threading, time
from kafkalite import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1]})
c.assign([TopicPartition(sys.argv[2], 0)])
c.poll(0.5)
entered = time.monotonic()

def announce():  # "ready" once poll(None) runs: it stamps last_poll on entry and each round
    while not c._core.last_poll > entered:
        time.sleep(0.01)
    print("ready", flush=True)

threading.Thread(target=announce, daemon=True).start()
try:
    c.poll(None)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    assert c.poll(0.1) == []  # still usable
    c.close(2)
    print("closed", flush=True)
"""


def test_ctrl_c_interrupts_a_blocking_poll_promptly(kafka_broker, topic_factory) -> None:
    import os
    import signal
    import subprocess
    import sys

    topic = topic_factory(partitions=1)
    proc = subprocess.Popen([sys.executable, "-c", _CTRL_C_SCRIPT, kafka_broker.bootstrap, topic],
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"  # the poll(None) is running
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline().strip() == "interrupted"
        # Prompt is the point: the signal ends the wait at once (expected well under 0.1 s;
        # generous for a busy machine), where an uninterruptible poll(None) never returns.
        assert time.monotonic() - sent < 5.0
        assert proc.stdout.readline().strip() == "closed"
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
