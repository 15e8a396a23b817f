"""Confluent-framed JSON Schema columns <-> Arrow struct columns, as :mod:`.arrow` does for Avro.

Inside Spark's ``mapInArrow``, a binary ``value`` column of records written by a JSON
Schema serializer (kafkalite's, confluent-kafka's, Java's) becomes a struct column
shaped by a JSON Schema, and back::

    from kafkalite.serialization.arrow_json import decode_json_column, json_schema_to_arrow_schema

    schema = {"type": "object", "title": "Click",
              "properties": {"page": {"type": "string"}, "ms": {"type": "integer"}}}
    out_type = json_schema_to_arrow_schema(schema)

    def decode(batches):
        for batch in batches:
            yield decode_json_column(batch, "value", schema)

    df.mapInArrow(decode, "...key binary, value struct<page: string, ms: bigint>")

Types (as Spark's ``from_json`` with the equivalent DDL): ``object`` with
``properties`` as a struct (every field nullable; properties the schema does not
name are dropped, missing ones are null), an ``object`` with only
``additionalProperties`` as ``map<string, T>``, ``array`` as a list, ``integer`` as
int64, ``number`` as float64, ``boolean``, ``string`` (``format: date-time`` as a UTC
microsecond timestamp, ``format: date`` as date32), ``null``; a type list or
``oneOf`` / ``anyOf`` of one type and ``null`` as that type; local ``$ref``
(``#/definitions/...``, ``#/$defs/...``) resolved. Other unions are refused with the
path named.

Speed: the payloads of a batch are parsed by Arrow's own JSON reader in one call
(C++), not record by record; a batch it cannot take (a row that does not match, a
map, a pretty-printed payload) is parsed row by row with ``json.loads``, which also
names the failing row. ``validate=True`` checks each record against its writer
schema (from the registry) or the reader schema first, at ``jsonschema``'s speed.
"""

from __future__ import annotations

import base64
import datetime
import io
import json
import re
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
from kafkalite.serialization.json_schema import SchemaInput, _check, _validator, as_json_schema
from kafkalite.serialization.registry_client import SchemaRegistryClient
from kafkalite.serialization.wire import frame, parse_header

try:
    import pyarrow as pa
    import pyarrow.json as pa_json
except ImportError:  # pragma: no cover - exercised only without the extra
    pa = None

__all__ = [
    "decode_json_column",
    "encode_json_column",
    "json_schema_to_arrow_schema",
    "json_to_struct",
    "struct_to_json",
]


def _contents(schema: SchemaInput) -> Any:
    text = as_json_schema(schema).schema_str
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"the JSON schema is not valid JSON: {exc}") from None


# -- JSON Schema -> Arrow type --------------------------------------------------------


def _resolve(node: Any, root: Any, path: str) -> Any:
    seen = set()
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/") or ref in seen:
            raise ConfigError(f"JSON schema at {path}: only local references ('#/definitions/...') map to "
                              f"Arrow, got {ref!r}")
        seen.add(ref)
        target = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise ConfigError(f"JSON schema at {path}: reference {ref!r} points nowhere")
            target = target[part]
        node = target
    return node


def _single(node: Any, root: Any, path: str) -> tuple[Any, str | None]:
    """(the one non-null alternative of a union, or the node; its type name)."""
    for key in ("oneOf", "anyOf"):
        if isinstance(node, dict) and key in node:
            options = [o for o in node[key] if not (isinstance(o, dict) and o.get("type") == "null")]
            if len(options) != 1:
                raise ConfigError(f"JSON schema at {path}: a {key} of {len(options)} non-null types has no one "
                                  "Arrow type; give the reader schema a single type there")
            rest = {k: v for k, v in node.items() if k != key}
            return _single({**rest, **_resolve(options[0], root, path)}, root, path)
    kind = node.get("type") if isinstance(node, dict) else None
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) > 1 and set(kinds) != {"integer", "number"}:
            raise ConfigError(f"JSON schema at {path}: the types {kinds} have no one Arrow type")
        kind = "number" if len(kinds) > 1 else (kinds[0] if kinds else "null")
    if kind is None and isinstance(node, dict):
        if "properties" in node:
            kind = "object"
        elif "items" in node:
            kind = "array"
        elif "enum" in node or "const" in node:
            kind = "string"
    return node, kind


