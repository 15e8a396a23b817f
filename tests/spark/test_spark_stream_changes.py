"""Streaming reads while the topics change under a running query, and the options that
go beyond Spark's JVM connector: startingOffsets=group, maxBytesPerTrigger, a checkpoint
restarted with another topic set, partitions added, records deleted (delete_records)
and a topic deleted and re-created, each with failOnDataLoss as documented.

Every wait is for a condition, with a generous deadline; queries write to Spark's
memory sink so that the rows can be checked while the query runs.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyspark
import pytest
from pyspark_kafkalite.progress import lag_summary, source_lag

from kafkalite import AdminClient, NewPartitions, OffsetAndMetadata, Producer, TopicPartition
from kafkalite.errors import UnknownTopicOrPartitionError
from tests.spark.streams import started

#: PySpark 4.2 gave Python sources admission control and Trigger.AvailableNow; 4.0 and
#: 4.1 run AvailableNow as one micro-batch (docs/spark.md, "Triggers and PySpark
#: versions"): each run reads one bounded batch, and commit() of a run's last batch
#: comes with the next run.
ADMISSION_CONTROL = tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 2)

pytestmark = [pytest.mark.broker, pytest.mark.timeout(240)]


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for value in values:
            producer.send(topic, value, partition=partition)
        producer.flush(60)


def wait_for(condition: Callable[[], Any], what: str, query: Any = None, timeout: float = 150) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if query is not None and query.exception() is not None:
            raise AssertionError(f"the query failed while waiting for {what}: {query.exception()}")
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def stream(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    reader = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def to_memory(df: Any, checkpoint: Path, *, available_now: bool = False) -> tuple[Any, str]:
    """Start the query into Spark's memory sink (which cannot restart from a checkpoint)."""
    name = f"q_{uuid.uuid4().hex[:12]}"
    writer = (df.selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
              .writeStream.format("memory").queryName(name).option("checkpointLocation", str(checkpoint)))
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="500 milliseconds")
    return started(writer.start), name


def to_parquet(df: Any, path: Path) -> Any:
    """An AvailableNow query into a parquet sink at ``path`` (checkpoint beside it): restartable."""
    return started(lambda: df.selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
                   .writeStream.format("parquet").option("path", str(path))
                   .option("checkpointLocation", str(path) + "-ckpt").trigger(availableNow=True).start())


def rows(spark: Any, name: str | Path) -> list[tuple[str, int, int]]:
    table = spark.read.parquet(str(name)) if isinstance(name, Path) else spark.sql(f"SELECT * FROM {name}")
    return sorted((r.value, r.partition, r.offset) for r in table.collect())


def values(spark: Any, name: str) -> set[str]:
    return {v for v, _, _ in rows(spark, name)}


def stop(query: Any) -> None:
    query.stop()
    assert query.exception() is None, query.exception()


def failure_of(query: Any, timeout: float = 150) -> str:
    """The query's error message, once it failed (it must, within ``timeout``)."""
    wait_for(lambda: query.exception() is not None, "the query to fail", timeout=timeout)
    return str(query.exception())


# ---------------------------------------------------------------- startingOffsets=group


def test_starting_offsets_group_starts_at_the_committed_offsets_then_follows_the_checkpoint(
        spark: Any, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=2)
    group = f"{topic}-app"
    for p in range(2):
        produce(bootstrap, topic, [f"p{p}-{i}".encode() for i in range(15)], partition=p)
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:  # the group read p0 up to 10, never p1
        admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): OffsetAndMetadata(10)}).raise_on_error()

    # batch: the committed offset, and the fallback for the partition without one
    batch = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
             .option("startingOffsets", "group").option("kafka.group.id", group)
             .option("startingOffsetsFallback", "earliest").load())
    assert sorted((r.partition, r.offset) for r in batch.select("partition", "offset").collect()) == (
        [(0, o) for o in range(10, 15)] + [(1, o) for o in range(15)])
    refused = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", topic).option("startingOffsets", "group").option("kafka.group.id", group)
               .option("startingOffsetsFallback", "error").load())
    with pytest.raises(Exception, match=f"consumer group '{group}' has no committed offset for {topic}-1"):
        refused.collect()

    # streaming: a new query starts there ...
    sink = tmp_path / "sink"
    query = to_parquet(stream(spark, bootstrap, topic, startingOffsets="group", **{"kafka.group.id": group}), sink)
    assert query.awaitTermination(150) and query.exception() is None
    # startingOffsetsFallback defaults to latest: p1 (no commit) starts at its end
    assert [(p, o) for _, p, o in rows(spark, sink)] == [(0, o) for o in range(10, 15)]
    # ... and committed its progress to the same group (before 4.2, the run's one batch
    # shows at the next run: Spark commits a batch when it plans the next one)
    def group_offsets() -> dict[int, int]:
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            committed = admin.list_consumer_group_offsets([group])[group].result()
        return {tp.partition: om.offset for tp, om in committed.items()}

    assert group_offsets() == ({0: 15, 1: 15} if ADMISSION_CONTROL else {0: 10})

    # ... then follows its checkpoint, not the group (moved back here by hand)
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): OffsetAndMetadata(0),
                                                   TopicPartition(topic, 1): OffsetAndMetadata(0)}).raise_on_error()
    produce(bootstrap, topic, [b"p0-15", b"p0-16"], partition=0)
    query = to_parquet(stream(spark, bootstrap, topic, startingOffsets="group", **{"kafka.group.id": group}), sink)
    assert query.awaitTermination(150) and query.exception() is None
    assert [(p, o) for _, p, o in rows(spark, sink)] == [(0, o) for o in range(10, 17)]
    # the group shows what the checkpoint says was read: all of this run (4.2+), or the
    # first run's batch, committed when this run planned its own (4.0, 4.1)
    assert group_offsets() == ({0: 17, 1: 15} if ADMISSION_CONTROL else {0: 15, 1: 15})


