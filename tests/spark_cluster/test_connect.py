"""format("kafkalite") through Spark Connect: a server started from the PySpark wheel's
own jars (its Python has kafkalite installed: the data source runs there), a client
session with ``SparkSession.builder.remote("sc://...")``; batch and streaming."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite import Producer
from kafkalite.testing.spark import SparkConnectServer
from tests.spark_cluster.test_cluster import read_all

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkConnectServer]:
    with SparkConnectServer("local[2]", work_dir=tmp_path_factory.mktemp("spark-connect")) as server:
        yield server


@pytest.fixture()
def remote(connect_server: SparkConnectServer) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = SparkSession.builder.remote(connect_server.url).create()
    yield session
    session.stop()


def test_batch_read_and_write_through_spark_connect(remote: Any, kafka_broker: Any, topic_factory: Any) -> None:
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    assert isinstance(remote, RemoteSession)  # a Spark Connect client, no JVM in this process
    bootstrap = kafka_broker.bootstrap
    source, sink = topic_factory(partitions=3), topic_factory(partitions=1)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(3000):
            producer.send(source, f"v{i}".encode(), key=f"k{i % 10}".encode(), partition=i % 3)
    df = (remote.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", source).load())
    assert df.columns[:5] == ["key", "value", "topic", "partition", "offset"]
    assert df.count() == 3000
    per_partition = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    assert per_partition == {0: 1000, 1: 1000, 2: 1000}
    (df.where("partition = 1").selectExpr("key", "value").write.format("kafkalite")
     .option("kafka.bootstrap.servers", bootstrap).option("topic", sink).mode("append").save())
    written = Counter((r.key, r.value) for r in read_all(bootstrap, sink, 1))
    assert written == Counter((f"k{i % 10}".encode(), f"v{i}".encode()) for i in range(1, 3000, 3))


def test_streaming_through_spark_connect(remote: Any, kafka_broker: Any, topic_factory: Any,
                                         tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink = topic_factory(partitions=2), topic_factory(partitions=1)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(500):
            producer.send(source, f"e{i}".encode(), partition=i % 2)
    stream = (remote.readStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "100").load())
    query = (stream.selectExpr("value").writeStream.format("kafkalite")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", sink)
             .option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="1 second").start())
    try:
        deadline = time.monotonic() + 240
        while sum(p.numInputRows for p in query.recentProgress) < 500:
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, query.recentProgress[-3:]
            time.sleep(0.5)
        # maxOffsetsPerTrigger bounds every micro-batch, also through Spark Connect.
        assert max(p.numInputRows for p in query.recentProgress) <= 100
    finally:
        query.stop()
    assert Counter(r.value for r in read_all(bootstrap, sink, 1)) == Counter(f"e{i}".encode() for i in range(500))