def _arrow_type(node: Any, root: Any, path: str, depth: int = 0) -> Any:
    if depth > 64:
        raise ConfigError(f"JSON schema at {path}: nested more than 64 levels (a recursive $ref?)")
    node, kind = _single(_resolve(node, root, path), root, path)
    if kind == "object":
        properties = node.get("properties")
        if properties:
            return pa.struct([pa.field(name, _arrow_type(sub, root, f"{path}.{name}", depth + 1))
                              for name, sub in properties.items()])
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            return pa.map_(pa.string(), _arrow_type(extra, root, f"{path}.*", depth + 1))
        raise ConfigError(f"JSON schema at {path}: an object needs 'properties' or an 'additionalProperties' "
                          "schema to become a struct or a map")
    if kind == "array":
        items = node.get("items")
        if not isinstance(items, dict):
            raise ConfigError(f"JSON schema at {path}: an array needs one 'items' schema")
        return pa.list_(_arrow_type(items, root, f"{path}[]", depth + 1))
    if kind == "string":
        fmt = node.get("format")
        if fmt == "date-time":
            return pa.timestamp("us", tz="UTC")
        if fmt == "date":
            return pa.date32()
        return pa.string()
    simple = {"integer": pa.int64, "number": pa.float64, "boolean": pa.bool_, "null": pa.null}
    if kind in simple:
        return simple[kind]()
    raise ConfigError(f"JSON schema at {path}: no Arrow type for {json.dumps(node)[:200]}")


def json_schema_to_arrow_schema(schema: SchemaInput) -> Any:
    """The Arrow struct type of a JSON Schema whose top level is an object with properties."""
    require_pyarrow()
    root = _contents(schema)
    arrow_type = _arrow_type(root, root, "$")
    if not pa.types.is_struct(arrow_type):
        raise ConfigError("JSON schema at $: the top level must be an object with 'properties' to become a struct")
    return arrow_type


# -- values ---------------------------------------------------------------------------

# JSON Schema's ``date-time`` is RFC 3339 section 5.6. ``datetime.fromisoformat`` cannot be
# the parser: before 3.11 it refuses the ``Z`` suffix and fractions other than 3 or 6
# digits, and from 3.11 it takes ISO 8601 forms RFC 3339 does not allow, so the same
# payload would decode on one Python and fail on another.
_DATE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?",
    re.ASCII,
)


def _parse_date_time(text: str) -> datetime.datetime:
    """An RFC 3339 ``date-time`` as a datetime, the same on every Python kafkalite supports.

    The fraction is cut to microseconds (Arrow's ``timestamp("us")``); a value without an
    offset is taken as UTC, as Arrow takes a naive datetime for a UTC column::

        >>> _parse_date_time("2024-05-01T12:30:15.25Z")
        datetime.datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=datetime.timezone.utc)

    Raises SerializationError naming the text when it is not one (a leap second ``:60``
    included: Python's datetime cannot hold it).
    """
    match = _DATE_TIME.fullmatch(text)
    if match is None:
        raise SerializationError(f"{text!r} is not an RFC 3339 date-time (like 2024-05-01T12:30:15.25Z)")
    year, month, day, hour, minute, second, fraction, _z, sign, off_h, off_m = match.groups()
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        zone = datetime.timezone.utc
        if sign is not None:
            offset = datetime.timedelta(hours=int(off_h), minutes=int(off_m))
            zone = datetime.timezone(-offset if sign == "-" else offset)
        return datetime.datetime(int(year), int(month), int(day), int(hour), int(minute),
                                 int(second), micros, tzinfo=zone)
    except ValueError as exc:
        raise SerializationError(f"{text!r} is not an RFC 3339 date-time: {exc}") from None


def _reader(arrow_type: Any) -> Callable[[Any], Any] | None:
    """json.loads' value -> what pa.array takes for ``arrow_type`` (None: as it is)."""
    if pa.types.is_timestamp(arrow_type):
        return lambda v: _parse_date_time(v) if isinstance(v, str) else v
    if pa.types.is_date32(arrow_type):
        return lambda v: datetime.date.fromisoformat(v) if isinstance(v, str) else v
    if pa.types.is_struct(arrow_type):
        fields = [(f.name, _reader(f.type)) for f in arrow_type]
        active = [(n, c) for n, c in fields if c is not None]
        if not active:
            return None
        return lambda v: {**v, **{n: c(v.get(n)) for n, c in active}} if isinstance(v, dict) else v
    if pa.types.is_map(arrow_type):
        item = _reader(arrow_type.item_type)
        return lambda v: list((k, item(x) if item else x) for k, x in v.items()) if isinstance(v, dict) else v
    if pa.types.is_list(arrow_type):
        element = _reader(arrow_type.value_type)
        return None if element is None else (lambda v: [element(x) for x in v] if isinstance(v, list) else v)
    return None


