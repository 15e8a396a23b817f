"""What the Avro, Protobuf and JSON Schema serdes share: settings, the registry
client, subject names, and how a serializer finds the schema id it writes.

Serde settings (Confluent's names), given in the serde's ``config`` dict together with
the registry client's settings (``schema.registry.url``, auth, TLS, retries ...):

==============================  ==========  ===============================================
``auto.register.schemas``       ``True``    register the serializer's schema if missing
``use.latest.version``          ``False``   write with the subject's latest schema instead
                                            (serializers); read into it (deserializers)
``use.schema.id``               ``None``    write with this schema id, no lookup at all
``normalize.schemas``           ``False``   ask the registry to normalize on register/lookup
``subject.name.strategy``       ``topic``   ``topic`` / ``record`` / ``topic_record`` or a
                                            callable (see :mod:`.strategies`); also
                                            ``key.subject.name.strategy`` /
                                            ``value.subject.name.strategy``
==============================  ==========  ===============================================

A serde is a Serializer / Deserializer (``configure(config, is_key)``,
``serialize(topic, data, headers)`` / ``deserialize(topic, data, headers)``,
``close()``). The producer and the consumer call ``configure`` with ``is_key``; pass
``is_key=True`` yourself when you use a serde directly for keys.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.errors import SchemaRegistryError
from kafkalite.serialization.registry_client import SchemaRegistryClient
from kafkalite.serialization.registry_http import PREFIX, REGISTRY_SETTINGS, registry_key, suggest
from kafkalite.serialization.registry_types import RegisteredSchema, Schema
from kafkalite.serialization.strategies import SubjectNameStrategy, resolve_strategy
from kafkalite.serialization.wire import parse_header

Setting = tuple[Any, Any]  # (type or tuple of types, default)

COMMON_SERIALIZER_SETTINGS: dict[str, Setting] = {
    "auto.register.schemas": (bool, True),
    "use.latest.version": (bool, False),
    "use.schema.id": (int, None),
    "normalize.schemas": (bool, False),
    "subject.name.strategy": (object, None),
    "key.subject.name.strategy": (object, None),
    "value.subject.name.strategy": (object, None),
}

COMMON_DESERIALIZER_SETTINGS: dict[str, Setting] = {
    "use.latest.version": (bool, False),
    "subject.name.strategy": (object, None),
    "key.subject.name.strategy": (object, None),
    "value.subject.name.strategy": (object, None),
}

RegistryArg = SchemaRegistryClient | Mapping[str, Any] | str | None


def split_config(config: Mapping[str, Any] | None, serde_settings: Mapping[str, Setting],
                 what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a serde config into (registry settings, validated serde settings)."""
    registry: dict[str, Any] = {}
    serde: dict[str, Any] = {k: default for k, (_, default) in serde_settings.items()}
    for name, value in (config or {}).items():
        if registry_key(name) is not None:
            registry[name] = value
            continue
        if name not in serde_settings:
            known = [*serde_settings, PREFIX + "url", *REGISTRY_SETTINGS]
            raise ConfigError(f"unknown {what} setting '{name}'" + suggest(name, known))
        kind = serde_settings[name][0]
        if kind is bool and isinstance(value, str) and value.lower() in ("true", "false"):
            value = value.lower() == "true"  # Java-style properties
        elif kind is int and isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if value is not None and kind is not object and (
                not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            raise ConfigError(f"{what} setting '{name}' must be {kind.__name__}, got {value!r}")
        serde[name] = value
    return registry, serde


def call_hook(fn: Callable[..., Any], value: Any, topic: str) -> Any:
    """Call a to_dict / from_dict hook as ``fn(value)`` or ``fn(value, topic)``."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
        two = len(params) >= 2
    except (TypeError, ValueError):
        two = False
    return fn(value, topic) if two else fn(value)


class SchemaSerde:
    """Base of the schema-based serializers and deserializers."""

    SETTINGS: dict[str, Setting] = {}
    KIND = "serde"

    def __init__(self, config: Mapping[str, Any] | SchemaRegistryClient | None, registry: RegistryArg,
                 is_key: bool) -> None:
        if isinstance(config, SchemaRegistryClient):  # serde(schema, client) reads naturally
            registry, config = config, None
        registry_conf, self.conf = split_config(config, self.SETTINGS, self.KIND)
        self.is_key = is_key
        self._owns_registry = False
        self.registry: SchemaRegistryClient | None
        if isinstance(registry, SchemaRegistryClient):
            if registry_conf:
                raise ConfigError(f"{self.KIND}: give either a registry client or registry settings, not both")
            self.registry = registry
        elif registry is not None or registry_conf:
            if isinstance(registry, str):
                registry_conf = {"schema.registry.url": registry, **registry_conf}
            elif isinstance(registry, Mapping):
                registry_conf = {**registry, **registry_conf}
            self.registry = SchemaRegistryClient(registry_conf)
            self._owns_registry = True
        else:
            self.registry = None
        self._ids: dict[tuple[str, str | None, bool], int] = {}
        self._strategies: dict[bool, SubjectNameStrategy] = {}
        for key in (True, False):
            name = "key.subject.name.strategy" if key else "value.subject.name.strategy"
            spec = self.conf.get(name) or self.conf.get("subject.name.strategy")
            self._strategies[key] = resolve_strategy(spec, name if self.conf.get(name) else "subject.name.strategy")

    # -- the Serializer / Deserializer protocol --------------------------------------

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Called by the producer / consumer: whether this serde handles keys.

        Example (needs schema_registry)::

            serializer = AvroSerializer('"string"', registry)
            serializer.configure({}, is_key=True)         # the producer does this: subjects end in -key
            assert serializer.subject("orders", None) == "orders-key"
        """
        self.is_key = is_key

    def close(self) -> None:
        """Close the registry client if this serde created it.

        Example (needs schema_registry)::

            serializer = AvroSerializer('"string"', {"schema.registry.url": registry_url})
            serializer.close()                            # closes the registry client it made
        """
        if self._owns_registry and self.registry is not None:
            self.registry.close()

    def __repr__(self) -> str:
        where = f" {self.registry.url}" if self.registry is not None else ""
        return f"<{type(self).__name__}{where}>"

    # -- helpers -----------------------------------------------------------------------

    def need_registry(self, why: str) -> SchemaRegistryClient:
        """The registry client; ConfigError saying it is needed to ``why`` when none was configured.

        Example::

            try:
                AvroDeserializer().need_registry("fetch writer schemas")
            except ConfigError as exc:                    # no schema.registry.url was given
                print(exc)
        """
        if self.registry is None:
            raise ConfigError(f"{self.KIND} needs 'schema.registry.url' (or a registry client) to {why}")
        return self.registry

    def subject(self, topic: str, record_name: str | None) -> str:
        """The subject of ``topic`` (and record name) under the configured subject name strategy.

        Example (needs schema_registry)::

            serializer = AvroSerializer('"string"', {"schema.registry.url": registry_url,
                                                    "subject.name.strategy": "topic_record"})
            assert serializer.subject("orders", "shop.Order") == "orders-shop.Order"
        """
        return self._strategies[self.is_key](topic, self.is_key, record_name)

    def schema_id_for(self, topic: str, record_name: str | None,
                      schema: Schema | Callable[[], Schema]) -> tuple[int, RegisteredSchema | None]:
        """The id to write ``schema`` with, per the serializer settings.

        ``schema`` may be a function making it, called only if the registry must see
        it (register or lookup). Returns ``(id, latest)``: ``latest`` is the subject's
        latest version when ``use.latest.version`` is on (the record must then be
        written with *its* schema), else None.

        Example (needs schema_registry)::

            serializer = AvroSerializer('"long"', registry)
            schema_id, latest = serializer.schema_id_for("amounts", None, Schema('"long"'))  # registered once
            assert registry.get_schema(schema_id).schema_str == '"long"' and latest is None
        """
        use_id = self.conf.get("use.schema.id")
        if use_id is not None:
            return int(use_id), None
        key = (topic, record_name, self.is_key)
        known = self._ids.get(key)
        if known is not None:  # the hot path: one dict lookup per record
            return known, None
        registry = self.need_registry("look up schema ids")
        subject = self.subject(topic, record_name)
        normalize = bool(self.conf.get("normalize.schemas"))
        try:
            if self.conf.get("use.latest.version"):
                latest = registry.get_latest_version(subject)
                return latest.schema_id, latest
            if callable(schema):
                schema = schema()
            if self.conf.get("auto.register.schemas", True):
                schema_id = registry.register_schema(subject, schema, normalize)
            else:
                schema_id = registry.lookup_schema(subject, schema, normalize).schema_id
            # Like Confluent's serializers: a subject's id is learned once per serializer
            # (one writer schema per topic and record name).
            if len(self._ids) < 10_000:
                self._ids[key] = schema_id
            return schema_id, None
        except SchemaRegistryError as exc:
            raise exc.with_context(topic=topic) from None

    def writer_schema(self, schema_id: int, topic: str) -> Schema:
        """The schema a record was written with, by its id (cached by the client).

        Example (needs schema_registry)::

            data = AvroSerializer('"int"', registry).serialize("counts", 3)
            schema_id, _ = AvroDeserializer.header(data, "counts")
            assert AvroDeserializer(registry).writer_schema(schema_id, "counts").schema_str == '"int"'
        """
        registry = self.need_registry(f"find the schema of id {schema_id}")
        try:
            return registry.get_schema(schema_id)
        except SchemaRegistryError as exc:
            raise exc.with_context(topic=topic) from None

    def latest_reader(self, topic: str, record_name: str | None) -> RegisteredSchema:
        """The subject's latest version, for deserializers with ``use.latest.version``.

        Example (needs schema_registry)::

            AvroSerializer('"string"', registry).serialize("labels", "a")
            reader = AvroDeserializer({"schema.registry.url": registry_url, "use.latest.version": True})
            assert reader.latest_reader("labels", None).subject == "labels-value"
        """
        registry = self.need_registry("use the latest version")
        try:
            return registry.get_latest_version(self.subject(topic, record_name))
        except SchemaRegistryError as exc:
            raise exc.with_context(topic=topic) from None

    @staticmethod
    def header(data: bytes, topic: str) -> tuple[int, int]:
        """``(schema id, payload offset)`` of a Confluent-framed payload (WireFormatError, a
        SerializationError naming the topic, if it is not one).

        Example (needs schema_registry)::

            data = AvroSerializer('"string"', registry).serialize("names", "ada")
            schema_id, offset = AvroDeserializer.header(data, "names")
            assert offset == 5 and registry.get_schema(schema_id).schema_type == "AVRO"   # Avro starts after 5 bytes
        """
        return parse_header(data, topic=topic)


def wrap_error(exc: Exception, message: str, topic: str, **context: Any) -> SerializationError:
    """A SerializationError for an unexpected failure of a codec library."""
    if isinstance(exc, SerializationError):
        return exc.with_context(topic=topic)
    return SerializationError(f"{message}: {exc}", topic=topic, **context)
