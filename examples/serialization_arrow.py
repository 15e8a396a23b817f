"""Avro bytes -> Arrow columns (what the Spark connector's users do in ``mapInArrow``).

Reads a topic of Avro records into one Arrow RecordBatch whose ``value`` column is a
struct of the record's fields, records written with two schema versions included.

    python examples/serialization_arrow.py [--bootstrap HOST:PORT --registry URL]
"""

from __future__ import annotations

import json
import time
import uuid

import pyarrow as pa
from _services import arguments, create_topic, services

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.serialization import AvroSerializer
from kafkalite.serialization.arrow import decode_column

V1 = {"type": "record", "name": "Click", "namespace": "web",
      "fields": [{"name": "page", "type": "string"}, {"name": "ms", "type": "long"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "referrer", "type": ["null", "string"], "default": None}]}


def main() -> None:
    args = arguments(__doc__ or "")
    with services(args) as (bootstrap, registry_url):
        topic = f"clicks-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic)
        conf = {"schema.registry.url": registry_url}
        with Producer({"bootstrap.servers": bootstrap}) as producer:
            old, new = AvroSerializer(V1, conf), AvroSerializer(V2, conf)
            producer.send(topic, old.serialize(topic, {"page": "/", "ms": 120}))
            producer.send(topic, new.serialize(topic, {"page": "/docs", "ms": 80, "referrer": "/"}))
        with Consumer({"bootstrap.servers": bootstrap}) as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            consumer.seek_to_beginning()
            values: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(values) < 2 and time.monotonic() < deadline:
                values.extend(r.value for r in consumer.poll(1.0))
        batch = pa.record_batch({"value": pa.array(values, type=pa.binary())})
        decoded = decode_column(batch, "value", reader_schema=json.dumps(V2), registry=conf)
        print(decoded.schema)
        print(decoded.to_pylist())


if __name__ == "__main__":
    main()
