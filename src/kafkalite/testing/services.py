"""The life cycle every helper JVM of the harness shares (KDC, OIDC provider).

A :class:`JavaService` owns a run directory and one process started from a
:class:`~kafkalite.testing.jarsets.JarSet`: :meth:`start` launches it (tied to the
test run, or detached for the CLI's ``up``) and polls :meth:`probe` until it answers,
with the log's tail in the error if it does not; :meth:`close` stops it and removes
an owned run directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from kafkalite.testing import processes
from kafkalite.testing.broker_process import tail
from kafkalite.testing.jarsets import JarSet, JarSetLock
from kafkalite.testing.java import JavaRuntime, find_java


class ServiceStartError(RuntimeError):
    """A helper service did not become ready; the message carries its log tail."""


class JavaService:
    """Base of the helper JVMs: subclasses give :meth:`arguments`, :meth:`probe` and
    optionally :meth:`environment` and :meth:`prepare`."""

    kind = "service"

    def __init__(self, lock: JarSetLock, *, run_dir: Path | None = None, heap: str = "256m",
                 tied: bool = True, java: JavaRuntime | None = None) -> None:
        self.lock = lock
        self.heap = heap
        self.tied = tied
        self._owns_run_dir = run_dir is None
        self.run_dir = Path(run_dir or tempfile.mkdtemp(prefix=f"kafkalite-{lock.name}-"))
        self._java = java
        self.process: subprocess.Popen[bytes] | None = None

    # -- subclass hooks ------------------------------------------------------------

    def arguments(self) -> list[str]:
        """Program arguments after the main class."""
        return []

    def environment(self) -> Mapping[str, str] | None:
        return None

    def prepare(self) -> None:
        """Write the files the program reads before it starts."""

    def probe(self) -> bool:
        raise NotImplementedError

    # -- common ----------------------------------------------------------------------

    @property
    def log_path(self) -> Path:
        return self.run_dir / "logs" / f"{self.lock.name}.log"

    def log_tail(self, lines: int = 40) -> str:
        return f"--- {self.log_path} ---\n{tail(self.log_path, lines)}"

    @property
    def java(self) -> JavaRuntime:
        if self._java is None:
            self._java = find_java(self.lock.java)
        return self._java

    def command(self) -> list[str]:
        jars = JarSet(self.lock).ensure()
        return [str(self.java.executable), f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true", *self.lock.jvm_options,
                "-cp", ":".join(str(p) for p in jars.classpath()), self.lock.main_class, *self.arguments()]

    @property
    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self, *, timeout: float = 120.0) -> Any:
        """Launch and wait until :meth:`probe` answers; return ``self``."""
        self.launch()
        return self.wait_ready(timeout)

    def launch(self) -> None:
        """Start the JVM without waiting (several services can then start at once;
        call it from a long-lived thread: a tied process dies with the thread that
        started it)."""
        if self.is_running:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        command = self.command()  # fetches the jars first, outside the timing
        self.prepare()
        env = self.environment()
        if env is not None:
            env = {**os.environ, **env}
        self.process = processes.spawn(command, log_path=self.log_path, cwd=self.run_dir, env=env, tied=self.tied,
                                       description=f"{self.lock.name} {self.lock.version} {self!r}")

    def wait_ready(self, timeout: float = 120.0) -> Any:
        """Wait until :meth:`probe` answers; the log's tail in the error if it does not."""
        deadline = time.monotonic() + timeout
        while not self.probe():
            if self.process is None or self.process.poll() is not None:
                self._fail(f"exited with code {self.process.returncode if self.process else None}")
            if time.monotonic() > deadline:
                self._fail(f"not ready after {timeout:.0f} s")
            time.sleep(0.1)
        return self

    def _fail(self, what: str) -> None:
        text = self.log_tail(60)
        self.kill()
        raise ServiceStartError(f"{self.lock.name} {self.lock.version} {what}.\n{text}")

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``."""
        return processes.stop_spawned(self.process, timeout)

    def kill(self) -> int | None:
        return processes.kill_spawned(self.process)

    def close(self, *, remove: bool | None = None) -> None:
        """Kill it (a test KDC or identity provider keeps nothing worth a graceful stop)
        and delete an owned run directory."""
        self.kill()
        if remove if remove is not None else self._owns_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
