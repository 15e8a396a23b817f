"""server.properties, the SASL preset and logging configs, per Kafka version."""

from __future__ import annotations

from pathlib import Path

from kafkalite.testing.broker import random_cluster_id
from kafkalite.testing.properties import (
    SASL_PRESET,
    NodeConfig,
    broker_log_config,
    render_properties,
    server_properties,
    tools_log_config,
)
from kafkalite.testing.topics import unique_topic_name


def _cfg(version: str = "4.3.1", **kw) -> NodeConfig:
    base = dict(
        node_id=2, version=version, data_dir=Path("/data"), listeners={"PLAINTEXT": 9092},
        controller_port=9093, voters={1: 9001, 2: 9093, 3: 9003},
    )
    base.update(kw)
    return NodeConfig(**base)  # type: ignore[arg-type]


def test_combined_mode_with_static_quorum() -> None:
    props = server_properties(_cfg())
    assert props["process.roles"] == "broker,controller"
    assert props["node.id"] == "2"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9001,2@127.0.0.1:9093,3@127.0.0.1:9003"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert props["log.dirs"] == "/data"


def test_test_friendly_defaults() -> None:
    props = server_properties(_cfg())
    assert props["auto.create.topics.enable"] == "false"
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert props["num.partitions"] == "1"
    assert server_properties(_cfg(auto_create_topics=True))["auto.create.topics.enable"] == "true"


def test_share_group_settings_only_for_kafka_4() -> None:
    four = server_properties(_cfg(replication_factor=3, min_insync_replicas=2))
    assert four["share.coordinator.state.topic.replication.factor"] == "3"
    assert four["share.coordinator.state.topic.min.isr"] == "2"
    assert four["default.replication.factor"] == "3"
    assert four["min.insync.replicas"] == "2"
    assert not any(k.startswith("share.") for k in server_properties(_cfg("3.9.1")))


def test_extra_properties_win() -> None:
    props = server_properties(_cfg(extra={"num.partitions": "6", "log.retention.ms": "1000"}))
    assert props["num.partitions"] == "6" and props["log.retention.ms"] == "1000"


def test_sasl_preset() -> None:
    props = server_properties(_cfg(listeners={"PLAINTEXT": 1, "SASL_PLAINTEXT": 2}, security=SASL_PRESET))
    assert "SASL_PLAINTEXT://127.0.0.1:2" in props["listeners"]
    assert "SASL_PLAINTEXT:SASL_PLAINTEXT" in props["listener.security.protocol.map"]
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["super.users"] == "User:admin;User:ANONYMOUS"
    plain = props["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert 'user_alice="alice-secret"' in plain and plain.endswith(";")
    assert "ScramLoginModule" in props["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    args = SASL_PRESET.scram_arguments()
    assert args[:2] == ["--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]"]
    assert len(args) == 2 * 2 * len(SASL_PRESET.users)


def test_render_properties_escapes_backslashes() -> None:
    assert render_properties({"b": "x", "a": "C:\\kafka"}) == "a=C:\\\\kafka\nb=x\n"


def test_log_configs_per_version() -> None:
    four, three = broker_log_config("4.3.1"), broker_log_config("3.9.1")
    assert four.filename == "log4j2.properties" and "server.log" in four.text
    assert four.jvm_flag(Path("/r/x")) == "-Dlog4j2.configurationFile=/r/x"
    assert three.filename == "log4j.properties" and "FileAppender" in three.text
    assert three.jvm_flag(Path("/r/x")) == "-Dlog4j.configuration=file:/r/x"
    assert "SYSTEM_ERR" in tools_log_config("4.0.0").text
    assert "System.err" in tools_log_config("3.9.1").text


def test_random_cluster_id_shape() -> None:
    ids = {random_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


def test_unique_topic_names_are_legal() -> None:
    name = unique_topic_name("test_x[a/b c]" + "y" * 300)
    assert len(name) <= 249
    assert all(c.isalnum() or c in "._-" for c in name)
    assert unique_topic_name("t") != unique_topic_name("t")


def test_cluster_node_properties_win_per_node(tmp_path: Path) -> None:
    import pytest

    from kafkalite.testing.cluster import LocalCluster

    cluster = LocalCluster(3, run_dir=tmp_path, extra_properties={"broker.rack": "any", "num.partitions": "4"},
                           node_properties={2: {"broker.rack": "r2"}, 3: {"broker.rack": "r3"}})
    racks = {b.node_id: server_properties(b.config())["broker.rack"] for b in cluster}
    assert racks == {1: "any", 2: "r2", 3: "r3"}
    assert all(server_properties(b.config())["num.partitions"] == "4" for b in cluster)
    with pytest.raises(ValueError, match=r"\[7\]"):
        LocalCluster(3, run_dir=tmp_path, node_properties={7: {"broker.rack": "x"}})
