"""The examples that run Spark, run as a user runs them (a subprocess with
``--bootstrap``): the README's demo with its Spark step, and the Schema Registry column
helpers. They start SparkSessions of their own, so they run in the Spark half of the
suite (scripts/test.sh); the other examples are tests/integration/test_examples.py's."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest

from kafkalite import Consumer, TopicPartition
from kafkalite.testing import unique_topic_name
from tests.helpers.examples import EXAMPLES, run_example

SCHEMA_COLUMNS_PRINTS = [
    "avro: struct<page:string,ms:bigint>", "offset 0: {'page': '/', 'ms': 120}",
    "protobuf: struct<order_id:string,customer:string,amount:double>",
    "offset 1: {'order_id': 'o-2', 'customer': 'bob', 'amount': 9.5}", "offset 2: None",
    "json: struct<page:string,ms:bigint,referrer:string>",
    "offset 1: {'page': '/docs', 'ms': 80, 'referrer': '/'}",
]


@pytest.mark.timeout(300)
def test_demo_group_producer_and_spark(kafka_broker) -> None:
    """scripts/demo.sh's program: a 2-member group shares 6 partitions and consumes every
    event produced; Spark totals the topic per customer into a second topic."""
    topic = unique_topic_name("demo")
    out = run_example("demo.py", "--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--count", "1200")
    assert "the group consumed 1200 events" in out, out
    owned = re.search(r"members share the partitions: (\{.*\})", out)
    assert owned is not None, out
    assert f"spark read 1200 records of '{topic}' and wrote 6 totals to '{topic}-totals'" in out, out
    # The totals the demo printed are what is in the topic: 6 customers, 200 orders each.
    tp = TopicPartition(f"{topic}-totals", 0)
    with Consumer({"bootstrap.servers": kafka_broker.bootstrap, "value.deserializer": "json"}) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning([tp])
        rows: list[dict] = []
        while len(rows) < 6:
            rows += [r.value for r in consumer.poll(5.0)]
    assert sorted(r["orders"] for r in rows) == [200] * 6
    assert {r["customer"] for r in rows} == {"ada", "grace", "linus", "barbara", "ken", "margaret"}


@pytest.mark.timeout(420)
def test_schema_columns_example(kafka_broker: Any, schema_registry: Any) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "spark_schema_columns.py"), "--bootstrap", kafka_broker.bootstrap,
         "--registry", schema_registry.url],
        capture_output=True, text=True, timeout=400, cwd=EXAMPLES)
    assert done.returncode == 0, done.stdout + done.stderr
    for line in SCHEMA_COLUMNS_PRINTS:
        assert line in done.stdout, done.stdout


@pytest.mark.timeout(420)
def test_spark35_incremental_example(kafka_broker: Any, tmp_path: Any) -> None:
    """examples/spark35_incremental.py: the functions every Spark release has (on 3.5 in
    tools/spark_matrix's 3.5 run, tests/spark/test_spark_versions.py)."""
    topic = unique_topic_name("orders35")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "spark35_incremental.py"), "--bootstrap", kafka_broker.bootstrap,
         "--topic", topic, "--work-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=400, cwd=EXAMPLES)
    assert done.returncode == 0, done.stdout + done.stderr
    for line in ("write_kafka wrote 500 orders",
                 "read_kafka totals: {'ada': 399, 'barbara': 398, 'grace': 401, 'ken': 400, 'linus': 396}",
                 "run: batch 0 wrote 300 records", "run: batch 1 wrote 200 records", "the sink holds 500 records"):
        assert line in done.stdout, done.stdout
