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
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
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
