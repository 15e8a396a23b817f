"""Avro <-> Arrow column helpers without a registry (the reader schema is the writer's).

With a registry (several writer versions in one column) they are tested in
tests/integration/test_serdes_arrow.py."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import uuid

import fastavro
import pyarrow as pa
import pytest

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.arrow import (
    avro_to_arrow_schema,
    avro_to_struct,
    decode_column,
    encode_column,
    struct_to_avro,
)
from kafkalite.serialization.wire import frame

SCHEMA = {
    "type": "record", "name": "Reading", "namespace": "iot",
    "fields": [
        {"name": "device", "type": "string"},
        {"name": "seq", "type": "long"},
        {"name": "temp", "type": ["null", "double"], "default": None},
        {"name": "ok", "type": "boolean"},
        {"name": "raw", "type": "bytes"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "int"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "clock", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "where", "type": ["null", {"type": "record", "name": "Pos",
                                            "fields": [{"name": "lat", "type": "float"}]}], "default": None},
        {"name": "either", "type": ["int", "string", "Pos"]},
        {"name": "blob", "type": {"type": "fixed", "name": "Blob", "size": 2}},
    ],
}
AT = datetime.datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=datetime.timezone.utc)
ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def record(seq: int, **overrides: object) -> dict:
    base = {"device": f"d{seq}", "seq": seq, "temp": 21.5, "ok": True, "raw": b"\x00\x01", "kind": "B",
            "tags": ["x", "y"], "attrs": {"a": 1}, "at": AT, "day": datetime.date(2024, 5, 1),
            "price": decimal.Decimal("12.34"), "id": str(ID), "clock": datetime.time(1, 2, 3, 4000),
            "where": {"lat": 1.5}, "either": "s", "blob": b"ab"}
    return {**base, **overrides}


def encode(rec: dict, schema_id: int = 7) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(SCHEMA), rec)
    return frame(schema_id, out.getvalue())


def test_arrow_type_follows_sparks_from_avro() -> None:
    t = avro_to_arrow_schema(json.dumps(SCHEMA))
    assert t.field("device").type == pa.string() and not t.field("device").nullable
    assert t.field("seq").type == pa.int64()
    assert t.field("temp").type == pa.float64() and t.field("temp").nullable
    assert t.field("kind").type == pa.string()
    assert t.field("tags").type == pa.list_(pa.string())
    assert t.field("attrs").type == pa.map_(pa.string(), pa.int32())
    assert t.field("at").type == pa.timestamp("us", tz="UTC")
    assert t.field("day").type == pa.date32()
    assert t.field("price").type == pa.decimal128(9, 2)
    assert t.field("id").type == pa.string()
    assert t.field("clock").type == pa.int32()
    assert t.field("where").type == pa.struct([pa.field("lat", pa.float32(), nullable=False)])
    assert t.field("either").type.names == ["member0", "member1", "member2"]
    assert t.field("blob").type == pa.binary()


def test_decode_and_encode_round_trip() -> None:
    records = [record(1), record(2, temp=None, where=None, either=5, attrs={}),
               record(3, either={"lat": 2.0}, tags=[])]
    column = pa.array([encode(r) for r in records] + [None], type=pa.binary())
    structs = avro_to_struct(column, SCHEMA)
    rows = structs.to_pylist()
    assert rows[3] is None  # a tombstone stays null
    first = rows[0]
    assert first["device"] == "d1" and first["temp"] == 21.5 and first["kind"] == "B"
    assert first["at"] == AT and first["day"] == datetime.date(2024, 5, 1)
    assert first["price"] == decimal.Decimal("12.34") and first["id"] == str(ID)
    assert first["clock"] == 3_723_004  # ms since midnight
    assert dict(first["attrs"]) == {"a": 1}
    assert first["either"] == {"member0": None, "member1": "s", "member2": None}
    assert rows[1]["either"]["member0"] == 5 and rows[1]["where"] is None and rows[1]["temp"] is None
    assert rows[2]["either"]["member2"] == {"lat": 2.0}

    back = struct_to_avro(structs, SCHEMA, schema_id=7)
    again = avro_to_struct(back, SCHEMA)
    assert again.to_pylist() == rows
    assert back[3].as_py() is None
    # Bytes equal to a direct fastavro encoding where the values are exactly representable.
    assert back[1].as_py() == encode({**records[1], "clock": 3_723_004})


def test_record_batches_keep_the_other_columns() -> None:
    batch = pa.record_batch({"key": pa.array([b"k1", b"k2"]), "value": pa.array([encode(record(1)), None])})
    decoded = decode_column(batch, "value", SCHEMA)
    assert decoded.schema.names == ["key", "value"] and decoded.column(0).to_pylist() == [b"k1", b"k2"]
    assert decoded.column(1).type == avro_to_arrow_schema(SCHEMA)
    added = decode_column(batch, "value", SCHEMA, name="parsed")
    assert added.schema.names == ["key", "value", "parsed"]
    encoded = encode_column(decoded, "value", SCHEMA, schema_id=7)
    assert encoded.column(1).to_pylist() == batch.column(1).to_pylist()


def test_bad_rows_fail_fast_or_become_null() -> None:
    column = pa.array([encode(record(1)), b"\x01junk", encode(record(2))[:9]])
    with pytest.raises(SerializationError, match="row 1 of the Avro column"):
        avro_to_struct(column, SCHEMA)
    rows = avro_to_struct(column, SCHEMA, mode="permissive").to_pylist()
    assert rows[0]["seq"] == 1 and rows[1] is None and rows[2] is None


def test_bad_calls() -> None:
    with pytest.raises(ConfigError, match="reader_schema or a registry"):
        avro_to_struct(pa.array([b""]))
    with pytest.raises(ConfigError, match="FAILFAST or PERMISSIVE"):
        avro_to_struct(pa.array([b""]), SCHEMA, mode="lenient")
    with pytest.raises(ConfigError, match="schema_id, or registry and subject"):
        struct_to_avro(pa.array([{"a": 1}]), SCHEMA)
    with pytest.raises(SerializationError, match="row 0 does not match"):
        struct_to_avro(pa.array([{"device": "x"}]), SCHEMA, schema_id=1)
    with pytest.raises(ConfigError, match="no column 'payload'"):
        decode_column(pa.record_batch({"value": pa.array([b""])}), "payload", SCHEMA)


def test_a_bad_row_of_a_kafkalite_batch_names_its_record() -> None:
    batch = pa.record_batch({"topic": pa.array(["iot", "iot"]), "partition": pa.array([4, 4], pa.int32()),
                             "offset": pa.array([99, 100], pa.int64()),
                             "value": pa.array([encode(record(1)), b"\x00\x00\x00\x00\x07junk"])})
    with pytest.raises(SerializationError) as failed:
        decode_column(batch, "value", SCHEMA)
    assert str(failed.value).startswith("row 1 of the Avro column")
    assert "(topic 'iot' partition 4, offset 100)" in str(failed.value)
    assert failed.value.topic == "iot" and failed.value.context["offset"] == 100
