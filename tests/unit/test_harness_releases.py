"""The kept Kafka releases and their modes; ZooKeeper-mode broker configuration (no
broker started: kafkalite.testing.releases and properties)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafkalite.testing.distribution import DEFAULT_KAFKA_VERSION, available_versions
from kafkalite.testing.java import needs_java11
from kafkalite.testing.properties import NodeConfig, server_properties
from kafkalite.testing.releases import KEPT, KRAFT, ZOOKEEPER, ModeError, mode_for, modes_of

ROOT = Path(__file__).resolve().parents[2]


def test_every_kept_release_has_a_lock_and_the_default_is_the_newest() -> None:
    versions = [r.version for r in KEPT]
    assert set(versions) <= set(available_versions())
    assert versions == sorted(versions, key=lambda v: tuple(int(x) for x in v.split(".")))
    assert versions[-1] == DEFAULT_KAFKA_VERSION == "4.4.0"
    assert versions[0] == "2.1.1" and KEPT[0].mode == ZOOKEEPER
    assert {r.version for r in KEPT if r.in_ci} == {"2.1.1", "4.4.0"}


def test_the_mode_follows_the_release() -> None:
    assert modes_of("2.8.2") == (ZOOKEEPER,)
    assert modes_of("3.6.2") == (ZOOKEEPER, KRAFT)  # kept as a ZooKeeper cluster
    assert modes_of("3.9.1") == (KRAFT, ZOOKEEPER)
    assert modes_of("4.0.0") == (KRAFT,)
    assert mode_for("3.9.1", ZOOKEEPER) == ZOOKEEPER
    with pytest.raises(ModeError, match="KRaft mode only"):
        mode_for("4.4.0", ZOOKEEPER)
    with pytest.raises(ModeError, match="ZooKeeper mode only"):
        mode_for("2.8.2", KRAFT)
    with pytest.raises(ModeError, match="older than 2.1"):
        modes_of("2.0.1")


def test_releases_before_2_6_run_on_java_11() -> None:
    assert [r.version for r in KEPT if needs_java11(r.version)] == ["2.1.1"]


def test_a_zookeeper_mode_broker_has_no_controller_settings() -> None:
    cfg = NodeConfig(2, "2.1.1", Path("/d"), {"PLAINTEXT": 9092}, 9093, {2: 9093}, zookeeper_connect="127.0.0.1:2181")
    props = server_properties(cfg)
    assert props["broker.id"] == "2" and props["zookeeper.connect"] == "127.0.0.1:2181"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert "CONTROLLER" not in props["listener.security.protocol.map"]
    assert not {"process.roles", "node.id", "controller.quorum.voters", "controller.listener.names"} & set(props)


def test_the_compatibility_page_is_generated_from_the_tables() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_compatibility.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_up_help_lists_the_kept_releases_and_modes() -> None:
    done = subprocess.run([sys.executable, "-m", "kafkalite.testing", "up", "--help"],
                          capture_output=True, text=True, check=True)
    text = " ".join(done.stdout.split())
    for release in KEPT:
        assert release.version in text
    assert "--zookeeper" in text and "--kraft" in text


def test_the_sites_compatibility_data_lists_the_kept_releases() -> None:
    import re

    text = (ROOT / "docs" / "data" / "compatibility.yaml").read_text()
    section = text[text.index("brokers:"):text.index("spark:")]
    rows = re.findall(r'- version: "([^"]+)"\n\s+mode: ([^\n]+)\n\s+status: ([^\n]+)', section)
    listed = [(version, mode) for version, mode, status in rows if status != "supported"]
    assert listed == [(r.version, "ZooKeeper" if r.mode == ZOOKEEPER else "KRaft") for r in KEPT]
