"""Ctrl-C in tests, sent when the call under test is really waiting.

A timer that interrupts "after 0.3 s" hits whatever the main thread is doing by then: on a
busy machine that may be the code before the blocking call. These helpers wait for the
observable condition instead (a metric, or the main thread blocked inside a function).
"""

from __future__ import annotations

import _thread
import sys
import threading
import time
from collections.abc import Callable


def interrupt_main_when(condition: Callable[[], bool], timeout: float = 60.0) -> threading.Thread:
    """Ctrl-C (KeyboardInterrupt in the main thread) as soon as ``condition()`` holds, so
    a test of an interruptible wait interrupts the wait itself and never the code before
    it. Gives up after ``timeout`` seconds (the call under test then fails on its own)."""

    def run() -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        _thread.interrupt_main()

    thread = threading.Thread(target=run, name="interrupt-main-when", daemon=True)
    thread.start()
    return thread


def main_thread_waits_in(function: str) -> Callable[[], bool]:
    """A condition for :func:`interrupt_main_when`: the main thread is blocked in a
    ``threading`` wait somewhere inside a call of ``function`` (e.g. ``"flush"``)."""
    main = threading.main_thread().ident

    def waiting() -> bool:
        frame = sys._current_frames().get(main or 0)
        if frame is None or not frame.f_code.co_filename.endswith("threading.py"):
            return False
        while frame is not None:
            if frame.f_code.co_name == function:
                return True
            frame = frame.f_back
        return False

    return waiting
