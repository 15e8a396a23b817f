"""JSON Schema <-> Arrow column helpers without a registry (the reader schema is the shape).

With a registry (writer schemas by id, validation) they are tested in
tests/integration/test_serdes_arrow_formats.py, inside Spark in
tests/spark/test_spark_schema_columns.py."""

from __future__ import annotations

import datetime
import json

import pyarrow as pa
import pytest

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.arrow_json import (
    decode_json_column,
    encode_json_column,
    json_schema_to_arrow_schema,
    json_to_struct,
    struct_to_json,
)
from kafkalite.serialization.errors import SchemaValidationError
from kafkalite.serialization.wire import frame

SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Reading", "type": "object",
    "properties": {
        "device": {"type": "string"},
        "seq": {"type": "integer", "minimum": 0},
        "temp": {"type": ["number", "null"]},
        "ok": {"type": "boolean"},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "where": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/Pos"}]},
    },
    "required": ["device", "seq"],
    "definitions": {"Pos": {"type": "object", "properties": {"lat": {"type": "number"}}}},
}
AT = datetime.datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=datetime.timezone.utc)


def framed(value: object, schema_id: int = 4) -> bytes:
    return frame(schema_id, json.dumps(value, separators=(",", ":")).encode())


def test_arrow_type_follows_sparks_from_json() -> None:
    t = json_schema_to_arrow_schema(SCHEMA)
    assert t.field("device").type == pa.string() and t.field("seq").type == pa.int64()
    assert t.field("temp").type == pa.float64() and t.field("ok").type == pa.bool_()
    assert t.field("at").type == pa.timestamp("us", tz="UTC") and t.field("day").type == pa.date32()
    assert t.field("tags").type == pa.list_(pa.string())
    assert t.field("attrs").type == pa.map_(pa.string(), pa.int64())
    assert t.field("where").type == pa.struct([pa.field("lat", pa.float64())])
    assert json_schema_to_arrow_schema(json.dumps(SCHEMA)) == t  # text or dict


def test_decode_fast_path_with_tombstones_and_unknown_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalite.serialization import arrow_json

    def no_row_path(*args: object) -> None:
        raise AssertionError("the batch should not need the row-by-row path")

    monkeypatch.setattr(arrow_json, "_slow", no_row_path)
    # No map in this reader schema: Arrow's JSON reader takes the whole batch.
    reader = {"type": "object", "properties": {k: SCHEMA["properties"][k] for k in ("device", "seq", "temp", "tags")}}
    column = pa.array([framed({"device": "d1", "seq": 1, "temp": 21.5, "tags": ["x"], "extra": {"a": 1}}), None,
                       framed({"device": "d2", "seq": 2}), None], pa.binary())
    rows = json_to_struct(column, reader).to_pylist()
    assert rows == [{"device": "d1", "seq": 1, "temp": 21.5, "tags": ["x"]}, None,
                    {"device": "d2", "seq": 2, "temp": None, "tags": None}, None]


def test_decode_and_encode_round_trip() -> None:
    full = {"device": "d1", "seq": 1, "temp": 21.5, "ok": True, "at": "2024-05-01T12:30:15.250000Z",
            "day": "2024-05-01", "tags": ["x", "y"], "attrs": {"a": 1}, "where": {"lat": 1.5}}
    column = pa.array([framed(full), framed({"device": "d2", "seq": 2, "where": None}), None])
    structs = json_to_struct(column, SCHEMA)
    rows = structs.to_pylist()
    assert rows[0]["at"] == AT and rows[0]["day"] == datetime.date(2024, 5, 1)
    assert rows[0]["attrs"] == [("a", 1)] and rows[0]["where"] == {"lat": 1.5}
    assert rows[1]["where"] is None and rows[1]["tags"] is None and rows[2] is None
    back = struct_to_json(structs, SCHEMA, schema_id=4)
    assert back.to_pylist()[0] == framed(full)  # the same compact text the serializer writes
    assert back.to_pylist()[1] == framed({"device": "d2", "seq": 2})  # null fields left out, as to_json
    assert back.to_pylist()[2] is None
    assert json_to_struct(back, SCHEMA).to_pylist() == rows


@pytest.mark.parametrize("text", [
    "2024-05-01T12:30:15.250000Z", "2024-05-01T12:30:15.25Z", "2024-05-01t12:30:15.25z",
    "2024-05-01 12:30:15.25Z", "2024-05-01T14:30:15.25+02:00", "2024-05-01T10:00:15.25-02:30",
    "2024-05-01T12:30:15.250000999Z", "2024-05-01T12:30:15.25",
])
def test_rfc3339_date_times_decode_alike_on_every_python(text: str) -> None:
    # datetime.fromisoformat takes "Z" and 2 or 9 fraction digits only from 3.11 on: the
    # same payload must give the same instant on 3.10 (the fraction cut to microseconds).
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}}
    [row] = json_to_struct(pa.array([framed({"at": text})]), schema).to_pylist()
    assert row["at"] == AT, text


