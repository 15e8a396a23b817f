"""Several event types in one topic with Protobuf: a ``oneof`` envelope.

``shop/orders.proto`` defines ``OrderEvent { oneof event { OrderPlaced placed = 1; ... } }``;
the producer writes envelopes, the consumer switches on ``WhichOneof("event")``. The
deserializer needs no registry: the class says how to parse.

    python examples/serialization_protobuf_events.py [--bootstrap HOST:PORT --registry URL]
"""

from __future__ import annotations

import time
import uuid

from _services import arguments, create_topic, services
from shop import orders_pb2

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.serialization import ProtobufDeserializer, ProtobufSerializer


def main() -> None:
    args = arguments(__doc__ or "")
    with services(args) as (bootstrap, registry_url):
        topic = f"orders-protobuf-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic)
        events = [
            orders_pb2.OrderEvent(placed=orders_pb2.OrderPlaced(order_id="o-1", customer="grace", amount=40.0)),
            orders_pb2.OrderEvent(shipped=orders_pb2.OrderShipped(order_id="o-1", carrier="dhl")),
            orders_pb2.OrderEvent(cancelled=orders_pb2.OrderCancelled(order_id="o-3", reason="duplicate")),
        ]
        serializer = ProtobufSerializer(orders_pb2.OrderEvent, {"schema.registry.url": registry_url})
        with Producer({"bootstrap.servers": bootstrap, "value.serializer": serializer}) as producer:
            for event in events:
                producer.send(topic, event)

        with Consumer({"bootstrap.servers": bootstrap,
                       "value.deserializer": ProtobufDeserializer(orders_pb2.OrderEvent)}) as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            consumer.seek_to_beginning()
            seen = 0
            deadline = time.monotonic() + 30
            while seen < len(events) and time.monotonic() < deadline:
                for record in consumer.poll(1.0):
                    seen += 1
                    event = record.value
                    kind = event.WhichOneof("event")
                    if kind == "placed":
                        print(f"{event.placed.customer} placed {event.placed.order_id} ({event.placed.amount:.2f})")
                    elif kind == "shipped":
                        print(f"{event.shipped.order_id} shipped with {event.shipped.carrier}")
                    elif kind == "cancelled":
                        print(f"{event.cancelled.order_id} cancelled: {event.cancelled.reason}")


if __name__ == "__main__":
    main()
