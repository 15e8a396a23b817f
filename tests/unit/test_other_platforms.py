"""The paths kafkalite takes on systems without Linux's epoll, prctl or fcntl (macOS,
Windows, the BSDs), run here on Linux by switching those off (docs/platforms.md).

The produce/consume round trip on those paths, against a real broker, is
tests/integration/test_other_platforms.py."""

from __future__ import annotations

import asyncio
import ctypes
import selectors
import sys
import threading
import time
from pathlib import Path

import pytest

from kafkalite.net import timers
from kafkalite.net.engine import EngineThread
from kafkalite.testing import distribution

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="switches Linux's facilities off")


@pytest.fixture
def no_epoll_no_prctl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timers, "HAVE_EPOLL", False)
    monkeypatch.setattr(timers, "HAVE_PRCTL", False)


@linux_only
def test_without_epoll_the_engine_runs_the_policys_own_loop(no_epoll_no_prctl: None) -> None:
    engine = EngineThread(name="no-epoll").start()
    try:
        selector = engine.loop._selector  # type: ignore[attr-defined]
        assert not isinstance(selector, getattr(timers, "PreciseEpollSelector", ()))
        assert type(engine.loop) is type(asyncio.new_event_loop())

        async def nap() -> float:
            start = time.monotonic()
            await asyncio.sleep(0.005)
            return time.monotonic() - start

        assert engine.run(nap(), timeout=10) >= 0.005  # timers work, never early
    finally:
        engine.stop()


@linux_only
def test_without_prctl_the_timer_slack_is_left_as_it_is(no_epoll_no_prctl: None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    pr_get_timerslack = 30
    seen: list[tuple[bool, int]] = []

    def in_thread() -> None:
        before = int(libc.prctl(pr_get_timerslack, 0, 0, 0, 0))
        seen.append((timers.tighten_timer_slack(), before - int(libc.prctl(pr_get_timerslack, 0, 0, 0, 0))))

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert seen == [(False, 0)]


class _SelectLoopPolicy(asyncio.DefaultEventLoopPolicy):
    """Loops on select(2): what asyncio runs where neither epoll nor kqueue exists."""

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.SelectorEventLoop(selectors.SelectSelector())


def test_an_application_policy_keeps_its_loop_for_the_engine() -> None:
    # uvloop's policy, or the plain select(2) loop: the engine uses the policy's loop,
    # on every system (new_engine_loop's contract).
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(_SelectLoopPolicy())
    try:
        loop = timers.new_engine_loop()
        try:
            assert isinstance(loop._selector, selectors.SelectSelector)  # type: ignore[attr-defined]
        finally:
            loop.close()
    finally:
        asyncio.set_event_loop_policy(previous)


def test_without_fcntl_the_download_lock_is_skipped_not_an_error(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Windows has no fcntl: concurrent first downloads of the same jar may both fetch it
    # (each verifies its checksum and renames into place atomically); nothing fails.
    monkeypatch.setattr(distribution, "fcntl", None)
    entered = []
    with distribution.file_lock(tmp_path / ".lock"):
        entered.append(True)
    assert entered == [True] and (tmp_path / ".lock").exists()
