"""One Spark standalone cluster (a master and two one-core workers, from the PySpark
wheel) for the session; drivers run as processes of their own (tests/spark_cluster/jobs.py),
so a test can kill and restart a driver like any Spark application."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.testing.spark import SparkStandaloneCluster

JOBS = str(Path(__file__).with_name("jobs.py"))


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandaloneCluster]:
    cluster = SparkStandaloneCluster(workers=2, work_dir=tmp_path_factory.mktemp("spark-cluster"))
    cluster.start()
    yield cluster
    cluster.stop()


def start_job(cluster: SparkStandaloneCluster, *args: str, log: Path, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen[str]:
    """Start a driver program (jobs.py) on ``cluster``; its stdout lines are JSON.

    As docs/spark.md says, the driver's own ``PYSPARK_PYTHON`` names the interpreter that
    looks up ``format("kafkalite")`` and runs the source's driver-side code (by default,
    this one: the project's venv); without it Spark would ask ``python3`` on the PATH."""
    env = env or dict(cluster.env, PYSPARK_PYTHON=sys.executable)
    return subprocess.Popen([sys.executable, JOBS, *args], env=env, text=True, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=open(log, "w"))


def run_job(cluster: SparkStandaloneCluster, *args: str, log: Path, timeout: float = 300,
            env: dict[str, str] | None = None, cwd: Path | None = None) -> list[dict[str, Any]]:
    proc = start_job(cluster, *args, log=log, env=env, cwd=cwd)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # A driver left running keeps its executors, and with them every core of the
        # cluster: the tests after this one would get none.
        proc.kill()
        proc.communicate()
        raise AssertionError(f"driver still running after {timeout} s\n{log.read_text()[-4000:]}") from None
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert proc.returncode == 0, f"driver exited with {proc.returncode}: {lines}\n{log.read_text()[-4000:]}"
    return lines
