"""Producer settings: cross-setting rules (Java's ProducerConfig), serializers, plugins."""

from __future__ import annotations

import json
import re
import struct

import pytest

import kafkalite.producer  # noqa: F401  (registers the producer's cross checks)
from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.base import (
    BytesSerializer,
    DoubleSerializer,
    IntegerSerializer,
    JsonSerializer,
    StringSerializer,
    resolve_serializer,
)
from tests.helpers.settings import resolve

BS = {"bootstrap.servers": "127.0.0.1:9"}


def test_idempotence_is_on_by_default() -> None:
    assert resolve("producer", BS)["enable.idempotence"] is True


@pytest.mark.parametrize("setting, value", [("acks", "1"), ("acks", "0"), ("retries", 0),
                                            ("max.in.flight.requests.per.connection", 6)])
def test_contradiction_with_explicit_idempotence_is_an_error_naming_the_setting(setting, value) -> None:
    with pytest.raises(ConfigError, match=rf"setting '{re.escape(setting)}' = \S+ contradicts enable\.idempotence=true"):
        resolve("producer", {**BS, "enable.idempotence": True, setting: value})


@pytest.mark.parametrize("setting, value", [("acks", "1"), ("retries", 0),
                                            ("max.in.flight.requests.per.connection", 10)])
def test_contradiction_with_default_idempotence_silently_disables_it(setting, value) -> None:
    cfg = resolve("producer", {**BS, setting: value})
    assert cfg["enable.idempotence"] is False
    assert not cfg.is_set("enable.idempotence")


def test_transactional_id_needs_idempotence() -> None:
    needs = "'transactional.id' needs the idempotent producer, but enable.idempotence is off"
    with pytest.raises(ConfigError, match=needs):
        resolve("producer", {**BS, "transactional.id": "t", "enable.idempotence": False})
    with pytest.raises(ConfigError, match=needs + r" \(acks, retries or max.in.flight"):
        resolve("producer", {**BS, "transactional.id": "t", "acks": "1"})
    with pytest.raises(ConfigError, match="'transactional.id' must not be empty"):
        resolve("producer", {**BS, "transactional.id": "  "})
    assert resolve("producer", {**BS, "transactional.id": "t"})["transactional.id"] == "t"


def test_delivery_timeout_below_linger_plus_request_timeout() -> None:
    at_least = r"'delivery.timeout.ms' = {} must be at least linger.ms \+ request.timeout.ms = 30005"
    with pytest.raises(ConfigError, match=at_least.format(1000)):
        resolve("producer", {**BS, "delivery.timeout.ms": 1000})
    with pytest.raises(ConfigError, match=at_least.format(30004)):
        resolve("producer", {**BS, "delivery.timeout.ms": 30004, "linger.ms": 5})
    assert resolve("producer", {**BS, "delivery.timeout.ms": 30005})["delivery.timeout.ms"] == 30005
    # Defaulted: raised to the minimum, as the Java client does.
    cfg = resolve("producer", {**BS, "request.timeout.ms": 200000})
    assert cfg["delivery.timeout.ms"] == 200005


def test_unknown_producer_setting_suggests_the_nearest() -> None:
    with pytest.raises(ConfigError, match=r"unknown setting 'linger_msec'; did you mean 'linger\.ms'\?"):
        resolve("producer", {**BS, "linger_msec": 5})


def test_builtin_serializers() -> None:
    assert StringSerializer().serialize("t", "héllo") == "héllo".encode()
    assert IntegerSerializer().serialize("t", -2) == struct.pack(">i", -2)
    assert DoubleSerializer().serialize("t", 1.5) == struct.pack(">d", 1.5)
    assert json.loads(JsonSerializer().serialize("t", {"a": [1, "é"]})) == {"a": [1, "é"]}
    assert BytesSerializer().serialize("t", bytearray(b"x")) == b"x"
    for serializer in (StringSerializer(), IntegerSerializer(), JsonSerializer(), BytesSerializer()):
        assert serializer.serialize("t", None) is None  # a null stays null (tombstone)
    with pytest.raises(SerializationError, match=r"cannot serialize \d+ as a 32-bit integer: .*\(topic 'orders'\)"):
        IntegerSerializer().serialize("orders", 2**40)
    with pytest.raises(SerializationError):
        JsonSerializer().serialize("t", object())
    with pytest.raises(SerializationError):
        StringSerializer().serialize("t", b"bytes")


def test_resolve_serializer_forms() -> None:
    assert resolve_serializer(None, "value.serializer") is None
    assert isinstance(resolve_serializer("json", "value.serializer"), JsonSerializer)
    assert isinstance(resolve_serializer(StringSerializer, "key.serializer"), StringSerializer)
    one = resolve_serializer(lambda v: v.encode(), "value.serializer")
    assert one.serialize("t", "x", []) == b"x"
    three = resolve_serializer(lambda topic, v, headers: topic.encode() + v, "value.serializer")
    assert three.serialize("t", b"!", []) == b"t!"
    with pytest.raises(ConfigError, match=r"'value.serializer' names no built-in serializer: 'yaml' \(known: "):
        resolve_serializer("yaml", "value.serializer")
    with pytest.raises(ConfigError, match="'key.serializer' must be a serializer object, class, callable or built-in"):
        resolve_serializer(3, "key.serializer")
