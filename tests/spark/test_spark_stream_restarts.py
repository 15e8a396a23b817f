"""A processing-time streaming query with maxOffsetsPerTrigger, fed while it runs, stopped
and restarted from its checkpoint twice: the parquet sink holds every acknowledged record
exactly once, and no micro-batch is larger than the limit.

This is the shape that failed on PySpark 4.0 (``OffsetOutOfRangeError ... went back
from offset X to Y``): PySpark < 4.2 calls ``latestOffset()`` without a start and asks
for ``initialOffset()`` only after the first ``latestOffset()``, and the reader used
to rate-limit the second batch from the initial offsets instead of the first batch's
end (see ``pyspark_kafkalite/ledger.py``). The test runs in every PySpark of the
version matrix (``tools/spark_matrix/matrix.py``).
"""

from __future__ import annotations

import ast
import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kafkalite import Consumer, Producer, TopicPartition
from tests.spark.streams import started

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(600)]

PARTITIONS = 4
RATE = 1000  # records/s: sustained next to Spark and the broker on a busy 2-core machine
LIMIT = 2000  # maxOffsetsPerTrigger; above RATE per 1 s trigger, so the query catches up


class SteadyProducer(threading.Thread):
    """Writes ``id`` values round-robin over the partitions at RATE until stopped and
    remembers which ids the broker acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.topic = topic
        self.stopping = threading.Event()
        self.acked: set[int] = set()
        self.failed: list[BaseException] = []
        self.sent = 0
        self._lock = threading.Lock()

    def _done(self, record_id: int) -> Any:
        def callback(_metadata: Any, error: BaseException | None) -> None:
            with self._lock:
                if error is None:
                    self.acked.add(record_id)
                else:
                    self.failed.append(error)
        return callback

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def run(self) -> None:
        with Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5}) as producer:
            began = time.monotonic()
            while not self.stopping.is_set():
                due = int((time.monotonic() - began) * RATE)
                while self.sent < due:
                    i = self.sent
                    producer.send(self.topic, str(i).encode(), partition=i % PARTITIONS, callback=self._done(i))
                    self.sent += 1
                self.stopping.wait(0.02)  # pacing: the next slice of the rate
            producer.flush(60)


def wait_for(condition: Any, what: str, query: Any = None, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if query is not None and query.exception() is not None:
            raise AssertionError(f"the query failed while waiting for {what}: {query.exception()}")
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def start_query(spark: Any, bootstrap: str, topic: str, sink: Path, checkpoint: Path) -> Any:
    stream = (spark.readStream.format("kafkalite")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(LIMIT))
              .load())
    return started(lambda: stream.selectExpr("CAST(value AS STRING) AS id", "partition", "offset")
                   .writeStream.format("parquet")
                   .option("path", str(sink))
                   .option("checkpointLocation", str(checkpoint))
                   .trigger(processingTime="1 second")
                   .start())


def offsets_of(end: Any) -> Any:
    """A progress report's endOffset: a dict, JSON, or (PySpark 4.0.2 / 4.0.3) the repr
    of a dict."""
    if not isinstance(end, str):
        return end
    try:
        return json.loads(end)
    except ValueError:
        return ast.literal_eval(end)


def batches_with_data(query: Any) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def run_for_batches(query: Any, count: int, sizes: list[int]) -> None:
    """Let the query complete ``count`` micro-batches with data, then stop it (possibly
    in the middle of the next one: the restart re-runs an uncommitted batch)."""
    wait_for(lambda: len(batches_with_data(query)) >= count, f"{count} micro-batches", query)
    query.stop()
    assert query.exception() is None, query.exception()
    sizes += batches_with_data(query)


def test_processing_time_with_max_offsets_survives_restarts_exactly_once(
        spark: Any, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=PARTITIONS)
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"
    producer = SteadyProducer(bootstrap, topic)
    producer.start()
    sizes: list[int] = []
    try:
        # A backlog above the limit before the query starts: batch 0 must be bounded too.
        wait_for(lambda: producer.acked_count() >= 2 * LIMIT, "a backlog of records")
        for batches in (2, 2):
            query = start_query(spark, bootstrap, topic, sink, checkpoint)
            run_for_batches(query, batches, sizes)
        query = start_query(spark, bootstrap, topic, sink, checkpoint)
        wait_for(lambda: len(batches_with_data(query)) >= 1, "a micro-batch after the second restart", query)
        # enough records for more than five full micro-batches in all (the check below), however
        # quickly the restarts went on a busy machine
        wait_for(lambda: producer.acked_count() > 5 * LIMIT, "more than five micro-batches of records", query)
    finally:
        producer.stopping.set()
        producer.join(90)
    assert not producer.is_alive() and not producer.failed, producer.failed
    with Consumer({"bootstrap.servers": bootstrap}) as consumer:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    expected_end = {str(tp.partition): off for tp, off in ends.items()}

    def caught_up() -> bool:
        progress = query.lastProgress
        if not progress:
            return False
        return offsets_of(progress["sources"][0]["endOffset"]) == {topic: expected_end}

    wait_for(caught_up, "the query to reach the end of the topic", query, timeout=240)
    query.stop()
    assert query.exception() is None, query.exception()
    sizes += batches_with_data(query)

    assert max(sizes) <= LIMIT, f"a micro-batch exceeded maxOffsetsPerTrigger={LIMIT}: {sizes}"
    ids = Counter(int(r.id) for r in spark.read.parquet(str(sink)).select("id").collect())
    duplicates = {i: n for i, n in ids.items() if n > 1}
    missing = producer.acked - set(ids)
    assert not duplicates, f"{len(duplicates)} ids written more than once, e.g. {sorted(duplicates)[:5]}"
    assert not missing, f"{len(missing)} acknowledged ids missing, e.g. {sorted(missing)[:5]}"
    assert set(ids) == producer.acked
    assert len(producer.acked) == sum(expected_end.values()) > 5 * LIMIT
