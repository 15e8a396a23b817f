"""Shared bits of the Schema Registry / serde integration tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafkalite.serialization import SchemaRegistryClient


def avro_record(name: str, fields: list[tuple[str, Any]], namespace: str = "kafkalite.test",
                **extra: Any) -> str:
    """Avro record schema text; a field is (name, type) or (name, type, default)."""
    out = []
    for f in fields:
        entry: dict[str, Any] = {"name": f[0], "type": f[1]}
        if len(f) > 2:
            entry["default"] = f[2]
        out.append(entry)
    return json.dumps({"type": "record", "name": name, "namespace": namespace, "fields": out, **extra})


@pytest.fixture
def sr_conf(schema_registry: Any) -> dict[str, Any]:
    """kafkalite serde settings for the session's registry."""
    return {"schema.registry.url": schema_registry.url}


@pytest.fixture
def sr_client(schema_registry: Any) -> SchemaRegistryClient:
    return SchemaRegistryClient({"schema.registry.url": schema_registry.url})


@pytest.fixture
def confluent_sr(schema_registry: Any) -> Any:
    """confluent-kafka's client, pointed at the same registry."""
    from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient

    return ConfluentClient({"url": schema_registry.url})


def ctx(topic: str, is_key: bool = False) -> Any:
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)
