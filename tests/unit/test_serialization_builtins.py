"""Built-in serializers and deserializers, and how settings name them."""

from __future__ import annotations

import math
import struct

import pytest

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization import (
    BUILTIN_DESERIALIZERS,
    BUILTIN_SERIALIZERS,
    BytesDeserializer,
    Deserializer,
    DoubleDeserializer,
    FloatDeserializer,
    IntegerDeserializer,
    JsonDeserializer,
    LongDeserializer,
    Serializer,
    StringDeserializer,
    resolve_deserializer,
    resolve_serializer,
)

VALUES = {
    "bytes": [b"", b"\x00\xff raw"],
    "str": ["", "héllo wörld ✓"],
    "int": [0, 1, -1, 2**31 - 1, -(2**31)],
    "long": [0, -1, 2**63 - 1, -(2**63)],
    "double": [0.0, -1.5, 1e308, math.inf],
    "float32": [0.0, -2.5, 1.0],
    "json": [{"qty": 3, "tags": ["a", "é"]}, [1, 2], "s", 7, True],
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_every_builtin_round_trips_and_keeps_none(name: str) -> None:
    serializer = resolve_serializer(name, "value.serializer")
    deserializer = resolve_deserializer(name, "value.deserializer")
    assert isinstance(serializer, Serializer) and isinstance(deserializer, Deserializer)
    for value in VALUES[name]:
        data = serializer.serialize("t", value, [])
        assert type(data) is bytes
        assert deserializer.deserialize("t", data, []) == value
    assert serializer.serialize("t", None, []) is None
    assert deserializer.deserialize("t", None, []) is None


def test_numbers_use_javas_big_endian_layouts() -> None:
    assert resolve_serializer("int", "s").serialize("t", 256) == b"\x00\x00\x01\x00"  # type: ignore[union-attr]
    assert resolve_serializer("long", "s").serialize("t", 1) == b"\x00" * 7 + b"\x01"  # type: ignore[union-attr]
    assert resolve_serializer("double", "s").serialize("t", 1.5) == struct.pack(">d", 1.5)  # type: ignore[union-attr]
    assert IntegerDeserializer().deserialize("t", b"\xff\xff\xff\xfe") == -2
    assert LongDeserializer().deserialize("t", b"\x80" + b"\x00" * 7) == -(2**63)
    assert DoubleDeserializer().deserialize("t", struct.pack(">d", -0.25)) == -0.25
    assert FloatDeserializer().deserialize("t", struct.pack(">f", 0.5)) == 0.5
    assert math.isnan(DoubleDeserializer().deserialize("t", struct.pack(">d", math.nan)))


def test_names_are_the_same_for_both_directions() -> None:
    assert set(BUILTIN_SERIALIZERS) == set(BUILTIN_DESERIALIZERS)


@pytest.mark.parametrize(
    ("deserializer", "data", "match"),
    [
        (IntegerDeserializer(), b"\x00\x01", "exactly 4 bytes, got 2"),
        (LongDeserializer(), b"\x00" * 9, "exactly 8 bytes, got 9"),
        (StringDeserializer(), b"\xff\xfe", "not valid utf-8"),
        (JsonDeserializer(), b"{nope", "not valid JSON"),
    ],
)
def test_bad_bytes_raise_serialization_errors_naming_the_topic(deserializer: Deserializer, data: bytes,
                                                                match: str) -> None:
    with pytest.raises(SerializationError, match=match) as info:
        deserializer.deserialize("orders", data, None)
    assert info.value.topic == "orders"


def test_wrong_types_raise_from_serializers() -> None:
    with pytest.raises(SerializationError, match="32-bit integer"):
        resolve_serializer("int", "s").serialize("t", 2**40)  # type: ignore[union-attr]
    with pytest.raises(SerializationError, match="expected str"):
        resolve_serializer("str", "s").serialize("t", b"bytes")  # type: ignore[union-attr]
    with pytest.raises(SerializationError, match="JSON"):
        resolve_serializer("json", "s").serialize("t", {1, 2})  # type: ignore[union-attr]


def test_resolve_accepts_names_classes_instances_and_callables() -> None:
    assert resolve_deserializer(None, "value.deserializer") is None
    assert isinstance(resolve_deserializer(" JSON ", "value.deserializer"), JsonDeserializer)
    assert isinstance(resolve_deserializer(BytesDeserializer, "value.deserializer"), BytesDeserializer)
    instance = StringDeserializer("latin-1")
    assert resolve_deserializer(instance, "key.deserializer") is instance
    assert instance.deserialize("t", "é".encode("latin-1")) == "é"

    one = resolve_deserializer(lambda data: data[::-1], "value.deserializer")
    two = resolve_deserializer(lambda topic, data: f"{topic}:{data.decode()}", "value.deserializer")
    three = resolve_deserializer(lambda topic, data, headers: dict(headers)["h"], "value.deserializer")
    assert one.deserialize("t", b"abc", []) == b"cba"  # type: ignore[union-attr]
    assert two.deserialize("t", b"x", []) == "t:x"  # type: ignore[union-attr]
    assert three.deserialize("t", b"x", [("h", b"1")]) == b"1"  # type: ignore[union-attr]
    # The adapted objects follow the whole protocol.
    one.configure({}, True)  # type: ignore[union-attr]
    one.close()  # type: ignore[union-attr]


@pytest.mark.parametrize("spec, message", [
    ("avro-ish", r"names no built-in deserializer: 'avro-ish' \(known: bytearray, bytes"),
    (42, "must be a deserializer object, class, callable or built-in name; got 42"),
    (object(), "must be a deserializer object, class, callable or built-in name; got <object object"),
])
def test_unknown_specs_are_config_errors_naming_the_setting(spec: object, message: str) -> None:
    with pytest.raises(ConfigError, match="setting 'value.deserializer' " + message):
        resolve_deserializer(spec, "value.deserializer")


def test_a_class_that_needs_arguments_is_a_config_error() -> None:
    class NeedsArgs:
        def __init__(self, schema: str) -> None:
            self.schema = schema

        def deserialize(self, topic: str, data: bytes, headers: object) -> object:
            return data

    with pytest.raises(ConfigError, match="cannot instantiate NeedsArgs"):
        resolve_deserializer(NeedsArgs, "value.deserializer")
