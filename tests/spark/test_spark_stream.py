"""Streaming with format("kafkalite"): AvailableNow in bounded micro-batches, restart
from the checkpoint with nothing lost or repeated, progress committed to a group.

PySpark 4.0 / 4.1 give Python sources no Trigger.AvailableNow: Spark runs such a query
as one micro-batch, which maxOffsetsPerTrigger still bounds, so each run reads one
bounded batch and the next run goes on from the checkpoint (docs/spark.md).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyspark
import pytest

from kafkalite import AdminClient, Producer, TopicPartition
from tests.spark.streams import started

#: PySpark >= 4.2 gives Python sources admission control and Trigger.AvailableNow.
ADMISSION_CONTROL = tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 2)

pytestmark = [pytest.mark.broker, pytest.mark.timeout(420)]


def produce(bootstrap: str, topic: str, start: int, count: int, partitions: int) -> None:
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(start, start + count):
            producer.send(topic, f"event-{i}".encode(), key=f"k{i}".encode(), partition=i % partitions)
        producer.flush()


def run_available_now(spark: Any, bootstrap: str, source: str, sink: str, checkpoint: Path, group: str) -> Any:
    stream = (spark.readStream.format("kafkalite")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "50")
              .option("kafka.group.id", group)
              .load())
    query = started(lambda: stream.selectExpr("key", "value")
                    .writeStream.format("kafkalite")
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("topic", sink)
                    .option("checkpointLocation", str(checkpoint))
                    .trigger(availableNow=True)
                    .start())
    assert query.awaitTermination(300), "the AvailableNow query did not finish"
    assert query.exception() is None
    return query


def sink_values(spark: Any, bootstrap: str, sink: str) -> Counter[bytes]:
    rows = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", sink).load().select("value").collect())
    return Counter(bytes(r.value) for r in rows)  # PySpark 4.0 gives bytearray


def test_available_now_bounded_batches_and_restart_from_checkpoint(spark: Any, kafka_broker: Any,
                                                                   topic_factory: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    source = topic_factory(partitions=3)
    sink = topic_factory(partitions=2)
    group = f"{source}-progress"
    produce(bootstrap, source, 0, 300, 3)

    if not ADMISSION_CONTROL:
        check_single_bounded_batch_per_run(spark, bootstrap, source, sink, tmp_path / "ckpt", group)
        return
    query = run_available_now(spark, bootstrap, source, sink, tmp_path / "ckpt", group)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 300
    assert len(sizes) >= 6 and max(sizes) <= 50, sizes  # bounded by maxOffsetsPerTrigger
    assert sink_values(spark, bootstrap, sink) == Counter(f"event-{i}".encode() for i in range(300))

    # The group shows the query's progress (the JVM connector cannot do this).
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        committed = admin.list_consumer_group_offsets([group])[group].result()
    assert {tp.partition: om.offset for tp, om in committed.items()} == {0: 100, 1: 100, 2: 100}

    # More data, then the same query again: it resumes from its checkpoint.
    produce(bootstrap, source, 300, 200, 3)
    query = run_available_now(spark, bootstrap, source, sink, tmp_path / "ckpt", group)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 200 and max(sizes) <= 50
    assert sink_values(spark, bootstrap, sink) == Counter(f"event-{i}".encode() for i in range(500))
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        committed = admin.list_consumer_group_offsets([group])[group].result()
    assert sum(om.offset for om in committed.values()) == 500
    assert TopicPartition(source, 0) in committed


def check_single_bounded_batch_per_run(spark: Any, bootstrap: str, source: str, sink: str, checkpoint: Path,
                                       group: str) -> None:
    """PySpark < 4.2: every AvailableNow run is one micro-batch of at most 50 records; the
    runs together read each record once. The group gets a run's offsets when the next
    run starts (Spark calls no commit() for the last batch of a query)."""
    seen: Counter[bytes] = Counter()
    for run in range(1, 4):
        query = run_available_now(spark, bootstrap, source, sink, checkpoint, group)
        sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        assert sizes == [50], sizes
        seen = sink_values(spark, bootstrap, sink)
        assert sum(seen.values()) == 50 * run and max(seen.values()) == 1
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            committed = admin.list_consumer_group_offsets([group])[group].result()
        assert sum(om.offset for om in committed.values()) == 50 * (run - 1)
    assert set(seen) <= {f"event-{i}".encode() for i in range(300)}