@pytest.mark.parametrize("text", ["20240501T123015Z", "2024-05-01T12:30:60Z", "2024-13-01T00:00:00Z"])
def test_a_date_time_that_is_not_rfc3339_is_refused_naming_it(text: str) -> None:
    # The ISO 8601 basic form (3.11's fromisoformat takes it), a leap second (Python's
    # datetime cannot hold one), a month 13.
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}}
    with pytest.raises(SerializationError, match=f"row 0 of the JSON column.*'{text}' is not an RFC 3339 date-time"):
        json_to_struct(pa.array([framed({"at": text})]), schema)


def test_bad_rows_fail_fast_name_the_kafka_record_or_become_null() -> None:
    batch = pa.record_batch({"topic": pa.array(["readings"] * 4), "partition": pa.array([1] * 4, pa.int32()),
                             "offset": pa.array([7, 8, 9, 10], pa.int64()),
                             "value": pa.array([framed({"device": "d", "seq": 1}), framed({"device": "d", "seq": "x"}),
                                                frame(4, b"{not json"), b"\x01\x00"])})
    with pytest.raises(SerializationError) as failed:
        decode_json_column(batch, "value", SCHEMA)
    text = str(failed.value)
    assert "row 1 of the JSON column" in text and "topic 'readings' partition 1" in text and "offset 8" in text
    lenient = decode_json_column(batch, "value", SCHEMA, mode="permissive")
    assert [r if r is None else r["seq"] for r in lenient.column(3).to_pylist()] == [1, None, None, None]
    with pytest.raises(SerializationError, match="row 0 of the JSON column.*magic byte"):
        json_to_struct(pa.array([b"\x01\x00\x00\x00\x00{}"]), SCHEMA)
    # validate=True: the reader schema's rules (minimum) as the deserializer checks them.
    with pytest.raises(SchemaValidationError, match="row 0 of the JSON column"):
        json_to_struct(pa.array([framed({"device": "d", "seq": -1})]), SCHEMA, validate=True)
    assert json_to_struct(pa.array([framed({"device": "d", "seq": -1})]), SCHEMA).to_pylist()[0]["seq"] == -1


def test_pretty_printed_payloads_take_the_row_path() -> None:
    column = pa.array([frame(4, json.dumps({"device": "d", "seq": 3}, indent=2).encode())])
    assert json_to_struct(column, SCHEMA).to_pylist()[0]["seq"] == 3


def test_encode_validates_and_keeps_other_columns() -> None:
    t = json_schema_to_arrow_schema(SCHEMA)
    batch = pa.record_batch({"key": pa.array([b"k"]), "value": pa.array([{"device": "d", "seq": -5}], t)})
    with pytest.raises(SchemaValidationError, match="row 0 does not match the JSON schema"):
        encode_json_column(batch, "value", SCHEMA, schema_id=4)
    out = encode_json_column(batch, "value", SCHEMA, schema_id=4, validate=False, name="json")
    assert out.schema.names == ["key", "value", "json"] and out.column(2).to_pylist() == [
        framed({"device": "d", "seq": -5})]


def test_bad_calls_and_schemas() -> None:
    with pytest.raises(ConfigError, match="reader_schema or a registry"):
        json_to_struct(pa.array([b""]))
    with pytest.raises(ConfigError, match="FAILFAST or PERMISSIVE"):
        json_to_struct(pa.array([b""]), SCHEMA, mode="lenient")
    with pytest.raises(ConfigError, match="schema_id, or registry and subject"):
        struct_to_json(pa.array([{"a": 1}]), SCHEMA)
    with pytest.raises(ConfigError, match=r"at \$\.v: a oneOf of 2 non-null types"):
        json_schema_to_arrow_schema({"type": "object", "properties": {"v": {"oneOf": [{"type": "string"},
                                                                                        {"type": "integer"}]}}})
    with pytest.raises(ConfigError, match="only local references"):
        json_schema_to_arrow_schema({"type": "object", "properties": {"v": {"$ref": "other.json"}}})
    with pytest.raises(ConfigError, match="top level must be an object"):
        json_schema_to_arrow_schema({"type": "string"})
    with pytest.raises(ConfigError, match="no column 'payload'"):
        decode_json_column(pa.record_batch({"value": pa.array([b""])}), "payload", SCHEMA)
