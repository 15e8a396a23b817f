"""Topic calls against the real broker, cross-checked with kafka-topics."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from kafkalite import AdminClient, NewPartitions, NewTopic, TopicPartition
from kafkalite.admin.types import AclOperation
from kafkalite.aio import AdminClient as AsyncAdminClient
from kafkalite.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    TopicExistsError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kafkalite.testing.topics import create_topic, unique_topic_name
from tests.integration.admin_support import tool

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def admin(kafka_broker):
    with AdminClient({"bootstrap.servers": kafka_broker.bootstrap, "client.id": "admin-test"}) as client:
        yield client


def _describe_with_kafka_topics(broker, prefix: str) -> dict[str, dict[str, str]]:
    """{topic: {"PartitionCount": .., "ReplicationFactor": .., "Configs": ..}} from kafka-topics."""
    out = tool(broker, "kafka-topics", "--describe", "--topic", f"{prefix}.*")
    found: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        if line.startswith("Topic:") and "PartitionCount" in line:
            fields = dict(part.split(":", 1) for part in line.strip().split("\t") if ":" in part)
            fields = {k.strip(): v.strip() for k, v in fields.items()}
            found[fields["Topic"]] = fields
    return found


def test_create_topics_reports_each_topic(admin, kafka_broker) -> None:
    prefix = unique_topic_name("adm-create")
    plain, configured, assigned = f"{prefix}-plain", f"{prefix}-cfg", f"{prefix}-assigned"
    bad_rf, bad_cfg = f"{prefix}-badrf", f"{prefix}-badcfg"
    result = admin.create_topics([
        NewTopic(plain, num_partitions=3, replication_factor=1),
        NewTopic(configured, 2, 1, config={"cleanup.policy": "compact", "retention.ms": "123456"}),
        NewTopic(assigned, replica_assignment={0: [1], 1: [1]}),
        NewTopic(bad_rf, 1, replication_factor=3),
        NewTopic(bad_cfg, 1, 1, config={"retention.ms": "soon"}),
    ])
    assert result[plain].result().num_partitions == 3
    created = result[configured].result()
    assert created.config["cleanup.policy"].value == "compact" and created.topic_id is not None
    assert result[assigned].ok
    assert isinstance(result[bad_rf].error, InvalidReplicationFactorError)
    assert result[bad_rf].error.topic == bad_rf
    assert isinstance(result[bad_cfg].error, InvalidConfigurationError)
    assert "soon" in str(result[bad_cfg].error) and bad_cfg in str(result[bad_cfg].error)

    again = admin.create_topics([NewTopic(plain, 3, 1)])
    with pytest.raises(TopicExistsError) as info:
        again.all()
    assert info.value.topic == plain

    seen = _describe_with_kafka_topics(kafka_broker, prefix)
    assert seen[plain]["PartitionCount"] == "3"
    assert seen[assigned]["PartitionCount"] == "2"
    assert "cleanup.policy=compact" in seen[configured]["Configs"]
    assert "retention.ms=123456" in seen[configured]["Configs"]
    assert bad_rf not in seen and bad_cfg not in seen


def test_validate_only_creates_nothing(admin) -> None:
    name = unique_topic_name("adm-validate")
    result = admin.create_topics([NewTopic(name, 4, 1)], validate_only=True)
    assert result[name].result().num_partitions == 4
    assert name not in admin.list_topics()


def test_describe_topics(admin, topic_factory) -> None:
    name = topic_factory(partitions=3)
    missing = unique_topic_name("adm-missing")
    result = admin.describe_topics([name, missing], include_authorized_operations=True)
    described = result[name].result()
    assert [p.partition for p in described.partitions] == [0, 1, 2]
    assert all(p.leader == 1 and p.replicas == [1] and p.isr == [1] for p in described.partitions)
    assert not any(p.under_replicated for p in described.partitions)
    assert AclOperation.READ in (described.authorized_operations or set())
    assert isinstance(result[missing].error, UnknownTopicOrPartitionError)
    assert result[missing].error.topic == missing


def test_list_topics_hides_internal_topics_unless_asked(admin, topic_factory) -> None:
    name = topic_factory()
    # A committed offset makes sure the internal __consumer_offsets topic exists.
    admin.alter_consumer_group_offsets(f"g-{name}", {TopicPartition(name, 0): 0}).all()
    listed = admin.list_topics()
    assert name in listed and not listed[name].is_internal
    assert "__consumer_offsets" not in listed
    with_internal = admin.list_topics(list_internal=True)
    assert with_internal["__consumer_offsets"].is_internal and not with_internal[name].is_internal
    assert set(with_internal) - set(listed) == {t for t, d in with_internal.items() if d.is_internal}


def test_create_partitions_grows_and_refuses_to_shrink(admin, kafka_broker) -> None:
    prefix = unique_topic_name("adm-parts")
    grow, shrink, missing = f"{prefix}-grow", f"{prefix}-shrink", f"{prefix}-missing"
    admin.create_topics([NewTopic(grow, 2, 1), NewTopic(shrink, 3, 1)]).all()
    result = admin.create_partitions({grow: NewPartitions(5), shrink: 2, missing: 4})
    assert result[grow].ok
    assert isinstance(result[shrink].error, InvalidPartitionsError)
    assert result[shrink].error.topic == shrink
    assert isinstance(result[missing].error, UnknownTopicOrPartitionError)
    seen = _describe_with_kafka_topics(kafka_broker, prefix)
    assert seen[grow]["PartitionCount"] == "5"
    assert seen[shrink]["PartitionCount"] == "3"


def test_delete_topics_by_name_and_id(admin, kafka_broker) -> None:
    prefix = unique_topic_name("adm-delete")
    by_name, by_id = f"{prefix}-a", f"{prefix}-b"
    created = admin.create_topics([NewTopic(by_name, 1, 1), NewTopic(by_id, 1, 1)]).all()
    topic_id = created[by_id].topic_id
    assert isinstance(topic_id, uuid.UUID)
    missing_id = uuid.uuid4()
    result = admin.delete_topics([by_name, topic_id, f"{prefix}-nope", missing_id])
    assert result[by_name].ok and result[topic_id].ok
    assert isinstance(result[f"{prefix}-nope"].error, UnknownTopicOrPartitionError)
    assert isinstance(result[missing_id].error, UnknownTopicIdError)
    listed = tool(kafka_broker, "kafka-topics", "--list").split()
    assert by_name not in listed and by_id not in listed


def test_harness_create_topic_maps_errors(kafka_broker) -> None:
    name = unique_topic_name("adm-harness")
    with pytest.raises(InvalidReplicationFactorError) as info:
        create_topic(kafka_broker.bootstrap, name, 1, 5)
    assert info.value.topic == name


async def test_async_admin_client(kafka_broker) -> None:
    name = unique_topic_name("adm-async")
    async with AsyncAdminClient(bootstrap_servers=kafka_broker.bootstrap) as admin:
        (await admin.create_topics([NewTopic(name, 2, 1)])).all()
        # CreateTopics answers once the controller has the topic; the broker's metadata
        # may show it a moment later (Java's describeTopics fails the same way meanwhile).
        deadline = time.monotonic() + 30
        while name not in await admin.list_topics():
            assert time.monotonic() < deadline, f"{name} never became visible"
            await asyncio.sleep(0.1)
        described = (await admin.describe_topics([name]))[name].result()
        assert len(described.partitions) == 2
        assert name in await admin.list_topics()
        (await admin.delete_topics([name])).all()
        cluster = await admin.describe_cluster()
        assert cluster.controller is not None and [n.id for n in cluster.nodes] == [1]
