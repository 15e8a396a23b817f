"""Confluent-framed Avro columns <-> Arrow struct columns, for Spark and other Arrow users.

The Spark connector (``pyspark_kafkalite``) hands Kafka records to Spark as Arrow
batches with a binary ``value`` column; these functions turn such a column into a
struct column of the Avro record's fields and back, so a job can go from bytes to
typed columns (and back) inside ``mapInArrow`` without the JVM's ``from_avro``::

    from kafkalite.serialization.arrow import avro_to_arrow_schema, decode_column

    conf = {"schema.registry.url": "http://127.0.0.1:8081"}
    reader = '{"type": "record", "name": "Order", ...}'
    out_type = avro_to_arrow_schema(reader)                  # -> pyarrow struct type

    def decode(batches):
        for batch in batches:
            yield decode_column(batch, "value", reader_schema=reader, registry=conf)

    df.mapInArrow(decode, "...key binary, value struct<...>")

Types follow Spark's ``from_avro``: int/long/float/double/boolean/string/bytes as
themselves, enum as string, fixed as binary, ``date`` as date32, ``timestamp-*`` as
UTC microsecond timestamps (``local-timestamp-*`` without a zone), ``time-millis`` /
``time-micros`` as int32 / int64, ``decimal`` as decimal128, ``uuid`` as string,
arrays as lists, maps as ``map<string, T>``; a field is nullable only when its type
is a union with null; any other union becomes ``struct<member0, member1, ...>``.

Each record is decoded with its own writer schema (by the id in its header, from the
registry) and resolved into the reader schema, so a column mixing schema versions
comes out in one shape. ``mode="PERMISSIVE"`` turns undecodable records into nulls;
``"FAILFAST"`` (the default) raises naming the row.
"""

from __future__ import annotations

import datetime
import io
import uuid
from collections.abc import Callable
from typing import Any

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.arrow_common import (
    RegistrySource,
    check_mode,
    registry_client,
    replace_column,
    require_pyarrow,
    row_error,
)
from kafkalite.serialization.avro import SchemaInput, as_schema, parse_avro_schema
from kafkalite.serialization.registry_client import SchemaRegistryClient
from kafkalite.serialization.wire import frame, parse_header

try:
    import pyarrow as pa
except ImportError:  # pragma: no cover - exercised only without the extra
    pa = None

import fastavro

__all__ = [
    "avro_to_arrow_schema",
    "avro_to_arrow_type",
    "avro_to_struct",
    "decode_column",
    "encode_column",
    "struct_to_avro",
]

Converter = Callable[[Any], Any] | None  # None: the value needs no conversion
_require_pyarrow = require_pyarrow


def _parsed(schema: SchemaInput, registry: SchemaRegistryClient | None) -> Any:
    return parse_avro_schema(as_schema(schema), registry)


def _client(registry: RegistrySource) -> SchemaRegistryClient | None:
    return registry_client(registry)


# -- Avro schema -> Arrow type ---------------------------------------------------------


def _members(schema: list[Any]) -> tuple[list[Any], bool]:
    non_null = [s for s in schema if s != "null"]
    return non_null, len(non_null) < len(schema)


def avro_to_arrow_type(schema: Any) -> Any:
    """The Arrow type of an Avro schema (text, dict or a fastavro-parsed schema)."""
    _require_pyarrow()
    if isinstance(schema, str) and schema.lstrip().startswith(("{", "[", '"')):
        schema = _parsed(schema, None)
    return _arrow_type(schema, {})


_PRIMITIVES = {
    "null": "null", "boolean": "bool_", "int": "int32", "long": "int64", "float": "float32",
    "double": "float64", "bytes": "binary", "string": "string",
}