# ---------------------------------------------------------------- maxBytesPerTrigger


def test_max_bytes_per_trigger_bounds_each_micro_batch(spark: Any, kafka_broker: Any, topic_factory: Any,
                                                       tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=2)
    for p in range(2):  # incompressible 1000-byte values: about 1.07 kB per record in the log
        produce(bootstrap, topic, [os.urandom(500).hex().encode() for _ in range(100)], partition=p)
    df = stream(spark, bootstrap, topic, startingOffsets="earliest", maxBytesPerTrigger="25000")
    if ADMISSION_CONTROL:
        query, _ = to_memory(df, tmp_path / "ckpt", available_now=True)
        assert query.awaitTermination(200) and query.exception() is None
    else:  # AvailableNow would read one bounded batch per run: a processing-time trigger reads on
        query, name = to_memory(df, tmp_path / "ckpt")
        try:
            wait_for(lambda: len(rows(spark, name)) >= 200, "all 200 records", query, timeout=200)
        finally:
            query.stop()
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    sizes = [p["numInputRows"] for p in batches]
    assert sum(sizes) == 200
    # 25000 bytes at ~1070 bytes per record: at most 23 records, so at least 9 micro-batches
    assert max(sizes) <= 25 and len(sizes) >= 8, sizes
    # the lag per partition, from the progress (Python sources get no sources[].metrics)
    if not ADMISSION_CONTROL:  # Spark's "latest" is the batch the source planned: no lag to see
        assert all(not any(lag.values()) for lag in source_lag(batches[0]).values()), batches[0]
        return
    first = source_lag(batches[0])
    assert sum(first[topic].values()) == 200 - sizes[0] and set(first[topic]) == {0, 1}, first
    assert lag_summary(source_lag(batches[-1])) == {"minOffsetsBehindLatest": 0, "maxOffsetsBehindLatest": 0,
                                                    "avgOffsetsBehindLatest": 0.0}


# ---------------------------------------------------------------- a checkpoint from another topic set


