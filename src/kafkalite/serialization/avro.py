"""Avro serializer and deserializer in the Confluent wire format (fastavro).

Values are dicts (or any object, through a ``to_dict`` / ``from_dict`` hook; dataclass
instances are turned into dicts by themselves). The bytes are the same as the
Java and confluent-kafka serializers write: magic byte 0, the 4-byte schema id, the
Avro binary encoding.

Example::

    from kafkalite import Consumer, Producer
    from kafkalite.serialization import AvroDeserializer, AvroSerializer

    conf = {"schema.registry.url": "http://127.0.0.1:8081"}
    schema = '''{"type": "record", "name": "Order", "namespace": "shop",
                 "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}'''
    producer = Producer({"bootstrap.servers": "127.0.0.1:9092",
                         "value.serializer": AvroSerializer(schema, conf)})
    producer.send("orders", {"id": "o-1", "qty": 3})

    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "g",
                         "value.deserializer": AvroDeserializer(conf)})

Several event types in one topic, two ways:

* one Avro **union** schema (``[OrderPlaced, OrderShipped]``) under the topic's
  subject: write ``("shop.OrderShipped", {...})`` tuples (or any value fastavro can
  match to one branch); read with ``return_record_name=True`` to get the tuples
  back, or ``from_dict={"shop.OrderShipped": OrderShipped.from_dict, ...}`` to get
  objects;
* one schema per type with ``subject.name.strategy`` ``record`` or ``topic_record``:
  ``AvroSerializer(schemas=[placed, shipped], conf=...)`` picks the schema by the
  ``(record name, value)`` tuple or by the value's class name.

Evolution: ``AvroDeserializer(conf, reader_schema=newer)`` reads data written with
older (compatible) schemas into the newer shape (Avro schema resolution: new fields
take their defaults, removed ones are skipped).
"""

from __future__ import annotations

import dataclasses
import io
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.errors import SchemaValidationError, WireFormatError
from kafkalite.serialization.registry_client import SchemaRegistryClient
from kafkalite.serialization.registry_types import RegisteredSchema, Schema
from kafkalite.serialization.schema_serde import (
    COMMON_DESERIALIZER_SETTINGS,
    COMMON_SERIALIZER_SETTINGS,
    RegistryArg,
    SchemaSerde,
    call_hook,
)
from kafkalite.serialization.wire import frame

try:
    import fastavro
    from fastavro.validation import validate as _fastavro_validate
except ImportError:  # pragma: no cover - exercised only without the extra
    fastavro = None  # type: ignore[assignment]  # the module or None: _require_fastavro() checks first

__all__ = ["AvroDeserializer", "AvroSerializer", "parse_avro_schema"]

SchemaInput = str | Mapping[str, Any] | Sequence[Any] | Schema


def _require_fastavro() -> None:
    if fastavro is None:
        raise ConfigError("Avro serdes need fastavro: pip install 'kafkalite[avro]'")


def as_schema(schema: SchemaInput) -> Schema:
    """A registry :class:`Schema` from Avro JSON text, a parsed dict/list, or a Schema."""
    if isinstance(schema, Schema):
        if schema.schema_type != "AVRO":
            raise ConfigError(f"an Avro serde got a {schema.schema_type} schema")
        return schema
    if isinstance(schema, str):
        return Schema(schema, "AVRO")
    return Schema(json.dumps(schema), "AVRO")


def _named(schema: Any) -> str | None:
    """The full name of a named top-level schema (record, enum, fixed)."""
    if isinstance(schema, dict) and schema.get("type") in ("record", "error", "enum", "fixed"):
        name = str(schema["name"])
        namespace = schema.get("namespace")
        return name if "." in name or not namespace else f"{namespace}.{name}"
    return None


