"""Avro serdes against a real Schema Registry (Apicurio's Confluent-compatible API),
checked byte for byte against confluent-kafka's serializers on the same sr_client."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization import (
    AvroDeserializer,
    AvroSerializer,
    IncompatibleSchemaError,
    Schema,
    SchemaNotFoundError,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryUnavailableError,
    SchemaValidationError,
    SubjectNotFoundError,
    UnknownSchemaIdError,
    WireFormatError,
)
from kafkalite.serialization.wire import frame, parse_header
from kafkalite.testing.ports import free_port
from tests.helpers.serdes import avro_record, ctx

USER = avro_record("User", [("name", "string"), ("age", "int"),
                            ("emails", {"type": "array", "items": "string"}),
                            ("tier", {"type": "enum", "name": "Tier", "symbols": ["FREE", "PRO"]}),
                            ("nick", ["null", "string"], None)])
ALICE = {"name": "Alice", "age": 33, "emails": ["a@example.com"], "tier": "PRO", "nick": None}
BOB = {"name": "Bób ✓", "age": -7, "emails": [], "tier": "FREE", "nick": "b"}

STRATEGIES = {
    "topic": lambda topic: f"{topic}-value",
    "record": lambda topic: "kafkalite.test.User",
    "topic_record": lambda topic: f"{topic}-kafkalite.test.User",
}


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_round_trip_per_strategy_identical_to_confluent(strategy: str, unique_topic: str, sr_conf: dict,
                                                        confluent_sr: Any, sr_client: SchemaRegistryClient) -> None:
    conf = {**sr_conf, "subject.name.strategy": strategy}
    ours = AvroSerializer(USER, conf)
    data = [ours.serialize(unique_topic, rec) for rec in (ALICE, BOB)]

    strategy_fn = {
        "topic": None,
        "record": lambda c, name: name,
        "topic_record": lambda c, name: f"{c.topic}-{name}",
    }[strategy]
    theirs_conf = {"subject.name.strategy": strategy_fn} if strategy_fn else {}
    theirs = ConfluentAvroSerializer(confluent_sr, USER, conf=theirs_conf)
    assert [theirs(rec, ctx(unique_topic)) for rec in (ALICE, BOB)] == data

    subject = STRATEGIES[strategy](unique_topic)
    registered = sr_client.get_latest_version(subject)
    assert parse_header(data[0])[0] == registered.schema_id
    assert json.loads(registered.schema.schema_str) == json.loads(USER)

    # Each side decodes the other's bytes.
    assert [AvroDeserializer(sr_conf).deserialize(unique_topic, d) for d in data] == [ALICE, BOB]
    confluent_reader = ConfluentAvroDeserializer(confluent_sr)
    assert [confluent_reader(d, ctx(unique_topic)) for d in data] == [ALICE, BOB]


def test_keys_use_the_key_subject(unique_topic: str, sr_conf: dict, confluent_sr: Any,
                                  sr_client: SchemaRegistryClient) -> None:
    key_schema = avro_record("OrderKey", [("id", "long")])
    ours = AvroSerializer(key_schema, sr_conf)
    ours.configure({}, is_key=True)  # what the producer does
    data = ours.serialize(unique_topic, {"id": 42})
    theirs = ConfluentAvroSerializer(confluent_sr, key_schema)(
        {"id": 42}, ctx(unique_topic, is_key=True))
    assert data == theirs
    assert sr_client.get_versions(f"{unique_topic}-key") == [1]
    assert AvroDeserializer(sr_conf, is_key=True).deserialize(unique_topic, data) == {"id": 42}


def test_null_is_a_tombstone_in_both_directions(unique_topic: str, sr_conf: dict,
                                                sr_client: SchemaRegistryClient) -> None:
    assert AvroSerializer(USER, sr_conf).serialize(unique_topic, None) is None
    assert AvroDeserializer(sr_conf).deserialize(unique_topic, None) is None
    with pytest.raises(SubjectNotFoundError):  # nothing was registered for a tombstone
        sr_client.get_versions(f"{unique_topic}-value")


def test_compatible_evolution_reads_old_data_with_the_new_schema(unique_topic: str, sr_conf: dict,
                                                                 sr_client: SchemaRegistryClient) -> None:
    v1 = avro_record("Account", [("id", "string"), ("balance", "long")])
    v2 = avro_record("Account", [("id", "string"), ("balance", "long"),
                                 ("currency", "string", "EUR"), ("tags", {"type": "array", "items": "string"}, [])])
    sr_client.set_compatibility("BACKWARD", f"{unique_topic}-value")
    old = AvroSerializer(v1, sr_conf).serialize(unique_topic, {"id": "a1", "balance": 10})
    new = AvroSerializer(v2, sr_conf).serialize(unique_topic, {"id": "a2", "balance": 5, "currency": "USD",
                                                               "tags": ["x"]})
    assert parse_header(old)[0] != parse_header(new)[0]
    assert sr_client.get_versions(f"{unique_topic}-value") == [1, 2]

    reader = AvroDeserializer(sr_conf, reader_schema=v2)
    assert reader.deserialize(unique_topic, old) == {"id": "a1", "balance": 10, "currency": "EUR", "tags": []}
    assert reader.deserialize(unique_topic, new) == {"id": "a2", "balance": 5, "currency": "USD", "tags": ["x"]}
    # use.latest.version reads every record into the subject's newest schema.
    latest = AvroDeserializer({**sr_conf, "use.latest.version": True})
    assert latest.deserialize(unique_topic, old)["currency"] == "EUR"
    # Without a reader schema each record keeps its writer's shape.
    assert AvroDeserializer(sr_conf).deserialize(unique_topic, old) == {"id": "a1", "balance": 10}


def test_incompatible_change_is_refused_and_nothing_is_written(unique_topic: str, sr_conf: dict,
                                                               sr_client: SchemaRegistryClient) -> None:
    subject = f"{unique_topic}-value"
    sr_client.set_compatibility("BACKWARD", subject)
    AvroSerializer(avro_record("Account", [("id", "string")]), sr_conf).serialize(unique_topic, {"id": "x"})
    breaking = avro_record("Account", [("id", "long"), ("owner", "string")])  # type change, no default
    assert not sr_client.test_compatibility(subject, Schema(breaking))
    serializer = AvroSerializer(breaking, sr_conf)
    with pytest.raises(IncompatibleSchemaError) as info:
        serializer.serialize(unique_topic, {"id": 1, "owner": "o"})
    assert info.value.subject == subject and info.value.topic == unique_topic and info.value.status == 409
    assert subject in str(info.value)
    assert sr_client.get_versions(subject) == [1]


def test_auto_register_off_needs_a_registered_schema(unique_topic: str, sr_conf: dict) -> None:
    serializer = AvroSerializer(USER, {**sr_conf, "auto.register.schemas": False})
    with pytest.raises(SubjectNotFoundError, match=f"{unique_topic}-value"):
        serializer.serialize(unique_topic, ALICE)
    AvroSerializer(USER, sr_conf).serialize(unique_topic, ALICE)  # registers it
    other = avro_record("User", [("name", "string")])
    with pytest.raises(SchemaNotFoundError, match=f"{unique_topic}-value"):
        AvroSerializer(other, {**sr_conf, "auto.register.schemas": False}).serialize(unique_topic, {"name": "n"})
    assert AvroDeserializer(sr_conf).deserialize(unique_topic, serializer.serialize(unique_topic, ALICE)) == ALICE


def test_use_latest_version_writes_with_the_newest_schema(unique_topic: str, sr_conf: dict,
                                                          sr_client: SchemaRegistryClient) -> None:
    v1 = avro_record("Event", [("id", "string")])
    v2 = avro_record("Event", [("id", "string"), ("source", "string", "web")])
    AvroSerializer(v1, sr_conf).serialize(unique_topic, {"id": "1"})
    AvroSerializer(v2, sr_conf).serialize(unique_topic, {"id": "2"})
    latest_id = sr_client.get_latest_version(f"{unique_topic}-value").schema_id
    writer = AvroSerializer(v1, {**sr_conf, "use.latest.version": True, "auto.register.schemas": False})
    data = writer.serialize(unique_topic, {"id": "3", "source": "app"})
    assert parse_header(data)[0] == latest_id
    assert AvroDeserializer(sr_conf).deserialize(unique_topic, data) == {"id": "3", "source": "app"}
    pinned = AvroSerializer(v1, {**sr_conf, "use.schema.id": parse_header(data)[0]})
    assert parse_header(pinned.serialize("any-topic", {"id": "4", "source": "x"}))[0] == latest_id


def test_record_that_does_not_match_names_the_field(unique_topic: str, sr_conf: dict) -> None:
    serializer = AvroSerializer(USER, sr_conf)
    cases = [
        ({**ALICE, "age": "old"}, "age"),
        ({**ALICE, "emails": ["ok", 3]}, "emails"),
        ({**ALICE, "tier": "GOLD"}, "tier"),
        ({k: v for k, v in ALICE.items() if k != "name"}, "name"),
    ]
    for record, field in cases:
        with pytest.raises(SchemaValidationError) as info:
            serializer.serialize(unique_topic, record)
        assert info.value.field == field, info.value
        assert field in str(info.value) and info.value.topic == unique_topic


def test_bad_bytes_and_unknown_ids(unique_topic: str, sr_conf: dict) -> None:
    good = AvroSerializer(USER, sr_conf).serialize(unique_topic, ALICE)
    assert good is not None
    reader = AvroDeserializer(sr_conf)
    with pytest.raises(WireFormatError, match="magic byte"):
        reader.deserialize(unique_topic, b"\x01" + good[1:])
    with pytest.raises(WireFormatError, match="too short"):
        reader.deserialize(unique_topic, good[:3])
    with pytest.raises(WireFormatError, match="does not decode"):
        reader.deserialize(unique_topic, good[:8])
    with pytest.raises(UnknownSchemaIdError) as info:
        reader.deserialize(unique_topic, frame(987_654, good[5:]))
    assert info.value.schema_id == 987_654 and "987654" in str(info.value)


def test_unreachable_registry_is_a_retriable_typed_error(unique_topic: str) -> None:
    conf = {"schema.registry.url": f"http://127.0.0.1:{free_port()}", "max.retries": 1,
            "retries.wait.ms": 10}
    with pytest.raises(SchemaRegistryUnavailableError) as info:
        AvroSerializer(USER, conf).serialize(unique_topic, ALICE)
    assert info.value.retriable and info.value.subject == f"{unique_topic}-value"
    with pytest.raises(SchemaRegistryUnavailableError):
        AvroDeserializer(conf).deserialize(unique_topic, frame(1, b"\x00"))


def test_union_of_event_types_in_one_subject(unique_topic: str, sr_conf: dict, confluent_sr: Any) -> None:
    placed = json.loads(avro_record("OrderPlaced", [("order_id", "string"), ("amount", "double")]))
    shipped = json.loads(avro_record("OrderShipped", [("order_id", "string"), ("carrier", "string")]))
    union = [placed, shipped]
    serializer = AvroSerializer(union, sr_conf)
    events = [("kafkalite.test.OrderPlaced", {"order_id": "o1", "amount": 9.5}),
              ("kafkalite.test.OrderShipped", {"order_id": "o1", "carrier": "ups"})]
    data = [serializer.serialize(unique_topic, e) for e in events]
    theirs = ConfluentAvroSerializer(confluent_sr, json.dumps(union))
    assert [theirs(e, ctx(unique_topic)) for e in events] == data

    assert [AvroDeserializer(sr_conf, return_record_name=True).deserialize(unique_topic, d) for d in data] == events

    @dataclasses.dataclass
    class OrderPlaced:
        order_id: str
        amount: float

    @dataclasses.dataclass
    class OrderShipped:
        order_id: str
        carrier: str

    typed = AvroDeserializer(sr_conf, from_dict={"OrderPlaced": lambda d: OrderPlaced(**d),
                                                 "kafkalite.test.OrderShipped": lambda d: OrderShipped(**d)})
    assert [typed.deserialize(unique_topic, d) for d in data] == [OrderPlaced("o1", 9.5), OrderShipped("o1", "ups")]


@pytest.mark.parametrize("strategy", ["record", "topic_record"])
def test_one_schema_per_event_type(strategy: str, unique_topic: str, sr_conf: dict,
                                   sr_client: SchemaRegistryClient) -> None:
    @dataclasses.dataclass
    class Deposit:
        account: str
        amount: int

    @dataclasses.dataclass
    class Withdrawal:
        account: str
        amount: int
        atm: str

    deposit = avro_record("Deposit", [("account", "string"), ("amount", "long")], namespace="bank")
    withdrawal = avro_record("Withdrawal", [("account", "string"), ("amount", "long"), ("atm", "string")],
                             namespace="bank")
    conf = {**sr_conf, "subject.name.strategy": strategy}
    serializer = AvroSerializer(schemas=[deposit, withdrawal], conf=conf)
    records = [Deposit("acc", 5), Withdrawal("acc", 3, "atm-1"), ("bank.Deposit", {"account": "b", "amount": 1})]
    data = [serializer.serialize(unique_topic, r) for r in records]
    prefix = f"{unique_topic}-" if strategy == "topic_record" else ""
    assert sr_client.get_versions(f"{prefix}bank.Deposit") == [1]
    assert sr_client.get_versions(f"{prefix}bank.Withdrawal") == [1]

    reader = AvroDeserializer(sr_conf, from_dict={"Deposit": lambda d: Deposit(**d),
                                                  "Withdrawal": lambda d: Withdrawal(**d)})
    decoded = [reader.deserialize(unique_topic, d) for d in data]
    assert decoded == [Deposit("acc", 5), Withdrawal("acc", 3, "atm-1"), Deposit("b", 1)]
    with pytest.raises(SerializationError, match="cannot tell which"):
        serializer.serialize(unique_topic, {"account": "a", "amount": 1})


def test_to_dict_and_from_dict_hooks(unique_topic: str, sr_conf: dict) -> None:
    class Point:
        def __init__(self, x: int, y: int) -> None:
            self.x, self.y = x, y

    schema = avro_record("Point", [("x", "int"), ("y", "int")])
    seen_topics = []

    def to_dict(p: Point, topic: str) -> dict:
        seen_topics.append(topic)
        return {"x": p.x, "y": p.y}

    data = AvroSerializer(schema, sr_conf, to_dict=to_dict).serialize(unique_topic, Point(1, 2))
    point = AvroDeserializer(sr_conf, from_dict=lambda d: Point(**d)).deserialize(unique_topic, data)
    assert (point.x, point.y) == (1, 2) and seen_topics == [unique_topic]


def test_schema_references(unique_topic: str, sr_conf: dict, sr_client: SchemaRegistryClient,
                           confluent_sr: Any) -> None:
    money_subject = f"{unique_topic}-money"
    money = avro_record("Money", [("units", "long"), ("currency", "string")], namespace="shop")
    sr_client.register_schema(money_subject, Schema(money))
    invoice_text = json.dumps({"type": "record", "name": "Invoice", "namespace": "shop",
                               "fields": [{"name": "id", "type": "string"}, {"name": "total", "type": "shop.Money"}]})
    invoice = Schema(invoice_text, "AVRO", (SchemaReference("shop.Money", money_subject, 1),))
    value = {"id": "i1", "total": {"units": 12, "currency": "EUR"}}
    data = AvroSerializer(invoice, sr_conf).serialize(unique_topic, value)
    registered = sr_client.get_latest_version(f"{unique_topic}-value")
    assert registered.schema.references == invoice.references
    assert AvroDeserializer(sr_conf).deserialize(unique_topic, data) == value
    assert ConfluentAvroDeserializer(confluent_sr)(data, ctx(unique_topic)) == value


def test_settings_are_checked(sr_conf: dict) -> None:
    with pytest.raises(ConfigError, match="did you mean 'auto.register.schemas'"):
        AvroSerializer(USER, {**sr_conf, "auto.register.schema": False})
    with pytest.raises(ConfigError, match="must be bool"):
        AvroSerializer(USER, {**sr_conf, "use.latest.version": "yes"})
    with pytest.raises(ConfigError, match="needs 'schema.registry.url'"):
        AvroDeserializer({})
    with pytest.raises(SerializationError, match="invalid Avro schema"):
        AvroSerializer('{"type": "record", "name": "X", "fields": [{"name": "a", "type": "nosuch"}]}', sr_conf)


def test_a_schema_the_registry_refuses_names_the_subject(unique_topic: str, sr_conf: dict) -> None:
    # Valid for fastavro (logical types are lenient) but the registry's parser refuses it.
    from kafkalite.serialization import SchemaRegistryError

    client = SchemaRegistryClient(sr_conf)
    with pytest.raises(SchemaRegistryError) as info:
        client.register_schema(f"{unique_topic}-value", Schema('{"type": "record", "name": "X", "fields": 3}'))
    assert info.value.subject == f"{unique_topic}-value" and info.value.status in (400, 422, 500)
