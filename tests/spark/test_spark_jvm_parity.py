"""kafkalite and Spark's JVM Kafka connector return identical DataFrames, on Spark 4.0 and 3.5.

Runs in the PySpark 4.0.0 environment here and in 3.5.7's in
tests/spark_releases/test_spark35.py (the Spark releases with a matched JVM connector
set on Maven Central): ``tools/spark_matrix/jvm_connector.py`` makes the
version matrix's venv (``.venv-pyspark/<version>``, cached afterwards) and fetches the
connector's jars with checksums; ``tools/spark_matrix/compare.py`` reads the same topics
with ``format("kafka")``, ``format("kafkalite")`` (4.0: Spark 3.5 has no Python Data
Source API) and ``pyspark_kafkalite.read_kafka`` in one SparkSession and compares
schemas and rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kafkalite import Producer

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]


def produce(bootstrap: str, topic: str, partitions: int, count: int, *, compression: str, base_ts: int) -> None:
    with Producer({"bootstrap.servers": bootstrap, "compression.type": compression}) as producer:
        for i in range(count):
            headers = None if i % 3 == 0 else [("trace", f"{i}".encode()), ("ü", None), ("trace", b"")][: i % 4]
            producer.send(topic, None if i % 19 == 4 else f"value-{i}".encode() * (i % 6),
                          key=None if i % 7 == 0 else f"key-{i % 50}".encode(),
                          partition=i % partitions, timestamp=base_ts + i, headers=headers)
        producer.flush()


def test_jvm_connector_and_kafkalite_return_identical_dataframes(kafka_broker: Any, topic_factory: Any) -> None:
    check_parity(kafka_broker, topic_factory, "4.0.0", ["kafkalite", "read_kafka"])


def check_parity(kafka_broker: Any, topic_factory: Any, pyspark: str, compared: list[str]) -> None:
    """The parity cases in PySpark ``pyspark``'s venv; ``compared``: kafkalite's readers there."""
    env = subprocess.run([sys.executable, str(ROOT / "tools/spark_matrix/jvm_connector.py"), "--pyspark", pyspark,
                          "--json"], check=True, capture_output=True, text=True, timeout=1200)
    setup = json.loads(env.stdout.strip().splitlines()[-1])

    a = topic_factory(partitions=3)
    b = topic_factory(partitions=2)
    base_ts = (int(time.time()) - 600) * 1000
    produce(kafka_broker.bootstrap, a, 3, 600, compression="none", base_ts=base_ts)
    produce(kafka_broker.bootstrap, b, 2, 300, compression="zstd", base_ts=base_ts)
    cases = {
        "subscribe+headers": {"subscribe": f"{a},{b}", "includeHeaders": "true"},
        "pattern+json-offsets": {"subscribePattern": f"{a}|{b}",
                                 "startingOffsets": json.dumps({a: {"0": 5, "1": -2, "2": 150}, b: {"0": -2, "1": 7}}),
                                 "endingOffsets": json.dumps({a: {"0": 100, "1": -1, "2": -1}, b: {"0": 30, "1": -1}})},
        "assign+timestamps": {"assign": json.dumps({a: [0, 2], b: [1]}), "includeHeaders": "true",
                              "startingOffsetsByTimestamp": json.dumps(
                                  {a: {"0": base_ts + 300, "2": base_ts + 10}, b: {"1": base_ts + 200}})},
    }
    args = [setup["python"], str(ROOT / "tools/spark_matrix/compare.py"), "--bootstrap", kafka_broker.bootstrap,
            "--jars", ",".join(setup["jars"])]
    for name, options in cases.items():
        args += ["--case", name, json.dumps(options)]
    run = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert run.stdout.strip(), f"compare.py printed nothing; stderr:\n{run.stderr[-4000:]}"
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["pyspark"] == pyspark
    by_case = {r["case"]: r for r in report["results"]}
    assert set(by_case) == set(cases)
    for name, result in by_case.items():
        assert result["rows"] > 0, name
        assert result["compared"] == compared, result
        assert result["same_schema"], result
        assert result["equal"], result
    assert run.returncode == 0
