"""Config and cluster calls against the real broker, cross-checked with kafka-configs."""

from __future__ import annotations

import pytest

from kafkalite import AdminClient, ConfigResource
from kafkalite.admin.types import AlterConfigOp, ConfigSource, ResourceType
from kafkalite.errors import (
    ConfigError,
    InvalidConfigurationError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)
from kafkalite.testing.topics import unique_topic_name
from tests.integration.admin_support import tool, wait_until

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def admin(kafka_broker):
    with AdminClient({"bootstrap.servers": kafka_broker.bootstrap}) as client:
        yield client


def _dynamic_configs(broker, entity_type: str, name: str) -> dict[str, str]:
    out = tool(broker, "kafka-configs", "--describe", "--entity-type", entity_type, "--entity-name", name)
    found = {}
    for line in out.splitlines():
        line = line.strip()
        if "=" in line and not line.startswith("Dynamic") and not line.startswith("All"):
            key, rest = line.split("=", 1)
            found[key] = rest.split(" sensitive=")[0]
    return found


def test_describe_topic_configs_with_sources_and_synonyms(admin, topic_factory) -> None:
    topic = topic_factory(configs={"retention.ms": "7200000"})
    res = ConfigResource("topic", topic)
    entries = admin.describe_configs([res], include_synonyms=True, include_documentation=True)[res].result()
    retention = entries["retention.ms"]
    assert retention.value == "7200000" and retention.source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert retention.synonyms[0].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    # A topic config left at its default names the broker config it falls back to.
    segment = entries["segment.bytes"]
    assert segment.is_default
    assert [(s.name, s.source) for s in segment.synonyms] == [("log.segment.bytes", ConfigSource.DEFAULT_CONFIG)]
    assert entries["cleanup.policy"].is_default and entries["cleanup.policy"].documentation
    only = admin.describe_configs([res], config_names={res: ["segment.ms"]})[res].result()
    assert list(only) == ["segment.ms"]


def test_incremental_alter_set_delete_append_subtract(admin, kafka_broker, topic_factory) -> None:
    topic = topic_factory(configs={"segment.ms": "3600000", "cleanup.policy": "delete"})
    res = ConfigResource("topic", topic)
    admin.incremental_alter_configs({res: [
        AlterConfigOp.set("retention.ms", "86400000"),
        AlterConfigOp.delete("segment.ms"),
        AlterConfigOp.append("cleanup.policy", "compact"),
    ]}).all()
    seen = _dynamic_configs(kafka_broker, "topics", topic)
    assert seen.get("retention.ms") == "86400000"
    assert "segment.ms" not in seen
    assert set(seen["cleanup.policy"].split(",")) == {"delete", "compact"}
    admin.incremental_alter_configs({res: [AlterConfigOp.subtract("cleanup.policy", "delete")]}).all()
    # The controller committed the change; the broker that answers DescribeConfigs
    # applies it from the metadata log a moment later.
    wait_until(lambda: admin.describe_configs([res])[res].result()["cleanup.policy"].value == "compact",
               what="cleanup.policy=compact")


def test_alter_errors_are_per_resource(admin, topic_factory) -> None:
    good = topic_factory()
    bad_value, bad_name = topic_factory(), topic_factory()
    missing = unique_topic_name("cfg-missing")
    result = admin.incremental_alter_configs({
        ConfigResource("topic", good): [AlterConfigOp.set("retention.ms", "1000")],
        ConfigResource("topic", bad_value): [AlterConfigOp.set("retention.ms", "tomorrow")],
        ConfigResource("topic", bad_name): [AlterConfigOp.set("retention.msec", "1000")],
        ConfigResource("topic", missing): [AlterConfigOp.set("retention.ms", "1000")],
        ConfigResource(99, "x"): [AlterConfigOp.set("a", "b")],
        ConfigResource("broker", "42"): [AlterConfigOp.set("log.cleaner.threads", "2")],
    })
    assert result[ConfigResource("topic", good)].ok
    err = result[ConfigResource("topic", bad_value)].error
    assert isinstance(err, InvalidConfigurationError) and "tomorrow" in str(err) and bad_value in str(err)
    err = result[ConfigResource("topic", bad_name)].error
    assert isinstance(err, InvalidConfigurationError) and "retention.msec" in str(err)
    assert isinstance(result[ConfigResource("topic", missing)].error, UnknownTopicOrPartitionError)
    err = result[ConfigResource(99, "x")].error
    assert isinstance(err, InvalidRequestError) and "type-99 'x'" in str(err)
    err = result[ConfigResource("broker", "42")].error
    assert isinstance(err, ConfigError) and "broker '42'" in str(err)


