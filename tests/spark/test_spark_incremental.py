"""read_kafka_incremental: scheduled runs that crash and re-run still write every record
exactly once to a sink that keeps one result per batch id (real broker, real Spark;
on PySpark 3.5 too, through tools/spark_matrix)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark_kafkalite import read_kafka_incremental

from kafkalite import Producer
from kafkalite.errors import ConfigError

pytestmark = [pytest.mark.broker, pytest.mark.timeout(600)]


def produce(bootstrap: str, topic: str, first: int, count: int, partitions: int) -> None:
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(first, first + count):
            producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode(), partition=i % partitions)
        producer.flush()


def run_once(spark: Any, checkpoint: Path, sink: Path, options: dict[str, str], *, crash: str | None = None) -> Any:
    """One scheduled run: read, write the batch under its id (overwrite: idempotent), commit.
    ``crash`` stops it before the write ("before-write") or after it ("before-commit")."""
    df, commit = read_kafka_incremental(spark, str(checkpoint), options)
    if crash == "before-write":
        return commit
    (df.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
     .write.mode("overwrite").parquet(str(sink / f"batch={commit.batch_id}")))
    if crash != "before-commit":
        commit()
    return commit


def test_runs_that_crash_and_rerun_write_every_record_exactly_once(spark: Any, kafka_broker: Any,
                                                                   topic_factory: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=2)
    checkpoint, sink = tmp_path / "checkpoint", tmp_path / "sink"
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest",
               "maxOffsetsPerTrigger": "70"}
    produce(bootstrap, topic, 0, 150, 2)

    first = run_once(spark, checkpoint, sink, options)
    assert (first.batch_id, first.records) == (0, 70)
    crashed = run_once(spark, checkpoint, sink, options, crash="before-commit")
    assert crashed.batch_id == 1
    produce(bootstrap, topic, 150, 100, 2)  # arrives while the job is down
    again = run_once(spark, checkpoint, sink, options)  # the same batch, the same offsets
    assert (again.batch_id, again.start, again.end) == (1, crashed.start, crashed.end)
    lost_write = run_once(spark, checkpoint, sink, options, crash="before-write")
    assert lost_write.batch_id == 2
    batches = [lost_write]
    while True:
        step = run_once(spark, checkpoint, sink, options)
        batches.append(step)
        assert step.records <= 70
        if step.records == 0:
            break
    assert batches[1].batch_id == 2 and batches[1].end == lost_write.end
    assert [s.batch_id for s in batches[1:]] == list(range(2, 2 + len(batches) - 1))

    written = spark.read.parquet(str(sink)).select("partition", "offset", "value").collect()
    assert sorted(r.value for r in written) == sorted(f"v{i}" for i in range(250))
    assert len({(r.partition, r.offset) for r in written}) == 250  # none twice
    state = json.loads((checkpoint / "kafkalite-offsets.json").read_text())
    assert state["planned"] is None
    assert state["committed"]["offsets"] == {topic: {"0": 125, "1": 125}}


def test_max_bytes_per_trigger_bounds_a_run(spark: Any, kafka_broker: Any, topic_factory: Any,
                                            tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=1)
    with Producer({"bootstrap.servers": bootstrap, "batch.size": 16384, "linger.ms": 0}) as producer:
        for _ in range(200):
            producer.send(topic, bytes(1000))
        producer.flush()
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest",
               "maxBytesPerTrigger": "50000"}
    df, commit = read_kafka_incremental(spark, str(tmp_path / "cp"), options)
    assert 0 < commit.records < 200
    assert df.count() == commit.records
    commit()


def test_bad_input_names_the_option_before_any_task(spark: Any, kafka_broker: Any, topic_factory: Any,
                                                   tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    a, b = topic_factory(partitions=1), topic_factory(partitions=1)
    produce(bootstrap, a, 0, 5, 1)
    checkpoint = str(tmp_path / "cp")
    _, commit = read_kafka_incremental(spark, checkpoint, {"kafka.bootstrap.servers": bootstrap, "subscribe": a,
                                                           "startingOffsets": "earliest"})
    commit()
    sc = spark.sparkContext
    group = f"bad-incremental-{a}"
    sc.setJobGroup(group, "kafkalite bad input")
    try:
        with pytest.raises(ConfigError, match=f"checkpoint .* holds offsets for {a}-0, which option 'subscribe'"):
            read_kafka_incremental(spark, checkpoint, {"kafka.bootstrap.servers": bootstrap, "subscribe": b})
        with pytest.raises(ConfigError, match="option 'endingOffsets' does not apply to read_kafka_incremental"):
            read_kafka_incremental(spark, checkpoint, {"kafka.bootstrap.servers": bootstrap, "subscribe": a,
                                                       "endingOffsets": "latest"})
        with pytest.raises(ConfigError, match="cannot commit batch 0"):
            commit.committed = False
            commit()  # committed already: a second commit of the same batch is refused
        assert list(sc.statusTracker().getJobIdsForGroup(group)) == []
    finally:
        sc.setJobGroup(None, None)  # type: ignore[arg-type]


def test_a_deleted_topic_is_data_loss_unless_fail_on_data_loss_is_false(spark: Any, kafka_broker: Any,
                                                                        topic_factory: Any, tmp_path: Path) -> None:
    from kafkalite import AdminClient
    from kafkalite.errors import OffsetOutOfRangeError

    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=1)
    produce(bootstrap, topic, 0, 5, 1)
    checkpoint = str(tmp_path / "cp")
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    _, commit = read_kafka_incremental(spark, checkpoint, options)
    commit()
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.delete_topics([topic])[topic].result()
        deadline = time.monotonic() + 60  # until the broker's metadata no longer has it
        while admin.describe_topics([topic])[topic].error is None:
            assert time.monotonic() < deadline, f"{topic} still described after its deletion"
            time.sleep(0.2)
    with pytest.raises(OffsetOutOfRangeError, match=f"partitions {topic}-0 no longer exist.*failOnDataLoss=true"):
        read_kafka_incremental(spark, checkpoint, options)
    df, commit = read_kafka_incremental(spark, checkpoint, {**options, "failOnDataLoss": "false"})
    assert (commit.batch_id, commit.records, df.count()) == (1, 0, 0)
    commit()
