"""Writes with format("kafkalite") (batch) and what bad input does (local[2], real broker)."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite import Consumer, TopicPartition

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]


def read_back(bootstrap: str, topic: str, partitions: int, expected: int) -> list[Any]:
    """Everything in ``topic``, read with a kafkalite Consumer (not through Spark)."""
    out: list[Any] = []
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign(tps)
        for _ in range(120):
            out.extend(consumer.poll(0.5))
            if len(out) >= expected:
                break
    return out


def test_written_rows_read_back_by_kafkalite_equal_the_dataframe(spark: Any, kafka_broker: Any,
                                                                  topic_factory: Any) -> None:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        StringType,
        StructField,
        StructType,
    )

    a = topic_factory(partitions=3)
    b = topic_factory(partitions=2)
    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    schema = StructType([StructField("topic", StringType()), StructField("partition", IntegerType()),
                         StructField("key", StringType()), StructField("value", BinaryType()),
                         StructField("headers", ArrayType(header)), StructField("ignored", StringType())])
    rows = []
    for i in range(400):
        topic, parts = (a, 3) if i % 2 else (b, 2)
        rows.append((topic, i % parts, None if i % 9 == 0 else f"k{i}",
                     None if i % 31 == 7 else f"value-{i}".encode() * (i % 5),
                     None if i % 4 == 0 else [("trace", f"{i}".encode()), ("x", None)][: 1 + i % 2], "zzz"))
    df = spark.createDataFrame(rows, schema).repartition(4)
    (df.write.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
     .mode("append").save())

    got = []
    for topic, parts in ((a, 3), (b, 2)):
        got += [(r.topic, r.partition, None if r.key is None else r.key.decode(), r.value,
                 [tuple(h) for h in r.headers] or None)
                for r in read_back(kafka_broker.bootstrap, topic, parts, 200)]
    want = [(t, p, k, v, [tuple(h) for h in hs] if hs else None) for t, p, k, v, hs, _ in rows]
    assert sorted(got, key=repr) == sorted(want, key=repr)

    # The 'topic' option overrides the column; keys without a partition go where Java puts them.
    c = topic_factory(partitions=4)
    (df.select("topic", "key", "value").write.format("kafkalite")
     .option("kafka.bootstrap.servers", kafka_broker.bootstrap).option("topic", c).mode("append").save())
    back = spark.read.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap) \
        .option("subscribe", c).load().collect()
    assert sorted(((r.key, r.value) for r in back), key=repr) == sorted(
        ((None if k is None else k.encode(), v) for _, _, k, v, _, _ in rows), key=repr)
    from kafkalite.protocol.record_codec import murmur2
    for r in back:
        if r.key is not None:
            assert r.partition == (murmur2(r.key) & 0x7FFFFFFF) % 4


def test_bad_writes_fail_naming_the_column_or_the_kafka_error(spark: Any, kafka_broker: Any,
                                                                topic_factory: Any) -> None:
    topic = topic_factory(partitions=1)

    def write(df: Any, **options: str) -> None:
        w = df.write.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
        for k, v in options.items():
            w = w.option(k, v)
        w.mode("append").save()

    with pytest.raises(Exception, match="needs a 'value' column"):
        write(spark.createDataFrame([("k",)], "key string"), topic=topic)
    with pytest.raises(Exception, match="column 'value' must be binary or string"):
        write(spark.createDataFrame([(1,)], "value int"), topic=topic)
    with pytest.raises(Exception, match="column 'partition' must be int"):
        write(spark.createDataFrame([("v", 1)], "value string, partition bigint"), topic=topic)
    with pytest.raises(Exception, match="set the 'topic' option or add a 'topic' column"):
        write(spark.createDataFrame([("v",)], "value string"))
    with pytest.raises(Exception, match=r"option 'kafka\.linger\.msec' is not a Kafka client setting; did you mean"):
        write(spark.createDataFrame([("v",)], "value string"), topic=topic, **{"kafka.linger.msec": "5"})
    # A Kafka error at run time fails the task, naming the error class.
    with pytest.raises(Exception, match="RecordTooLargeError"):
        write(spark.createDataFrame([(b"x" * 200_000,)], "value binary"), topic=topic,
              **{"kafka.max.request.size": "100000"})
    with pytest.raises(Exception, match="UnknownTopicOrPartition"):
        write(spark.createDataFrame([("v",)], "value string"), topic=f"{topic}-missing",
              **{"kafka.max.block.ms": "2000"})


def test_bad_read_options_fail_naming_the_option(spark: Any, kafka_broker: Any, topic_factory: Any) -> None:
    topic = topic_factory(partitions=2)

    def load(**options: str) -> Any:
        r = spark.read.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
        for k, v in options.items():
            r = r.option(k, v)
        return r.load()

    with pytest.raises(Exception, match="exactly one of the options 'subscribe', 'subscribePattern' or 'assign'"):
        load()
    with pytest.raises(Exception, match="got subscribe, assign"):
        load(subscribe=topic, assign=f'{{"{topic}": [0]}}')
    with pytest.raises(Exception, match="option 'startingOffsets' is not valid JSON"):
        load(subscribe=topic, startingOffsets='{"x": {0: 1}')
    with pytest.raises(Exception, match="option 'startingOffsets' must give every partition"):
        load(subscribe=topic, startingOffsets=f'{{"{topic}": {{"0": 0}}}}').collect()
    with pytest.raises(Exception, match="startingOffsets' cannot be 'latest' for a batch"):
        load(subscribe=topic, startingOffsets="latest").collect()
    with pytest.raises(Exception, match=f"option 'assign' names topic '{topic}-nope'"):
        load(assign=f'{{"{topic}-nope": [0]}}').collect()
    with pytest.raises(Exception, match="names partition 7"):
        load(assign=f'{{"{topic}": [7]}}').collect()
    with pytest.raises(Exception, match="option 'kafka.auto.offset.reset' is not supported: set startingOffsets instead"):
        load(subscribe=topic, **{"kafka.auto.offset.reset": "earliest"})
    # Subscribing to a topic that does not exist reads nothing (as Spark's JVM connector).
    assert load(subscribe=f"{topic}-absent").count() == 0


def test_save_modes_the_default_is_refused_by_spark_overwrite_by_kafkalite_append_writes(
        spark: Any, kafka_broker: Any, topic_factory: Any) -> None:
    """Moving a job from format("kafka") (whose default mode appends) needs .mode("append"):
    PySpark refuses ErrorIfExists and Ignore for every Python data source before kafkalite
    runs (in every release 4.0.0 .. 4.3.0, checked by the version matrix); Overwrite
    reaches kafkalite, which names the mode to write."""
    topic = topic_factory(partitions=1)
    df = spark.createDataFrame([("k", "v")], "key string, value string")

    def writer() -> Any:
        return df.write.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap) \
            .option("topic", topic)

    with pytest.raises(Exception, match=r'UNSUPPORTED_DATA_SOURCE_SAVE_MODE.*"ErrorIfExists" mode'):
        writer().save()
    with pytest.raises(Exception, match=r'UNSUPPORTED_DATA_SOURCE_SAVE_MODE.*"Ignore" mode'):
        writer().mode("ignore").save()
    with pytest.raises(Exception, match=r'Kafka topics are append-only\. Write with \.mode\("append"\)'):
        writer().mode("overwrite").save()
    writer().mode("append").save()
    back = spark.read.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap) \
        .option("subscribe", topic).load().collect()
    assert [(r.key, r.value) for r in back] == [(b"k", b"v")]  # only the append wrote
