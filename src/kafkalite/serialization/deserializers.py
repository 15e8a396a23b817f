"""The Deserializer protocol and the built-in deserializers (bytes, str, int, float, JSON).

The mirror image of :mod:`kafkalite.serialization.base`, used by the consumers
(blocking and asyncio) and the console tools:

* ``deserialize(topic, data, headers) -> object``: ``data`` is the record's key or
  value bytes, or None (a null key, a tombstone); return what the application sees;
* ``configure(config, is_key)`` once, with the consumer's settings; ``close()`` at the end.

A plain callable ``fn(data)`` or ``fn(topic, data[, headers])`` works too (see
:func:`resolve_deserializer`). Built-in names for ``key.deserializer`` /
``value.deserializer``: ``"bytes"``, ``"str"`` (``"string"``), ``"int"`` (4 bytes big
endian, Java's IntegerDeserializer), ``"long"`` (8 bytes), ``"float"`` (``"double"``,
8-byte IEEE 754), ``"float32"`` (4 bytes), ``"json"``.

Example::

    from kafkalite import Consumer
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "g",
                         "key.deserializer": "str", "value.deserializer": "json"})

>>> IntegerDeserializer().deserialize("t", b"\\x00\\x00\\x01\\x00")
256
>>> JsonDeserializer().deserialize("t", b'{"qty":3}')
{'qty': 3}
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast, runtime_checkable

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.plugins import instantiate
from kafkalite.serialization.base import ConfigurableBase, builtin, callable_arity

__all__ = [
    "BUILTIN_DESERIALIZERS",
    "BytesDeserializer",
    "Deserializer",
    "DoubleDeserializer",
    "FloatDeserializer",
    "IntegerDeserializer",
    "JsonDeserializer",
    "KeyValueDeserializers",
    "LongDeserializer",
    "StringDeserializer",
    "resolve_deserializer",
]

Headers = Any  # the record's header list: [(str, bytes | None), ...]


@runtime_checkable
class Deserializer(Protocol):
    """What the consumer calls to turn key and value bytes into objects.

    Example::

        class Upper(Deserializer):
            def deserialize(self, topic, data, headers=None):
                return None if data is None else data.decode().upper()

        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "upper", "auto.offset.reset": "earliest",
                           "value.deserializer": Upper()})
        reader.assign([TopicPartition("orders", 0)])
        assert reader.poll(timeout=10.0)[0].value == "V0"
        reader.close()
    """

    def deserialize(self, topic: str, data: bytes | None, headers: Headers = None) -> Any:
        """Return the object for ``data`` (None stays None for the built-ins).

        Example::

            class Reversed(Deserializer):
                def deserialize(self, topic, data, headers=None):
                    return None if data is None else data[::-1]

            assert Reversed().deserialize("orders", b"abc") == b"cba"
        """
        ...

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Receive the consumer's settings (optional to implement).

        Example::

            class KeysOnly(Deserializer):
                def configure(self, config, is_key):
                    self.is_key = is_key              # the consumer says which side it decodes
                def deserialize(self, topic, data, headers=None):
                    return data

            Consumer({"bootstrap.servers": bootstrap, "group.id": "k", "key.deserializer": KeysOnly()}).close()
        """
        ...

    def close(self) -> None:
        """Release resources (optional to implement).

        Example::

            class Counting(Deserializer):
                def deserialize(self, topic, data, headers=None):
                    return data
                def close(self):
                    print("consumer closed")          # release files, connections ...

            Consumer({"bootstrap.servers": bootstrap, "group.id": "c", "value.deserializer": Counting()}).close()
        """
        ...


class _Base(ConfigurableBase):
    def deserialize(self, topic: str, data: bytes | None, headers: Headers = None) -> Any:
        """The key or value a record's bytes stand for (None stays None: a null).

        Example::

            StringDeserializer().deserialize("orders", b"hello")   # "hello"
        """
        # Abstract: each deserializer implements it.
        raise NotImplementedError

    def __call__(self, topic: str, data: bytes | None, headers: Headers = None) -> Any:
        return self.deserialize(topic, data, headers)


class BytesDeserializer(_Base):
    """Returns the bytes as they are.

    Example::

        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "bytes", "auto.offset.reset": "earliest",
                           "value.deserializer": BytesDeserializer()})
        reader.assign([TopicPartition("orders", 0)])
        assert reader.poll(timeout=10.0)[0].value == b"v0"
        reader.close()
    """

    def deserialize(self, topic: str, data: bytes | None, headers: Headers = None) -> Any:
        return data


class StringDeserializer(_Base):
    """bytes -> str in ``encoding`` (UTF-8 by default); invalid bytes raise.

    Example::

        assert StringDeserializer("latin-1").deserialize("names", "René".encode("latin-1")) == "René"
    """

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def deserialize(self, topic: str, data: bytes | None, headers: Headers = None) -> Any:
        if data is None:
            return None
        try:
            return bytes(data).decode(self.encoding)
        except UnicodeDecodeError as exc:
            raise SerializationError(f"not valid {self.encoding}: {exc}", topic=topic) from None


class _StructDeserializer(_Base):
    _struct: struct.Struct
    _kind: str

    def deserialize(self, topic: str, data: bytes | None, headers: Headers = None) -> Any:
        if data is None:
            return None
        if len(data) != self._struct.size:
            raise SerializationError(
                f"{self._kind} needs exactly {self._struct.size} bytes, got {len(data)}", topic=topic)
        return self._struct.unpack(data)[0]