def test_a_checkpoint_restarted_with_another_topic_set_fails_on_the_driver_naming_the_fix(
        spark: Any, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    first, second = topic_factory(partitions=1), topic_factory(partitions=1)
    produce(bootstrap, first, [b"a"])
    produce(bootstrap, second, [b"b"])
    query = to_parquet(stream(spark, bootstrap, first, startingOffsets="earliest"), tmp_path / "sink")
    assert query.awaitTermination(150) and query.exception() is None
    query = to_parquet(stream(spark, bootstrap, second, startingOffsets="earliest"), tmp_path / "sink")
    message = failure_of(query)
    assert f"checkpoint holds offsets for {first}-0, which option 'subscribe' ('{second}') no longer reads" in message
    assert "new checkpointLocation" in message


# ---------------------------------------------------------------- the topic changes under a running query


def test_partitions_added_to_a_subscribed_topic_are_read_by_a_running_query(
        spark: Any, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=1)
    produce(bootstrap, topic, [f"old-{i}".encode() for i in range(5)])
    query, name = to_memory(stream(spark, bootstrap, topic, startingOffsets="latest"), tmp_path / "ckpt")
    try:
        wait_for(lambda: query.lastProgress is not None, "the first micro-batch", query)
        produce(bootstrap, topic, [b"p0-after"])
        wait_for(lambda: values(spark, name) == {"p0-after"}, "the record written after the start", query)
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            admin.create_partitions({topic: NewPartitions(3)}).raise_on_error()
        # written right after the partitions were made: read from their earliest offset,
        # whenever the query sees them (a new partition is never started at its end)
        produce(bootstrap, topic, [b"p1-a", b"p1-b"], partition=1)
        produce(bootstrap, topic, [b"p2-a"], partition=2)
        wait_for(lambda: values(spark, name) == {"p0-after", "p1-a", "p1-b", "p2-a"},
                 "the records of the new partitions", query)
    finally:
        stop(query)
    assert sorted((p, o) for _, p, o in rows(spark, name)) == [(0, 5), (1, 0), (1, 1), (2, 0)]


def _deleted_under_a_running_query(spark: Any, bootstrap: str, topic: str, checkpoint: Path,
                                   fail_on_data_loss: bool) -> tuple[Any, str]:
    """Offsets 60..69 deleted before the query could read them: minOffsetsPerTrigger=50
    holds the query back (20 new records are not enough), so no timing is involved."""
    produce(bootstrap, topic, [f"r{i}".encode() for i in range(60)])
    df = stream(spark, bootstrap, topic, startingOffsets="earliest", minOffsetsPerTrigger="50",
                maxTriggerDelay="10m", failOnDataLoss=str(fail_on_data_loss).lower())
    query, name = to_memory(df, checkpoint)
    wait_for(lambda: len(rows(spark, name)) == 60, "the first 60 records", query)
    produce(bootstrap, topic, [f"r{i}".encode() for i in range(60, 80)])
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.delete_records({TopicPartition(topic, 0): 70}).raise_on_error()
    produce(bootstrap, topic, [f"r{i}".encode() for i in range(80, 120)])
    return query, name


def test_records_deleted_under_a_running_query_fail_it_with_fail_on_data_loss(
        spark: Any, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    topic = topic_factory(partitions=1)
    query, _ = _deleted_under_a_running_query(spark, kafka_broker.bootstrap, topic, tmp_path / "ckpt", True)
    message = failure_of(query)
    assert f"offsets 60..69 of {topic}-0 were deleted before they were read" in message
    assert "option failOnDataLoss=true" in message


def test_records_deleted_under_a_running_query_are_skipped_without_fail_on_data_loss(
        spark: Any, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    topic = topic_factory(partitions=1)
    query, name = _deleted_under_a_running_query(spark, kafka_broker.bootstrap, topic, tmp_path / "ckpt", False)
    try:
        wait_for(lambda: len(rows(spark, name)) >= 110, "the records after the deleted ones", query)
    finally:
        stop(query)
    assert sorted(o for _, _, o in rows(spark, name)) == list(range(60)) + list(range(70, 120))


def _recreated_under_a_running_query(spark: Any, bootstrap: str, topic: str, checkpoint: Path,
                                     fail_on_data_loss: bool) -> tuple[Any, str]:
    produce(bootstrap, topic, [f"old-{i}".encode() for i in range(30)])
    df = stream(spark, bootstrap, topic, startingOffsets="earliest", failOnDataLoss=str(fail_on_data_loss).lower())
    query, name = to_memory(df, checkpoint)
    wait_for(lambda: len(rows(spark, name)) == 30, "the old topic's records", query)
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.delete_topics([topic]).raise_on_error()

        def gone() -> bool:
            try:
                admin.describe_topics([topic])[topic].result()
            except UnknownTopicOrPartitionError:
                return True
            return False

        wait_for(gone, f"topic {topic} to be deleted")
        wait_for(lambda: _created(admin, topic), f"topic {topic} to be created again")
    produce(bootstrap, topic, [f"new-{i}".encode() for i in range(10)])
    return query, name


def _created(admin: AdminClient, topic: str) -> bool:
    from kafkalite import NewTopic
    from kafkalite.errors import TopicExistsError

    error = admin.create_topics([NewTopic(topic, 1)])[topic].error
    if isinstance(error, TopicExistsError):  # still being deleted: the broker refuses until it is gone
        return False
    if error is not None:
        raise error
    return True


def test_a_topic_recreated_under_a_running_query_is_read_from_its_start_without_fail_on_data_loss(
        spark: Any, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    topic = topic_factory(partitions=1)
    query, name = _recreated_under_a_running_query(spark, kafka_broker.bootstrap, topic, tmp_path / "ckpt", False)
    expected = {f"old-{i}" for i in range(30)} | {f"new-{i}" for i in range(10)}
    try:
        wait_for(lambda: values(spark, name) == expected, "the new topic's records", query)
    finally:
        stop(query)
    assert sorted(o for v, _, o in rows(spark, name) if v.startswith("new-")) == list(range(10))


def test_a_topic_recreated_under_a_running_query_fails_it_with_fail_on_data_loss(
        spark: Any, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    topic = topic_factory(partitions=1)
    query, _ = _recreated_under_a_running_query(spark, kafka_broker.bootstrap, topic, tmp_path / "ckpt", True)
    message = failure_of(query)
    assert "option failOnDataLoss=true" in message
    assert (f"topic '{topic}' was deleted and re-created" in message
            or f"partition {topic}-0 no longer exists" in message), message