def _writer(arrow_type: Any) -> Callable[[Any], Any] | None:
    """Arrow's ``to_pylist`` value -> a JSON-compatible value (null fields dropped, as Spark's to_json)."""
    if pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type) or pa.types.is_time(arrow_type):
        return lambda v: v.isoformat().replace("+00:00", "Z") if v is not None else None
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return lambda v: base64.b64encode(v).decode("ascii") if v is not None else None
    if pa.types.is_decimal(arrow_type):
        return lambda v: float(v) if v is not None else None
    if pa.types.is_struct(arrow_type):
        fields = [(f.name, _writer(f.type)) for f in arrow_type]
        return lambda v: None if v is None else {n: (c(v[n]) if c else v[n]) for n, c in fields
                                                 if v.get(n) is not None}
    if pa.types.is_map(arrow_type):
        item = _writer(arrow_type.item_type)
        return lambda v: None if v is None else {str(k): (item(x) if item else x) for k, x in v}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        element = _writer(arrow_type.value_type)
        return None if element is None else (lambda v: None if v is None else [element(x) for x in v])
    return None


# -- columns --------------------------------------------------------------------------


def _fast(payloads: list[bytes], arrow_type: Any) -> Any:
    """Arrow's JSON reader over all payloads at once; None when it cannot take them."""
    if not payloads:
        return pa.array([], arrow_type)
    if any(b"\n" in p or b"\r" in p for p in payloads):  # one line per record for Arrow's reader
        return None
    options = pa_json.ParseOptions(explicit_schema=pa.schema(list(arrow_type)), unexpected_field_behavior="ignore")
    try:
        table = pa_json.read_json(io.BytesIO(b"\n".join(payloads)), parse_options=options,
                                  read_options=pa_json.ReadOptions(use_threads=False, block_size=1 << 30))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    if table.num_rows != len(payloads):
        return None
    return pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], fields=list(arrow_type))


def _slow(payloads: list[bytes], rows: list[int], arrow_type: Any, mode: str,
          validators: list[Any] | None) -> tuple[Any, list[int]]:
    """Row by row: (struct array of the good payloads, indexes of the rows that failed)."""
    convert = _reader(arrow_type)
    values: list[Any] = []
    failed: list[int] = []
    for i, payload in enumerate(payloads):
        try:
            value = json.loads(payload)
            if validators is not None and validators[i] is not None:
                _check(validators[i], value, "", None)
            if not isinstance(value, dict):
                raise SerializationError(f"the payload is a JSON {type(value).__name__}, not an object")
            value = convert(value) if convert is not None else value
            pa.array([value], arrow_type)  # the row's own check, so the error names it
        except Exception as exc:
            if mode == "PERMISSIVE":
                failed.append(i)
                continue
            raise row_error(exc, rows[i], "JSON") from None
        values.append(value)
    return pa.array(values, arrow_type), failed


def json_to_struct(
    values: Any,
    reader_schema: SchemaInput | None = None,
    *,
    registry: RegistrySource = None,
    mode: str = "FAILFAST",
    validate: bool = False,
) -> Any:
    """Decode a binary Arrow array of Confluent-framed JSON into a struct array.

    Args:
        values: a ``pyarrow`` binary array or chunked array; nulls (tombstones) become
            null structs.
        reader_schema: the output shape (a JSON Schema, text or dict). Without it,
            ``registry`` is needed and the first record's writer schema is the shape.
        registry: a :class:`SchemaRegistryClient` or its settings.
        mode: ``"FAILFAST"`` raises :class:`SerializationError` naming the row;
            ``"PERMISSIVE"`` returns null for records that do not decode.
        validate: check each record against its writer schema (with a registry) or
            the reader schema first, as the JSON Schema deserializer does (slower).

    Example::

        structs = json_to_struct(batch.column("value"), schema, registry={"schema.registry.url": url})
    """
    require_pyarrow()
    mode = check_mode(mode)
    client = registry_client(registry)
    if reader_schema is None and client is None:
        raise ConfigError("json_to_struct needs a reader_schema or a registry")
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    items = values.to_pylist()
    payloads: list[bytes] = []
    rows: list[int] = []
    ids: list[int] = []
    indices: list[int | None] = []
    bad_header: tuple[int, SerializationError] | None = None
    for row, data in enumerate(items):
        if data is None:
            indices.append(None)
            continue
        try:
            schema_id, pos = parse_header(data)
        except SerializationError as exc:
            if mode == "PERMISSIVE":
                indices.append(None)
                continue
            bad_header = (row, exc)
            break
        indices.append(len(payloads))
        payloads.append(data[pos:])
        rows.append(row)
        ids.append(schema_id)
    if reader_schema is None:
        if not ids:
            if bad_header is not None:
                raise row_error(bad_header[1], bad_header[0], "JSON") from None
            return pa.nulls(len(items), pa.struct([]))
        assert client is not None
        reader_schema = _writer_schema(client, ids[0], rows[0])
    arrow_type = json_schema_to_arrow_schema(reader_schema)
    validators = _validators(ids, rows, reader_schema, client) if validate else None
    if bad_header is not None:  # FAILFAST names the first bad row: one before it, or this one
        _slow(payloads, rows, arrow_type, mode, validators)
        raise row_error(bad_header[1], bad_header[0], "JSON") from None
    structs = None if validate else _fast(payloads, arrow_type)
    if structs is None:
        structs, failed = _slow(payloads, rows, arrow_type, mode, validators)
        if failed:  # PERMISSIVE: the failed payloads' rows become null, the others shift down
            failed_set = set(failed)
            remap: dict[int, int] = {}
            for i in range(len(payloads)):
                if i not in failed_set:
                    remap[i] = len(remap)
            indices = [None if i is None else remap.get(i) for i in indices]
    if len(structs) == len(items) and all(i == n for n, i in enumerate(indices)):
        return structs
    return structs.take(pa.array(indices, pa.int32()))


