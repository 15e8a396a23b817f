"""JSON Schema serializer and deserializer in the Confluent wire format.

The payload is compact UTF-8 JSON (no spaces, non-ASCII kept), as confluent-kafka
writes it, after magic byte 0 and the schema id. Values are validated against the
schema with the ``jsonschema`` package (the draft named by ``$schema``, draft-07 by
default) before anything is written, and on reading when ``validate`` is on; a
mismatch is a :class:`~kafkalite.serialization.errors.SchemaValidationError`
naming the field (a JSON path such as ``items.2.qty``). The record name used by the
``record`` / ``topic_record`` strategies is the schema's ``title``.

Example::

    from kafkalite.serialization import JsonSchemaDeserializer, JsonSchemaSerializer

    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
              "type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}},
              "required": ["qty"]}
    conf = {"schema.registry.url": "http://127.0.0.1:8081"}
    serializer = JsonSchemaSerializer(schema, conf)
    deserializer = JsonSchemaDeserializer(conf)          # validates with the writer's schema

References (``$ref`` to schemas registered under other subjects) are resolved by
their reference name.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.errors import SchemaValidationError, WireFormatError
from kafkalite.serialization.registry_client import SchemaRegistryClient
from kafkalite.serialization.registry_types import Schema
from kafkalite.serialization.schema_serde import (
    COMMON_DESERIALIZER_SETTINGS,
    COMMON_SERIALIZER_SETTINGS,
    RegistryArg,
    SchemaSerde,
    call_hook,
)
from kafkalite.serialization.wire import frame

try:
    import jsonschema
    import referencing
    import referencing.jsonschema
    from jsonschema.exceptions import best_match
except ImportError:  # pragma: no cover - exercised only without the extra
    jsonschema = None

__all__ = ["JsonSchemaDeserializer", "JsonSchemaSerializer"]

SchemaInput = str | Mapping[str, Any] | Schema


def _require_jsonschema() -> None:
    if jsonschema is None:
        raise ConfigError("JSON Schema validation needs jsonschema: pip install 'kafkalite[jsonschema]' "
                          "(or pass validate=False)")


def as_json_schema(schema: SchemaInput) -> Schema:
    if isinstance(schema, Schema):
        if schema.schema_type != "JSON":
            raise ConfigError(f"a JSON Schema serde got a {schema.schema_type} schema")
        return schema
    if isinstance(schema, str):
        return Schema(schema, "JSON")
    return Schema(json.dumps(schema), "JSON")


def _loads_schema(schema: Schema) -> Any:
    try:
        return json.loads(schema.schema_str)
    except ValueError as exc:
        raise SerializationError(f"the JSON schema is not valid JSON: {exc}") from None


def _validator(schema: Schema, registry: SchemaRegistryClient | None) -> Any:
    """A jsonschema validator for ``schema`` with its references loaded."""
    _require_jsonschema()
    contents = _loads_schema(schema)
    cls = jsonschema.validators.validator_for(contents, default=jsonschema.Draft7Validator)
    try:
        cls.check_schema(contents)
    except jsonschema.SchemaError as exc:
        raise SerializationError(f"invalid JSON Schema: {exc.message}") from None
    resources: list[tuple[str, Any]] = []
    _collect_references(schema, registry, resources, set())
    store = referencing.Registry().with_resources(resources)
    return cls(contents, registry=store, format_checker=cls.FORMAT_CHECKER)


def _collect_references(schema: Schema, registry: SchemaRegistryClient | None,
                        out: list[tuple[str, Any]], seen: set[str]) -> None:
    if not schema.references:
        return
    if registry is None:
        raise ConfigError("this JSON schema has references; resolving them needs 'schema.registry.url'")
    for ref in schema.references:
        if ref.name in seen:
            continue
        seen.add(ref.name)
        referenced = registry.get_version(ref.subject, ref.version).schema
        resource = referencing.Resource.from_contents(
            _loads_schema(referenced), default_specification=referencing.jsonschema.DRAFT7)
        out.append((ref.name, resource))
        _collect_references(referenced, registry, out, seen)


def _check(validator: Any, value: Any, topic: str, schema_id: int | None) -> None:
    error = best_match(validator.iter_errors(value))
    if error is not None:
        parts = [str(p) for p in error.absolute_path]
        if error.validator == "required" and isinstance(error.instance, dict):
            missing = [p for p in error.validator_value if p not in error.instance]
            parts += missing[:1]
        path = ".".join(parts) or None
        raise SchemaValidationError(
            f"the value does not match its JSON schema: {error.message}", field=path,
            schema_id=schema_id, topic=topic)


class JsonSchemaSerializer(SchemaSerde):
    """JSON-compatible values (or objects through ``to_dict``) -> Confluent-framed JSON.

    Args:
        schema: JSON Schema text, a dict, or a :class:`Schema` (with references).
        conf: registry and serde settings (see :mod:`.schema_serde`), or a client.
        to_dict: ``fn(obj)`` / ``fn(obj, topic)`` -> a JSON-compatible value
            (dataclasses need none).
        validate: check each value against the schema first (default True).

    Example (needs schema_registry)::

        schema = '{"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}'
        with Producer({"bootstrap.servers": bootstrap,
                       "value.serializer": JsonSchemaSerializer(schema, {"schema.registry.url": registry_url})}) as p:
            p.send("json-orders", {"id": "o-1"}).result(timeout=10)
    """

    SETTINGS = COMMON_SERIALIZER_SETTINGS
    KIND = "JsonSchemaSerializer"

    def __init__(
        self,
        schema: SchemaInput,
        conf: Mapping[str, Any] | SchemaRegistryClient | None = None,
        *,
        registry: RegistryArg = None,
        to_dict: Callable[..., Any] | None = None,
        validate: bool = True,
        is_key: bool = False,
    ) -> None:
        super().__init__(conf, registry, is_key)
        self.schema = as_json_schema(schema)
        contents = _loads_schema(self.schema)
        self.record_name = contents.get("title") if isinstance(contents, dict) else None
        self._validate = validate
        self._validators: dict[Schema, Any] = {}
        if validate:
            self._validators[self.schema] = _validator(self.schema, self.registry)
        self._to_dict = to_dict
        self._lock = threading.Lock()

    def serialize(self, topic: str, data: Any, headers: Any = None) -> bytes | None:
        """Validate and encode ``data`` (None stays None).

        Example (needs schema_registry)::

            serializer = JsonSchemaSerializer('{"type": "object", "required": ["id"]}', registry)
            try:
                serializer.serialize("json-orders", {"qty": 1})
            except SchemaValidationError as exc:          # validated before it is written
                print(exc)
        """
        if data is None:
            return None
        value = data
        if self._to_dict is not None:
            value = call_hook(self._to_dict, data, topic)
        elif dataclasses.is_dataclass(data) and not isinstance(data, type):
            value = dataclasses.asdict(data)
        latest_mode = bool(self.conf.get("use.latest.version"))
        if self._validate and not latest_mode:  # before registering anything
            _check(self._validators[self.schema], value, topic, None)
        schema_id, latest = self.schema_id_for(topic, self.record_name, self.schema)
        if self._validate and latest is not None:
            _check(self._validator_for(latest.schema), value, topic, schema_id)
        try:
            payload = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise SchemaValidationError(f"the value is not JSON-serializable: {exc}", topic=topic,
                                        schema_id=schema_id) from None
        return frame(schema_id, payload)

    def _validator_for(self, schema: Schema) -> Any:
        with self._lock:
            validator = self._validators.get(schema)
        if validator is None:
            validator = _validator(schema, self.registry)
            with self._lock:
                self._validators[schema] = validator
        return validator


class JsonSchemaDeserializer(SchemaSerde):
    """Confluent-framed JSON -> Python values (or objects through ``from_dict``).

    Args:
        conf: registry settings; with them each value is validated against the
            schema it was written with (fetched by id), unless ``schema`` is given.
        schema: validate against this schema instead (no registry needed).
        from_dict: ``fn(value)`` / ``fn(value, topic)``, or a mapping from schema
            ``title`` to such a function (several event types in one topic).
        validate: check values against the schema (default True when a schema is known).

    Example (needs schema_registry)::

        schema = '{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}'
        data = JsonSchemaSerializer(schema, registry).serialize("json-events", {"id": "e-1"})
        assert JsonSchemaDeserializer(registry).deserialize("json-events", data) == {"id": "e-1"}
    """

    SETTINGS = COMMON_DESERIALIZER_SETTINGS
    KIND = "JsonSchemaDeserializer"

    def __init__(
        self,
        conf: Mapping[str, Any] | SchemaRegistryClient | None = None,
        *,
        registry: RegistryArg = None,
        schema: SchemaInput | None = None,
        from_dict: Callable[..., Any] | Mapping[str, Callable[..., Any]] | None = None,
        validate: bool = True,
        is_key: bool = False,
    ) -> None:
        super().__init__(conf, registry, is_key)
        self._validate = validate
        self._reader = as_json_schema(schema) if schema is not None else None
        self._reader_validator = _validator(self._reader, self.registry) if self._reader and validate else None
        if validate and self._reader is None and self.registry is None:
            raise ConfigError("JsonSchemaDeserializer validates against a schema: give 'schema', "
                              "'schema.registry.url', or validate=False")
        self._from_dict = from_dict
        self._writers: dict[int, tuple[Any, str | None]] = {}
        self._lock = threading.Lock()

    def _writer(self, schema_id: int, topic: str) -> tuple[Any, str | None]:
        with self._lock:
            found = self._writers.get(schema_id)
        if found is None:
            schema = self.writer_schema(schema_id, topic)
            if schema.schema_type != "JSON":
                raise SerializationError(
                    f"schema id {schema_id} is a {schema.schema_type} schema, not JSON", topic=topic)
            contents = _loads_schema(schema)
            title = contents.get("title") if isinstance(contents, dict) else None
            found = (_validator(schema, self.registry) if self._validate else None, title)
            with self._lock:
                self._writers[schema_id] = found
        return found

    def deserialize(self, topic: str, data: bytes | None, headers: Any = None) -> Any:
        """Decode (and validate) one record's key or value (None stays None).

        Example (needs schema_registry)::

            schema = '{"$schema": "http://json-schema.org/draft-07/schema#", "type": "array"}'
            data = JsonSchemaSerializer(schema, registry).serialize("json-lists", [1, 2])
            assert JsonSchemaDeserializer({"schema.registry.url": registry_url}).deserialize("json-lists", data) == [1, 2]
        """
        if data is None:
            return None
        schema_id, pos = self.header(data, topic)
        title: str | None = None
        validator = self._reader_validator
        if self.registry is not None and (self._reader is None or isinstance(self._from_dict, Mapping)):
            writer_validator, title = self._writer(schema_id, topic)
            validator = validator or writer_validator
        try:
            value = json.loads(bytes(memoryview(data)[pos:]))
        except ValueError as exc:
            raise WireFormatError(f"the payload of schema id {schema_id} is not valid JSON: {exc}",
                                  topic=topic) from None
        if validator is not None:
            _check(validator, value, topic, schema_id)
        hook = self._from_dict
        if hook is None:
            return value
        if isinstance(hook, Mapping):
            fn = hook.get(title) if title else None
            return call_hook(fn, value, topic) if fn is not None else value
        return call_hook(hook, value, topic)
