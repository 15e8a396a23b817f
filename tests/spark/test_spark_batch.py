"""Batch reads with format("kafkalite") against the real broker (local[2])."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pyspark
import pytest

from kafkalite import AdminClient, Producer, TopicPartition

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]

# Explicit timestamps, recent enough for the broker's retention (7 days by default).
BASE_TS = (int(time.time()) - 3600) * 1000
#: PySpark >= 4.1 pushes filters into Python sources (spark.sql.python.filterPushdown.enabled).
FILTER_PUSHDOWN = tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 1)


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int, *, compression: str = "none",
            tag: str = "") -> list[tuple[Any, ...]]:
    """Write records with keys (some null), values (some empty, some null), headers
    (some absent, some repeated) and explicit timestamps; return what was written as
    (topic, partition, offset, key, value, timestamp_ms, headers)."""
    written = []
    with Producer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 5}) as producer:
        futures = []
        for p in range(partitions):
            for i in range(per_partition):
                key = None if i % 11 == 0 else f"{tag}k{p}-{i}".encode()
                value = None if i % 17 == 5 else (b"" if i % 13 == 3 else f"{tag}v{p}-{i}".encode() * (1 + i % 4))
                headers = [] if i % 3 == 0 else [("h", f"{i}".encode()), ("h", None), ("ü", b"\x00\xff")][: 1 + i % 3]
                ts = BASE_TS + p * 1000 + i
                futures.append((futures_send(producer, topic, p, key, value, ts, headers), key, value, ts, headers))
        producer.flush()
        for future, key, value, ts, headers in futures:
            md = future.result(timeout=30)
            written.append((md.topic, md.partition, md.offset, key, value, ts,
                            [tuple(h) for h in headers] or None))
    return written


def futures_send(producer: Producer, topic: str, p: int, key: Any, value: Any, ts: int, headers: Any) -> Any:
    return producer.send(topic, value, key=key, partition=p, timestamp=ts, headers=headers)


def as_tuples(rows: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for r in rows:
        ts_ms = int((r.timestamp.replace(tzinfo=dt.timezone.utc)
                     - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)).total_seconds() * 1000)
        headers = None if r.headers is None else [(h.key, h.value) for h in r.headers]
        out.append((r.topic, r.partition, r.offset, r.key, r.value, ts_ms, headers))
    return sorted(out, key=lambda t: (t[0], t[1], t[2]))


def test_batch_read_of_several_topics_equals_what_was_produced(spark: Any, kafka_broker: Any,
                                                                 topic_factory: Any) -> None:
    a = topic_factory(partitions=3)
    b = topic_factory(partitions=2)
    written = produce(kafka_broker.bootstrap, a, 3, 120) + produce(kafka_broker.bootstrap, b, 2, 90,
                                                                     compression="lz4", tag="b")
    # No spark.dataSource.register(): PySpark finds pyspark_kafkalite by itself.
    df = (spark.read.format("kafkalite")
          .option("kafka.bootstrap.servers", kafka_broker.bootstrap)
          .option("subscribe", f"{a},{b}")
          .option("includeHeaders", "true")
          .load())
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>")
    rows = df.collect()
    assert as_tuples(rows) == sorted(written, key=lambda t: (t[0], t[1], t[2]))
    assert {r.timestampType for r in rows} == {0}

    # Without includeHeaders: Spark's 7 columns; the same records.
    plain = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
             .option("subscribePattern", f"{a}|{b}").load())
    assert plain.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert plain.count() == len(written)


def test_offsets_timestamps_splitting_and_pushed_filters(spark: Any, kafka_broker: Any, topic_factory: Any) -> None:
    topic = topic_factory(partitions=2)
    written = produce(kafka_broker.bootstrap, topic, 2, 100)
    by_tp = {(t[1], t[2]): t for t in written}
    def base() -> Any:  # a DataFrameReader keeps its options: a fresh one per query
        return spark.read.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap)

    # JSON offsets (-2 earliest / -1 latest), assign, range splitting.
    df = (base().option("assign", f'{{"{topic}": [0, 1]}}')
          .option("startingOffsets", f'{{"{topic}": {{"0": 10, "1": -2}}}}')
          .option("endingOffsets", f'{{"{topic}": {{"0": 30, "1": -1}}}}')
          .option("maxRecordsPerPartition", "7").load())
    assert df.rdd.getNumPartitions() == 3 + 15  # 20 records in 7s, 100 records in 7s
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(10, 30)] + [(1, o) for o in range(100)]

    assert base().option("subscribe", topic).option("minPartitions", "5").load().rdd.getNumPartitions() >= 5

    # Timestamps: partition 0 has BASE_TS + i, partition 1 BASE_TS + 1000 + i.
    by_ts = (base().option("subscribe", topic)
             .option("startingOffsetsByTimestamp", f'{{"{topic}": {{"0": {BASE_TS + 50}, "1": {BASE_TS + 1090}}}}}')
             .load())
    assert sorted((r.partition, r.offset) for r in by_ts.collect()) == \
        [(0, o) for o in range(50, 100)] + [(1, o) for o in range(90, 100)]
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy"):  # nothing that late in p0
        base().option("subscribe", topic).option("startingTimestamp", str(BASE_TS + 1095)).load().collect()
    one_ts = (base().option("subscribe", topic).option("startingTimestamp", str(BASE_TS + 1095))
              .option("startingOffsetsByTimestampStrategy", "latest").load())
    assert sorted((r.partition, r.offset) for r in one_ts.collect()) == [(1, o) for o in range(95, 100)]

    # Filters on partition, offset and timestamp: pushed into the ranges, same answer as Spark's.
    df = base().option("subscribe", topic).load()
    assert df.rdd.getNumPartitions() == 2
    # Pushed down: one range planned (PySpark 4.0 has no pushdown: Spark filters both ranges).
    assert df.filter("partition = 1").rdd.getNumPartitions() == (1 if FILTER_PUSHDOWN else 2)
    picked = df.filter(f"partition = 1 AND offset >= 40 AND offset < 45 AND topic = '{topic}'").collect()
    assert sorted(r.offset for r in picked) == [40, 41, 42, 43, 44]
    assert all(r.value == by_tp[(1, r.offset)][4] for r in picked)
    since = dt.datetime.fromtimestamp((BASE_TS + 1097) / 1000, tz=dt.timezone.utc)
    late = df.filter(df.timestamp >= since).collect()
    assert sorted((r.partition, r.offset) for r in late) == [(1, 97), (1, 98), (1, 99)]
    assert df.filter("partition IN (0) AND offset IN (3, 97)").count() == 2

    # PySpark's default (pushdown off) must work too: same answer, Spark does the filtering.
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        plain = base().option("subscribe", topic).load().filter("partition = 1 AND offset < 3")
        assert sorted(r.offset for r in plain.collect()) == [0, 1, 2]
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    assert df.filter("topic = 'no-such-topic'").count() == 0


def test_data_loss_fails_naming_the_option_or_reads_what_is_left(spark: Any, kafka_broker: Any,
                                                                  topic_factory: Any) -> None:
    topic = topic_factory(partitions=1)
    produce(kafka_broker.bootstrap, topic, 1, 60)
    with AdminClient({"bootstrap.servers": kafka_broker.bootstrap}) as admin:
        admin.delete_records({TopicPartition(topic, 0): 40}).all()
    reader = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
              .option("subscribe", topic).option("startingOffsets", f'{{"{topic}": {{"0": 10}}}}'))
    with pytest.raises(Exception, match="failOnDataLoss") as info:
        reader.load().collect()
    assert "10..39" in str(info.value)
    rows = reader.option("failOnDataLoss", "false").load().collect()
    assert sorted(r.offset for r in rows) == list(range(40, 60))
