"""The Avro <-> Arrow column helpers inside Spark's mapInArrow, on records read with
format("kafkalite") from the real broker and a real Schema Registry."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from kafkalite import Producer
from kafkalite.serialization import AvroDeserializer, AvroSerializer
from kafkalite.serialization.arrow import avro_to_arrow_schema, decode_column, encode_column
from tests.helpers.serdes import avro_record

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]

V1 = avro_record("Click", [("page", "string"), ("ms", "long")], namespace="web")
V2 = avro_record("Click", [("page", "string"), ("ms", "long"), ("referrer", ["null", "string"], None)],
                 namespace="web")


def test_decode_values_of_two_schema_versions_in_map_in_arrow(spark: Any, kafka_broker: Any, topic_factory: Any,
                                                              sr_conf: dict) -> None:
    from pyspark.sql.pandas.types import from_arrow_schema

    topic = topic_factory(1)
    old, new = AvroSerializer(V1, sr_conf), AvroSerializer(V2, sr_conf)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as producer:
        producer.send(topic, old.serialize(topic, {"page": "/", "ms": 120}))
        producer.send(topic, new.serialize(topic, {"page": "/docs", "ms": 80, "referrer": "/"}))
        producer.send(topic, None)  # a tombstone: a null struct

    df = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
          .option("subscribe", topic).option("startingOffsets", "earliest").load())
    out = from_arrow_schema(pa.schema([pa.field("offset", pa.int64()), pa.field("value", avro_to_arrow_schema(V2))]))
    conf = dict(sr_conf)

    def decode(batches: Any) -> Any:
        for batch in batches:
            yield decode_column(batch, "value", reader_schema=V2, registry=conf)

    rows = df.select("offset", "value").mapInArrow(decode, out).orderBy("offset").collect()
    assert [r.value.asDict() if r.value is not None else None for r in rows] == [
        {"page": "/", "ms": 120, "referrer": None}, {"page": "/docs", "ms": 80, "referrer": "/"}, None]


def test_encode_struct_column_in_map_in_arrow(spark: Any, unique_topic: str, sr_conf: dict) -> None:
    from pyspark.sql.types import BinaryType, StructField, StructType

    df = spark.createDataFrame([("/a", 1), ("/b", 2)], "page string, ms long")
    nested = df.selectExpr("named_struct('page', page, 'ms', ms) AS value")
    conf = dict(sr_conf)
    subject = f"{unique_topic}-value"

    def encode(batches: Any) -> Any:
        for batch in batches:
            yield encode_column(batch, "value", V1, registry=conf, subject=subject)

    out = StructType([StructField("value", BinaryType())])
    encoded = [r.value for r in nested.mapInArrow(encode, out).collect()]
    reader = AvroDeserializer(sr_conf)
    assert sorted((d["page"], d["ms"]) for d in (reader.deserialize(unique_topic, bytes(b)) for b in encoded)) == [
        ("/a", 1), ("/b", 2)]
