"""The data source's objects reach Spark tasks pickled; where the task's Python cannot
import kafkalite (or has another version) they fail with the cause and the fix named
(pyspark_kafkalite/shipping.py). Here with a real interpreter without kafkalite: a venv
made for the test (whatever the base Python has installed), with only PySpark's own zips
on its path, as an executor has them.
On a real cluster: tests/spark_cluster/test_shipping.py."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
from pathlib import Path

import pyspark
import pytest
from pyspark import cloudpickle
from pyspark_kafkalite.shipping import load_in_task
from pyspark_kafkalite.source import KafkaLiteDataSource

from tests.helpers.pythons import python_without_kafkalite


def reader() -> object:
    source = KafkaLiteDataSource({"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"})
    return source.reader(source.schema())


def test_objects_round_trip_through_the_task_loader() -> None:
    original = reader()
    again = pickle.loads(cloudpickle.dumps(original))
    assert type(again) is type(original) and again.opts == original.opts  # type: ignore[attr-defined]
    assert copy.deepcopy(original).opts == original.opts  # type: ignore[attr-defined]


def test_a_python_without_kafkalite_names_itself_and_the_fix(tmp_path: Path) -> None:
    python = python_without_kafkalite(tmp_path)  # whatever the base Python has installed
    pickled = tmp_path / "reader.pkl"
    pickled.write_bytes(cloudpickle.dumps((reader(), KafkaLiteDataSource({}))))
    lib = Path(pyspark.__file__).parent / "python" / "lib"
    path = os.pathsep.join(str(p) for p in sorted(lib.glob("*.zip")))  # pyspark.zip, py4j: what executors have
    done = subprocess.run(
        [str(python), "-c", f"import pickle; pickle.loads(open({str(pickled)!r}, 'rb').read())"],
        capture_output=True, text=True, env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": path})
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith('ModuleNotFoundError: format("kafkalite") cannot run in this Spark task'), done.stderr
    assert f"its Python, {python} on host" in last and "cannot import 'pyspark_kafkalite'" in last
    assert "pip install 'kafkalite[spark]'" in last and "spark.archives=kafkalite_env.zip#environment" in last


def test_another_kafkalite_version_than_the_drivers_is_refused() -> None:
    state = cloudpickle.dumps({"options": {}})
    with pytest.raises(ImportError, match=r"has kafkalite .*, the driver's has 0\.0\.1.*kafkalite\[spark\]==0\.0\.1"):
        load_in_task("pyspark_kafkalite.source", "KafkaLiteDataSource", state, "0.0.1")
    assert load_in_task("pyspark_kafkalite.source", "KafkaLiteDataSource", state).options == {}
