"""Schema serdes: kafkalite vs confluent-kafka, records per second, same registry.

    .venv/bin/python benchmarks/serdes.py                       # own Apicurio Registry
    .venv/bin/python benchmarks/serdes.py --records 200000 --repeat 3
    .venv/bin/python benchmarks/serdes.py --registry http://127.0.0.1:8081

For Avro, Protobuf and JSON Schema, each client serializes the same records (schema id
cached after the first call, as in production) and deserializes the bytes; no broker
involved. Output: records/s per client and direction, and kafkalite / confluent-kafka
(above 1 means kafkalite is faster). Run on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.helpers.schemas

AVRO = json.dumps({"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "string"}, {"name": "qty", "type": "int"}, {"name": "price", "type": "double"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]})
JSON_SCHEMA = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
                          "properties": {"id": {"type": "string"}, "qty": {"type": "integer"},
                                         "price": {"type": "number"}, "tags": {"type": "array"}},
                          "required": ["id", "qty"]})


def rate(fn: Callable[[Any], Any], items: list[Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - start)
    return len(items) / best


@contextlib.contextmanager
def registry_url(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    from kafkalite.testing import ApicurioRegistry

    with ApicurioRegistry() as registry:
        yield registry.url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--registry", help="schema.registry.url (default: start Apicurio)")
    args = parser.parse_args()

    from confluent_kafka.schema_registry import SchemaRegistryClient as CClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvroD
    from confluent_kafka.schema_registry.avro import AvroSerializer as CAvroS
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJsonD
    from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJsonS
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CProtoD
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CProtoS
    from confluent_kafka.serialization import MessageField, SerializationContext

    from kafkalite.serialization import (
        AvroDeserializer,
        AvroSerializer,
        JsonSchemaDeserializer,
        JsonSchemaSerializer,
        ProtobufDeserializer,
        ProtobufSerializer,
    )
    from tests.helpers.schemas import events_pb2

    dicts = [{"id": f"o-{i}", "qty": i % 100, "price": i * 0.5, "tags": ["a", "b"]} for i in range(args.records)]
    messages = [events_pb2.OrderShipped(order_id=f"o-{i}", carrier="ups") for i in range(args.records)]
    with registry_url(args.registry) as url:
        conf = {"schema.registry.url": url}
        cclient = CClient({"url": url})
        run = uuid.uuid4().hex[:6]
        cases = [
            ("avro", dicts, AvroSerializer(AVRO, conf), AvroDeserializer(conf),
             CAvroS(cclient, AVRO), CAvroD(cclient)),
            ("protobuf", messages, ProtobufSerializer(events_pb2.OrderShipped, conf),
             ProtobufDeserializer(events_pb2.OrderShipped), CProtoS(events_pb2.OrderShipped, cclient, {}),
             CProtoD(events_pb2.OrderShipped, {})),
            ("json", dicts, JsonSchemaSerializer(JSON_SCHEMA, conf), JsonSchemaDeserializer(conf),
             CJsonS(JSON_SCHEMA, cclient), CJsonD(None, schema_registry_client=cclient)),
        ]
        print(f"{args.records} records, best of {args.repeat}")
        print(f"{'format':<10}{'direction':<13}{'kafkalite/s':>14}{'confluent/s':>14}{'ratio':>8}")
        for name, values, ser, de, cser, cde in cases:
            topic = f"bench-{name}-{run}"  # one subject per format
            ctx = SerializationContext(topic, MessageField.VALUE)
            data = [ser.serialize(topic, v) for v in values]
            assert data == [cser(v, ctx) for v in values[:1000]] + data[1000:], f"{name}: bytes differ"
            ours = rate(lambda v, s=ser, t=topic: s.serialize(t, v), values, args.repeat)
            theirs = rate(lambda v, s=cser, c=ctx: s(v, c), values, args.repeat)
            print(f"{name:<10}{'serialize':<13}{ours:>14,.0f}{theirs:>14,.0f}{ours / theirs:>8.2f}")
            ours = rate(lambda b, d=de, t=topic: d.deserialize(t, b), data, args.repeat)
            theirs = rate(lambda b, d=cde, c=ctx: d(b, c), data, args.repeat)
            print(f"{name:<10}{'deserialize':<13}{ours:>14,.0f}{theirs:>14,.0f}{ours / theirs:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
