"""The engine loop's timers: never early, sub-millisecond waits, sockets still end a wait."""

from __future__ import annotations

import asyncio
import ctypes
import select
import selectors
import socket
import sys
import threading
import time

import pytest

from kafkalite.net import timers
from kafkalite.net.engine import EngineThread
from kafkalite.net.timers import new_engine_loop, tighten_timer_slack

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="epoll and prctl are Linux's")


@linux_only
def test_engine_threads_get_the_precise_loop() -> None:
    engine = EngineThread(name="timers-test").start()
    try:
        assert isinstance(engine.loop._selector, timers.PreciseEpollSelector)  # type: ignore[attr-defined]
    finally:
        engine.stop()


@linux_only
def test_timers_never_fire_early() -> None:
    loop = new_engine_loop()
    early: list[tuple[float, float]] = []

    async def main() -> None:
        for delay in (0.0002, 0.0009, 0.001, 0.0043, 0.005, 0.0107, 0.02):
            for _ in range(5):
                start = time.monotonic()
                await asyncio.sleep(delay)
                took = time.monotonic() - start
                if took < delay:
                    early.append((delay, took))

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert early == []


def _first_sleep_under(loop: asyncio.AbstractEventLoop, delay: float, bound: float, deadline_s: float) -> list[float]:
    """Sleep ``delay`` on ``loop`` until one sleep takes less than ``bound`` or the deadline
    passes; every sleep's duration, in order."""
    took: list[float] = []

    async def main() -> None:
        give_up = time.monotonic() + deadline_s
        while time.monotonic() < give_up and not (took and took[-1] < bound):
            start = time.monotonic()
            await asyncio.sleep(delay)
            took.append(time.monotonic() - start)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return took


@linux_only
def test_a_sub_millisecond_timer_is_not_rounded_up_to_a_millisecond() -> None:
    # asyncio's own epoll loop waits at least 1 ms for any timeout (epoll_wait takes ms):
    # a 0.3 ms sleep takes >= 1 ms there, every time, so a single 0.3 ms sleep under
    # 0.95 ms shows the rounding is gone. A busy machine's scheduling delays only make
    # some sleeps late (a median over 31 sleeps failed at load 20), so the test waits,
    # with a deadline, for one that was not.
    took = _first_sleep_under(new_engine_loop(), 0.0003, 0.00095, deadline_s=20.0)
    assert took[-1] < 0.00095, (len(took), sorted(took)[:5])
    assert min(took) >= 0.0003  # and never early
    # (The rounding itself, on asyncio's selector, is the control of the next test: a
    # loop's sleep can also end early when anything else wakes its selector.)


@linux_only
def test_timeouts_whose_milliseconds_epoll_would_round_up_are_not_late() -> None:
    # 9 * 1e-3 == 0.009000000000000001: handed to epoll as is, a 9.01 ms wait took 10.
    # The rounding made every wait a millisecond late, so one wait less than 0.5 ms late
    # shows it is gone, while a busy machine's scheduling delays (CI at load 20: a median
    # of 1.2 ms, and once all of 9 waits) only make some waits late: the test waits, with
    # a deadline, for one that was not.
    selector = timers.PreciseEpollSelector()
    try:
        for timeout in (0.00901, 0.01301, 0.01801):
            late: list[float] = []
            give_up = time.monotonic() + 20.0
            while time.monotonic() < give_up and not (late and late[-1] < 0.0005):
                start = time.monotonic()
                assert selector.select(timeout) == []
                late.append(time.monotonic() - start - timeout)
            assert late[-1] < 0.0005, (timeout, len(late), sorted(late)[:5])
            assert min(late) >= 0.0, (timeout, late)  # and never early
    finally:
        selector.close()
    # The control: asyncio's own epoll selector is a millisecond late on each of them.
    plain = selectors.EpollSelector()
    try:
        for timeout in (0.00901, 0.01301, 0.01801):
            start = time.monotonic()
            assert plain.select(timeout) == []
            assert time.monotonic() - start - timeout >= 0.0009, timeout
    finally:
        plain.close()


