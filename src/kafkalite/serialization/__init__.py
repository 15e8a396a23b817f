"""Serializers and deserializers: built-ins, the Schema Registry client, Avro, Protobuf
and JSON Schema serdes in the Confluent wire format, and Arrow column helpers.

* :mod:`.base` / :mod:`.deserializers`: the Serializer / Deserializer protocols and the
  built-ins (bytes, str, int, long, float, double, JSON) that ``key.serializer`` /
  ``value.deserializer`` settings name;
* :class:`SchemaRegistryClient` (:mod:`.registry_client`): the Confluent-compatible REST
  API with caching, retries, auth and TLS;
* :class:`AvroSerializer` / :class:`AvroDeserializer` (fastavro, ``kafkalite[avro]``),
  :class:`ProtobufSerializer` / :class:`ProtobufDeserializer` (``kafkalite[protobuf]``),
  :class:`JsonSchemaSerializer` / :class:`JsonSchemaDeserializer`
  (``kafkalite[jsonschema]``): imported on first use, so the extras stay optional;
* :mod:`.arrow`, :mod:`.arrow_protobuf`, :mod:`.arrow_json`: Confluent-framed Avro,
  Protobuf and JSON Schema columns <-> Arrow struct columns (Spark's ``mapInArrow``).

See docs/serialization.md for a guide.
"""

from __future__ import annotations

import importlib
from typing import Any

from kafkalite.serialization.base import (
    BUILTIN_SERIALIZERS,
    BytesSerializer,
    DoubleSerializer,
    FloatSerializer,
    IntegerSerializer,
    JsonSerializer,
    LongSerializer,
    Serializer,
    StringSerializer,
    resolve_serializer,
)
from kafkalite.serialization.deserializers import (
    BUILTIN_DESERIALIZERS,
    BytesDeserializer,
    Deserializer,
    DoubleDeserializer,
    FloatDeserializer,
    IntegerDeserializer,
    JsonDeserializer,
    LongDeserializer,
    StringDeserializer,
    resolve_deserializer,
)
from kafkalite.serialization.errors import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    SchemaNotFoundError,
    SchemaRegistryAuthError,
    SchemaRegistryError,
    SchemaRegistryUnavailableError,
    SchemaValidationError,
    SubjectNotFoundError,
    UnknownSchemaIdError,
    VersionNotFoundError,
    WireFormatError,
)
from kafkalite.serialization.registry_client import SchemaRegistryClient
from kafkalite.serialization.registry_types import (
    CompatibilityResult,
    RegisteredSchema,
    Schema,
    SchemaReference,
)
from kafkalite.serialization.strategies import (
    record_name_strategy,
    topic_name_strategy,
    topic_record_name_strategy,
)

_LAZY = {
    "AvroSerializer": "avro",
    "AvroDeserializer": "avro",
    "ProtobufSerializer": "protobuf",
    "ProtobufDeserializer": "protobuf",
    "JsonSchemaSerializer": "json_schema",
    "JsonSchemaDeserializer": "json_schema",
}

__all__ = [
    "BUILTIN_DESERIALIZERS",
    "BUILTIN_SERIALIZERS",
    "AvroDeserializer",
    "AvroSerializer",
    "BytesDeserializer",
    "BytesSerializer",
    "CompatibilityResult",
    "Deserializer",
    "DoubleDeserializer",
    "DoubleSerializer",
    "FloatDeserializer",
    "FloatSerializer",
    "IncompatibleSchemaError",
    "IntegerDeserializer",
    "IntegerSerializer",
    "InvalidSchemaError",
    "JsonDeserializer",
    "JsonSchemaDeserializer",
    "JsonSchemaSerializer",
    "JsonSerializer",
    "LongDeserializer",
    "LongSerializer",
    "ProtobufDeserializer",
    "ProtobufSerializer",
    "RegisteredSchema",
    "Schema",
    "SchemaNotFoundError",
    "SchemaReference",
    "SchemaRegistryAuthError",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "SchemaRegistryUnavailableError",
    "SchemaValidationError",
    "Serializer",
    "StringDeserializer",
    "StringSerializer",
    "SubjectNotFoundError",
    "UnknownSchemaIdError",
    "VersionNotFoundError",
    "WireFormatError",
    "record_name_strategy",
    "resolve_deserializer",
    "resolve_serializer",
    "topic_name_strategy",
    "topic_record_name_strategy",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        # PEP 562: hasattr() and `from ... import` expect AttributeError here.
        raise AttributeError(f"module 'kafkalite.serialization' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kafkalite.serialization.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
