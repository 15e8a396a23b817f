"""The process of one :class:`~kafkalite.testing.broker.LocalBroker` node: its JVM.

:class:`BrokerProcess` is the broker's process control. It launches the command line
the broker gives it (tied to the test run, or detached for the CLI's ``up``, through
:func:`kafkalite.testing.processes.spawn`), freezes and thaws it (SIGSTOP / SIGCONT),
stops it (SIGTERM, then SIGKILL) or kills it, and takes it out of the harness's process
registry once it is gone. It also reads the node's logs: their tails for reports, and
what the latest start wrote to ``server.log``. It knows nothing of Kafka (settings,
ports, readiness): the broker decides what runs, when, and whether it is ready.

Example (what the broker does)::

    process = BrokerProcess("node 1", server_log=run_dir / "logs" / "server.log",
                            stdout_log=run_dir / "logs" / "stdout.log")
    process.launch(command, cwd=run_dir, tied=True, description="kafka 4.4.0 node 1 127.0.0.1:40123")
    process.pause()
    process.resume()
    process.stop(timeout=30)
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from kafkalite.testing import processes

__all__ = ["BrokerProcess", "tail"]


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a text file ('' if it does not exist)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 256 * lines))
            data = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


class BrokerProcess:
    """One node's JVM: launched, signalled, stopped or killed (see the module doc).

    Args:
        name: how errors name the node (``"node 1"``).
        server_log: Kafka's ``server.log`` (written by the JVM's log4j).
        stdout_log: where the JVM's stdout and stderr go.
    """

    def __init__(self, name: str, *, server_log: Path, stdout_log: Path) -> None:
        self.name = name
        self.server_log = server_log
        self.stdout_log = stdout_log
        #: The JVM of the latest launch (None before the first).
        self.popen: subprocess.Popen[bytes] | None = None
        self._paused = False
        self._log_offset = 0  # where the latest launch's lines begin in server.log

    @property
    def is_running(self) -> bool:
        """True while the JVM runs (paused included)."""
        return self.popen is not None and self.popen.poll() is None

    @property
    def is_paused(self) -> bool:
        """True while the JVM is stopped with :meth:`pause` (SIGSTOP)."""
        return self._paused and self.is_running

    @property
    def exit_code(self) -> int | None:
        """The exit code once the JVM has exited; None while it runs or before a launch."""
        return self.popen.poll() if self.popen is not None else None

    @property
    def pid(self) -> int | None:
        """The JVM's process id, or None before the first launch."""
        return self.popen.pid if self.popen is not None else None

    def launch(self, argv: Sequence[str], *, cwd: Path, tied: bool, description: str) -> subprocess.Popen[bytes]:
        """Start ``argv`` in ``cwd`` (stdout and stderr appended to ``stdout_log``) and
        register it; ``tied``: die with the current process (tests), else detached."""
        try:  # where this start's log lines begin
            self._log_offset = self.server_log.stat().st_size
        except OSError:
            self._log_offset = 0
        self.popen = processes.spawn(argv, log_path=self.stdout_log, cwd=cwd, tied=tied, description=description)
        self._paused = False
        return self.popen

    def logged_since_launch(self) -> bytes:
        """What the latest launch wrote to ``server.log`` (b'' if it cannot be read)."""
        try:
            with self.server_log.open("rb") as log:
                log.seek(self._log_offset)
                return log.read()
        except OSError:
            return b""

    def log_tail(self, lines: int = 40) -> str:
        """The end of ``server.log`` and of the JVM's stdout/stderr, for reports."""
        parts = [f"--- {self.server_log} ---", tail(self.server_log, lines)]
        out = tail(self.stdout_log, lines)
        if out.strip():
            parts += [f"--- {self.stdout_log} ---", out]
        return "\n".join(parts)

    def _signal(self, sig: signal.Signals) -> None:
        if self.popen is None or self.popen.poll() is not None:
            raise RuntimeError(f"{self.name} is not running")
        self.popen.send_signal(sig)

    def pause(self) -> None:
        """SIGSTOP: the JVM freezes (no heartbeats, sockets stay open)."""
        self._signal(signal.SIGSTOP)
        self._paused = True

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        self._signal(signal.SIGCONT)
        self._paused = False

    def stop(self, timeout: float) -> int | None:
        """SIGTERM (after a SIGCONT if paused: a frozen JVM cannot handle it); SIGKILL if
        it takes longer than ``timeout``. The exit code, or None if never launched."""
        code = processes.stop_spawned(self.popen, timeout, paused=self._paused)
        self._paused = False
        return code

    def kill(self) -> int | None:
        """SIGKILL: an abrupt crash. The exit code, or None if never launched."""
        code = processes.kill_spawned(self.popen)
        self._paused = False
        return code
