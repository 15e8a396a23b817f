"""Arrow column helpers: Confluent-framed Avro, Protobuf and JSON Schema columns <-> struct columns.

    .venv/bin/python benchmarks/arrow_columns.py                  # 10,000-row batches, best of 5
    .venv/bin/python benchmarks/arrow_columns.py --rows 50000 --repeat 3

What a ``mapInArrow`` function does per batch (``avro_to_struct`` / ``protobuf_to_struct``
/ ``json_to_struct`` and back), on the same record shape in each format
(``{id: string, qty: int, price: double, tags: [string]}``), schema ids fixed so no
registry is involved. Output: rows/s per format and direction, and each format / Avro.
Run on a quiet machine.
"""

from __future__ import annotations

import argparse
import io
import json
import time
from collections.abc import Callable
from typing import Any

import fastavro
import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kafkalite.serialization.arrow import avro_to_struct, struct_to_avro
from kafkalite.serialization.arrow_json import json_to_struct, struct_to_json
from kafkalite.serialization.arrow_protobuf import protobuf_to_struct, struct_to_protobuf
from kafkalite.serialization.wire import frame

AVRO = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "string"}, {"name": "qty", "type": "int"}, {"name": "price", "type": "double"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]}
JSON_SCHEMA = {"type": "object", "title": "Order", "properties": {
    "id": {"type": "string"}, "qty": {"type": "integer"}, "price": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string"}}}}


def order_class() -> Any:
    f = descriptor_pb2.FileDescriptorProto(name="bench_order.proto", package="bench", syntax="proto3")
    m = f.message_type.add(name="Order")
    t = descriptor_pb2.FieldDescriptorProto
    for number, (name, kind) in enumerate([("id", t.TYPE_STRING), ("qty", t.TYPE_INT32),
                                           ("price", t.TYPE_DOUBLE)], 1):
        m.field.add(name=name, number=number, type=kind, label=t.LABEL_OPTIONAL)
    m.field.add(name="tags", number=4, type=t.TYPE_STRING, label=t.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Order"))


def best_rate(fn: Callable[[], Any], rows: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return rows / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000, help="rows per batch")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    records = [{"id": f"order-{i}", "qty": i % 100, "price": i * 0.25, "tags": ["a", "bb"][: i % 3]}
               for i in range(args.rows)]
    parsed = fastavro.parse_schema(AVRO)

    def avro_bytes(r: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, r)
        return frame(1, out.getvalue())

    order = order_class()
    columns = {
        "Avro": pa.array([avro_bytes(r) for r in records], pa.binary()),
        "Protobuf": pa.array([frame(2, order(**r).SerializeToString(), b"\x00") for r in records], pa.binary()),
        "JSON Schema": pa.array([frame(3, json.dumps(r, separators=(",", ":")).encode()) for r in records],
                                pa.binary()),
    }
    decode = {"Avro": lambda c: avro_to_struct(c, AVRO), "Protobuf": lambda c: protobuf_to_struct(c, order),
              "JSON Schema": lambda c: json_to_struct(c, JSON_SCHEMA)}
    encode = {"Avro": lambda s: struct_to_avro(s, AVRO, schema_id=1),
              "Protobuf": lambda s: struct_to_protobuf(s, order, schema_id=2),
              "JSON Schema": lambda s: struct_to_json(s, JSON_SCHEMA, schema_id=3, validate=False)}
    print(f"{args.rows:,}-row batches, best of {args.repeat}")
    print(f"{'format':<12} {'decode rows/s':>14} {'vs Avro':>8} {'encode rows/s':>14} {'vs Avro':>8}")
    base: dict[str, float] = {}
    for name, column in columns.items():
        structs = decode[name](column)
        down = best_rate(lambda: decode[name](column), args.rows, args.repeat)  # noqa: B023
        up = best_rate(lambda: encode[name](structs), args.rows, args.repeat)  # noqa: B023
        base.setdefault("down", down)
        base.setdefault("up", up)
        print(f"{name:<12} {down:>14,.0f} {down / base['down']:>7.2f}x {up:>14,.0f} {up / base['up']:>7.2f}x")


if __name__ == "__main__":
    main()
