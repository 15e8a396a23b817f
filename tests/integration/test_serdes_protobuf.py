"""Protobuf serdes against a real Schema Registry, byte for byte against confluent-kafka."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry.protobuf import (
    ProtobufDeserializer as ConfluentProtobufDeserializer,
)
from confluent_kafka.schema_registry.protobuf import (
    ProtobufSerializer as ConfluentProtobufSerializer,
)
from google.protobuf import descriptor_pb2

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization import (
    ProtobufDeserializer,
    ProtobufSerializer,
    Schema,
    SchemaRegistryClient,
    WireFormatError,
)
from kafkalite.serialization.wire import encode_message_indexes, frame, parse_header
from tests.helpers.schemas import common_pb2, events_pb2, user_pb2, user_v2_pb2
from tests.helpers.serdes import ctx

SCHEMAS = Path(__file__).resolve().parents[1] / "helpers" / "schemas"


def placed(order_id: str = "o-1") -> events_pb2.OrderPlaced:
    m = events_pb2.OrderPlaced(order_id=order_id, total=common_pb2.Money(currency="EUR", units=12, nanos=5),
                               items=["book", "pen"])
    m.placed_at.FromSeconds(1_700_000_000)
    return m


SHIPPED = events_pb2.OrderShipped(order_id="o-1", carrier="ups", parcels=[
    events_pb2.OrderShipped.Parcel(tracking="1Z", weight_grams=250)])
PARCEL = events_pb2.OrderShipped.Parcel(tracking="2Z", weight_grams=10)


def _confluent_strategy(strategy: str) -> dict[str, Any]:
    fn = {"topic": None, "record": lambda c, name: name, "topic_record": lambda c, name: f"{c.topic}-{name}"}[strategy]
    return {"subject.name.strategy": fn} if fn else {}


@pytest.mark.parametrize("strategy", ["topic", "record", "topic_record"])
@pytest.mark.parametrize("message", [placed(), SHIPPED, PARCEL], ids=["first", "second", "nested"])
def test_round_trip_identical_to_confluent(strategy: str, message: Any, unique_topic: str, sr_conf: dict,
                                           confluent_sr: Any, sr_client: SchemaRegistryClient) -> None:
    cls = type(message)
    ours = ProtobufSerializer(cls, {**sr_conf, "subject.name.strategy": strategy}).serialize(unique_topic, message)
    theirs = ConfluentProtobufSerializer(cls, confluent_sr, _confluent_strategy(strategy))(
        message, ctx(unique_topic))
    assert ours == theirs
    subject = {"topic": f"{unique_topic}-value", "record": cls.DESCRIPTOR.full_name,
               "topic_record": f"{unique_topic}-{cls.DESCRIPTOR.full_name}"}[strategy]
    registered = sr_client.get_latest_version(subject)
    assert parse_header(ours)[0] == registered.schema_id
    assert registered.schema.schema_type == "PROTOBUF"
    # The import of common.proto is a reference (the well-known timestamp.proto is not).
    assert [r.name for r in registered.schema.references] == ["tests/helpers/schemas/common.proto"]

    assert ProtobufDeserializer(cls).deserialize(unique_topic, theirs) == message
    confluent_reader = ConfluentProtobufDeserializer(cls, {"use.deprecated.format": False})
    assert confluent_reader(ours, ctx(unique_topic)) == message


def test_oneof_envelope_dispatch(unique_topic: str, sr_conf: dict) -> None:
    serializer = ProtobufSerializer(events_pb2.OrderEvent, sr_conf)
    events = [events_pb2.OrderEvent(placed=placed("o-7")), events_pb2.OrderEvent(shipped=SHIPPED),
              events_pb2.OrderEvent(cancelled=events_pb2.OrderCancelled(order_id="o-8", reason="late"))]
    data = [serializer.serialize(unique_topic, e) for e in events]
    assert all(d[5:7] == b"\x02\x06" for d in data)  # message index [3]: the 4th message of the file
    reader = ProtobufDeserializer(events_pb2.OrderEvent)
    handled = []
    for d in data:
        event = reader.deserialize(unique_topic, d)
        kind = event.WhichOneof("event")
        handled.append((kind, getattr(event, kind).order_id))
    assert handled == [("placed", "o-7"), ("shipped", "o-1"), ("cancelled", "o-8")]


@pytest.mark.parametrize("strategy", ["record", "topic_record"])
def test_several_message_types_found_by_schema_id(strategy: str, unique_topic: str, sr_conf: dict) -> None:
    serializer = ProtobufSerializer(None, {**sr_conf, "subject.name.strategy": strategy})
    messages = [placed(), SHIPPED, PARCEL, common_pb2.Money(currency="USD", units=1)]
    data = [serializer.serialize(unique_topic, m) for m in messages]
    listed = ProtobufDeserializer(conf=sr_conf, message_types=[
        events_pb2.OrderPlaced, events_pb2.OrderShipped, events_pb2.OrderShipped.Parcel, common_pb2.Money])
    assert [listed.deserialize(unique_topic, d) for d in data] == messages
    # Without a list, any generated class imported in the process is found by name.
    anything = ProtobufDeserializer(conf=sr_conf)
    assert [type(anything.deserialize(unique_topic, d)) for d in data] == [type(m) for m in messages]
    only_money = ProtobufDeserializer(conf=sr_conf, message_types=[common_pb2.Money])
    with pytest.raises(SerializationError, match=r"no message class for kafkalite.test.OrderPlaced"):
        only_money.deserialize(unique_topic, data[0])


def test_schema_registered_as_proto_text_by_java_clients(unique_topic: str, sr_conf: dict,
                                                         sr_client: SchemaRegistryClient) -> None:
    # Java serializers register .proto text, not a descriptor: the message indexes must
    # then be resolved against the text.
    text = (SCHEMAS / "events.proto").read_text().replace('import "tests/helpers/schemas/common.proto";\n', "")
    text = text.replace("  Money total = 2;\n", "")
    schema_id = sr_client.register_schema(f"{unique_topic}-value", Schema(text, "PROTOBUF"))
    assert not sr_client.get_schema(schema_id).schema_str.strip().startswith("Ci")  # text, not base64
    cancelled = events_pb2.OrderCancelled(order_id="o-9", reason="r")
    data = frame(schema_id, cancelled.SerializeToString(), encode_message_indexes([2]))
    reader = ProtobufDeserializer(conf=sr_conf, message_types=[events_pb2.OrderCancelled, events_pb2.OrderPlaced])
    assert reader.deserialize(unique_topic, data) == cancelled


def test_newer_message_version_reads_old_data(unique_topic: str, sr_conf: dict) -> None:
    data = ProtobufSerializer(user_pb2.User, sr_conf).serialize(unique_topic, user_pb2.User(name="ann", age=41))
    newer = ProtobufDeserializer(user_v2_pb2.User).deserialize(unique_topic, data)
    assert (newer.name, newer.age, newer.email) == ("ann", 41, "")


def test_bad_input(unique_topic: str, sr_conf: dict) -> None:
    serializer = ProtobufSerializer(events_pb2.OrderPlaced, sr_conf)
    with pytest.raises(SerializationError, match="expected OrderPlaced, got OrderShipped"):
        serializer.serialize(unique_topic, SHIPPED)
    with pytest.raises(SerializationError, match="expected a Protobuf message, got dict"):
        ProtobufSerializer(None, sr_conf).serialize(unique_topic, {"order_id": "x"})
    good = serializer.serialize(unique_topic, placed())
    assert good is not None
    reader = ProtobufDeserializer(events_pb2.OrderPlaced)
    with pytest.raises(WireFormatError, match="magic byte"):
        reader.deserialize(unique_topic, b"\x05" + good[1:])
    with pytest.raises(WireFormatError, match="truncated varint"):
        reader.deserialize(unique_topic, good[:5] + b"\x04\x82")
    with pytest.raises(WireFormatError, match="does not decode as kafkalite.test.OrderPlaced"):
        reader.deserialize(unique_topic, good[:6] + b"\x0a\xff\x01abc")
    by_id = ProtobufDeserializer(conf=sr_conf, message_types=[events_pb2.OrderPlaced])
    with pytest.raises(WireFormatError, match=r"message indexes \[9\] point to no message"):
        by_id.deserialize(unique_topic, good[:5] + encode_message_indexes([9]) + good[6:])
    with pytest.raises(ConfigError, match="needs 'schema.registry.url'"):
        ProtobufDeserializer(message_types=[events_pb2.OrderPlaced])
    with pytest.raises(ConfigError, match="generated message class"):
        ProtobufSerializer(dict, sr_conf)  # type: ignore[arg-type]


def test_registered_descriptor_is_the_files(unique_topic: str, sr_conf: dict, sr_client: SchemaRegistryClient) -> None:
    ProtobufSerializer(user_pb2.User, sr_conf).serialize(unique_topic, user_pb2.User(name="x"))
    schema = sr_client.get_latest_version(f"{unique_topic}-value").schema
    proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema.schema_str))
    assert proto.name == "tests/helpers/schemas/user.proto"
    assert [m.name for m in proto.message_type] == ["User"]
