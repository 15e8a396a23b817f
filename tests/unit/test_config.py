"""The one settings schema: names, aliases, types, ranges, suggestions."""

from __future__ import annotations

import pytest

from kafkalite.config import SETTINGS, parse_host_port
from kafkalite.errors import ConfigError
from kafkalite.settings import resolve

BOOT = {"bootstrap.servers": "127.0.0.1:9092"}


def test_defaults_follow_java_client() -> None:
    cfg = resolve("producer", BOOT)
    assert cfg["acks"] == "all"
    assert cfg["linger.ms"] == 5
    assert cfg["batch.size"] == 16384
    assert cfg["enable.idempotence"] is True
    assert cfg["delivery.timeout.ms"] == 120000
    consumer = resolve("consumer", BOOT)
    assert consumer["max.poll.records"] == 500
    assert consumer["session.timeout.ms"] == 45000
    assert consumer["receive.buffer.bytes"] == 65536
    assert resolve("admin", BOOT)["connections.max.idle.ms"] == 300000


def test_aliases_and_kwargs() -> None:
    cfg = resolve("producer", {"bootstrap_servers": "h:1"}, linger_ms="7")
    assert cfg.linger_ms == 7 and cfg["linger.ms"] == 7
    assert cfg.bootstrap_servers == ["h:1"]
    assert cfg.is_set("linger.ms") and not cfg.is_set("acks")


def test_unknown_key_suggests_nearest() -> None:
    with pytest.raises(ConfigError, match=r"unknown setting 'linger_msec'; did you mean 'linger.ms'\?"):
        resolve("producer", BOOT, linger_msec=5)


def test_setting_of_another_client() -> None:
    with pytest.raises(ConfigError, match="'group.id' does not apply to a producer"):
        resolve("producer", {**BOOT, "group.id": "g"})


@pytest.mark.parametrize(
    "key,value,message",
    [
        ("linger.ms", "soon", "'linger.ms' must be an integer"),
        ("linger.ms", -1, "'linger.ms' must be >= 0"),
        ("enable.idempotence", "maybe", "'enable.idempotence' must be true or false"),
        ("compression.type", "brotli", "'compression.type' must be one of none, gzip"),
        ("compression.gzip.level", 12, "must be <= 9"),
        ("linger.ms", True, "must be an integer"),
    ],
)
def test_bad_values_name_the_key(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve("producer", {**BOOT, key: value})


def test_bootstrap_required_and_parsed() -> None:
    with pytest.raises(ConfigError, match="bootstrap.servers' is required"):
        resolve("admin", {})
    with pytest.raises(ConfigError, match="invalid address 'nohost'"):
        resolve("admin", {"bootstrap.servers": "nohost"})
    assert parse_host_port("[::1]:9092") == ("::1", 9092)
    assert parse_host_port("PLAINTEXT://broker:29092") == ("broker", 29092)


def test_strings_for_bools_and_lists() -> None:
    cfg = resolve("consumer", {**BOOT, "enable.auto.commit": "false",
                               "partition.assignment.strategy": "range, roundrobin"})
    assert cfg["enable.auto.commit"] is False
    assert cfg["partition.assignment.strategy"] == ["range", "roundrobin"]


def test_password_hidden_in_repr() -> None:
    cfg = resolve("admin", {**BOOT, "sasl.password": "s3cret"})
    assert "s3cret" not in repr(cfg)


def test_every_setting_has_doc_and_unique_alias() -> None:
    aliases = [s.alias for s in SETTINGS]
    assert len(aliases) == len(set(aliases))
    assert all(s.doc for s in SETTINGS)
