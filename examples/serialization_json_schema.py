"""JSON Schema: values are validated before they are sent, and errors name the field.

    python examples/serialization_json_schema.py [--bootstrap HOST:PORT --registry URL]
"""

from __future__ import annotations

import time
import uuid

from _services import arguments, create_topic, services

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.serialization import (
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    SchemaValidationError,
)

SIGNUP = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Signup",
    "type": "object",
    "properties": {
        "email": {"type": "string", "pattern": "^[^@]+@[^@]+$"},
        "plan": {"enum": ["free", "pro"]},
        "seats": {"type": "integer", "minimum": 1},
    },
    "required": ["email", "plan"],
}


def main() -> None:
    args = arguments(__doc__ or "")
    with services(args) as (bootstrap, registry_url):
        topic = f"signups-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic)
        conf = {"schema.registry.url": registry_url}
        with Producer({"bootstrap.servers": bootstrap,
                       "value.serializer": JsonSchemaSerializer(SIGNUP, conf)}) as producer:
            producer.send(topic, {"email": "ada@example.com", "plan": "pro", "seats": 3})
            try:
                producer.send(topic, {"email": "grace@example.com", "plan": "pro", "seats": 0})
            except SchemaValidationError as exc:
                print(f"refused before sending: field {exc.field!r}: {exc}")
        with Consumer({"bootstrap.servers": bootstrap,
                       "value.deserializer": JsonSchemaDeserializer(conf)}) as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            consumer.seek_to_beginning()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                records = consumer.poll(1.0)
                if records:
                    for record in records:
                        print("received", record.value)
                    break


if __name__ == "__main__":
    main()