def test_broker_group_and_client_metrics_configs(admin, kafka_broker) -> None:
    broker, default = ConfigResource("broker", "1"), ConfigResource("broker", "")
    group = ConfigResource("group", unique_topic_name("cfg-group"))
    metrics = ConfigResource("client-metrics", unique_topic_name("cfg-metrics"))
    result = admin.incremental_alter_configs({
        broker: [AlterConfigOp.set("log.cleaner.threads", "2")],
        default: [AlterConfigOp.set("log.cleaner.backoff.ms", "16000")],
        group: [AlterConfigOp.set("consumer.session.timeout.ms", "50000")],
        metrics: [AlterConfigOp.set("metrics", "org.apache.kafka.producer."), AlterConfigOp.set("interval.ms", "60000")],
    })
    try:
        result.all()

        def applied():  # brokers apply config records from the metadata log a moment later
            d = admin.describe_configs([broker, group, metrics])
            return d if d[broker].result()["log.cleaner.threads"].value == "2" else None

        described = wait_until(applied, what="the broker config change to apply")
        assert described[broker].result()["log.cleaner.threads"].source == ConfigSource.DYNAMIC_BROKER_CONFIG
        assert described[broker].result()["log.cleaner.backoff.ms"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        assert described[broker].result()["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG
        assert described[group].result()["consumer.session.timeout.ms"].value == "50000"
        assert described[metrics].result()["interval.ms"].value == "60000"
        assert _dynamic_configs(kafka_broker, "brokers", "1").get("log.cleaner.threads") == "2"
        assert _dynamic_configs(kafka_broker, "groups", group.name).get("consumer.session.timeout.ms") == "50000"
        listed = admin.list_config_resources([ResourceType.CLIENT_METRICS, ResourceType.GROUP])
        assert metrics in listed and group in listed
    finally:
        admin.incremental_alter_configs({
            broker: [AlterConfigOp.delete("log.cleaner.threads")],
            default: [AlterConfigOp.delete("log.cleaner.backoff.ms")],
            group: [AlterConfigOp.delete("consumer.session.timeout.ms")],
            metrics: [AlterConfigOp.delete("metrics"), AlterConfigOp.delete("interval.ms")],
        }).all()
    assert "log.cleaner.threads" not in _dynamic_configs(kafka_broker, "brokers", "1")


def test_validate_only_changes_nothing(admin, topic_factory) -> None:
    topic = topic_factory()
    res = ConfigResource("topic", topic)
    admin.incremental_alter_configs({res: [AlterConfigOp.set("retention.ms", "5000")]}, validate_only=True).all()
    assert admin.describe_configs([res])[res].result()["retention.ms"].is_default


def test_cluster_and_features(admin) -> None:
    cluster = admin.describe_cluster(include_authorized_operations=True)
    assert cluster.cluster_id and [n.id for n in cluster.nodes] == [1]
    assert admin.controller() == cluster.controller
    assert cluster.authorized_operations  # the PLAINTEXT listener's ANONYMOUS user may do anything
    features = admin.describe_features()
    assert features.finalized["metadata.version"] >= 1
    low, high = features.supported["transaction.version"]
    assert low <= features.finalized.get("transaction.version", 0) <= high
    result = admin.update_features({"transaction.version": features.finalized.get("transaction.version", 0)},
                                   validate_only=True)
    assert result["transaction.version"].ok