def parse_avro_schema(schema: Schema, registry: SchemaRegistryClient | None = None,
                      _named_schemas: dict[str, Any] | None = None) -> Any:
    """Parse an Avro :class:`Schema` with fastavro, resolving its references first.

    References (named types registered under other subjects) are fetched from
    ``registry`` and parsed into the same name space, depth first.
    """
    _require_fastavro()
    named: dict[str, Any] = {} if _named_schemas is None else _named_schemas
    if schema.references:
        if registry is None:
            raise ConfigError("this Avro schema has references; resolving them needs 'schema.registry.url'")
        for ref in schema.references:
            if ref.name in named:
                continue
            referenced = registry.get_version(ref.subject, ref.version)
            parse_avro_schema(referenced.schema, registry, named)
    try:
        return fastavro.parse_schema(json.loads(schema.schema_str), named_schemas=named)
    except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException,
            fastavro.schema.UnknownType) as exc:
        raise SerializationError(f"invalid Avro schema: {exc}") from None


def _field_path(message: str) -> str | None:
    """fastavro's "... on field zip on field addr" -> "addr.zip"."""
    parts = message.split(" on field ")[1:]
    path: list[str] = []
    for name in reversed(parts):
        if not path or path[-1] != name:  # an array's items repeat the field's name
            path.append(name)
    return ".".join(path) or None


class _AvroType:
    """One writer schema of a serializer: registry form, parsed form, record name."""

    def __init__(self, schema: Schema, registry: SchemaRegistryClient | None) -> None:
        self.schema = schema
        self.parsed = parse_avro_schema(schema, registry)
        self.name = _named(self.parsed)


