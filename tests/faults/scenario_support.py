"""What the fault scenarios share: their scale, their figures, and the faults they inject.

Every scenario runs on the session's 3-node cluster (``kafka_cluster``: replication 3,
``min.insync.replicas`` 2, ``acks=all``), bounded in time, and prints one line of
figures (records, faults, lost, duplicated, reordered, longest stall, recovery). The
scale comes from ``KAFKALITE_FAULT_SCALE``: ``short`` (the default, what CI runs) or
``full`` (the documented long run: ``python -m tests.faults.run --full``). With
``KAFKALITE_FAULT_RESULTS=<file>`` each scenario also appends its figures there as a
JSON line (the runner builds the README table from them).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from kafkalite.testing.checker import CheckReport

FULL = os.environ.get("KAFKALITE_FAULT_SCALE", "short") == "full"


def scale(short: float, full: float) -> float:
    """The value of a knob at this run's scale."""
    return full if FULL else short


@dataclass
class Figures:
    """One scenario's outcome, as the README table shows it."""

    scenario: str
    records: int = 0
    faults: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    aborted_visible: int = 0
    ambiguous: int = 0
    longest_stall_s: float = 0.0
    recovery_s: float | None = None
    seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)

    def add_report(self, report: CheckReport) -> Figures:
        total = report.total
        self.lost += total.lost
        self.duplicated += total.duplicated + total.unexpected
        self.reordered += total.reordered
        self.aborted_visible += total.aborted_visible
        self.ambiguous += total.ambiguous
        return self

    def publish(self) -> None:
        line = json.dumps({"scale": "full" if FULL else "short", **asdict(self)}, default=str)
        print(f"\nFAULT-FIGURES {line}", flush=True)
        target = os.environ.get("KAFKALITE_FAULT_RESULTS")
        if target:
            with open(target, "a") as out:
                out.write(line + "\n")


class GapMeter:
    """The longest time without progress (an acknowledgement, a processed record ...)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.last = time.monotonic()
        self.longest = 0.0

    def tick(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            self.longest = max(self.longest, now - self.last)
            self.last = now

    def finish(self) -> float:
        return self.longest


class Chaos:
    """Runs ``action(round)`` every ``interval_s`` in a thread of its own until stopped;
    errors end the thread and are raised by :meth:`stop`."""

    def __init__(self, interval_s: float, action: Callable[[int], None], *, first_after_s: float | None = None,
                 name: str = "chaos") -> None:
        self.interval_s = interval_s
        self.action = action
        self.rounds = 0
        self._first = interval_s if first_after_s is None else first_after_s
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Chaos:
        self._thread.start()
        return self

    def _run(self) -> None:
        wait = self._first
        while not self._stop.wait(wait):
            try:
                self.action(self.rounds)
            except BaseException as exc:
                self._error = exc
                return
            self.rounds += 1
            wait = self.interval_s

    def stop(self, timeout: float = 180.0) -> int:
        self._stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the fault thread did not finish its round"
        if self._error is not None:
            raise self._error
        return self.rounds


def kill_and_restart(broker: Any, down_s: float = 2.0) -> float:
    """SIGKILL ``broker``, keep it down ``down_s``, start it again; returns the seconds
    until it answered again."""
    broker.kill()
    time.sleep(down_s)  # the outage itself: a fixed length is the point
    started = time.monotonic()
    broker.start(wait=True, timeout=120)
    return time.monotonic() - started


class Restarts:
    """Kills that do not wait for the restart: each killed node comes back in a thread
    of its own after ``down_s`` (so kills can follow each other faster than a node
    restarts, as in Kafka's replication system tests)."""

    def __init__(self, down_s: float = 2.0) -> None:
        self.down_s = down_s
        self.recoveries: list[float] = []
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()

    def pending(self) -> int:
        """Killed nodes not yet answering again."""
        return sum(1 for thread in self._threads if thread.is_alive())

    def wait_all_back(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while self.pending():
            assert time.monotonic() < deadline, f"killed nodes not back after {timeout}s"
            time.sleep(0.1)

    def kill(self, broker: Any) -> None:
        def run() -> None:
            try:
                seconds = kill_and_restart(broker, self.down_s)
                with self._lock:
                    self.recoveries.append(seconds)
            except BaseException as exc:
                with self._lock:
                    self._errors.append(exc)
        thread = threading.Thread(target=run, name=f"restart-{broker.node_id}", daemon=True)
        self._threads.append(thread)
        thread.start()
        deadline = time.monotonic() + 30  # until the kill itself happened
        while broker.is_running and time.monotonic() < deadline:
            time.sleep(0.01)

    def join(self, timeout: float = 180.0) -> None:
        for thread in self._threads:
            thread.join(timeout)
            assert not thread.is_alive(), f"{thread.name} did not bring its node back"
        if self._errors:
            raise self._errors[0]


def wait_for_isr(cluster: Any, topic: str, partitions: int, size: int = 3, timeout: float = 120.0) -> None:
    """Until every partition of ``topic`` has ``size`` in-sync replicas again (so that the
    next kill never takes the ISR below ``min.insync.replicas``)."""
    from kafkalite import AdminClient

    deadline = time.monotonic() + timeout
    with AdminClient({"bootstrap.servers": cluster.live_bootstrap()}) as admin:
        while True:
            try:
                desc = admin.describe_topics([topic])[topic].result()
                if all(len(p.isr) >= size for p in desc.partitions) and len(desc.partitions) == partitions:
                    return
            except Exception:
                pass
            assert time.monotonic() < deadline, f"{topic}: the ISR did not grow back to {size} within {timeout}s"
            time.sleep(0.5)


