"""A ZooKeeper server for ZooKeeper-mode brokers (Kafka releases before 4.0).

It runs the ZooKeeper that the Kafka release itself depends on (its jars are in the
release's lock, ``zookeeper-server-start`` names the main class), standalone, on a
loopback port, with its data in the run dir. :class:`~kafkalite.testing.broker.LocalBroker`
starts one of its own in ZooKeeper mode; a :class:`~kafkalite.testing.cluster.LocalCluster`
shares one among its nodes (a broker kill leaves it running, as in production, where
ZooKeeper is a separate ensemble).

>>> zk = LocalZooKeeper(KafkaDistribution("3.6.2").ensure(), find_java())   # doctest: +SKIP
>>> zk.start().connect                                                       # doctest: +SKIP
'127.0.0.1:40123'
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from kafkalite.testing import processes
from kafkalite.testing.distribution import KafkaDistribution
from kafkalite.testing.java import JavaRuntime
from kafkalite.testing.ports import free_port
from kafkalite.testing.properties import render_properties, tools_log_config
from kafkalite.testing.tools import common_jvm_options, write_if_changed


class ZooKeeperStartError(RuntimeError):
    """The ZooKeeper server did not start or did not answer."""


class LocalZooKeeper:
    """One standalone ZooKeeper server on loopback.

    Args:
        distribution: the Kafka release whose ZooKeeper jars to run (ensured).
        java: the Java runtime.
        run_dir: where its ``zoo.cfg``, data and log go.
        port: the client port; default a free one.
        tied: die with this process (tests); False detaches it (the CLI's ``up``).
    """

    def __init__(self, distribution: KafkaDistribution, java: JavaRuntime, run_dir: Path, *,
                 port: int | None = None, tied: bool = True) -> None:
        self.distribution = distribution
        self.java = java
        self.run_dir = Path(run_dir)
        self.port = port or free_port()
        self.tied = tied
        self.process: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"<LocalZooKeeper {self.distribution.version} {self.connect}>"

    @property
    def connect(self) -> str:
        """``host:port`` for ``zookeeper.connect``."""
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.run_dir / "zookeeper.out"

    @property
    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def write_config(self) -> Path:
        props = {
            "dataDir": str(self.run_dir / "data"),
            "clientPort": str(self.port),
            "clientPortAddress": "127.0.0.1",
            "maxClientCnxns": "0",
            "tickTime": "500",
            # ZooKeeper 3.5+ runs an HTTP admin server on 8080 by default: two test
            # sessions would fight over it.
            "admin.enableServer": "false",
            # ZooKeeper 3.5+ answers only listed four-letter words; ruok is the probe.
            "4lw.commands.whitelist": "ruok,srvr",
        }
        (self.run_dir / "data").mkdir(parents=True, exist_ok=True)
        return write_if_changed(self.run_dir / "zoo.cfg", render_properties(props))

    def command(self) -> list[str]:
        log = tools_log_config(self.distribution.version)
        log_file = write_if_changed(self.run_dir / log.filename, log.text)
        classpath = os.pathsep.join(str(p) for p in self.distribution.classpath())
        return [str(self.java.executable), "-Xmx128m", *common_jvm_options(self.java), log.jvm_flag(log_file),
                "-cp", classpath, self.distribution.main_class("zookeeper-server-start"),
                str(self.write_config())]

    def start(self, timeout: float = 60.0) -> LocalZooKeeper:
        """Start the server (if it is not running) and wait until it answers ``ruok``."""
        if not self.is_running:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.process = processes.spawn(
                self.command(), log_path=self.log_path, cwd=self.run_dir, tied=self.tied,
                description=f"zookeeper ({self.distribution.version}) {self.connect}")
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.process is not None and self.process.poll() is not None:
                raise ZooKeeperStartError(
                    f"ZooKeeper for Kafka {self.distribution.version} exited with code "
                    f"{self.process.returncode}:\n{self._tail()}")
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(f"ZooKeeper on {self.connect} not ready after {timeout:.0f} s:\n"
                                          f"{self._tail()}")
            time.sleep(0.05)
        return self

    def ready(self) -> bool:
        """One probe: the four-letter word ``ruok`` answered ``imok``."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2.0) as sock:
                sock.sendall(b"ruok")
                return sock.recv(4) == b"imok"
        except OSError:
            return False

    def stop(self) -> None:
        """Kill the server (its data stays in the run dir)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        if self.process is not None:
            processes.unregister(self.process.pid)

    def _tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