def _writer_schema(client: SchemaRegistryClient, schema_id: int, row: int) -> Any:
    try:
        schema = client.get_schema(schema_id)
    except SerializationError as exc:
        raise row_error(exc, row, "JSON") from None
    if schema.schema_type != "JSON":
        raise row_error(SerializationError(f"schema id {schema_id} is a {schema.schema_type} schema, not JSON",
                                           schema_id=schema_id), row, "JSON")
    return schema


def _validators(ids: list[int], rows: list[int], reader_schema: SchemaInput,
                client: SchemaRegistryClient | None) -> list[Any]:
    if client is None:
        one = _validator(as_json_schema(reader_schema), None)
        return [one] * len(ids)
    by_id: dict[int, Any] = {}
    for schema_id, row in zip(ids, rows):
        if schema_id not in by_id:
            by_id[schema_id] = _validator(_writer_schema(client, schema_id, row), client)
    return [by_id[i] for i in ids]


def struct_to_json(
    values: Any,
    schema: SchemaInput,
    *,
    schema_id: int | None = None,
    registry: RegistrySource = None,
    subject: str | None = None,
    validate: bool = True,
) -> Any:
    """Encode a struct Arrow array as Confluent-framed JSON (a binary array).

    Compact UTF-8 JSON as the JSON Schema serializer writes it; null fields are left
    out (as Spark's ``to_json``), timestamps and dates as ISO 8601 text, binary as
    base64. The schema id is ``schema_id``, or the id of ``schema`` registered under
    ``subject`` in ``registry`` (registered if missing). With ``validate`` (the
    default) each value is checked against ``schema`` first. Null structs stay null.
    """
    require_pyarrow()
    parsed = as_json_schema(schema)
    if schema_id is None:
        client = registry_client(registry)
        if client is None or subject is None:
            raise ConfigError("struct_to_json needs schema_id, or registry and subject")
        schema_id = client.register_schema(subject, parsed)
    validator = _validator(parsed, registry_client(registry)) if validate else None
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    convert = _writer(values.type)
    out: list[bytes | None] = []
    for row, value in enumerate(values.to_pylist()):
        if value is None:
            out.append(None)
            continue
        document = convert(value) if convert is not None else value
        try:
            if validator is not None:
                _check(validator, document, "", schema_id)
            payload = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except SerializationError as exc:
            exc.message = f"row {row} does not match the JSON schema: {exc.message}"
            raise
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"row {row} is not JSON-serializable: {exc}") from None
        out.append(frame(schema_id, payload))
    return pa.array(out, type=pa.binary())


def decode_json_column(batch: Any, column: str = "value", reader_schema: SchemaInput | None = None, *,
                       registry: RegistrySource = None, mode: str = "FAILFAST", validate: bool = False,
                       name: str | None = None) -> Any:
    """A RecordBatch with ``column`` (JSON bytes) replaced by its struct (or added as ``name``).

    A record that does not decode (``FAILFAST``) raises naming its row, and its topic,
    partition and offset when the batch has those columns.
    """
    return replace_column(batch, column, name, lambda c: json_to_struct(
        c, reader_schema, registry=registry, mode=mode, validate=validate))


def encode_json_column(batch: Any, column: str, schema: SchemaInput, *, schema_id: int | None = None,
                       registry: RegistrySource = None, subject: str | None = None, validate: bool = True,
                       name: str | None = None) -> Any:
    """A RecordBatch with the struct ``column`` replaced by its JSON bytes (or added as ``name``)."""
    return replace_column(batch, column, name, lambda c: struct_to_json(
        c, schema, schema_id=schema_id, registry=registry, subject=subject, validate=validate))
