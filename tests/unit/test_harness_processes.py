"""Processes die with their test run; the registry finds the ones that do not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kafkalite.testing import processes


@pytest.fixture(autouse=True)
def private_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKALITE_STATE_DIR", str(tmp_path / "state"))


def _wait_dead(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while processes.is_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_spawn_registers_and_terminate_unregisters(tmp_path: Path) -> None:
    proc = processes.spawn(["sleep", "60"], log_path=tmp_path / "out.log", cwd=tmp_path,
                           description="sleeper")
    try:
        (record,) = processes.records()
        assert (record.pid, record.tied, record.description) == (proc.pid, True, "sleeper")
        assert record.owner_pid == os.getpid() and record.alive() and record.owner_alive()
        assert record.start_time == processes.process_start_time(proc.pid)
    finally:
        processes.terminate(proc.pid, processes.process_start_time(proc.pid), timeout=5)
        proc.wait()
    assert processes.records() == []


def test_tied_process_dies_with_its_parent(tmp_path: Path) -> None:
    """SIGKILL the process that started a tied child: PDEATHSIG takes the child down."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from kafkalite.testing import processes
        p = processes.spawn(["sleep", "60"], log_path=Path({str(tmp_path / 'c.log')!r}),
                            cwd=Path({str(tmp_path)!r}))
        print(p.pid, flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env=os.environ.copy())
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert processes.is_alive(child)
    parent.kill()
    parent.wait()
    assert _wait_dead(child), "the tied child outlived its SIGKILLed parent"


def test_a_tied_process_started_from_a_short_lived_thread_survives_the_thread(tmp_path: Path) -> None:
    """PDEATHSIG fires when the forking *thread* ends: spawn() forks from a launcher
    thread that lives as long as the process (a broker restarted by a fault test's
    restarter thread must not die with that thread), and still dies with the process."""
    script = textwrap.dedent(
        f"""
        import sys, threading, time
        from pathlib import Path
        from kafkalite.testing import processes
        started = []
        t = threading.Thread(target=lambda: started.append(processes.spawn(
            ["sleep", "60"], log_path=Path({str(tmp_path / 't.log')!r}), cwd=Path({str(tmp_path)!r}))))
        t.start()
        t.join()
        print(started[0].pid, flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env=os.environ.copy())
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        # The thread that asked for it has ended; the child must still run. A dead child
        # shows within milliseconds (PDEATHSIG is immediate): poll for a while.
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            assert processes.is_alive(child), "the child died with the short-lived thread"
            time.sleep(0.05)
    finally:
        parent.kill()
        parent.wait()
    assert _wait_dead(child), "the tied child outlived its SIGKILLed parent"


def test_detached_process_outlives_its_parent(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from kafkalite.testing import processes
        p = processes.spawn(["sleep", "60"], log_path=Path({str(tmp_path / 'c.log')!r}),
                            cwd=Path({str(tmp_path)!r}), tied=False)
        print(p.pid, flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=os.environ.copy(), check=True)
    child = int(done.stdout)
    try:
        assert processes.is_alive(child)
        assert os.getsid(child) == child  # its own session: no terminal signals
        assert processes.reap_orphans() == []  # detached ones are not orphans
        assert processes.is_alive(child)
    finally:
        processes.terminate(child, None, timeout=5)
    assert _wait_dead(child)


def test_reap_orphans_kills_tied_processes_of_dead_owners(tmp_path: Path) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    dead_owner = subprocess.Popen(["true"])
    dead_owner.wait()
    processes._write(
        processes.ProcessRecord(
            pid=victim.pid, start_time=processes.process_start_time(victim.pid),
            owner_pid=dead_owner.pid, owner_start_time=12345, tied=True,
            description="orphan", run_dir=str(tmp_path),
        )
    )
    killed = processes.reap_orphans()
    assert [r.pid for r in killed] == [victim.pid]
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert processes.records() == []


def test_reap_orphans_ignores_reused_pids(tmp_path: Path) -> None:
    """A record whose pid now belongs to another process (start time differs) is dropped."""
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        processes._write(
            processes.ProcessRecord(
                pid=bystander.pid, start_time=1, owner_pid=1 << 22, owner_start_time=None,
                tied=True, description="stale", run_dir=str(tmp_path),
            )
        )
        assert processes.reap_orphans() == []
        assert bystander.poll() is None
        assert processes.records() == []
    finally:
        bystander.kill()
        bystander.wait()


def test_terminate_escalates_to_sigkill(tmp_path: Path) -> None:
    stubborn = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
         " print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    assert stubborn.stdout is not None and stubborn.stdout.readline().strip() == "ready"
    started = time.monotonic()
    processes.terminate(stubborn.pid, processes.process_start_time(stubborn.pid), timeout=0.5)
    assert stubborn.wait(timeout=10) == -signal.SIGKILL
    assert time.monotonic() - started < 5  # SIGKILL after the 0.5 s grace, not 60 s of sleep
