"""The README's demo and the runnable examples, run as a user runs them (a subprocess
with ``--bootstrap``) against the session's broker and Schema Registry, so a change
that breaks an example fails here rather than in a newcomer's terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalite import Consumer, TopicPartition
from kafkalite.testing import unique_topic_name

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run_example(name: str, *args: str, timeout: float = 240) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stdout}\n{done.stderr[-4000:]}"
    return done.stdout


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


def test_demo_without_spark(kafka_broker) -> None:
    out = run_example("demo.py", "--bootstrap", kafka_broker.bootstrap, "--topic", unique_topic_name("demo"),
                      "--count", "300", "--no-spark")
    assert "the group consumed 300 events" in out and "spark" not in out, out


def test_producer_examples(kafka_broker) -> None:
    out = run_example("producer_basic.py", "--bootstrap", kafka_broker.bootstrap)
    assert "first record at" in out and "flushed in" in out, out
    out = run_example("producer_async.py", "--bootstrap", kafka_broker.bootstrap)
    assert "5000 records sent" in out, out
    out = run_example("producer_transactions.py", "--bootstrap", kafka_broker.bootstrap, "--count", "200")
    assert "copied 200 records exactly once" in out, out


@pytest.mark.parametrize("example", ["serialization_avro_events.py", "serialization_protobuf_events.py",
                                     "serialization_json_schema.py", "serialization_arrow.py"])
def test_serialization_examples(kafka_broker, schema_registry, example) -> None:
    out = run_example(example, "--bootstrap", kafka_broker.bootstrap, "--registry", schema_registry.url)
    assert out.strip(), f"{example} printed nothing"
