"""Shipping kafkalite to executors in an archive, as docs/spark.md ("Running on a
cluster") says: a venv with kafkalite, pyarrow and numpy, zipped, sent with
``spark.archives=env.zip#environment``, and ``PYSPARK_PYTHON=./environment/bin/python``
in the driver's environment (Python data sources run, on the driver and on every
executor, the interpreter that variable names), with the same archive unpacked as
``./environment`` where the driver runs.

The cluster's workers run nothing but the interpreter of that archive, a venv made from
the base Python without its site packages: kafkalite, pyarrow and numpy come from the
archive, whatever the base Python has installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kafkalite import Producer
from kafkalite.testing.spark import SparkStandaloneCluster
from tests.helpers.pythons import python_without_kafkalite
from tests.spark_cluster.conftest import run_job, start_job
from tests.spark_cluster.test_cluster import BOTH_EXECUTORS, read_all

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]


def build_archive(where: Path) -> Path:
    """The recipe of docs/spark.md: a venv from the base Python, pip install, pack."""
    env = where / "kafkalite_env"
    base_python = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base_python), "-m", "venv", str(env)], check=True)
    # A new venv sees none of the base Python's site packages: what the executors import
    # is what pip puts into it here.
    probe = subprocess.run([str(env / "bin" / "python"), "-c", "import kafkalite"], capture_output=True, text=True)
    assert "No module named 'kafkalite'" in probe.stderr, probe.stderr
    subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", str(ROOT),
                    "pyarrow>=16", "numpy"], check=True, timeout=600)
    archive = where / "kafkalite_env.zip"
    subprocess.run([sys.executable, "-m", "pyspark_kafkalite.pack", str(env), str(archive)], check=True)
    return archive


def test_executors_run_kafkalite_from_a_shipped_venv(spark_cluster: SparkStandaloneCluster, kafka_broker: Any,
                                                    topic_factory: Any, tmp_path: Path) -> None:
    archive = build_archive(tmp_path)
    driver_dir = tmp_path / "driver"
    subprocess.run([sys.executable, "-m", "pyspark_kafkalite.pack", "--unpack", str(archive),
                    str(driver_dir / "environment")], check=True)
    bootstrap = kafka_broker.bootstrap
    source, sink = topic_factory(partitions=4), topic_factory(partitions=1)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(2000):
            producer.send(source, f"s{i}".encode(), partition=i % 4)
    env = dict(spark_cluster.env, PYSPARK_PYTHON="./environment/bin/python")
    [summary] = run_job(spark_cluster, "batch", spark_cluster.master_url, bootstrap, source, sink,
                        "--conf", f"spark.archives={archive}#environment", *BOTH_EXECUTORS,
                        log=tmp_path / "driver.log", env=env, cwd=driver_dir)
    assert summary["rows"] == 2000
    # Every Python worker ran the archive's interpreter, unpacked in the executor's directory.
    assert summary["pythons"] and all(p.endswith("/environment/bin/python") and str(spark_cluster.work_dir) in p
                                      for p in summary["pythons"]), summary["pythons"]
    assert Counter(r.value for r in read_all(bootstrap, sink, 1)) == Counter(f"s{i}".encode() for i in range(2000))
    assert not os.path.exists(spark_cluster.work_dir / "environment")  # nothing shared by accident


def executor_python_without_kafkalite(where: Path) -> tuple[Path, Path]:
    """(a PYSPARK_PYTHON, the Python behind it on executors): the driver's Python has
    kafkalite, the executors' (every process with KAFKALITE_TEST_EXECUTOR set, which
    spark.executorEnv gives only them) is a venv made without kafkalite (whatever the
    base Python has installed), with pyarrow and numpy (as PySpark's own Arrow features
    need), as on a cluster where kafkalite was installed on the driver's node only."""
    import pyarrow

    base_python = python_without_kafkalite(where)
    deps = where / "executor_site"
    deps.mkdir()
    site = Path(pyarrow.__file__).resolve().parents[1]
    for name in ("pyarrow", "pyarrow.libs", "numpy", "numpy.libs"):
        if (site / name).exists():
            (deps / name).symlink_to(site / name)
    wrapper = where / "python"
    wrapper.write_text('#!/bin/sh\nif [ -n "$KAFKALITE_TEST_EXECUTOR" ]; then\n'
                       f'  PYTHONPATH="$PYTHONPATH:{deps}" exec {base_python} "$@"\nfi\n'
                       f'exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, base_python


@pytest.mark.timeout(480)
def test_executors_without_kafkalite_fail_naming_the_cause_and_the_fix(
        spark_cluster: SparkStandaloneCluster, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    python, base_python = executor_python_without_kafkalite(tmp_path)
    as_executor = dict(os.environ, KAFKALITE_TEST_EXECUTOR="1")
    probe = subprocess.run([str(python), "-c", "import pyarrow, numpy\nimport kafkalite"], env=as_executor,
                           capture_output=True, text=True)
    assert "No module named 'kafkalite'" in probe.stderr, probe.stderr  # pyarrow and numpy are there
    source, sink = topic_factory(partitions=2), topic_factory(partitions=1)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as producer:
        for i in range(10):
            producer.send(source, f"s{i}".encode(), partition=i % 2)
    log = tmp_path / "driver.log"
    proc = start_job(spark_cluster, "batch", spark_cluster.master_url, kafka_broker.bootstrap, source, sink,
                     "--conf", "spark.executorEnv.KAFKALITE_TEST_EXECUTOR=1",
                     "--conf", "spark.task.maxFailures=1",  # the first failure is the error we check
                     log=log,
                     env=dict(spark_cluster.env, PYSPARK_PYTHON=str(python)))
    try:
        proc.communicate(timeout=360)  # ~30 s on a quiet machine; minutes under a load of 40 on 2 cores
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"driver still running after 360 s\n{log.read_text()[-4000:]}") from None
    text = log.read_text()
    assert proc.returncode != 0, text[-4000:]
    # The driver's error says what is missing, where, and the two fixes (not a bare
    # "No module named 'pyspark_kafkalite'" from inside Spark's worker).
    assert 'format("kafkalite") cannot run in this Spark task' in text, text[-4000:]
    assert f"its Python, {base_python} on host" in text and "cannot import 'pyspark_kafkalite'" in text
    assert "pip install 'kafkalite[spark]'" in text and "spark.archives=kafkalite_env.zip#environment" in text
