"""The Protobuf and JSON Schema <-> Arrow column helpers inside Spark's mapInArrow, on
records read with format("kafkalite") from the real broker and a real Schema Registry
(as tests/spark/test_spark_avro_columns.py does for Avro): two schema versions in one
column, tombstones, bad bytes failing with the Kafka record named, and encoding."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from kafkalite import Producer
from kafkalite.serialization import (
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
)
from kafkalite.serialization.arrow_json import (
    decode_json_column,
    encode_json_column,
    json_schema_to_arrow_schema,
)
from kafkalite.serialization.arrow_protobuf import (
    decode_protobuf_column,
    encode_protobuf_column,
    protobuf_to_arrow_schema,
)
from tests.helpers.schemas import user_pb2, user_v2_pb2

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]

CLICK_V1 = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Click", "type": "object",
            "properties": {"page": {"type": "string"}, "ms": {"type": "integer"}}, "required": ["page"]}
# Another title: with the record strategy each version has a subject of its own (a
# registry's compatibility rule may call an added property a narrowing of v1's open model).
CLICK_V2 = {**CLICK_V1, "title": "ClickV2",
            "properties": {**CLICK_V1["properties"], "referrer": {"type": ["string", "null"]}}}


def _read(spark: Any, bootstrap: str, topic: str) -> Any:
    return (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load())


def _out(spark_type: Any) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(pa.schema([pa.field("offset", pa.int64()), pa.field("value", spark_type)]))


def test_protobuf_values_of_two_versions_decode_in_map_in_arrow(spark: Any, kafka_broker: Any,
                                                                topic_factory: Any, sr_conf: dict) -> None:
    topic = topic_factory(1)
    record_strategy = {**sr_conf, "subject.name.strategy": "record"}  # v1 and v2 are different packages
    new, old = ProtobufSerializer(user_v2_pb2.User, record_strategy), ProtobufSerializer(user_pb2.User, record_strategy)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as producer:
        producer.send(topic, new.serialize(topic, user_v2_pb2.User(name="ada", age=36, email="ada@x")))
        producer.send(topic, old.serialize(topic, user_pb2.User(name="bob", age=7)))
        producer.send(topic, None)  # a tombstone: a null struct
    conf = dict(sr_conf)

    # No generated class on the executors: each task builds the type from the registry
    # (the first record's, v2 here; the v1 record parses into it by field number).
    def decode(batches: Any) -> Any:
        for batch in batches:
            yield decode_protobuf_column(batch.select(["offset", "value"]), "value", registry=conf)

    rows = (_read(spark, kafka_broker.bootstrap, topic).select("offset", "value")
            .mapInArrow(decode, _out(protobuf_to_arrow_schema(user_v2_pb2.User))).orderBy("offset").collect())
    assert [r.value.asDict() if r.value is not None else None for r in rows] == [
        {"name": "ada", "age": 36, "email": "ada@x"}, {"name": "bob", "age": 7, "email": ""}, None]


def test_protobuf_bad_bytes_fail_naming_topic_partition_offset(spark: Any, kafka_broker: Any, topic_factory: Any,
                                                               sr_conf: dict) -> None:
    topic = topic_factory(1)
    serializer = ProtobufSerializer(user_v2_pb2.User, {**sr_conf, "subject.name.strategy": "record"})
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as producer:
        producer.send(topic, serializer.serialize(topic, user_v2_pb2.User(name="ok")))
        producer.send(topic, b"\x00\x00\x00\x00\x01\x00\xff\xff\xff")  # framed, but no valid Protobuf
    conf = dict(sr_conf)

    def decode(batches: Any) -> Any:
        for batch in batches:
            yield decode_protobuf_column(batch, "value", registry=conf).select(["offset", "value"])

    df = _read(spark, kafka_broker.bootstrap, topic)
    with pytest.raises(Exception) as failed:
        df.mapInArrow(decode, _out(protobuf_to_arrow_schema(user_v2_pb2.User))).collect()
    text = str(failed.value)
    assert "row 1 of the Protobuf column" in text and f"topic '{topic}' partition 0, offset 1" in text, text[-3000:]


def test_json_values_of_two_versions_decode_in_map_in_arrow(spark: Any, kafka_broker: Any, topic_factory: Any,
                                                            sr_conf: dict) -> None:
    topic = topic_factory(1)
    by_title = {**sr_conf, "subject.name.strategy": "record"}
    old, new = JsonSchemaSerializer(CLICK_V1, by_title), JsonSchemaSerializer(CLICK_V2, by_title)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as producer:
        producer.send(topic, old.serialize(topic, {"page": "/", "ms": 120}))
        producer.send(topic, new.serialize(topic, {"page": "/docs", "ms": 80, "referrer": "/"}))
        producer.send(topic, None)
        producer.send(topic, b'\x00\x00\x00\x00\x01{"page": "/x"')  # framed, but cut-off JSON
    conf = dict(sr_conf)
    reader = json.dumps(CLICK_V2)

    def decode(validate: bool) -> Any:
        def run(batches: Any) -> Any:
            for batch in batches:
                yield decode_json_column(batch, "value", reader, registry=conf, validate=validate).select(
                    ["offset", "value"])
        return run

    out = _out(json_schema_to_arrow_schema(CLICK_V2))
    rows = (_read(spark, kafka_broker.bootstrap, topic).where("offset < 3").mapInArrow(decode(True), out)
            .orderBy("offset").collect())
    assert [r.value.asDict() if r.value is not None else None for r in rows] == [
        {"page": "/", "ms": 120, "referrer": None}, {"page": "/docs", "ms": 80, "referrer": "/"}, None]
    # A DataFrame of its own: with spark.sql.python.filterPushdown.enabled, a later query of
    # the same DataFrame still reads only the offsets a filter pushed by an earlier query
    # kept (seen with PySpark 4.3.0; not yet diagnosed) and would never read the bad record.
    with pytest.raises(Exception) as failed:
        _read(spark, kafka_broker.bootstrap, topic).mapInArrow(decode(False), out).collect()
    text = str(failed.value)
    assert "row 3 of the JSON column" in text and f"topic '{topic}' partition 0, offset 3" in text, text[-3000:]


def test_encode_struct_columns_in_map_in_arrow(spark: Any, unique_topic: str, sr_conf: dict) -> None:
    from pyspark.sql.types import BinaryType, StructField, StructType

    df = spark.createDataFrame([("/a", 1), ("/b", 2)], "page string, ms long")
    nested = df.selectExpr("named_struct('page', page, 'ms', ms) AS value")
    conf = dict(sr_conf)
    subject = f"{unique_topic}-value"

    def encode(batches: Any) -> Any:
        for batch in batches:
            yield encode_json_column(batch, "value", CLICK_V1, registry=conf, subject=subject)

    encoded = [r.value for r in nested.mapInArrow(encode, StructType([StructField("value", BinaryType())])).collect()]
    reader = JsonSchemaDeserializer(sr_conf)
    assert sorted((d["page"], d["ms"]) for d in (reader.deserialize(unique_topic, bytes(b)) for b in encoded)) == [
        ("/a", 1), ("/b", 2)]

    users = spark.createDataFrame([("ada", 36), ("bob", 7)], "name string, age int").selectExpr(
        "named_struct('name', name, 'age', age, 'email', CAST(NULL AS STRING)) AS value")
    proto_subject = f"{unique_topic}-users-value"

    def encode_protobuf(batches: Any) -> Any:  # the generated class is importable on the workers
        for batch in batches:
            yield encode_protobuf_column(batch, "value", user_v2_pb2.User, registry=conf, subject=proto_subject)

    framed = [r.value for r in users.mapInArrow(encode_protobuf, StructType([StructField("value", BinaryType())]))
              .collect()]
    parsed = [ProtobufDeserializer(user_v2_pb2.User).deserialize(unique_topic, bytes(b)) for b in framed]
    assert sorted((m.name, m.age, m.email) for m in parsed) == [("ada", 36, ""), ("bob", 7, "")]
