"""``kafkalite topics`` and ``kafkalite configs`` end to end (the installed command),
cross-checked with kafka-topics and kafka-configs."""

from __future__ import annotations

import json

import pytest

from kafkalite.testing.topics import unique_topic_name
from tests.integration.admin_support import kafkalite, tool

pytestmark = pytest.mark.broker


def test_topics_lifecycle(kafka_broker) -> None:
    b = kafka_broker.bootstrap
    prefix = unique_topic_name("cli-topics")
    a, c = f"{prefix}-a", f"{prefix}-c"
    done = kafkalite("topics", "--bootstrap-server", b, "--create", "--topic", a, "--topic", c, "--partitions", "2",
                     "--replication-factor", "1", "--config", "retention.ms=120000")
    assert done.returncode == 0, done.stderr
    assert f"Created topic {a}." in done.stdout and f"Created topic {c}." in done.stdout

    again = kafkalite("topics", "--bootstrap-server", b, "--create", "--topic", a, "--partitions", "2")
    assert again.returncode == 1 and again.stderr.count("\n") == 1
    assert "TOPIC_ALREADY_EXISTS" in again.stderr and a in again.stderr and "Traceback" not in again.stderr
    assert kafkalite("topics", "--bootstrap-server", b, "--create", "--topic", a, "--if-not-exists").returncode == 0

    grow = kafkalite("topics", "--bootstrap-server", b, "--alter", "--topic", a, "--partitions", "4")
    assert grow.returncode == 0, grow.stderr
    shrink = kafkalite("topics", "--bootstrap-server", b, "--alter", "--topic", c, "--partitions", "1")
    assert shrink.returncode == 1 and "INVALID_PARTITIONS" in shrink.stderr and c in shrink.stderr

    listed = kafkalite("topics", "--bootstrap-server", b, "--list", "--topic", f"{prefix}.*")
    assert listed.stdout.split() == [a, c]
    described = kafkalite("topics", "--bootstrap-server", b, "--describe", "--topic", a, "--json")
    (info,) = json.loads(described.stdout)
    assert info["partition_count"] == 4 and info["configs"] == {"retention.ms": "120000"}
    assert [p["leader"] for p in info["partitions"]] == [1, 1, 1, 1]
    text = kafkalite("topics", "--bootstrap-server", b, "--describe", "--topic", a).stdout
    assert f"Topic: {a}\t" in text and "PartitionCount: 4" in text
    assert "retention.ms=120000" in text.splitlines()[0].split("\tConfigs: ")[1].split(",")
    # A healthy single broker has no under-replicated or unavailable partitions.
    for flag in ("--under-replicated-partitions", "--unavailable-partitions"):
        filtered = kafkalite("topics", "--bootstrap-server", b, "--describe", "--topic", a, flag)
        assert filtered.returncode == 0 and filtered.stdout == ""

    java = tool(kafka_broker, "kafka-topics", "--describe", "--topic", f"{prefix}.*")
    assert f"Topic: {a}\tTopicId:" in java and "PartitionCount: 4" in java and "PartitionCount: 2" in java

    deleted = kafkalite("topics", "--bootstrap-server", b, "--delete", "--topic", f"{prefix}.*")
    assert deleted.returncode == 0 and deleted.stdout.count("Deleted topic") == 2
    missing = kafkalite("topics", "--bootstrap-server", b, "--delete", "--topic", a)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert kafkalite("topics", "--bootstrap-server", b, "--delete", "--topic", a, "--if-exists").returncode == 0