def _arrow_type(schema: Any, named: dict[str, Any]) -> Any:
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return getattr(pa, _PRIMITIVES[schema])()
        if schema in named:
            return _arrow_type(named[schema], named)
        raise ConfigError(f"unknown Avro type {schema!r}")
    if isinstance(schema, list):
        members, _nullable = _members(schema)
        if len(members) == 1:
            return _arrow_type(members[0], named)
        if not members:
            return pa.null()
        return pa.struct([pa.field(f"member{i}", _arrow_type(m, named)) for i, m in enumerate(members)])
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return pa.decimal128(int(schema["precision"]), int(schema.get("scale", 0)))
    if logical == "date" and kind == "int":
        return pa.date32()
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return pa.timestamp("us", tz="UTC")
    if logical in ("local-timestamp-millis", "local-timestamp-micros") and kind == "long":
        return pa.timestamp("us")
    if kind == "record" or kind == "error":
        named[schema["name"]] = schema
        fields = []
        for f in schema["fields"]:
            t = f["type"]
            nullable = isinstance(t, list) and "null" in t
            fields.append(pa.field(f["name"], _arrow_type(t, named), nullable=nullable))
        return pa.struct(fields)
    if kind == "enum":
        named[schema["name"]] = schema
        return pa.string()
    if kind == "fixed":
        named[schema["name"]] = schema
        return pa.binary()
    if kind == "array":
        return pa.list_(_arrow_type(schema["items"], named))
    if kind == "map":
        return pa.map_(pa.string(), _arrow_type(schema["values"], named))
    if isinstance(kind, (str, list, dict)):  # {"type": "string", "logicalType": "uuid"} ...
        return _arrow_type(kind, named)
    raise ConfigError(f"cannot map Avro schema {schema!r} to Arrow")


def avro_to_arrow_schema(schema: SchemaInput) -> Any:
    """The Arrow struct type of an Avro record schema (for ``mapInArrow`` schemas)."""
    return avro_to_arrow_type(_parsed(schema, None))


# -- value converters ------------------------------------------------------------------


_NESTED = ("record", "error", "enum", "fixed", "array")


def _nested_converter(schema: dict[str, Any], named: dict[str, Any],
                      convert: Callable[[Any, dict[str, Any]], Converter]) -> Converter:
    """The converter of a record, enum, fixed or array schema (a kind in ``_NESTED``),
    the same both ways: ``convert`` (the read or the write one) makes its parts'."""
    kind = schema["type"]
    if kind in ("record", "error"):
        named[schema["name"]] = schema
        fields = [(f["name"], convert(f["type"], named)) for f in schema["fields"]]
        active = [(n, c) for n, c in fields if c is not None]
        if not active:
            return None
        return lambda v: v if v is None else {**v, **{n: c(v.get(n)) for n, c in active}}
    if kind in ("enum", "fixed"):
        named[schema["name"]] = schema
        return None
    item = convert(schema["items"], named)  # an array
    return None if item is None else (lambda v: v if v is None else [item(x) for x in v])


def _read_converter(schema: Any, named: dict[str, Any]) -> Converter:
    """fastavro's Python value -> what ``pa.array`` accepts for the Arrow type."""
    if isinstance(schema, str):
        return _read_converter(named[schema], named) if schema in named else None
    if isinstance(schema, list):
        members, _ = _members(schema)
        if len(members) == 1:
            return _read_converter(members[0], named)
        return _union_reader(members, named)
    kind, logical = schema.get("type"), schema.get("logicalType")
    if kind in _NESTED:
        return _nested_converter(schema, named, _read_converter)
    if kind == "map":
        value = _read_converter(schema["values"], named)
        return None if value is None else (lambda v: v if v is None else {k: value(x) for k, x in v.items()})
    if logical == "uuid":
        return lambda v: str(v) if isinstance(v, uuid.UUID) else v
    if logical == "time-millis":
        return lambda v: _time_units(v, 1000) if isinstance(v, datetime.time) else v
    if logical == "time-micros":
        return lambda v: _time_units(v, 1_000_000) if isinstance(v, datetime.time) else v
    if isinstance(kind, (list, dict)):
        return _read_converter(kind, named)
    return None