class IntegerDeserializer(_StructDeserializer):
    """4 bytes big-endian -> int (Java's IntegerDeserializer).

    Example::

        assert IntegerDeserializer().deserialize("counts", bytes([0, 0, 1, 0])) == 256
    """

    _struct = struct.Struct(">i")
    _kind = "a 32-bit integer"


class LongDeserializer(_StructDeserializer):
    """8 bytes big-endian -> int (Java's LongDeserializer).

    Example::

        assert LongDeserializer().deserialize("ids", bytes([0, 0, 0, 0, 0, 0, 0, 7])) == 7
    """

    _struct = struct.Struct(">q")
    _kind = "a 64-bit integer"


class DoubleDeserializer(_StructDeserializer):
    """8 bytes IEEE 754 big-endian -> float (Java's DoubleDeserializer).

    Example::

        assert DoubleDeserializer().deserialize("prices", DoubleSerializer().serialize("prices", 2.5)) == 2.5
    """

    _struct = struct.Struct(">d")
    _kind = "a double"


class FloatDeserializer(_StructDeserializer):
    """4 bytes IEEE 754 big-endian -> float (Java's FloatDeserializer).

    Example::

        assert FloatDeserializer().deserialize("ratios", bytes([0x3F, 0xC0, 0, 0])) == 1.5
    """

    _struct = struct.Struct(">f")
    _kind = "a float"


class JsonDeserializer(_Base):
    """UTF-8 JSON -> Python objects; ``loads`` options go to :func:`json.loads`.

    Example::

        assert JsonDeserializer().deserialize("events", b'{"id": 1}') == {"id": 1}
    """

    def __init__(self, **loads_options: Any) -> None:
        self._options = loads_options

    def deserialize(self, topic: str, data: bytes | None, headers: Headers = None) -> Any:
        if data is None:
            return None
        try:
            return json.loads(bytes(data), **self._options)
        except ValueError as exc:
            raise SerializationError(f"not valid JSON: {exc}", topic=topic) from None


BUILTIN_DESERIALIZERS: dict[str, Callable[[], Deserializer]] = {
    "bytes": BytesDeserializer,
    "bytearray": BytesDeserializer,
    "str": StringDeserializer,
    "string": StringDeserializer,
    "int": IntegerDeserializer,
    "integer": IntegerDeserializer,
    "long": LongDeserializer,
    "float": DoubleDeserializer,
    "double": DoubleDeserializer,
    "float32": FloatDeserializer,
    "json": JsonDeserializer,
}


class _CallableDeserializer(_Base):
    """Adapts ``fn(data)`` or ``fn(topic, data[, headers])`` to the protocol."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self._arity = callable_arity(fn)

    def deserialize(self, topic: str, data: bytes | None, headers: Headers = None) -> Any:
        if self._arity == 1:
            return self.fn(data)
        if self._arity == 2:
            return self.fn(topic, data)
        return self.fn(topic, data, headers)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.fn!r})"


def resolve_deserializer(spec: Any, setting: str) -> Deserializer | None:
    """Turn a ``key.deserializer`` / ``value.deserializer`` setting into a Deserializer.

    Accepts None (bytes as they are: returns None, the fast path), a built-in name, a
    Deserializer object, a Deserializer class (instantiated with no arguments) or a
    callable. Raises :class:`~kafkalite.errors.ConfigError` naming ``setting`` otherwise.

    Example::

        from kafkalite.serialization.deserializers import resolve_deserializer
        assert isinstance(resolve_deserializer("string", "value.deserializer"), StringDeserializer)
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        return builtin(spec, setting, BUILTIN_DESERIALIZERS, "deserializer")
    if isinstance(spec, type):
        spec = instantiate(setting, spec)
    if callable(getattr(spec, "deserialize", None)):
        return cast(Deserializer, spec)  # a plugin is duck-typed: it has deserialize()
    if callable(spec):
        return _CallableDeserializer(spec)
    raise ConfigError(
        f"setting '{setting}' must be a deserializer object, class, callable or built-in name; got {spec!r}")


class KeyValueDeserializers:
    """A consumer's ``key.deserializer`` and ``value.deserializer`` (the consumer's and
    the share consumer's alike), each configured once with the settings, as Java does.

    Example::

        deserializers = KeyValueDeserializers({"key.deserializer": "str", "value.deserializer": None})
        deserializers.key_and_value("t", b"k", b"v", [])      # ('k', b'v')
    """

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.key = resolve_deserializer(cfg["key.deserializer"], "key.deserializer")
        self.value = resolve_deserializer(cfg["value.deserializer"], "value.deserializer")
        for deserializer, is_key in ((self.key, True), (self.value, False)):
            configure = getattr(deserializer, "configure", None)
            if callable(configure):
                configure(cfg, is_key)

    @property
    def active(self) -> bool:
        """Whether either setting was given (else records pass through untouched)."""
        return self.key is not None or self.value is not None

    def key_and_value(self, topic: str, key: bytes | None, value: bytes | None,
                      headers: Headers) -> tuple[Any, Any]:
        """The record's key and value deserialized (a null key or value stays None);
        what a deserializer raises propagates."""
        if key is not None and self.key is not None:
            key = self.key.deserialize(topic, key, headers)
        if value is not None and self.value is not None:
            value = self.value.deserialize(topic, value, headers)
        return key, value