class AvroSerializer(SchemaSerde):
    """Avro values (dicts or objects) -> Confluent-framed Avro bytes.

    Args:
        schema: the writer schema: Avro JSON text, a parsed dict / list (a union), or
            a :class:`Schema` (with references).
        conf: registry settings (``schema.registry.url`` ...) and serde settings
            (``auto.register.schemas``, ``use.latest.version``, ``subject.name.strategy``
            ...; see :mod:`kafkalite.serialization.schema_serde`). A
            :class:`SchemaRegistryClient` may be passed instead to share one.
        registry: a client (or settings) to use; default one built from ``conf``.
        schemas: several record schemas (several event types in one topic, with the
            ``record`` / ``topic_record`` strategies) instead of ``schema``.
        to_dict: ``fn(obj)`` or ``fn(obj, topic)`` turning an application object
            into a dict (dataclasses need none).
        is_key: serializes keys (the producer sets it through ``configure``).

    Raises (from ``serialize``):
        SchemaValidationError: the value does not fit the schema (names the field).
        IncompatibleSchemaError, InvalidSchemaError, SchemaRegistryUnavailableError ...

    Example (needs schema_registry)::

        order = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}'
        avro = AvroSerializer(order, {"schema.registry.url": registry_url})
        with Producer({"bootstrap.servers": bootstrap, "value.serializer": avro}) as p:
            p.send("avro-orders", {"id": "o-1"}).result(timeout=10)
    """

    SETTINGS = COMMON_SERIALIZER_SETTINGS
    KIND = "AvroSerializer"

    def __init__(
        self,
        schema: SchemaInput | None = None,
        conf: Mapping[str, Any] | SchemaRegistryClient | None = None,
        *,
        registry: RegistryArg = None,
        schemas: Sequence[SchemaInput] | None = None,
        to_dict: Callable[..., Any] | None = None,
        is_key: bool = False,
    ) -> None:
        _require_fastavro()
        super().__init__(conf, registry, is_key)
        if (schema is None) == (schemas is None):
            raise ConfigError("AvroSerializer needs either 'schema' or 'schemas'")
        inputs: Sequence[SchemaInput] = [schema] if schema is not None else list(schemas or ())
        self._types = [_AvroType(as_schema(s), self.registry) for s in inputs]
        self._by_name: dict[str, _AvroType] = {}
        for t in self._types:
            if t.name is not None:
                self._by_name[t.name] = t
                self._by_name.setdefault(t.name.rsplit(".", 1)[-1], t)
        if schemas is not None and len(self._by_name) < len(self._types):
            raise ConfigError("AvroSerializer(schemas=...) takes named record schemas only")
        self._to_dict = to_dict
        self._latest_parsed: dict[Schema, Any] = {}
        self._lock = threading.Lock()

    def _pick(self, data: Any) -> tuple[_AvroType, Any]:
        if len(self._types) == 1:
            return self._types[0], data
        if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], str):
            found = self._by_name.get(data[0])
            if found is not None:
                return found, data[1]
            raise SerializationError(f"no schema named {data[0]!r}; known: {', '.join(sorted(self._by_name))}")
        found = self._by_name.get(type(data).__name__)
        if found is None:
            raise SerializationError(
                f"cannot tell which of the schemas {', '.join(t.name or '?' for t in self._types)} a "
                f"{type(data).__name__} is: pass a (record name, value) tuple or an object whose class "
                "has the record's name")
        return found, data

    def serialize(self, topic: str, data: Any, headers: Any = None) -> bytes | None:
        """Encode ``data`` (None stays None: a null key or a tombstone).

        Example (needs schema_registry)::

            avro = AvroSerializer('{"type": "record", "name": "Tick", "fields": [{"name": "n", "type": "int"}]}', registry)
            data = avro.serialize("ticks", {"n": 7})
            assert data[0] == 0 and len(data) == 6           # magic byte, schema id, then Avro: zig-zag 7
        """
        if data is None:
            return None
        avro_type, value = self._pick(data)
        if self._to_dict is not None:
            value = call_hook(self._to_dict, value, topic)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        schema_id, latest = self.schema_id_for(topic, avro_type.name, avro_type.schema)
        parsed = avro_type.parsed if latest is None else self._parsed_latest(latest)
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, parsed, value)
        except Exception as exc:  # fastavro raises TypeError/ValueError/KeyError/AttributeError...
            raise self._mismatch(exc, value, parsed, topic, schema_id) from None
        return frame(schema_id, out.getvalue())

    def _parsed_latest(self, latest: RegisteredSchema) -> Any:
        with self._lock:
            parsed = self._latest_parsed.get(latest.schema)
        if parsed is None:
            parsed = parse_avro_schema(latest.schema, self.registry)
            with self._lock:
                self._latest_parsed[latest.schema] = parsed
        return parsed

    @staticmethod
    def _mismatch(exc: Exception, value: Any, parsed: Any, topic: str, schema_id: int) -> SchemaValidationError:
        text = str(exc)
        field = _field_path(text)
        try:
            _fastavro_validate(value, parsed, raise_errors=True)
        except Exception as detail:  # ValidationError names the full path
            errors = getattr(detail, "errors", None)
            if errors:
                first = errors[0]
                # fastavro names it "<record full name>.<field>": keep the field.
                field = field or str(getattr(first, "field", "") or "").rsplit(".", 1)[-1] or None
                text = text or str(first)
        return SchemaValidationError(
            f"the record does not match its Avro schema: {text}", field=field, schema_id=schema_id, topic=topic)


