"""The one settings schema: names, aliases, types, ranges, suggestions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafkalite.config import SETTINGS, parse_host_port
from kafkalite.errors import ConfigError
from tests.helpers.settings import resolve

BOOT = {"bootstrap.servers": "127.0.0.1:9092"}


def test_defaults_follow_java_client() -> None:
    cfg = resolve("producer", BOOT)
    assert cfg["acks"] == "all"
    assert cfg["linger.ms"] == 5
    # The one deliberate difference (issue 15, docs/producer.md): librdkafka's 1 MB, safe
    # because a batch reserves buffer.memory as it grows.
    assert cfg["batch.size"] == 1_000_000
    assert cfg["send.buffer.bytes"] == -1  # the OS's, as librdkafka's; Java's 128 KiB elsewhere
    assert resolve("consumer", BOOT)["send.buffer.bytes"] == 131072
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


def test_none_is_refused_where_the_setting_has_a_default() -> None:
    # Java refuses null for such settings too; before, acks=None failed later with a KeyError.
    with pytest.raises(ConfigError, match=r"setting 'acks' cannot be None \(leave it out for its default, 'all'\)"):
        resolve("producer", {**BOOT, "acks": None})
    with pytest.raises(ConfigError, match="setting 'linger.ms' cannot be None"):
        resolve("producer", BOOT, linger_ms=None)
    # A setting whose default is None takes None: it means "unset".
    assert resolve("producer", {**BOOT, "transactional.id": None})["transactional.id"] is None


def test_list_of_names_takes_strings_only() -> None:
    with pytest.raises(ConfigError, match="'ssl.enabled.protocols' must be a list of strings"):
        resolve("admin", {**BOOT, "ssl.enabled.protocols": ["TLSv1.3", 13]})
    # Plugin lists take objects (interceptors, reporters, assignors).
    hook = object()
    assert resolve("producer", {**BOOT, "interceptor.classes": [hook]})["interceptor.classes"] == [hook]


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gen_config_keys  # noqa: E402


def test_setting_types_for_the_type_checker_are_fresh() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_config_keys.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


_PY_TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (float,), "bool": (bool,), "str": (str,),
                                          "list[str]": (list,), "list[Any]": (list,)}


@pytest.mark.parametrize("kind", ["producer", "consumer", "admin", "share_consumer"])
def test_every_default_has_the_type_the_type_checker_is_told(kind: str) -> None:
    """Config.__getitem__'s overloads promise each setting's type: the resolved defaults keep it."""
    extra = {"group.id": "g"} if kind == "share_consumer" else {}
    cfg = resolve(kind, {**BOOT, **extra})
    for setting in SETTINGS:
        if kind not in setting.clients:
            continue
        declared = gen_config_keys.value_type(setting)
        if declared == "Any":
            continue  # a plugin: any object
        value = cfg[setting.name]
        if declared.endswith(" | None") and value is None:
            continue
        expected = _PY_TYPES[declared.removesuffix(" | None")]
        assert isinstance(value, expected), f"{setting.name} = {value!r} is not {declared}"
        if expected == (int,):
            assert not isinstance(value, bool), setting.name
        if declared == "list[str]":
            assert all(isinstance(v, str) for v in value), setting.name


def test_kafkalite_only_settings_are_declared() -> None:
    # the settings reference marks these as kafkalite's own; a typo would mark nothing
    from kafkalite.config import BY_NAME, KAFKALITE_ONLY

    assert set(BY_NAME) >= KAFKALITE_ONLY, sorted(KAFKALITE_ONLY - set(BY_NAME))
