"""Several event types in one topic with Avro and the Schema Registry.

Each event type is a dataclass with its own Avro schema; the producer writes them all
to one topic with the ``topic_record`` subject strategy (subjects
``<topic>-shop.OrderPlaced`` ...), and the consumer gets the dataclasses back and
dispatches on their type. Then a newer ``OrderPlaced`` schema (a field with a
default) reads the old records: schema evolution.

    python examples/serialization_avro_events.py [--bootstrap HOST:PORT --registry URL]
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid

from _services import arguments, create_topic, services

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.serialization import AvroDeserializer, AvroSerializer, SchemaRegistryClient


@dataclasses.dataclass
class OrderPlaced:
    order_id: str
    customer: str
    amount: float


@dataclasses.dataclass
class OrderShipped:
    order_id: str
    carrier: str


@dataclasses.dataclass
class OrderCancelled:
    order_id: str
    reason: str


def record_schema(cls: type, types: dict[str, str], extra: list[dict] | None = None) -> str:
    """An Avro record schema for a dataclass (field name -> Avro type)."""
    fields = [{"name": f.name, "type": types[f.name]} for f in dataclasses.fields(cls)]
    return json.dumps({"type": "record", "name": cls.__name__, "namespace": "shop", "fields": fields + (extra or [])})


SCHEMAS = [
    record_schema(OrderPlaced, {"order_id": "string", "customer": "string", "amount": "double"}),
    record_schema(OrderShipped, {"order_id": "string", "carrier": "string"}),
    record_schema(OrderCancelled, {"order_id": "string", "reason": "string"}),
]


def main() -> None:
    args = arguments(__doc__ or "")
    with services(args) as (bootstrap, registry_url):
        topic = f"orders-avro-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic)
        conf = {"schema.registry.url": registry_url, "subject.name.strategy": "topic_record"}
        events = [OrderPlaced("o-1", "ada", 25.0), OrderShipped("o-1", "ups"),
                  OrderPlaced("o-2", "linus", 12.5), OrderCancelled("o-2", "out of stock")]

        # The serializer picks each event's schema by its class name.
        with Producer({"bootstrap.servers": bootstrap, "key.serializer": "str",
                       "value.serializer": AvroSerializer(schemas=SCHEMAS, conf=conf)}) as producer:
            for event in events:
                producer.send(topic, event, key=event.order_id)
        registry = SchemaRegistryClient({"schema.registry.url": registry_url})
        print("subjects:", sorted(s for s in registry.get_subjects() if s.startswith(topic)))

        from_dict = {"OrderPlaced": lambda d: OrderPlaced(**d), "OrderShipped": lambda d: OrderShipped(**d),
                     "OrderCancelled": lambda d: OrderCancelled(**d)}
        with Consumer({"bootstrap.servers": bootstrap, "key.deserializer": "str",
                       "value.deserializer": AvroDeserializer(conf, from_dict=from_dict)}) as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            consumer.seek_to_beginning()
            seen = 0
            deadline = time.monotonic() + 30
            while seen < len(events) and time.monotonic() < deadline:
                for record in consumer.poll(1.0):
                    seen += 1
                    match record.value:
                        case OrderPlaced(order_id=oid, customer=customer, amount=amount):
                            print(f"offset {record.offset}: {customer} placed {oid} for {amount:.2f}")
                        case OrderShipped(order_id=oid, carrier=carrier):
                            print(f"offset {record.offset}: {oid} shipped with {carrier}")
                        case OrderCancelled(order_id=oid, reason=reason):
                            print(f"offset {record.offset}: {oid} cancelled ({reason})")

        # Evolution: OrderPlaced v2 adds a field with a default; old records read into it.
        v2 = json.loads(SCHEMAS[0])
        v2["fields"].append({"name": "currency", "type": "string", "default": "EUR"})
        reader = AvroDeserializer(conf, reader_schemas=[json.dumps(v2), SCHEMAS[1], SCHEMAS[2]])
        with Consumer({"bootstrap.servers": bootstrap, "value.deserializer": reader}) as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            consumer.seek_to_beginning()
            records = []
            deadline = time.monotonic() + 30
            while len(records) < len(events) and time.monotonic() < deadline:
                records.extend(consumer.poll(1.0))
            print("read with OrderPlaced v2:", records[0].value)


if __name__ == "__main__":
    main()