def _time_units(t: datetime.time, per_second: int) -> int:
    seconds = t.hour * 3600 + t.minute * 60 + t.second
    return seconds * per_second + t.microsecond * per_second // 1_000_000


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "boolean": (bool,), "int": (int,), "long": (int,), "float": (float, int), "double": (float, int),
    "string": (str,), "bytes": (bytes,), "null": (type(None),),
}


def _union_reader(members: list[Any], named: dict[str, Any]) -> Callable[[Any], Any]:
    converters = [_read_converter(m, named) for m in members]
    names = [_full_name(m, named) for m in members]

    def convert(v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, tuple) and len(v) == 2 and v[0] in names:  # (record name, value)
            index = names.index(v[0])
            v = v[1]
        else:
            index = _branch_of(v, members, named)
        c = converters[index]
        return {f"member{index}": c(v) if c is not None else v}

    return convert


def _full_name(schema: Any, named: dict[str, Any]) -> str | None:
    if isinstance(schema, str):
        return schema if schema in named else None
    if isinstance(schema, dict) and schema.get("type") in ("record", "error", "enum", "fixed"):
        return str(schema["name"])
    return None


def _branch_of(v: Any, members: list[Any], named: dict[str, Any]) -> int:
    for i, m in enumerate(members):
        m = named.get(m, m) if isinstance(m, str) else m
        kind = m if isinstance(m, str) else m.get("type")
        if kind in ("int", "long", "float", "double") and isinstance(v, bool):  # bool is an int subclass
            continue
        if isinstance(kind, str) and kind in _PY_TYPES and isinstance(v, _PY_TYPES[kind]):
            return i
        if kind in ("record", "error", "map") and isinstance(v, dict):
            return i
        if kind == "array" and isinstance(v, list):
            return i
        if kind == "enum" and isinstance(v, str) and v in m.get("symbols", ()):
            return i
        if kind == "fixed" and isinstance(v, bytes) and len(v) == m.get("size"):
            return i
    raise SerializationError(f"value {v!r} matches no branch of the union")


def _write_converter(schema: Any, named: dict[str, Any]) -> Converter:
    """Arrow's ``to_pylist`` value -> what fastavro writes for the Avro schema."""
    if isinstance(schema, str):
        return _write_converter(named[schema], named) if schema in named else None
    if isinstance(schema, list):
        members, _ = _members(schema)
        if len(members) == 1:
            return _write_converter(members[0], named)
        converters = [_write_converter(m, named) for m in members]
        names = [_full_name(m, named) for m in members]

        def union(v: Any) -> Any:
            if v is None:
                return None
            for i, c in enumerate(converters):
                member = v.get(f"member{i}")
                if member is not None:
                    member = c(member) if c is not None else member
                    return (names[i], member) if names[i] else member
            return None

        return union
    kind = schema.get("type")
    if kind in _NESTED:
        return _nested_converter(schema, named, _write_converter)
    if kind == "map":
        value = _write_converter(schema["values"], named)

        def as_dict(v: Any) -> Any:
            if v is None:
                return None
            pairs = v.items() if isinstance(v, dict) else v  # Arrow maps come back as (k, v) lists
            return {k: (value(x) if value is not None else x) for k, x in pairs}

        return as_dict
    if isinstance(kind, (list, dict)):
        return _write_converter(kind, named)
    return None


# -- columns ---------------------------------------------------------------------------


