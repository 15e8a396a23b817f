"""read_kafka / write_kafka (mapInArrow, every Spark release) against a real broker.

Runs in the project's PySpark and, through tools/spark_matrix, on PySpark 3.5, which
has no Python Data Source API (tests/spark/test_spark_versions.py). Where the API is
there, read_kafka's rows are compared with format("kafkalite")'s too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark_kafkalite import has_datasource_api, read_kafka, read_kafka_stream, write_kafka

from kafkalite import AdminClient, OffsetAndMetadata, Producer, TopicPartition
from kafkalite.errors import ConfigError
from kafkalite.serialization import AvroSerializer
from kafkalite.serialization.arrow import decode_column
from tests.helpers.serdes import avro_record

pytestmark = [pytest.mark.broker, pytest.mark.timeout(600)]

CLICK = avro_record("Click", [("page", "string"), ("ms", "long")], namespace="web")


def rows_of(df: Any) -> list[tuple[Any, ...]]:
    """(topic, partition, offset, key, value, headers) sorted by topic, partition, offset."""
    out = []
    for r in df.collect():
        d = r.asDict()
        headers = d.get("headers")
        out.append((d["topic"], d["partition"], d["offset"], d["key"], d["value"],
                    None if headers is None else [tuple(h) for h in headers]))
    return sorted(out, key=lambda t: (t[0], t[1], t[2]))


def test_write_kafka_then_read_kafka_round_trip_with_every_batch_option(spark: Any, kafka_broker: Any,
                                                                        topic_factory: Any) -> None:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        StringType,
        StructField,
        StructType,
    )

    bootstrap = kafka_broker.bootstrap
    a = topic_factory(partitions=3)
    b = topic_factory(partitions=2)
    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    schema = StructType([StructField("topic", StringType()), StructField("partition", IntegerType()),
                         StructField("key", StringType()), StructField("value", BinaryType()),
                         StructField("headers", ArrayType(header)), StructField("ignored", StringType())])
    rows = []
    for i in range(300):
        topic, parts = (a, 3) if i % 2 else (b, 2)
        rows.append((topic, (i // 2) % parts, None if i % 9 == 0 else f"k{i}",
                     None if i % 31 == 7 else f"value-{i}".encode() * (i % 5),
                     None if i % 4 == 0 else [("trace", f"{i}".encode()), ("x", None)][: 1 + i % 2], "zzz"))
    written = write_kafka(spark.createDataFrame(rows, schema).repartition(3), {"kafka.bootstrap.servers": bootstrap})
    assert written == 300

    # subscribe + includeHeaders: every row written, with its headers, key and partition.
    everything = read_kafka(spark, {"kafka.bootstrap.servers": bootstrap, "subscribe": f"{a},{b}",
                                    "includeHeaders": "true"})
    assert everything.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>")
    got = rows_of(everything)
    assert sorted(((t, p, None if k is None else bytes(k).decode(), None if v is None else bytes(v),
                    None if h is None else [(hk, None if hv is None else bytes(hv)) for hk, hv in h])
                   for t, p, _, k, v, h in got), key=repr) == sorted(
        ((t, p, k, v, None if hs is None else [(hk, hv) for hk, hv in hs]) for t, p, k, v, hs, _ in rows), key=repr)
    if has_datasource_api():  # the same rows as the data source's
        source = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", f"{a},{b}").option("includeHeaders", "true").load())
        assert rows_of(source) == got

    # assign + JSON offsets + minPartitions: exactly the asked ranges, split into tasks.
    ranged = read_kafka(spark, {"kafka.bootstrap.servers": bootstrap, "assign": json.dumps({a: [0, 2]}),
                                "startingOffsets": json.dumps({a: {"0": 5, "2": -2}}),
                                "endingOffsets": json.dumps({a: {"0": 40, "2": -1}}), "minPartitions": "6"})
    assert ranged.rdd.getNumPartitions() >= 6
    offsets = sorted((r.partition, r.offset) for r in ranged.select("partition", "offset").collect())
    assert offsets == [(0, o) for o in range(5, 40)] + [(2, o) for o in range(50)]

    # subscribePattern; the timestamp options are in the JVM parity test (test_spark_jvm_parity.py).
    assert read_kafka(spark, {"kafka.bootstrap.servers": bootstrap, "subscribePattern": f"{a}|{b}"}).count() == 300

    # startingOffsets=group: from the offsets a consumer group committed.
    group = f"frames-{a}"
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.alter_consumer_group_offsets(group, {TopicPartition(b, 0): OffsetAndMetadata(60),
                                                   TopicPartition(b, 1): OffsetAndMetadata(20)}).raise_on_error()
    from_group = read_kafka(spark, {"kafka.bootstrap.servers": bootstrap, "subscribe": b,
                                    "startingOffsets": "group", "kafka.group.id": group})
    counts = {p: c for p, c in ((r.partition, r["count"]) for r in from_group.groupBy("partition").count().collect())}
    assert counts == {0: 75 - 60, 1: 75 - 20}


def test_bad_input_fails_on_the_driver_before_any_task(spark: Any, kafka_broker: Any, topic_factory: Any) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = topic_factory(partitions=1)
    sc = spark.sparkContext
    group = f"bad-input-{topic}"
    sc.setJobGroup(group, "kafkalite bad input")
    try:
        no_value = spark.createDataFrame([("k", "v")], "key string, payload string")
        with pytest.raises(ConfigError, match="needs a 'value' column"):
            write_kafka(no_value, {"kafka.bootstrap.servers": bootstrap, "topic": topic})
        with pytest.raises(ConfigError, match="no topic to write to"):
            write_kafka(no_value.selectExpr("payload AS value"), {"kafka.bootstrap.servers": bootstrap})
        with pytest.raises(ConfigError, match="option 'maxOffsetsPerTrigger'.*read_kafka_incremental"):
            read_kafka(spark, {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                               "maxOffsetsPerTrigger": "10"})
        with pytest.raises(ConfigError, match="exactly one of the options 'subscribe'"):
            read_kafka(spark, {"kafka.bootstrap.servers": bootstrap})
        with pytest.raises(TypeError, match="options must be a dict"):
            read_kafka(spark, [("subscribe", topic)])  # type: ignore[arg-type]
        if has_datasource_api():
            stream = read_kafka_stream(spark, {"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
            assert stream.isStreaming
        else:
            with pytest.raises(ConfigError, match=r"Spark 4\.0.*read_kafka_incremental.*format\('kafka'\)"):
                read_kafka_stream(spark, {"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
            with pytest.raises(ImportError, match="Python Data Source API.*read_kafka"):
                from pyspark_kafkalite import KafkaLiteDataSource  # noqa: F401
        assert list(sc.statusTracker().getJobIdsForGroup(group)) == []
    finally:
        sc.setJobGroup(None, None)  # type: ignore[arg-type]


def test_confluent_avro_column_helpers_decode_read_kafka_values(spark: Any, kafka_broker: Any, topic_factory: Any,
                                                                sr_conf: dict) -> None:
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    from kafkalite.serialization.arrow import avro_to_arrow_schema

    topic = topic_factory(1)
    serializer = AvroSerializer(CLICK, sr_conf)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as producer:
        for i in range(5):
            producer.send(topic, serializer.serialize(topic, {"page": f"/p{i}", "ms": i * 10}))
        producer.flush()
    df = read_kafka(spark, {"kafka.bootstrap.servers": kafka_broker.bootstrap, "subscribe": topic})
    out = from_arrow_schema(pa.schema([pa.field("offset", pa.int64()), pa.field("value", avro_to_arrow_schema(CLICK))]))
    conf = dict(sr_conf)

    def decode(batches: Any) -> Any:
        for batch in batches:
            yield decode_column(batch, "value", reader_schema=CLICK, registry=conf)

    rows = df.select("offset", "value").mapInArrow(decode, out).orderBy("offset").collect()
    assert [r.value.asDict() for r in rows] == [{"page": f"/p{i}", "ms": i * 10} for i in range(5)]
