"""Schema Registry records -> typed Spark columns: Avro, Protobuf and JSON Schema.

Writes a few records in each format (Protobuf and JSON with two schema versions, and
a tombstone), reads each topic with ``format("kafkalite")`` and turns the binary
``value`` column into a struct column inside ``mapInArrow`` with kafkalite's Arrow
column helpers: no JVM ``from_avro`` / ``from_protobuf`` jar, no per-row UDF, and no
generated Protobuf code on the executors (the type comes from the registry).

Needs ``pip install 'kafkalite[spark,avro,protobuf,jsonschema]'`` and Java 17+.

    python examples/spark_schema_columns.py [--bootstrap HOST:PORT --registry URL]
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from typing import Any

import pyarrow as pa
from _services import arguments, create_topic, services
from shop import orders_pb2

from kafkalite import Producer
from kafkalite.serialization import AvroSerializer, JsonSchemaSerializer, ProtobufSerializer
from kafkalite.serialization.arrow import avro_to_arrow_schema, decode_column
from kafkalite.serialization.arrow_json import decode_json_column, json_schema_to_arrow_schema
from kafkalite.serialization.arrow_protobuf import decode_protobuf_column, protobuf_to_arrow_schema

CLICK_AVRO = {"type": "record", "name": "Click", "namespace": "web",
              "fields": [{"name": "page", "type": "string"}, {"name": "ms", "type": "long"}]}
CLICK_V1 = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Click", "type": "object",
            "properties": {"page": {"type": "string"}, "ms": {"type": "integer"}}, "required": ["page"]}
# Another title: with the record strategy each version has a subject of its own (a
# registry's compatibility rule may call an added property a narrowing of v1's open model).
CLICK_V2 = {**CLICK_V1, "title": "ClickV2",
            "properties": {**CLICK_V1["properties"], "referrer": {"type": ["string", "null"]}}}


def produce(bootstrap: str, conf: dict[str, Any]) -> dict[str, str]:
    run = uuid.uuid4().hex[:6]
    topics = {"avro": f"clicks-avro-{run}", "protobuf": f"orders-proto-{run}", "json": f"clicks-json-{run}"}
    for topic in topics.values():
        create_topic(bootstrap, topic)
    avro = AvroSerializer(CLICK_AVRO, conf)
    proto = ProtobufSerializer(orders_pb2.OrderPlaced, conf)
    by_title = {**conf, "subject.name.strategy": "record"}
    old, new = JsonSchemaSerializer(CLICK_V1, by_title), JsonSchemaSerializer(CLICK_V2, by_title)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        t = topics["avro"]
        producer.send(t, avro.serialize(t, {"page": "/", "ms": 120}))
        t = topics["protobuf"]
        producer.send(t, proto.serialize(t, orders_pb2.OrderPlaced(order_id="o-1", customer="ada", amount=25.0)))
        producer.send(t, proto.serialize(t, orders_pb2.OrderPlaced(order_id="o-2", customer="bob", amount=9.5)))
        producer.send(t, None)  # a tombstone: a null struct
        t = topics["json"]
        producer.send(t, old.serialize(t, {"page": "/", "ms": 120}))
        producer.send(t, new.serialize(t, {"page": "/docs", "ms": 80, "referrer": "/"}))
    return topics


def main() -> None:
    args = arguments(__doc__ or "")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers need kafkalite: this Python has it
    from pyspark.sql import SparkSession
    from pyspark.sql.pandas.types import from_arrow_schema

    with services(args) as (bootstrap, registry_url):
        conf = {"schema.registry.url": registry_url}
        topics = produce(bootstrap, conf)
        spark = (SparkSession.builder.master("local[2]").appName("kafkalite-schema-columns")
                 .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")

        def read(topic: str) -> Any:
            return (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", topic).option("startingOffsets", "earliest").load()
                    .select("offset", "value"))

        def out(value_type: Any) -> Any:
            return from_arrow_schema(pa.schema([("offset", pa.int64()), ("value", value_type)]))

        avro_reader = json.dumps(CLICK_AVRO)
        json_reader = json.dumps(CLICK_V2)

        def avro(batches: Any) -> Any:
            for batch in batches:
                yield decode_column(batch, "value", reader_schema=avro_reader, registry=conf)

        def protobuf(batches: Any) -> Any:  # the type from the registry: no orders_pb2 needed here
            for batch in batches:
                yield decode_protobuf_column(batch, "value", registry=conf)

        def json_schema(batches: Any) -> Any:
            for batch in batches:
                yield decode_json_column(batch, "value", json_reader, registry=conf)

        for name, fn, value_type in [("avro", avro, avro_to_arrow_schema(CLICK_AVRO)),
                                     ("protobuf", protobuf, protobuf_to_arrow_schema(orders_pb2.OrderPlaced)),
                                     ("json", json_schema, json_schema_to_arrow_schema(CLICK_V2))]:
            df = read(topics[name]).mapInArrow(fn, out(value_type)).orderBy("offset")
            print(f"{name}: {df.schema['value'].dataType.simpleString()}")
            for row in df.collect():
                print(f"  offset {row.offset}: {row.value.asDict() if row.value is not None else None}")
        spark.stop()


if __name__ == "__main__":
    main()