class AvroDeserializer(SchemaSerde):
    """Confluent-framed Avro bytes -> dicts (or objects through ``from_dict``).

    Args:
        conf: registry and serde settings (``schema.registry.url`` is needed: the
            writer schema comes from the registry by the id in each record), or a
            :class:`SchemaRegistryClient`.
        reader_schema: read into this schema (schema evolution); default the writer's.
        reader_schemas: several reader schemas; each record uses the one whose name
            matches the writer's record name (several event types in one topic).
        from_dict: ``fn(dict)`` / ``fn(dict, topic)``, or a mapping from record name
            (full or short) to such a function: the consumer gets objects and can
            dispatch on their type.
        return_record_name: decode union values as ``(record name, value)`` tuples.

    With ``use.latest.version``, the reader schema is the subject's latest version.

    Raises (from ``deserialize``): WireFormatError (no magic byte, too short, bytes
    that do not decode), UnknownSchemaIdError, SerializationError (incompatible
    reader schema).

    Example (needs schema_registry)::

        tick = '{"type": "record", "name": "Tick", "fields": [{"name": "n", "type": "int"}]}'
        data = AvroSerializer(tick, registry).serialize("ticks", {"n": 7})
        assert AvroDeserializer(registry).deserialize("ticks", data) == {"n": 7}
    """

    SETTINGS = COMMON_DESERIALIZER_SETTINGS
    KIND = "AvroDeserializer"

    def __init__(
        self,
        conf: Mapping[str, Any] | SchemaRegistryClient | None = None,
        *,
        registry: RegistryArg = None,
        reader_schema: SchemaInput | None = None,
        reader_schemas: Sequence[SchemaInput] | None = None,
        from_dict: Callable[..., Any] | Mapping[str, Callable[..., Any]] | None = None,
        return_record_name: bool = False,
        is_key: bool = False,
    ) -> None:
        _require_fastavro()
        super().__init__(conf, registry, is_key)
        self.need_registry("read writer schemas")
        readers = [reader_schema] if reader_schema is not None else list(reader_schemas or ())
        self._readers: dict[str | None, Any] = {}
        for r in readers:
            parsed = parse_avro_schema(as_schema(r), self.registry)
            self._readers[_named(parsed)] = parsed
        self._single_reader = self._readers[next(iter(self._readers))] if reader_schema is not None else None
        self._from_dict = from_dict
        self._return_record_name = return_record_name or isinstance(from_dict, Mapping)
        self._writers: dict[int, Any] = {}
        self._lock = threading.Lock()

    def _writer(self, schema_id: int, topic: str) -> Any:
        with self._lock:
            parsed = self._writers.get(schema_id)
        if parsed is None:
            parsed = parse_avro_schema(self.writer_schema(schema_id, topic), self.registry)
            with self._lock:
                self._writers[schema_id] = parsed
        return parsed

    def _reader(self, writer: Any, topic: str) -> Any:
        if self._single_reader is not None:
            return self._single_reader
        name = _named(writer)
        if self._readers:
            return self._readers.get(name) or self._readers.get(name.rsplit(".", 1)[-1] if name else None)
        if self.conf.get("use.latest.version"):
            latest = self.latest_reader(topic, name)
            return parse_avro_schema(latest.schema, self.registry)
        return None

    def deserialize(self, topic: str, data: bytes | None, headers: Any = None) -> Any:
        """Decode one record's key or value (None stays None).

        Example (needs schema_registry)::

            tick = '{"type": "record", "name": "Tick", "fields": [{"name": "n", "type": "int"}]}'
            data = AvroSerializer(tick, registry).serialize("ticks", {"n": 7})
            assert AvroDeserializer({"schema.registry.url": registry_url}).deserialize("ticks", data) == {"n": 7}
        """
        if data is None:
            return None
        schema_id, pos = self.header(data, topic)
        writer = self._writer(schema_id, topic)
        reader = self._reader(writer, topic)
        try:
            value = fastavro.schemaless_reader(
                io.BytesIO(memoryview(data)[pos:]), writer, reader,
                return_record_name=self._return_record_name, return_record_name_override=True)
        except fastavro.read.SchemaResolutionError as exc:
            raise SerializationError(
                f"cannot read data of schema id {schema_id} with the reader schema: {exc}",
                topic=topic) from None
        except (EOFError, ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError,
                OverflowError, MemoryError) as exc:
            raise WireFormatError(
                f"the Avro payload does not decode with schema id {schema_id}: {exc!r}", topic=topic) from None
        return self._convert(value, _named(reader if reader is not None else writer), topic)

    def _convert(self, value: Any, record_name: str | None, topic: str) -> Any:
        hook = self._from_dict
        if hook is None:
            return value
        if not isinstance(hook, Mapping):
            return call_hook(hook, value, topic)
        name = record_name
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
            name, value = value
        if name is None:
            return value
        fn = hook.get(name) or hook.get(name.rsplit(".", 1)[-1])
        return call_hook(fn, value, topic) if fn is not None else value
