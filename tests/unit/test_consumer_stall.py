"""StallDetector: the stalled-consumer decisions, driven by hand with a fake clock."""

from __future__ import annotations

import pytest

from kafkalite.consumer.stall import MIN_CHECK_INTERVAL_S, PartitionView, StallDetector, StallKind
from kafkalite.errors import TopicAuthorizationError
from kafkalite.types import TopicPartition

A = TopicPartition("orders", 0)
B = TopicPartition("orders", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def detector(stall_ms: int = 10_000, max_poll_ms: int = 60_000) -> tuple[StallDetector, Clock]:
    clock = Clock()
    return StallDetector(stall_ms, max_poll_ms, clock=clock), clock


def test_records_waiting_without_progress_warns_once_then_again_after_recovery() -> None:
    d, clock = detector()
    views = {A: PartitionView(lag=5), B: PartitionView(lag=0)}
    d.polled()
    assert d.check(views) is None  # the stall starts being timed now
    clock.now += 9.9
    d.polled()
    assert d.check(views) is None
    clock.now += 0.2
    warning = d.check(views)
    assert warning is not None and dict(warning.partitions) == {A: "not fetched"}
    assert "orders-0" in warning.message and "orders-1" not in warning.message
    for _ in range(20):  # every later check, poll after poll: silent
        clock.now += 1
        d.polled()
        assert d.check(views) is None
    d.returned([A])  # records came out: the stall is over
    assert d.check(views) is None
    clock.now += 10.1
    assert d.check(views) is not None  # a new stall is reported again
    assert d.warnings == 2


def test_reasons_per_partition() -> None:
    d, clock = detector(stall_ms=1000)
    paused = TopicPartition("t", 0)
    rebalancing = TopicPartition("t", 1)
    failing = TopicPartition("t", 2)
    leaderless = TopicPartition("t", 3)
    d.fetch_failed(failing, TopicAuthorizationError("not authorized to read t", topic="t"))
    d.no_leader(leaderless)
    views = {paused: PartitionView(lag=3, paused=True),
             rebalancing: PartitionView(lag=3, awaiting_rebalance=True),
             failing: PartitionView(lag=None),     # never fetched: lag unknown, but failing
             leaderless: PartitionView(lag=None)}
    assert d.check(views) is None
    clock.now += 1.5
    d.polled()
    warning = d.check(views)
    assert warning is not None
    assert warning.partitions[paused] == "paused"
    assert warning.partitions[rebalancing] == "waiting for a rebalance"
    assert warning.partitions[failing].startswith("fetch errors (TopicAuthorizationError")
    assert warning.partitions[leaderless] == "no leader"
    assert "t-0: paused" in warning.message


def test_group_rebalancing_is_the_reason_for_every_waiting_partition() -> None:
    d, clock = detector(stall_ms=1000)
    d.check({A: PartitionView(lag=1)})
    clock.now += 2
    d.polled()
    warning = d.check({A: PartitionView(lag=1)}, rebalancing=True)
    assert warning is not None and warning.partitions[A] == "waiting for a rebalance"


def test_fetch_errors_clear_on_success() -> None:
    d, clock = detector(stall_ms=1000)
    d.fetch_failed(A, "LeaderNotAvailableError: no leader")
    clock.now += 0.5
    d.fetch_ok(A)
    clock.now += 5
    d.polled()
    assert d.check({A: PartitionView(lag=0)}) is None


def test_caught_up_partitions_never_stall() -> None:
    d, clock = detector(stall_ms=1000)
    for _ in range(10):
        clock.now += 1
        d.polled()
        assert d.check({A: PartitionView(lag=0), B: PartitionView(lag=None)}) is None
    assert d.warnings == 0


def test_stall_check_can_be_turned_off() -> None:
    d, clock = detector(stall_ms=0)
    d.check({A: PartitionView(lag=100)})
    clock.now += 3600
    d.polled()
    assert d.check({A: PartitionView(lag=100)}) is None


def test_slow_application_warns_once_per_missed_interval() -> None:
    d, clock = detector(stall_ms=0, max_poll_ms=5000)
    d.polled()
    clock.now += 4.9
    assert d.check({A: PartitionView(lag=0)}) is None
    clock.now += 0.2
    warning = d.check({A: PartitionView(lag=0)})
    assert warning is not None and warning.kind is StallKind.SLOW_APPLICATION
    assert "max.poll.interval.ms (5000 ms)" in warning.message and "orders-0" in warning.message
    for _ in range(5):
        clock.now += 10
        assert d.check({A: PartitionView(lag=0)}) is None
    d.polled()  # the application is back
    clock.now += 5.1
    assert d.check({A: PartitionView(lag=0)}) is not None
    assert d.warnings == 2


def test_waiting_inside_poll_is_not_slow() -> None:
    d, clock = detector(stall_ms=0, max_poll_ms=5000)
    d.polled()
    for _ in range(10):  # a long poll(timeout): the front end's wait loop keeps reporting
        clock.now += 1
        d.still_polling(clock.now)
        assert d.check({A: PartitionView()}) is None


def test_consumer_without_partitions_is_never_slow() -> None:
    d, clock = detector(stall_ms=1000, max_poll_ms=1000)
    clock.now += 3600
    assert d.check({}) is None


def test_forget_drops_partition_state() -> None:
    d, _clock = detector(stall_ms=1000)
    d.fetch_failed(A, "x")
    d.no_leader(B)
    d.returned([A])
    d.forget({A, B})
    assert not d.fetch_errors and not d.leaderless and not d.last_returned


def test_an_error_poll_raises_each_time_is_the_reason_until_records_flow() -> None:
    # The fetches succeed, yet poll() raises the partition's error on every call (a batch
    # that fails its CRC on every read): the warning names that error, not "not fetched".
    from kafkalite.errors import CorruptRecordsError

    d, clock = detector(stall_ms=1000)
    d.check({A: PartitionView(lag=5), B: PartitionView(lag=5)})
    d.fetch_ok(A)
    d.raised(A, CorruptRecordsError("corrupt data in orders-0 (CRC mismatch)", topic="orders", partition=0))
    clock.now += 1.5
    d.polled()
    warning = d.check({A: PartitionView(lag=5), B: PartitionView(lag=5)})
    assert warning is not None
    assert warning.partitions[A].startswith("poll() raised (CorruptRecordsError: corrupt data in orders-0")
    assert warning.partitions[B] == "not fetched"
    d.returned([A])  # records of A came out: the error is over
    assert d.check({A: PartitionView(lag=5)}) is None
    clock.now += 1.5
    warning = d.check({A: PartitionView(lag=5)})
    assert warning is not None and warning.partitions[A] == "not fetched"


# ---------------------------------------------------------------- when the watch checks (issue 27)


def test_an_idle_consumer_is_checked_rarely_not_every_second() -> None:
    d, clock = detector(stall_ms=60_000, max_poll_ms=300_000)
    d.polled()
    d.check({A: PartitionView(lag=0)})
    # nothing waits: the next moment anything could be declared is a quarter of stall.warning.ms
    assert d.next_check() == pytest.approx(clock.now + 15.0)
    d2, clock2 = detector(stall_ms=0, max_poll_ms=300_000)
    d2.polled()
    d2.check({A: PartitionView(lag=0)})
    assert d2.next_check() == pytest.approx(clock2.now + 300.0)  # records-waiting off: only max.poll.interval.ms


def test_slow_application_is_checked_when_the_interval_ends() -> None:
    d, clock = detector(stall_ms=0, max_poll_ms=5000)
    d.polled()
    clock.now += 2
    assert d.next_check() == pytest.approx(clock.now + 3)  # the poll ended 2 s ago: 3 s left of its interval
    clock.now += 3.001
    assert d.check({A: PartitionView()}) is not None  # declared at the moment the check was due
    # reported: the next check is a whole interval away (a poll() then starts a new one)
    assert d.next_check() == pytest.approx(clock.now + 5)


def test_a_waiting_partition_is_checked_when_its_stall_would_be_due() -> None:
    d, clock = detector(stall_ms=8000, max_poll_ms=60_000)
    d.polled()
    assert d.check({A: PartitionView(lag=5)}) is None  # first seen waiting now
    clock.now += 3
    d.polled()
    assert d.check({A: PartitionView(lag=5)}) is None
    assert d.next_check() == pytest.approx(clock.now + 2)  # the cadence (8 s / 4) comes before the stall (5 s away)
    clock.now += 4.5
    assert d.next_check() == pytest.approx(clock.now + 0.5)  # now the stall's own moment is the earliest
    clock.now += 0.5
    warning = d.check({A: PartitionView(lag=5)})
    assert warning is not None and A in warning.partitions
    # reported: its moment is not looked at again (no 10 Hz checks while it lasts)
    assert d.next_check() == pytest.approx(clock.now + 2)


def test_fetch_errors_are_checked_when_they_have_lasted_long_enough() -> None:
    d, clock = detector(stall_ms=8000, max_poll_ms=60_000)
    d.polled()
    d.fetch_failed(A, "TopicAuthorizationError")
    clock.now += 7
    assert d.next_check() == pytest.approx(clock.now + 1)  # first failure + stall.warning.ms


def test_moments_the_last_check_passed_do_not_make_the_watch_spin() -> None:
    d, clock = detector(stall_ms=1000, max_poll_ms=1000)
    clock.now += 3600
    assert d.check({}) is None  # no partitions: not slow, though its interval is long over
    assert d.next_check() == pytest.approx(clock.now + 0.25)
    d2, clock2 = detector(stall_ms=0, max_poll_ms=1000)
    clock2.now += 3600
    d2.check({})
    assert d2.next_check() == pytest.approx(clock2.now + 1.0)


def test_never_sooner_than_the_minimum_spacing() -> None:
    d, clock = detector(stall_ms=100, max_poll_ms=60_000)
    assert d.next_check() == pytest.approx(clock.now + MIN_CHECK_INTERVAL_S)
