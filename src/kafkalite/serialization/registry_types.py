"""Value types of the Schema Registry API: schemas, references, registered versions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")


@dataclass(frozen=True)
class SchemaReference:
    """A schema's dependency on another registered schema.

    ``name`` is how the referring schema names it: an Avro full name
    (``"shop.Money"``), a Protobuf import path (``"shop/money.proto"``) or a JSON
    Schema ``$ref`` URL; ``subject`` / ``version`` say where it is registered.
    """

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        """The reference as the registry's JSON (``{"name", "subject", "version"}``)."""
        return {"name": self.name, "subject": self.subject, "version": self.version}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SchemaReference:
        """A reference from the registry's JSON (``{"name", "subject", "version"}``)."""
        return cls(str(data["name"]), str(data["subject"]), int(data["version"]))


@dataclass(frozen=True)
class Schema:
    """A schema as the registry stores it: its text, type and references.

    >>> Schema('{"type": "string"}').schema_type
    'AVRO'
    """

    schema_str: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema_type", (self.schema_type or "AVRO").upper())
        if not isinstance(self.references, tuple):
            object.__setattr__(self, "references", tuple(self.references))

    def to_json(self) -> dict[str, Any]:
        """The request body of register / lookup / compatibility calls."""
        body: dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type != "AVRO":  # Confluent omits the default type
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [r.to_json() for r in self.references]
        return body

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Schema:
        """A schema from the registry's JSON (``{"schema", "schemaType", "references"}``)."""
        refs: Sequence[Mapping[str, Any]] = data.get("references") or ()
        return cls(
            str(data["schema"]),
            str(data.get("schemaType") or "AVRO"),
            tuple(SchemaReference.from_json(r) for r in refs),
        )


@dataclass(frozen=True)
class RegisteredSchema:
    """One version of a subject: its schema, global id and version number."""

    schema_id: int
    schema: Schema
    subject: str
    version: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any], subject: str | None = None) -> RegisteredSchema:
        """A registered schema from the registry's JSON answer (``{"id", "schema", "schemaType", "version", ...}``)."""
        return cls(
            int(data["id"]),
            Schema.from_json(data),
            str(data.get("subject") or subject or ""),
            int(data.get("version", -1)),
        )


@dataclass(frozen=True)
class CompatibilityResult:
    """The answer of a compatibility check; true in a boolean context when compatible.

    ``messages`` says why not, when the registry explains (Confluent's ``verbose=true``).
    """

    is_compatible: bool
    messages: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.is_compatible
