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

    Example (needs schema_registry)::

        registry.register_schema("shop.Money", Schema('{"type": "record", "name": "Money", "namespace": "shop", '
                                                      '"fields": [{"name": "cents", "type": "long"}]}'))
        ref = SchemaReference("shop.Money", "shop.Money", 1)
        price = Schema('{"type": "record", "name": "Price", "fields": [{"name": "m", "type": "shop.Money"}]}',
                       references=(ref,))
        registry.register_schema("prices-value", price)
    """

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        """The reference as the registry's JSON (``{"name", "subject", "version"}``).

        Example::

            ref = SchemaReference("shop.Money", "shop.Money", 1)
            assert ref.to_json() == {"name": "shop.Money", "subject": "shop.Money", "version": 1}
        """
        return {"name": self.name, "subject": self.subject, "version": self.version}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SchemaReference:
        """A reference from the registry's JSON (``{"name", "subject", "version"}``).

        Example::

            ref = SchemaReference.from_json({"name": "shop.Money", "subject": "shop.Money", "version": 1})
            assert ref.version == 1
        """
        return cls(str(data["name"]), str(data["subject"]), int(data["version"]))


@dataclass(frozen=True)
class Schema:
    """A schema as the registry stores it: its text, type and references.

    >>> Schema('{"type": "string"}').schema_type
    'AVRO'

    Example (needs schema_registry)::

        schema = Schema('{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}', "JSON")
        schema_id = registry.register_schema("docs-json-value", schema)
        assert registry.get_schema(schema_id).schema_type == "JSON"
    """

    schema_str: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema_type", (self.schema_type or "AVRO").upper())
        if not isinstance(self.references, tuple):
            object.__setattr__(self, "references", tuple(self.references))

    def to_json(self) -> dict[str, Any]:
        """The request body of register / lookup / compatibility calls.

        Example::

            assert Schema('{"type": "object"}', "JSON").to_json() == {"schema": '{"type": "object"}', "schemaType": "JSON"}
        """
        body: dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type != "AVRO":  # Confluent omits the default type
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [r.to_json() for r in self.references]
        return body

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Schema:
        """A schema from the registry's JSON (``{"schema", "schemaType", "references"}``).

        Example::

            schema = Schema.from_json({"schema": '"string"'})
            assert schema.schema_type == "AVRO" and schema.references == ()
        """
        refs: Sequence[Mapping[str, Any]] = data.get("references") or ()
        return cls(
            str(data["schema"]),
            str(data.get("schemaType") or "AVRO"),
            tuple(SchemaReference.from_json(r) for r in refs),
        )


@dataclass(frozen=True)
class RegisteredSchema:
    """One version of a subject: its schema, global id and version number.

    Example (needs schema_registry)::

        registry.register_schema("colors-value", Schema('{"type": "enum", "name": "Color", "symbols": ["RED"]}'))
        registered = registry.get_latest_version("colors-value")
        print(registered.schema_id, registered.version, registered.schema.schema_type)
    """

    schema_id: int
    schema: Schema
    subject: str
    version: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any], subject: str | None = None) -> RegisteredSchema:
        """A registered schema from the registry's JSON answer (``{"id", "schema", "schemaType", "version", ...}``).

        Example::

            from kafkalite.serialization import RegisteredSchema
            registered = RegisteredSchema.from_json({"id": 3, "schema": '"string"', "version": 1}, subject="names-value")
            assert (registered.schema_id, registered.schema.schema_type) == (3, "AVRO")
        """
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

    Example (needs schema_registry)::

        registry.register_schema("ids-value", Schema('"string"'))
        registry.set_compatibility("BACKWARD", "ids-value")
        result = registry.test_compatibility("ids-value", Schema('"int"'))
        assert not result                  # false when incompatible; result.messages say why
    """

    is_compatible: bool
    messages: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.is_compatible
