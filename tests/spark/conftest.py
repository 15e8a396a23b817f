"""One local SparkSession (local[2]) for the whole test session, and data helpers.

SparkSession startup costs seconds, so every Spark test shares one. The Python
workers run this interpreter (PYSPARK_PYTHON), which has kafkalite installed, so
``format("kafkalite")`` is found by PySpark's own lookup of ``pyspark_*`` modules:
no registration call (tests/spark/test_spark_batch.py checks exactly that).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SPAN_DIR_ENV = "KAFKALITE_SPAN_DIR"  # kafkalite.testing.spans.SPAN_DIR_ENV (that module needs the OTel SDK)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # Where kafkalite.testing.spans writes the spans of traced tasks: the Python workers
    # inherit the environment of the JVM started below (tests/spark/test_spark_tracing.py).
    os.environ.setdefault(SPAN_DIR_ENV, str(tmp_path_factory.mktemp("spark-spans")))
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafkalite-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture()
def kafka_options(kafka_broker: Any) -> dict[str, str]:
    return {"kafka.bootstrap.servers": kafka_broker.bootstrap}


@pytest.fixture()
def spark_span_dir(spark: Any) -> Path:
    """The directory the Spark workers' traced tasks write their spans to."""
    return Path(os.environ[SPAN_DIR_ENV])
