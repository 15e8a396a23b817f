"""SchemaRegistryClient against a real registry (Apicurio's Confluent-compatible API)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kafkalite.serialization import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    Schema,
    SchemaNotFoundError,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
    SubjectNotFoundError,
    UnknownSchemaIdError,
    VersionNotFoundError,
)
from tests.helpers.serdes import avro_record

V1 = Schema(avro_record("Item", [("sku", "string")]))
V2 = Schema(avro_record("Item", [("sku", "string"), ("price", "double", 0.0)]))
BREAKING = Schema(avro_record("Item", [("sku", "long")]))


def test_register_lookup_versions_and_ids(unique_topic: str, sr_client: SchemaRegistryClient) -> None:
    subject = f"{unique_topic}-value"
    id1 = sr_client.register_schema(subject, V1)
    assert sr_client.register_schema(subject, V1) == id1  # idempotent
    id2 = sr_client.register_schema(subject, V2)
    assert id2 != id1
    assert sr_client.get_versions(subject) == [1, 2]
    assert subject in sr_client.get_subjects()

    fresh = SchemaRegistryClient(sr_client.url)  # no cache: everything from the registry
    found = fresh.lookup_schema(subject, V1)
    assert (found.schema_id, found.version, found.subject) == (id1, 1, subject)
    assert fresh.get_schema(id2).schema_str == V2.schema_str
    v2 = fresh.get_version(subject, 2)
    assert (v2.schema_id, v2.version, v2.schema.schema_type) == (id2, 2, "AVRO")
    assert fresh.get_latest_version(subject) == v2
    assert subject in fresh.get_subjects_by_schema_id(id1)
    assert {"AVRO", "PROTOBUF", "JSON"} <= set(fresh.get_schema_types())


def test_lookup_and_get_errors_name_what_is_missing(unique_topic: str, sr_client: SchemaRegistryClient) -> None:
    subject = f"{unique_topic}-value"
    named = rf"\(subject '{re.escape(subject)}', HTTP 404, error code 404\d\d\)"  # what the client adds
    with pytest.raises(SubjectNotFoundError, match=named):
        sr_client.lookup_schema(subject, V1)
    with pytest.raises(SubjectNotFoundError) as info:
        sr_client.get_latest_version(subject)
    assert info.value.subject == subject and info.value.error_code == 40401
    sr_client.register_schema(subject, V1)
    with pytest.raises(SchemaNotFoundError, match=named):
        sr_client.lookup_schema(subject, V2)
    with pytest.raises(VersionNotFoundError) as version_info:
        sr_client.get_version(subject, 7)
    assert version_info.value.version == 7 and "version 7" in str(version_info.value)
    with pytest.raises(UnknownSchemaIdError) as id_info:
        sr_client.get_schema(2_000_000_001)
    assert id_info.value.schema_id == 2_000_000_001


def test_compatibility_checks_and_config(unique_topic: str, sr_client: SchemaRegistryClient) -> None:
    subject = f"{unique_topic}-value"
    assert sr_client.test_compatibility(subject, BREAKING)  # a new subject accepts anything
    sr_client.register_schema(subject, V1)
    assert sr_client.set_compatibility("backward", subject) == "BACKWARD"
    assert sr_client.get_compatibility(subject) == "BACKWARD"
    assert sr_client.test_compatibility(subject, V2).is_compatible
    assert not sr_client.test_compatibility(subject, BREAKING)
    with pytest.raises(IncompatibleSchemaError, match=rf"\(subject '{re.escape(subject)}', HTTP 409, error code 409"):
        sr_client.register_schema(subject, BREAKING)
    assert sr_client.set_compatibility("FULL", subject) == "FULL"
    assert sr_client.get_compatibility(subject) == "FULL"
    with pytest.raises(SchemaRegistryError, match="unknown compatibility level 'SOMETIMES'"):
        sr_client.set_compatibility("sometimes", subject)


def test_soft_and_hard_delete(unique_topic: str, sr_client: SchemaRegistryClient) -> None:
    subject = f"{unique_topic}-value"
    sr_client.register_schema(subject, V1)
    sr_client.register_schema(subject, V2)
    assert sr_client.delete_version(subject, 1) == 1
    assert sr_client.get_versions(subject) == [2]
    assert sr_client.get_versions(subject, deleted=True) == [1, 2]
    assert sr_client.delete_version(subject, 1, permanent=True) == 1
    assert sr_client.get_versions(subject, deleted=True) == [2]

    assert sr_client.delete_subject(subject) == [2]
    assert subject not in sr_client.get_subjects()
    assert subject in sr_client.get_subjects(deleted=True)
    with pytest.raises(SubjectNotFoundError):
        sr_client.get_latest_version(subject)  # the cache was dropped with the subject
    sr_client.delete_subject(subject, permanent=True)
    assert subject not in sr_client.get_subjects(deleted=True)


def test_references_and_referenced_by(unique_topic: str, sr_client: SchemaRegistryClient) -> None:
    dep_subject = f"{unique_topic}-money"
    sr_client.register_schema(dep_subject, Schema(avro_record("Money", [("units", "long")], namespace="shop")))
    order = Schema(avro_record("Order", [("total", "shop.Money")], namespace="shop"), "AVRO",
                   (SchemaReference("shop.Money", dep_subject, 1),))
    order_id = sr_client.register_schema(f"{unique_topic}-value", order)
    assert sr_client.get_schema(order_id).references == order.references
    fresh = SchemaRegistryClient(sr_client.url)
    assert fresh.get_schema(order_id).references == order.references
    assert fresh.get_referenced_by(dep_subject, 1) == [order_id]


def test_a_schema_the_registry_cannot_parse(unique_topic: str, sr_client: SchemaRegistryClient) -> None:
    with pytest.raises(InvalidSchemaError) as info:
        sr_client.register_schema(f"{unique_topic}-value", Schema("{not json", "AVRO"))
    assert info.value.subject == f"{unique_topic}-value" and info.value.status == 422


def test_one_client_serves_many_threads(unique_topic: str, sr_conf: dict[str, Any]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    client = SchemaRegistryClient(sr_conf)
    subjects = [f"{unique_topic}-{i}" for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda s: client.register_schema(s, V1), subjects))
    assert len(set(ids)) == 1  # same schema text: same id everywhere
    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(lambda i: client.get_schema(i).schema_str, ids)) == {V1.schema_str}