def avro_to_struct(
    values: Any,
    reader_schema: SchemaInput | None = None,
    *,
    registry: RegistrySource = None,
    mode: str = "FAILFAST",
) -> Any:
    """Decode a binary Arrow array of Confluent-framed Avro into a struct array.

    Args:
        values: a ``pyarrow`` binary (or large binary) array or chunked array; nulls
            (tombstones) become null structs.
        reader_schema: the output shape. Required without ``registry``; with one, it
            defaults to the writer schema of the first record.
        registry: a :class:`SchemaRegistryClient` or its settings: each record is read
            with the writer schema of its id. Without one, ``reader_schema`` is taken
            as every record's writer schema.
        mode: ``"FAILFAST"`` raises :class:`SerializationError` naming the row;
            ``"PERMISSIVE"`` returns null for records that do not decode.
    """
    _require_pyarrow()
    mode = check_mode(mode)
    client = _client(registry)
    if reader_schema is None and client is None:
        raise ConfigError("avro_to_struct needs a reader_schema or a registry")
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    items = values.to_pylist()
    reader = _parsed(reader_schema, client) if reader_schema is not None else None
    writers: dict[int, Any] = {}
    rows: list[Any] = []
    for row, data in enumerate(items):
        if data is None:
            rows.append(None)
            continue
        try:
            schema_id, pos = parse_header(data)
            if client is not None:
                if schema_id not in writers:
                    writers[schema_id] = parse_avro_schema(client.get_schema(schema_id), client)
                writer = writers[schema_id]
                if reader is None:
                    reader = writer
            else:
                writer = reader
            rows.append(fastavro.schemaless_reader(
                io.BytesIO(data[pos:]), writer, reader if reader is not writer else None,
                return_record_name=True, return_record_name_override=True))
        except Exception as exc:
            if mode == "PERMISSIVE":
                rows.append(None)
                continue
            # A SerializationError keeps its type (unknown id, unreachable ...).
            raise row_error(exc, row, "Avro") from None
    if reader is None:  # every row was null
        return pa.nulls(len(items), pa.struct([]))
    arrow_type = avro_to_arrow_type(reader)
    convert = _read_converter(reader, {})
    if convert is not None:
        rows = [convert(r) for r in rows]
    return pa.array(rows, type=arrow_type)


def struct_to_avro(
    values: Any,
    schema: SchemaInput,
    *,
    schema_id: int | None = None,
    registry: RegistrySource = None,
    subject: str | None = None,
) -> Any:
    """Encode a struct Arrow array as Confluent-framed Avro (a binary array).

    The schema id is ``schema_id``, or the id of ``schema`` registered under
    ``subject`` in ``registry`` (registered if missing). Null structs stay null.
    """
    _require_pyarrow()
    client = _client(registry)
    if schema_id is None:
        if client is None or subject is None:
            raise ConfigError("struct_to_avro needs schema_id, or registry and subject")
        schema_id = client.register_schema(subject, as_schema(schema))
    parsed = _parsed(schema, client)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    convert = _write_converter(parsed, {})
    out: list[bytes | None] = []
    for row, value in enumerate(values.to_pylist()):
        if value is None:
            out.append(None)
            continue
        buffer = io.BytesIO()
        try:
            fastavro.schemaless_writer(buffer, parsed, convert(value) if convert is not None else value)
        except Exception as exc:
            raise SerializationError(f"row {row} does not match the Avro schema: {exc}") from None
        out.append(frame(schema_id, buffer.getvalue()))
    return pa.array(out, type=pa.binary())


def decode_column(batch: Any, column: str = "value", reader_schema: SchemaInput | None = None, *,
                  registry: RegistrySource = None, mode: str = "FAILFAST", name: str | None = None) -> Any:
    """A RecordBatch with ``column`` (Avro bytes) replaced by its struct (or added as ``name``).

    A record that does not decode (``FAILFAST``) raises naming its row, and its topic,
    partition and offset when the batch has those columns.
    """
    return replace_column(batch, column, name,
                          lambda c: avro_to_struct(c, reader_schema, registry=registry, mode=mode))


def encode_column(batch: Any, column: str, schema: SchemaInput, *, schema_id: int | None = None,
                  registry: RegistrySource = None, subject: str | None = None, name: str | None = None) -> Any:
    """A RecordBatch with the struct ``column`` replaced by its Avro bytes (or added as ``name``)."""
    return replace_column(batch, column, name, lambda c: struct_to_avro(
        c, schema, schema_id=schema_id, registry=registry, subject=subject))
