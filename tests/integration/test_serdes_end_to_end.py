"""Schema-based serdes through the broker with kafkalite's Producer and Consumer (blocking
and asyncio): several event types in one topic dispatched by type, typed errors from
send() and poll(), built-in deserializer names."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest

import kafkalite.aio
from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.errors import SerializationError
from kafkalite.serialization import (
    AvroDeserializer,
    AvroSerializer,
    IncompatibleSchemaError,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    SchemaRegistryClient,
    SchemaValidationError,
    WireFormatError,
)
from tests.helpers.schemas import events_pb2
from tests.helpers.serdes import avro_record


def consume(consumer: Any, n: int, timeout: float = 60.0) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, f"got {len(out)} of {n} records within {timeout}s"
        out.extend(consumer.poll(0.5))
    return out


def consumer_for(bootstrap: str, topic: str, **settings: Any) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False, **settings})
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    return consumer


@dataclasses.dataclass
class OrderPlaced:
    order_id: str
    amount: float


@dataclasses.dataclass
class OrderShipped:
    order_id: str
    carrier: str


@dataclasses.dataclass
class OrderCancelled:
    order_id: str
    reason: str


AVRO_TYPES = {
    "OrderPlaced": avro_record("OrderPlaced", [("order_id", "string"), ("amount", "double")], namespace="shop"),
    "OrderShipped": avro_record("OrderShipped", [("order_id", "string"), ("carrier", "string")], namespace="shop"),
    "OrderCancelled": avro_record("OrderCancelled", [("order_id", "string"), ("reason", "string")], namespace="shop"),
}
EVENTS = [OrderPlaced("o1", 9.5), OrderShipped("o1", "ups"), OrderPlaced("o2", 1.0), OrderCancelled("o2", "late")]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("layout", ["union", "topic_record"])
def test_avro_event_types_in_one_topic(layout: str, kafka_broker: Any, topic_factory: Any, sr_conf: dict,
                                       sr_client: SchemaRegistryClient) -> None:
    topic = topic_factory(1)
    if layout == "union":  # one union schema under <topic>-value
        serializer = AvroSerializer([json.loads(s) for s in AVRO_TYPES.values()], sr_conf,
                                    to_dict=lambda e: (f"shop.{type(e).__name__}", dataclasses.asdict(e)))
    else:  # one schema per type: <topic>-shop.OrderPlaced, ...
        serializer = AvroSerializer(schemas=list(AVRO_TYPES.values()),
                                    conf={**sr_conf, "subject.name.strategy": "topic_record"})
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "key.serializer": "str",
                   "value.serializer": serializer}) as producer:
        for event in EVENTS:
            producer.send(topic, event, key=event.order_id)
        producer.flush(30)
    if layout == "union":
        assert sr_client.get_versions(f"{topic}-value") == [1]
    else:
        assert sorted(s for s in sr_client.get_subjects() if s.startswith(topic)) == [
            f"{topic}-shop.OrderCancelled", f"{topic}-shop.OrderPlaced", f"{topic}-shop.OrderShipped"]

    classes = {cls.__name__: cls for cls in (OrderPlaced, OrderShipped, OrderCancelled)}
    deserializer = AvroDeserializer(sr_conf, from_dict={name: (lambda d, c=cls: c(**d)) for name, cls in classes.items()})
    with consumer_for(kafka_broker.bootstrap, topic, **{"key.deserializer": "str",
                                                       "value.deserializer": deserializer}) as consumer:
        records = consume(consumer, len(EVENTS))
    handled = []
    for record in records:
        match record.value:  # the consumer dispatches on the type
            case OrderPlaced(order_id=oid, amount=amount):
                handled.append(f"placed {oid} {amount}")
            case OrderShipped(order_id=oid, carrier=carrier):
                handled.append(f"shipped {oid} {carrier}")
            case OrderCancelled(order_id=oid, reason=reason):
                handled.append(f"cancelled {oid} {reason}")
        assert record.key == record.value.order_id
    assert handled == ["placed o1 9.5", "shipped o1 ups", "placed o2 1.0", "cancelled o2 late"]


@pytest.mark.timeout(180)
def test_protobuf_oneof_and_typed_messages(kafka_broker: Any, topic_factory: Any, sr_conf: dict) -> None:
    envelope_topic, typed_topic = topic_factory(1), topic_factory(1)
    events = [events_pb2.OrderEvent(placed=events_pb2.OrderPlaced(order_id="p1")),
              events_pb2.OrderEvent(cancelled=events_pb2.OrderCancelled(order_id="p1", reason="dup"))]
    typed = [events_pb2.OrderShipped(order_id="p2", carrier="dhl"), events_pb2.OrderPlaced(order_id="p3")]
    with Producer({"bootstrap.servers": kafka_broker.bootstrap,
                   "value.serializer": ProtobufSerializer(events_pb2.OrderEvent, sr_conf)}) as envelopes, \
            Producer({"bootstrap.servers": kafka_broker.bootstrap, "value.serializer": ProtobufSerializer(
                None, {**sr_conf, "subject.name.strategy": "topic_record"})}) as any_type:
        for e in events:
            envelopes.send(envelope_topic, e)
        for m in typed:
            any_type.send(typed_topic, m)
    with consumer_for(kafka_broker.bootstrap, envelope_topic,
                      **{"value.deserializer": ProtobufDeserializer(events_pb2.OrderEvent)}) as consumer:
        got = [r.value for r in consume(consumer, 2)]
    assert [e.WhichOneof("event") for e in got] == ["placed", "cancelled"] and got == events
    reader = ProtobufDeserializer(conf=sr_conf, message_types=[events_pb2.OrderShipped, events_pb2.OrderPlaced])
    with consumer_for(kafka_broker.bootstrap, typed_topic, **{"value.deserializer": reader}) as consumer:
        assert [r.value for r in consume(consumer, 2)] == typed


@pytest.mark.timeout(180)
def test_serializer_errors_raise_from_send_and_nothing_is_produced(kafka_broker: Any, topic_factory: Any,
                                                                   sr_conf: dict,
                                                                   sr_client: SchemaRegistryClient) -> None:
    topic = topic_factory(1)
    schema = avro_record("Reading", [("sensor", "string"), ("value", "double")])
    sr_client.set_compatibility("BACKWARD", f"{topic}-value")
    with Producer({"bootstrap.servers": kafka_broker.bootstrap,
                   "value.serializer": AvroSerializer(schema, sr_conf)}) as producer:
        producer.send(topic, {"sensor": "s1", "value": 1.0}).result(30)
        with pytest.raises(SchemaValidationError) as info:
            producer.send(topic, {"sensor": "s1", "value": "hot"})
        assert info.value.topic == topic and info.value.field == "value"
    breaking = avro_record("Reading", [("sensor", "long")])
    with Producer({"bootstrap.servers": kafka_broker.bootstrap,
                   "value.serializer": AvroSerializer(breaking, sr_conf)}) as producer:
        with pytest.raises(IncompatibleSchemaError) as incompatible:
            producer.send(topic, {"sensor": 5})
        assert incompatible.value.subject == f"{topic}-value" and incompatible.value.topic == topic
        producer.send(topic, None).result(30)  # a tombstone needs no schema
    with consumer_for(kafka_broker.bootstrap, topic,
                      **{"value.deserializer": AvroDeserializer(sr_conf)}) as consumer:
        values = [r.value for r in consume(consumer, 2)]
    assert values == [{"sensor": "s1", "value": 1.0}, None]


@pytest.mark.timeout(180)
def test_poll_raises_typed_errors_naming_the_record(kafka_broker: Any, topic_factory: Any, sr_conf: dict) -> None:
    topic = topic_factory(1)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as producer:
        producer.send(topic, b"plain bytes, no schema id").result(30)
        producer.send(topic, b"\x00\x7f\xff\xff\xf0x").result(30)
    with consumer_for(kafka_broker.bootstrap, topic,
                      **{"value.deserializer": JsonSchemaDeserializer(sr_conf)}) as consumer:
        with pytest.raises(WireFormatError) as info:
            consume(consumer, 1)
        assert info.value.topic == topic and info.value.partition == 0
        assert "offset 0" in str(info.value) and "magic byte" in str(info.value)
        consumer.seek(TopicPartition(topic, 0), 1)
        with pytest.raises(SerializationError, match="schema id 2147483632"):
            consume(consumer, 1)


@pytest.mark.timeout(180)
def test_builtin_deserializer_names(kafka_broker: Any, topic_factory: Any) -> None:
    topic = topic_factory(1)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "key.serializer": "long",
                   "value.serializer": "json"}) as producer:
        producer.send(topic, {"qty": 3}, key=2**40).result(30)
    with consumer_for(kafka_broker.bootstrap, topic, **{"key.deserializer": "long",
                                                       "value.deserializer": "json"}) as consumer:
        record = consume(consumer, 1)[0]
    assert (record.key, record.value) == (2**40, {"qty": 3})


@pytest.mark.timeout(180)
async def test_asyncio_clients_with_json_schema(kafka_broker: Any, topic_factory: Any, sr_conf: dict) -> None:
    topic = topic_factory(1)
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Ping", "type": "object",
              "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    async with kafkalite.aio.Producer({"bootstrap.servers": kafka_broker.bootstrap,
                                       "value.serializer": JsonSchemaSerializer(schema, sr_conf)}) as producer:
        for n in range(3):
            await producer.send_and_wait(topic, {"n": n})
        with pytest.raises(SchemaValidationError, match="'n' is a required property"):
            await producer.send(topic, {})
    async with kafkalite.aio.Consumer({"bootstrap.servers": kafka_broker.bootstrap, "enable.auto.commit": False,
                                       "value.deserializer": JsonSchemaDeserializer(sr_conf)}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got: list[Any] = []
        deadline = time.monotonic() + 60
        while len(got) < 3 and time.monotonic() < deadline:
            got.extend(r.value for r in await consumer.poll(0.5))
    assert got == [{"n": 0}, {"n": 1}, {"n": 2}]
