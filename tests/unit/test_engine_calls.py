"""EngineCalls and LoopCalls: one contract for running a front's calls, on both fronts.

``_run(coro, timeout, what)`` returns the result, raises KafkaTimeoutError after
``timeout``, and WakeupError when ``wakeup()`` is called (before or during the call, from
any thread) unless ``wakeable=False``; a wakeup is used by one call only. No broker:
the coroutines here are plain asyncio sleeps.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from kafkalite.errors import ClientClosedError, KafkaTimeoutError, WakeupError
from kafkalite.net.engine import EngineCalls, EngineThread, LoopCalls


class _Front:
    _CLIENT = "the front"
    config = {"default.api.timeout.ms": 1000}
    _wakeup = False
    _closed = False

    def wakeup(self) -> None:
        self._wakeup = True
        self._wake_waiters()  # type: ignore[attr-defined]


class AsyncFront(_Front, LoopCalls):
    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()


class BlockingFront(_Front, EngineCalls):
    def __init__(self, engine: EngineThread) -> None:
        self._engine = engine
        self._event = threading.Event()


async def value_after(delay: float, value: Any) -> Any:
    await asyncio.sleep(delay)
    return value


async def test_run_returns_the_result_or_times_out_and_cancels_the_call() -> None:
    front = AsyncFront()
    assert await front._run(value_after(0.01, "v"), 5, "op") == "v"
    cancelled = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(KafkaTimeoutError, match=r"op did not complete within 0\.100s"):
        await front._run(forever(), 0.1, "op")
    await asyncio.wait_for(cancelled.wait(), 5)
    assert front._timeout(None) == 1.0 and front._timeout(2.5) == 2.5


async def test_wakeup_from_another_thread_interrupts_a_call_once() -> None:
    front = AsyncFront()
    timer = threading.Timer(0.2, front.wakeup)
    timer.start()
    started = time.monotonic()
    with pytest.raises(WakeupError, match="op was interrupted by wakeup"):
        await front._run(value_after(3600, None), 60, "op")
    assert time.monotonic() - started < 30
    assert await front._run(value_after(0.01, "next"), 5, "next") == "next"


async def test_a_wakeup_before_the_call_is_raised_by_it_and_its_stale_signal_ends_nothing_else() -> None:
    front = AsyncFront()
    front.wakeup()  # its signal to the loop is still pending when the first call raises
    with pytest.raises(WakeupError, match="first"):
        await front._run(value_after(3600, None), 60, "first")
    assert await front._run(value_after(0.2, "second"), 5, "second") == "second"


async def test_a_call_that_is_not_wakeable_runs_to_its_end_and_leaves_the_wakeup_pending() -> None:
    front = AsyncFront()
    front.wakeup()
    assert await front._run(value_after(0.05, "closed"), 5, "close", wakeable=False) == "closed"
    with pytest.raises(WakeupError):
        await front._run(value_after(0.05, None), 5, "after")


async def test_a_closed_front_refuses_and_closes_the_coroutine() -> None:
    front = AsyncFront()
    front._closed = True
    coro = value_after(0, None)
    with pytest.raises(ClientClosedError):
        await front._run(coro, 5, "op")
    assert coro.cr_frame is None  # closed, never awaited: no "never awaited" warning


def test_the_blocking_front_keeps_the_same_contract() -> None:
    engine = EngineThread(name="test-engine-calls").start()
    try:
        front = BlockingFront(engine)
        assert front._run(value_after(0.01, "v"), 5, "op") == "v"
        with pytest.raises(KafkaTimeoutError, match=r"op did not complete within 0\.100s"):
            front._run(value_after(3600, None), 0.1, "op")
        timer = threading.Timer(0.2, front.wakeup)
        timer.start()
        with pytest.raises(WakeupError, match="op was interrupted by wakeup"):
            front._run(value_after(3600, None), 60, "op")
        front.wakeup()
        assert front._run(value_after(0.05, "closed"), 5, "close", wakeable=False) == "closed"
        with pytest.raises(WakeupError):
            front._run(value_after(0.05, None), 5, "after")
        assert front._run(value_after(0.01, "next"), 5, "next") == "next"
        ran = threading.Event()
        front._call_soon(ran.set)
        assert ran.wait(5)
    finally:
        engine.stop()
