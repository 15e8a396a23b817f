"""Errors of the Schema Registry client and of the schema-based serdes.

All are :class:`~kafkalite.errors.SerializationError` subclasses (so also
:class:`~kafkalite.errors.KafkaError` and ``ValueError``): a producer's ``send()``
re-raises them as they are, with the topic filled in, and one ``except
SerializationError`` around a send or a poll catches every way a key or value can
fail. Each names what it is about: the subject, the version, the schema id or the
field.

::

    SerializationError
    ├── SchemaRegistryError            the registry answered with an error
    │   ├── SchemaNotFoundError        404: ...
    │   │   ├── SubjectNotFoundError       no such subject (40401)
    │   │   ├── VersionNotFoundError       no such version (40402)
    │   │   └── UnknownSchemaIdError       no schema has this id (40403)
    │   ├── IncompatibleSchemaError    409: the subject's compatibility rule refused it
    │   ├── InvalidSchemaError         422: the registry cannot parse the schema
    │   ├── SchemaRegistryAuthError    401/403
    │   └── SchemaRegistryUnavailableError  unreachable / 5xx after retries (retriable)
    ├── WireFormatError                bytes not in the Confluent wire format
    └── SchemaValidationError          a record does not match its schema
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import SerializationError

__all__ = [
    "IncompatibleSchemaError",
    "InvalidSchemaError",
    "SchemaNotFoundError",
    "SchemaRegistryAuthError",
    "SchemaRegistryError",
    "SchemaRegistryUnavailableError",
    "SchemaValidationError",
    "SubjectNotFoundError",
    "UnknownSchemaIdError",
    "VersionNotFoundError",
    "WireFormatError",
]


class SchemaRegistryError(SerializationError):
    """The Schema Registry refused a request or could not be reached.

    Attributes:
        status: the HTTP status (-1 when no answer came).
        error_code: the registry's own code (``40401``, ``42201`` ...; -1 if none).
        subject, version, schema_id: what the request was about, when known.
        url: the request's URL.

    Example (needs schema_registry)::

        try:
            registry.get_versions("never-registered")
        except SchemaRegistryError as exc:            # every registry error (HTTP status, Confluent code)
            print(exc.status, exc.error_code)
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        status: int = -1,
        error_code: int = -1,
        subject: str | None = None,
        version: int | str | None = None,
        schema_id: int | None = None,
        url: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.status = status
        self.error_code = error_code
        self.subject = subject
        self.version = version
        self.schema_id = schema_id
        self.url = url
        super().__init__(message, **kwargs)

    def _resource_text(self) -> str:
        parts = [super()._resource_text()]
        if self.subject is not None:
            parts.append(f"subject '{self.subject}'")
        if self.version is not None:
            parts.append(f"version {self.version}")
        if self.schema_id is not None:
            parts.append(f"schema id {self.schema_id}")
        if self.status > 0:
            code = f", error code {self.error_code}" if self.error_code > 0 else ""
            parts.append(f"HTTP {self.status}{code}")
        return ", ".join(p for p in parts if p)


class SchemaNotFoundError(SchemaRegistryError):
    """The registry has no such subject, version or schema.

    Example (needs schema_registry)::

        registry.register_schema("found-value", Schema('"string"'))
        try:
            registry.lookup_schema("found-value", Schema('"long"'))
        except SchemaNotFoundError as exc:
            print(exc)
    """


class SubjectNotFoundError(SchemaNotFoundError):
    """The subject is not registered (or only soft-deleted).

    Example (needs schema_registry)::

        try:
            registry.get_latest_version("no-such-subject")
        except SubjectNotFoundError as exc:
            print(exc.subject)
    """


class VersionNotFoundError(SchemaNotFoundError):
    """The subject has no such version.

    Example (needs schema_registry)::

        registry.register_schema("short-value", Schema('"string"'))
        try:
            registry.get_version("short-value", 99)
        except VersionNotFoundError as exc:
            print(exc)
    """


class UnknownSchemaIdError(SchemaNotFoundError):
    """No schema has this id (data written against another registry, or deleted).

    Example (needs schema_registry)::

        try:
            registry.get_schema(987654)
        except UnknownSchemaIdError as exc:
            print(exc)
    """


class IncompatibleSchemaError(SchemaRegistryError):
    """The schema breaks the subject's compatibility rule (``BACKWARD``, ``FULL`` ...).

    Example (needs schema_registry)::

        registry.register_schema("locked-value", Schema('"string"'))
        registry.set_compatibility("FULL", "locked-value")
        try:
            registry.register_schema("locked-value", Schema('"int"'))
        except IncompatibleSchemaError as exc:
            print(exc)
    """


class InvalidSchemaError(SchemaRegistryError):
    """The schema (or a version or compatibility value) is not valid.

    Example (needs schema_registry)::

        try:
            registry.register_schema("broken-value", Schema('{"type": "recurd"}'))
        except InvalidSchemaError as exc:
            print(exc)
    """


class SchemaRegistryAuthError(SchemaRegistryError):
    """The registry refused the credentials (HTTP 401) or the operation (403).

    Example::

        try:
            SchemaRegistryClient({"schema.registry.url": "http://127.0.0.1:1", "max.retries": 0}).get_subjects()
        except SchemaRegistryAuthError:               # 401 / 403: fix the credentials, do not retry
            raise
        except SchemaRegistryUnavailableError as exc:
            print(exc)
    """


class SchemaRegistryUnavailableError(SchemaRegistryError):
    """The registry could not be reached or kept failing (after the configured retries).

    Example::

        offline = SchemaRegistryClient({"schema.registry.url": "http://127.0.0.1:1", "max.retries": 0})
        try:
            offline.get_subjects()
        except SchemaRegistryUnavailableError as exc:
            print(exc)                                # cannot reach the Schema Registry at ...
    """

    retriable = True


class WireFormatError(SerializationError):
    """Bytes do not follow the Confluent wire format (magic byte 0, schema id, ...).

    Example::

        try:
            AvroDeserializer.header(b"not framed", "orders")
        except WireFormatError as exc:                # magic byte 0 and a schema id are missing
            print(exc)
    """


class SchemaValidationError(SerializationError):
    """A record does not match its schema; ``field`` names where (a dotted path).

    Example (needs schema_registry)::

        tick = AvroSerializer('{"type": "record", "name": "Tick", "fields": [{"name": "n", "type": "int"}]}', registry)
        try:
            tick.serialize("ticks", {"n": "seven"})
        except SchemaValidationError as exc:
            print(exc.field, exc)                     # n ...
    """

    def __init__(self, message: str | None = None, *, field: str | None = None,
                 subject: str | None = None, schema_id: int | None = None, **kwargs: Any) -> None:
        self.field = field
        self.subject = subject
        self.schema_id = schema_id
        super().__init__(message, **kwargs)

    def _resource_text(self) -> str:
        parts = [super()._resource_text()]
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        if self.subject is not None:
            parts.append(f"subject '{self.subject}'")
        if self.schema_id is not None:
            parts.append(f"schema id {self.schema_id}")
        return ", ".join(p for p in parts if p)
