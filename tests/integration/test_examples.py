"""The README's demo and the runnable examples, run as a user runs them (a subprocess
with ``--bootstrap``) against the session's broker and Schema Registry, so a change
that breaks an example fails here rather than in a newcomer's terminal. The demo with
its Spark step runs beside the other Spark tests (tests/spark/test_spark_examples.py)."""

from __future__ import annotations

import pytest

from kafkalite.testing import unique_topic_name
from tests.helpers.examples import run_example


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
