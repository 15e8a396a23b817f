"""Start JVMs that never outlive the test run, and find them again if they do.

Two mechanisms, because either alone leaves gaps:

- *Parent-death signal*: a process started with ``tied=True`` asks Linux
  (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to be killed when its parent dies, so a
  SIGKILLed pytest takes its brokers with it. The signal fires when the *thread* that
  forked the child exits, so :func:`spawn` forks every tied process from the main
  thread or from one launcher thread that lives as long as the process: a broker
  restarted from a short-lived thread (a fault test's restarter) is not killed when
  that thread ends.
- *Registry*: every process is recorded in ``<state>/processes/<pid>.json`` with its
  start time (to recognise pid reuse) and its owner. :func:`reap_orphans` kills
  tied processes whose owner is gone (e.g. on macOS, which has no PDEATHSIG), and
  ``python -m kafkalite.testing down`` finds the detached ones (``tied=False``,
  started in their own session so they survive the CLI that started them).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from kafkalite.testing.paths import state_dir

T = TypeVar("T")

_PR_SET_PDEATHSIG = 1


def registry_dir() -> Path:
    return state_dir() / "processes"


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (Linux), else None.

    Together with the pid it identifies a process even after the pid is reused.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22; the command name (field 2) may contain spaces, so split after ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


def is_alive(pid: int, start_time: int | None = None) -> bool:
    """True if ``pid`` runs (and, if given, started at ``start_time``; zombies don't count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return False
    except OSError:
        pass
    return start_time is None or process_start_time(pid) in (None, start_time)


@dataclass
class ProcessRecord:
    """What the registry knows about one started process."""

    pid: int
    start_time: int | None
    owner_pid: int
    owner_start_time: int | None
    tied: bool
    description: str
    run_dir: str

    def alive(self) -> bool:
        return is_alive(self.pid, self.start_time)

    def owner_alive(self) -> bool:
        return is_alive(self.owner_pid, self.owner_start_time)


def _die_with_parent(parent: int) -> Callable[[], None]:
    def preexec() -> None:  # runs in the child between fork and exec
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The parent may have died before prctl took effect: then nobody will
        # signal us, so do not exec at all.
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def tied_popen_kwargs() -> dict[str, Any]:
    """``subprocess.Popen`` keyword arguments that tie the child to this process.

    For long-running tools started from tests, e.g.
    ``Popen(broker.java_tool_command(...), **tied_popen_kwargs())``: the tool is
    killed if the test run dies. Call it from the thread that runs Popen.

    Example::

        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "pass"], **tied_popen_kwargs())   # dies with this process
        child.wait(timeout=30)
    """
    if sys.platform.startswith("linux"):
        return {"preexec_fn": _die_with_parent(os.getpid())}
    return {}


def spawn(
    argv: Sequence[str],
    *,
    log_path: Path,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    tied: bool = True,
    description: str = "",
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with stdout+stderr appended to ``log_path`` and register it.

    Args:
        tied: kill it when this process dies (tests); False detaches it in a new
            session (the CLI's ``up``).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        def start() -> subprocess.Popen[bytes]:
            kwargs = tied_popen_kwargs() if tied else {"start_new_session": True}
            return subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=str(cwd),
                env=dict(env) if env is not None else None,
                close_fds=True,
                **kwargs,
            )

        proc = _LAUNCHER.run(start) if tied else start()
    record = ProcessRecord(
        pid=proc.pid,
        start_time=process_start_time(proc.pid),
        owner_pid=os.getpid(),
        owner_start_time=process_start_time(os.getpid()),
        tied=tied,
        description=description,
        run_dir=str(cwd),
    )
    _write(record)
    return proc


class _Launcher:
    """Forks tied processes from a thread that outlives every caller (see the module
    doc): calls from the main thread fork there; calls from any other thread are handed
    to one daemon thread that lives until the interpreter exits."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, start: Callable[[], T]) -> T:
        if threading.current_thread() is threading.main_thread():
            return start()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="kafkalite-launcher", daemon=True)
                self._thread.start()
        done: Future[T] = Future()
        self._jobs.put((start, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            start, done = self._jobs.get()
            try:
                done.set_result(start())
            except BaseException as exc:  # handed to the caller
                done.set_exception(exc)


_LAUNCHER = _Launcher()


def _write(record: ProcessRecord) -> None:
    folder = registry_dir()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{record.pid}.tmp"
    tmp.write_text(json.dumps(asdict(record)))
    os.replace(tmp, folder / f"{record.pid}.json")


def unregister(pid: int) -> None:
    (registry_dir() / f"{pid}.json").unlink(missing_ok=True)


def records() -> list[ProcessRecord]:
    """Every registered process (alive or not)."""
    found: list[ProcessRecord] = []
    folder = registry_dir()
    if not folder.is_dir():
        return found
    for path in folder.glob("*.json"):
        try:
            found.append(ProcessRecord(**json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            path.unlink(missing_ok=True)
    return found


def terminate(pid: int, start_time: int | None, timeout: float = 10.0) -> None:
    """SIGTERM, wait up to ``timeout``, then SIGKILL; unregister."""
    with contextlib.suppress(ProcessLookupError):
        if is_alive(pid, start_time):
            os.kill(pid, signal.SIGCONT)  # a paused JVM cannot handle SIGTERM
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while is_alive(pid, start_time) and time.monotonic() < deadline:
                time.sleep(0.05)
            if is_alive(pid, start_time):
                os.kill(pid, signal.SIGKILL)
    unregister(pid)


def stop_spawned(proc: subprocess.Popen[bytes] | None, timeout: float, *, paused: bool = False) -> int | None:
    """Stop a process :func:`spawn` started: SIGTERM (after a SIGCONT when ``paused``: a
    frozen JVM cannot handle SIGTERM), SIGKILL if it is still running after ``timeout``
    s; unregister it. Its exit code, or None for no process."""
    if proc is None:
        return None
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            if paused:
                proc.send_signal(signal.SIGCONT)
            proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    unregister(proc.pid)
    return proc.returncode


def kill_spawned(proc: subprocess.Popen[bytes] | None) -> int | None:
    """SIGKILL a process :func:`spawn` started (an abrupt crash) and unregister it. Its
    exit code, or None for no process."""
    if proc is None:
        return None
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
    unregister(proc.pid)
    return proc.returncode


def reap_orphans() -> list[ProcessRecord]:
    """Kill tied processes whose owner is gone; drop records of dead processes.

    Detached processes (``tied=False``) are left alone: they are meant to outlive
    their starter. Returns the records of the processes killed.

    Example::

        for record in reap_orphans():                   # brokers left by a test run that was killed
            print("killed", record)
    """
    killed = []
    for record in records():
        if not record.alive():
            unregister(record.pid)
        elif record.tied and not record.owner_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGKILL)
            unregister(record.pid)
            killed.append(record)
    return killed
