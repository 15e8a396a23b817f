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
    """The registry has no such subject, version or schema."""


class SubjectNotFoundError(SchemaNotFoundError):
    """The subject is not registered (or only soft-deleted)."""


class VersionNotFoundError(SchemaNotFoundError):
    """The subject has no such version."""


class UnknownSchemaIdError(SchemaNotFoundError):
    """No schema has this id (data written against another registry, or deleted)."""


class IncompatibleSchemaError(SchemaRegistryError):
    """The schema breaks the subject's compatibility rule (``BACKWARD``, ``FULL`` ...)."""


class InvalidSchemaError(SchemaRegistryError):
    """The schema (or a version or compatibility value) is not valid."""


class SchemaRegistryAuthError(SchemaRegistryError):
    """The registry refused the credentials (HTTP 401) or the operation (403)."""


class SchemaRegistryUnavailableError(SchemaRegistryError):
    """The registry could not be reached or kept failing (after the configured retries)."""

    retriable = True


class WireFormatError(SerializationError):
    """Bytes do not follow the Confluent wire format (magic byte 0, schema id, ...)."""


class SchemaValidationError(SerializationError):
    """A record does not match its schema; ``field`` names where (a dotted path)."""

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
