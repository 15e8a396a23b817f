"""Spark 3.5 (no Python Data Source API): the DataFrame functions in the version matrix's
3.5.7 venv, and their rows against Spark 3.5.7's JVM connector.

* 3.5.7 runs tools/spark_matrix/matrix.py's EVERY_RELEASE_TESTS
  (read_kafka / write_kafka round trip, bad input, the Avro column helpers, the
  read_kafka_incremental restart test, examples/spark35_incremental.py) in one pytest
  process, so one SparkSession;
* 3.5.7, the newest 3.5 with the JVM connector on Maven Central, runs the parity cases
  of tests/spark/test_spark_jvm_parity.py with read_kafka against format("kafka").

Outside the main suite: scripts/ci/spark_releases.sh runs this folder.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.spark.test_spark_jvm_parity import check_parity
from tests.spark.test_spark_versions import run_matrix

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(1500)]

#: The 3.5 release CI runs: 3.5.7, the newest one whose JVM connector Maven Central
#: serves, so the DataFrame-function tests and the JVM comparison share one venv (one
#: build of PySpark 3.5 from its sdist on a clean clone, ~3 min). The newest 3.5 on PyPI
#: (3.5.9) runs in tools/spark_matrix/matrix.py --minors.
NEWEST_3_5 = "3.5.7"
#: tools/spark_matrix/matrix.py's EVERY_RELEASE_TESTS, which a 3.5 venv runs by default.
TESTS_3_5 = ["tests/spark/test_spark_frames.py", "tests/spark/test_spark_incremental.py",
             "tests/spark/test_spark_examples.py::test_spark35_incremental_example"]
TESTS_3_5_COUNT = 8


def test_dataframe_functions_pass_on_spark_3_5(kafka_broker: Any) -> None:
    result = run_matrix(NEWEST_3_5, TESTS_3_5, kafka_broker.bootstrap)
    assert f"{TESTS_3_5_COUNT} passed" in result["summary"], result["summary"]


def test_read_kafka_on_spark_3_5_returns_the_jvm_connectors_rows(kafka_broker: Any, topic_factory: Any) -> None:
    check_parity(kafka_broker, topic_factory, "3.5.7", ["read_kafka"])
