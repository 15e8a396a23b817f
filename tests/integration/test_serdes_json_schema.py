"""JSON Schema serdes against a real Schema Registry, byte for byte against confluent-kafka."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from confluent_kafka.schema_registry.json_schema import (
    JSONDeserializer as ConfluentJsonDeserializer,
)
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJsonSerializer

from kafkalite.errors import ConfigError
from kafkalite.serialization import (
    IncompatibleSchemaError,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaValidationError,
    WireFormatError,
)
from kafkalite.serialization.wire import frame, parse_header
from tests.helpers.serdes import ctx

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "qty": {"type": "integer", "minimum": 1},
        "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}},
                                             "required": ["sku"]}},
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "qty"],
}
ORDER_TEXT = json.dumps(ORDER)
VALUE = {"id": "o-1", "qty": 2, "lines": [{"sku": "bøök"}], "note": None}


@pytest.mark.parametrize("strategy", ["topic", "record", "topic_record"])
def test_round_trip_identical_to_confluent(strategy: str, unique_topic: str, sr_conf: dict,
                                           confluent_sr: Any, sr_client: SchemaRegistryClient) -> None:
    ours = JsonSchemaSerializer(ORDER_TEXT, {**sr_conf, "subject.name.strategy": strategy}).serialize(
        unique_topic, VALUE)
    fn = {"topic": None, "record": lambda c, name: name, "topic_record": lambda c, name: f"{c.topic}-{name}"}[strategy]
    theirs = ConfluentJsonSerializer(ORDER_TEXT, confluent_sr,
                                     conf={"subject.name.strategy": fn} if fn else None)(VALUE, ctx(unique_topic))
    assert ours == theirs
    assert ours is not None and ours[5:] == json.dumps(VALUE, separators=(",", ":"), ensure_ascii=False).encode()
    subject = {"topic": f"{unique_topic}-value", "record": "Order", "topic_record": f"{unique_topic}-Order"}[strategy]
    assert sr_client.get_latest_version(subject).schema_id == parse_header(ours)[0]
    assert JsonSchemaDeserializer(sr_conf).deserialize(unique_topic, theirs) == VALUE
    assert ConfluentJsonDeserializer(None, schema_registry_client=confluent_sr)(ours, ctx(unique_topic)) == VALUE


def test_invalid_values_name_the_field_and_register_nothing(unique_topic: str, sr_conf: dict,
                                                            sr_client: SchemaRegistryClient) -> None:
    serializer = JsonSchemaSerializer(ORDER, sr_conf)
    cases = [({**VALUE, "qty": 0}, "qty"), ({**VALUE, "lines": [{"sku": 5}]}, "lines.0.sku"),
             ({"qty": 1}, "id"), ({**VALUE, "note": 3}, "note")]
    for value, field in cases:
        with pytest.raises(SchemaValidationError) as info:
            serializer.serialize(unique_topic, value)
        assert info.value.field == field and field in str(info.value)
    assert f"{unique_topic}-value" not in sr_client.get_subjects()
    with pytest.raises(SchemaValidationError, match="not JSON-serializable"):
        loose = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
        JsonSchemaSerializer(loose, sr_conf).serialize(unique_topic, {"when": object()})


def test_reading_validates_against_the_writer_schema(unique_topic: str, sr_conf: dict,
                                                     sr_client: SchemaRegistryClient) -> None:
    schema_id = sr_client.register_schema(f"{unique_topic}-value", Schema(ORDER_TEXT, "JSON"))
    reader = JsonSchemaDeserializer(sr_conf)
    with pytest.raises(SchemaValidationError,
                       match=r"does not match its JSON schema: -1 is less than the minimum of 1 .*field 'qty'") as info:
        reader.deserialize(unique_topic, frame(schema_id, b'{"id":"x","qty":-1}'))
    assert info.value.schema_id == schema_id
    lenient = JsonSchemaDeserializer(sr_conf, validate=False)
    assert lenient.deserialize(unique_topic, frame(schema_id, b'{"id":"x","qty":-1}')) == {"id": "x", "qty": -1}
    with pytest.raises(WireFormatError, match="not valid JSON"):
        reader.deserialize(unique_topic, frame(schema_id, b'{"id":'))
    # A reader schema of its own: no registry needed.
    offline = JsonSchemaDeserializer(schema=ORDER)
    assert offline.deserialize(unique_topic, frame(schema_id, b'{"id":"y","qty":3}')) == {"id": "y", "qty": 3}


def test_incompatible_change_is_refused(unique_topic: str, sr_conf: dict, sr_client: SchemaRegistryClient) -> None:
    subject = f"{unique_topic}-value"
    sr_client.set_compatibility("FULL", subject)
    JsonSchemaSerializer(ORDER, sr_conf).serialize(unique_topic, VALUE)
    narrower = {**ORDER, "properties": {**ORDER["properties"], "qty": {"type": "string"}}}  # type: ignore[dict-item]
    assert not sr_client.test_compatibility(subject, Schema(json.dumps(narrower), "JSON"))
    with pytest.raises(IncompatibleSchemaError) as info:
        JsonSchemaSerializer(narrower, sr_conf).serialize(unique_topic, {"id": "x", "qty": "2"})
    assert info.value.subject == subject


def test_event_types_by_title(unique_topic: str, sr_conf: dict) -> None:
    @dataclasses.dataclass
    class Login:
        user: str

    @dataclasses.dataclass
    class Logout:
        user: str
        reason: str

    login = {"title": "Login", "type": "object", "properties": {"user": {"type": "string"}}, "required": ["user"]}
    logout = {"title": "Logout", "type": "object",
              "properties": {"user": {"type": "string"}, "reason": {"type": "string"}}}
    conf = {**sr_conf, "subject.name.strategy": "topic_record"}
    data = [JsonSchemaSerializer(login, conf).serialize(unique_topic, Login("ann")),
            JsonSchemaSerializer(logout, conf).serialize(unique_topic, Logout("ann", "idle"))]
    reader = JsonSchemaDeserializer(sr_conf, from_dict={"Login": lambda d: Login(**d), "Logout": lambda d: Logout(**d)})
    assert [reader.deserialize(unique_topic, d) for d in data] == [Login("ann"), Logout("ann", "idle")]


def test_references(unique_topic: str, sr_conf: dict, sr_client: SchemaRegistryClient) -> None:
    address = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Address", "type": "object",
               "properties": {"city": {"type": "string"}}, "required": ["city"]}
    sr_client.register_schema(f"{unique_topic}-address", Schema(json.dumps(address), "JSON"))
    customer = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Customer", "type": "object",
                "properties": {"name": {"type": "string"}, "home": {"$ref": "address.json"}}}
    schema = Schema(json.dumps(customer), "JSON", (SchemaReference("address.json", f"{unique_topic}-address", 1),))
    serializer = JsonSchemaSerializer(schema, sr_conf)
    value = {"name": "Ann", "home": {"city": "Oslo"}}
    data = serializer.serialize(unique_topic, value)
    assert JsonSchemaDeserializer(sr_conf).deserialize(unique_topic, data) == value
    with pytest.raises(SchemaValidationError) as info:
        serializer.serialize(unique_topic, {"name": "Ann", "home": {}})
    assert info.value.field == "home.city"


def test_settings(sr_conf: dict) -> None:
    with pytest.raises(ConfigError, match="give 'schema'"):
        JsonSchemaDeserializer()
    with pytest.raises(ConfigError, match="unknown JsonSchemaSerializer setting 'use.latest.versions'"):
        JsonSchemaSerializer(ORDER, {**sr_conf, "use.latest.versions": True})
    assert JsonSchemaDeserializer(validate=False).deserialize("t", frame(1, b"[1]")) == [1]
