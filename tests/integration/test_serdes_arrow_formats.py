"""Protobuf and JSON Schema Arrow column helpers with a real registry: Protobuf types
built from registered schemas (references and well-known imports followed, message
indexes honoured), JSON writer schemas by id, struct columns registered under a
subject and read back by the record deserializers."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafkalite.errors import ConfigError
from kafkalite.serialization import (
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    SchemaRegistryClient,
    SchemaValidationError,
    UnknownSchemaIdError,
)
from kafkalite.serialization.arrow_json import json_to_struct, struct_to_json
from kafkalite.serialization.arrow_protobuf import (
    protobuf_to_arrow_schema,
    protobuf_to_struct,
    struct_to_protobuf,
)
from kafkalite.serialization.registry_types import Schema
from kafkalite.serialization.wire import frame
from tests.helpers.schemas import events_pb2

ORDER = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
         "properties": {"id": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}, "required": ["id"]}


def test_protobuf_types_from_the_registry(unique_topic: str, sr_conf: dict, sr_client: SchemaRegistryClient) -> None:
    serializer = ProtobufSerializer(None, {**sr_conf, "subject.name.strategy": "record"})
    placed = events_pb2.OrderPlaced(order_id="o-1", items=["pen"])
    placed.total.currency = "EUR"
    placed.placed_at.FromSeconds(1_700_000_000)
    envelope = events_pb2.OrderEvent(cancelled=events_pb2.OrderCancelled(order_id="o-2"))
    column = pa.array([serializer.serialize(unique_topic, placed), None], pa.binary())
    # events.proto imports common.proto (a registered reference) and timestamp.proto (well known).
    structs = protobuf_to_struct(column, registry=sr_conf)
    assert structs.type == protobuf_to_arrow_schema(events_pb2.OrderPlaced)
    row = structs.to_pylist()[0]
    assert row["total"] == {"currency": "EUR", "units": 0, "nanos": 0} and row["placed_at"].year == 2023
    # The message indexes pick the envelope (the file's 4th message) from the same schema.
    env = protobuf_to_struct(pa.array([serializer.serialize(unique_topic, envelope)]), registry=sr_client)
    assert env.to_pylist()[0]["cancelled"] == {"order_id": "o-2", "reason": ""}
    with pytest.raises(UnknownSchemaIdError, match="row 0 of the Protobuf column"):
        protobuf_to_struct(pa.array([frame(1_999_999_999, b"", b"\x00")]), registry=sr_conf)


def test_protobuf_text_schemas_need_the_class(unique_topic: str, sr_client: SchemaRegistryClient,
                                             sr_conf: dict) -> None:
    # What Java's serializer registers: .proto text, which kafkalite cannot compile.
    text = 'syntax = "proto3";\npackage t;\nmessage Plain {\n  string name = 1;\n}\n'
    schema_id = sr_client.register_schema(f"{unique_topic}-value", Schema(text, "PROTOBUF"))
    with pytest.raises(ConfigError, match=r"\.proto text .*message_type="):
        protobuf_to_struct(pa.array([frame(schema_id, b"\x0a\x01x", b"\x00")]), registry=sr_conf)


def test_protobuf_struct_column_registered_under_a_subject(unique_topic: str, sr_conf: dict,
                                                          sr_client: SchemaRegistryClient) -> None:
    structs = pa.array([{"order_id": "o-1", "reason": "late"}], protobuf_to_arrow_schema(events_pb2.OrderCancelled))
    encoded = struct_to_protobuf(structs, events_pb2.OrderCancelled, registry=sr_client,
                                 subject=f"{unique_topic}-value")
    assert sr_client.get_versions(f"{unique_topic}-value") == [1]
    # The same bytes as the record serializer writes, read back by the deserializer.
    expected = ProtobufSerializer(events_pb2.OrderCancelled, sr_conf).serialize(
        unique_topic, events_pb2.OrderCancelled(order_id="o-1", reason="late"))
    assert encoded.to_pylist() == [expected]
    assert ProtobufDeserializer(events_pb2.OrderCancelled).deserialize(unique_topic, expected).reason == "late"


def test_json_writer_schemas_by_id_and_encoding(unique_topic: str, sr_conf: dict,
                                                sr_client: SchemaRegistryClient) -> None:
    data = JsonSchemaSerializer(ORDER, sr_conf).serialize(unique_topic, {"id": "o-1", "qty": 2})
    column = pa.array([data, None])
    # Without a reader schema the first record's writer schema is the shape.
    assert json_to_struct(column, registry=sr_conf).to_pylist() == [{"id": "o-1", "qty": 2}, None]
    bad = frame(sr_client.get_latest_version(f"{unique_topic}-value").schema_id,
                b'{"id":"o-2","qty":0}')
    with pytest.raises(SchemaValidationError, match="row 1 of the JSON column"):
        json_to_struct(pa.array([data, bad]), ORDER, registry=sr_conf, validate=True)
    with pytest.raises(UnknownSchemaIdError, match="row 0 of the JSON column"):
        json_to_struct(pa.array([frame(1_999_999_999, b"{}")]), registry=sr_conf)
    structs = pa.array([{"id": "o-3", "qty": 3}], json_to_struct(column, ORDER).type)
    encoded = struct_to_json(structs, ORDER, registry=sr_client, subject=f"{unique_topic}-value")
    assert encoded.to_pylist()[0] == JsonSchemaSerializer(ORDER, sr_conf).serialize(unique_topic,
                                                                                     {"id": "o-3", "qty": 3})
    assert JsonSchemaDeserializer(sr_conf).deserialize(unique_topic, encoded.to_pylist()[0]) == {"id": "o-3",
                                                                                               "qty": 3}