def test_configs_describe_set_delete(kafka_broker, topic_factory) -> None:
    b = kafka_broker.bootstrap
    topic = topic_factory()
    base = ["configs", "--bootstrap-server", b, "--entity-type", "topics", "--entity-name", topic]
    done = kafkalite(*base, "--alter", "--add-config", "retention.ms=3600000,cleanup.policy=[compact,delete]")
    assert done.returncode == 0, done.stderr
    assert f"Completed updating config for topic {topic}." in done.stdout
    shown = kafkalite(*base, "--describe")
    assert "retention.ms=3600000" in shown.stdout and "cleanup.policy=compact,delete" in shown.stdout
    java = tool(kafka_broker, "kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic)
    assert "retention.ms=3600000" in java and "cleanup.policy=compact,delete" in java

    removed = kafkalite(*base, "--alter", "--delete-config", "retention.ms")
    assert removed.returncode == 0
    configs = {c["name"]: c for c in json.loads(kafkalite(*base, "--describe", "--json").stdout)["configs"]}
    assert "retention.ms" not in configs and configs["cleanup.policy"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    everything = json.loads(kafkalite(*base, "--describe", "--all", "--json").stdout)["configs"]
    assert any(c["name"] == "retention.ms" and c["source"] == "DEFAULT_CONFIG" for c in everything)

    bad = kafkalite(*base, "--alter", "--add-config", "retention.ms=soon")
    assert bad.returncode == 1 and "INVALID_CONFIG" in bad.stderr and topic in bad.stderr
    unknown = kafkalite(*base, "--alter", "--add-config", "retention.msec=1")
    assert unknown.returncode == 1 and "retention.msec" in unknown.stderr
    assert kafkalite("configs", "--bootstrap-server", b, "--describe", "--entity-type", "tpoics",
                     "--entity-name", topic).returncode == 2

    broker = ["configs", "--bootstrap-server", b, "--entity-type", "brokers", "--entity-name", "1"]
    assert kafkalite(*broker, "--alter", "--add-config", "log.cleaner.threads=2").returncode == 0
    try:
        java = tool(kafka_broker, "kafka-configs", "--describe", "--entity-type", "brokers", "--entity-name", "1")
        assert "log.cleaner.threads=2" in java
    finally:
        assert kafkalite(*broker, "--alter", "--delete-config", "log.cleaner.threads").returncode == 0


def test_describe_prints_what_kafka_topics_prints(kafka_broker) -> None:
    """Line for line kafka-topics --describe of Kafka 4: base64 topic id, the configs
    that are not defaults (broker order), Elr / LastKnownElr from DescribeTopicPartitions."""
    b = kafka_broker.bootstrap
    prefix = unique_topic_name("cli-describe")
    names = [f"{prefix}-b", f"{prefix}-a"]
    for name, parts in zip(names, ("3", "2")):
        done = kafkalite("topics", "--bootstrap-server", b, "--create", "--topic", name, "--partitions", parts,
                         "--config", "retention.ms=120000", "--config", "cleanup.policy=compact")
        assert done.returncode == 0, done.stderr
    java = tool(kafka_broker, "kafka-topics", "--describe", "--topic", f"{prefix}.*")
    ours = kafkalite("topics", "--bootstrap-server", b, "--describe", "--topic", f"{prefix}.*")
    assert ours.returncode == 0, ours.stderr
    # kafka-topics prints the topics in no particular order; we sort them by name.
    assert ours.stdout.splitlines() == sorted(java.splitlines(), key=lambda line: (
        line.split("Topic: ")[1].split("\t")[0], line.startswith("\t")))
    assert ours.stdout.splitlines()[0].startswith(f"Topic: {prefix}-a\tTopicId: ")
    assert ours.stdout.count("\tElr: \tLastKnownElr: ") == 5
    # Paged through DescribeTopicPartitions one partition per response: the same answer.
    paged = kafkalite("topics", "--bootstrap-server", b, "--describe", "--topic", f"{prefix}.*",
                      "--partition-size-limit-per-response", "1")
    assert paged.stdout == ours.stdout
    described = json.loads(kafkalite("topics", "--bootstrap-server", b, "--describe", "--topic", names[0],
                                     "--json").stdout)
    assert [(p["partition"], p["elr"], p["last_known_elr"]) for p in described[0]["partitions"]] == [
        (0, [], []), (1, [], []), (2, [], [])]
    overrides = kafkalite("topics", "--bootstrap-server", b, "--describe", "--topic", f"{prefix}.*",
                          "--topics-with-overrides")
    assert overrides.stdout.splitlines() == sorted(line for line in java.splitlines() if line.startswith("Topic:"))
    bad = kafkalite("topics", "--bootstrap-server", b, "--describe", "--topic", names[0],
                    "--partition-size-limit-per-response", "0")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "at least 1" in bad.stderr