@linux_only
@pytest.mark.parametrize("timeout", [0.0005, 0.0105])
def test_a_ready_socket_ends_the_wait_at_once(timeout: float) -> None:
    a, b = socket.socketpair()
    selector = timers.PreciseEpollSelector()
    try:
        selector.register(a, selectors.EVENT_READ, "reader")
        b.send(b"x")
        ready = selector.select(timeout)
        assert [(key.data, events) for key, events in ready] == [("reader", selectors.EVENT_READ)]
    finally:
        selector.close()
        a.close()
        b.close()


@linux_only
def test_a_socket_ready_during_the_sub_millisecond_part_is_reported() -> None:
    a, b = socket.socketpair()
    selector = timers.PreciseEpollSelector()
    writer = threading.Timer(0.0012, b.send, args=(b"x",))
    try:
        selector.register(a, selectors.EVENT_READ, "reader")
        writer.start()
        deadline = time.monotonic() + 10.0
        ready: list[tuple[selectors.SelectorKey, int]] = []
        while not ready and time.monotonic() < deadline:
            ready = selector.select(0.0019)  # 1 ms by epoll, 0.9 ms by select(2)
        assert [key.data for key, _ in ready] == ["reader"]
    finally:
        writer.join()
        selector.close()
        a.close()
        b.close()


@linux_only
def test_too_high_a_descriptor_for_select_waits_as_asyncio_would(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise ValueError("filedescriptor out of range in select()")

    monkeypatch.setattr("kafkalite.net.timers.select.select", refuse)
    selector = timers.PreciseEpollSelector()
    try:
        start = time.monotonic()
        assert selector.select(0.0015) == []
        assert time.monotonic() - start >= 0.0015
    finally:
        selector.close()


@linux_only
def test_tighten_timer_slack_is_per_thread() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    pr_get_timerslack = 30
    seen: list[int] = []

    def in_thread() -> None:
        assert tighten_timer_slack()
        seen.append(int(libc.prctl(pr_get_timerslack, 0, 0, 0, 0)))

    before = int(libc.prctl(pr_get_timerslack, 0, 0, 0, 0))
    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert seen == [1000]
    assert int(libc.prctl(pr_get_timerslack, 0, 0, 0, 0)) == before


@linux_only
def test_long_timeouts_are_one_epoll_wait_not_two(monkeypatch: pytest.MonkeyPatch) -> None:
    # A heartbeat seconds away need not be exact to the microsecond: one wait (one wake-up
    # of the thread), as asyncio's own selector does; the precise second wait is for
    # linger.ms-sized timeouts only (issue 27).
    selects: list[float] = []
    real_select = select.select

    def counting(r: list[int], w: list[int], x: list[int], timeout: float) -> object:
        selects.append(timeout)
        return real_select(r, w, x, timeout)

    monkeypatch.setattr(timers.select, "select", counting)
    selector = timers.PreciseEpollSelector()
    try:
        start = time.monotonic()
        assert selector.select(timers.PRECISE_BELOW_S) == []
        assert time.monotonic() - start >= timers.PRECISE_BELOW_S  # never early
        assert selects == []
        # A linger-sized timeout still gets its exact remainder: the epoll part is made to
        # return at once here, so that the remainder is there to wait whatever the load
        # (a real epoll wait that overshot on a busy machine leaves nothing to wait).
        epoll_waits: list[float | None] = []

        def epoll_returning_at_once(self: object, timeout: float | None = None) -> list[object]:
            epoll_waits.append(timeout)
            return []

        monkeypatch.setattr(selectors.EpollSelector, "select", epoll_returning_at_once)
        assert selector.select(0.0043) == []
        assert epoll_waits[0] == pytest.approx(0.0025)  # the whole milliseconds, less one
        assert len(selects) == 1
        assert 0.0 < selects[0] <= 0.0043
    finally:
        selector.close()
