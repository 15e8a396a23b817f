"""The Serializer protocol and the built-in serializers (bytes, str, int, float, JSON).

A serializer turns a key or value into bytes (or None, a null key / tombstone value)
for one topic. It is the same protocol as the Java client's ``Serializer``:

* ``serialize(topic, data, headers) -> bytes | None``: ``headers`` is the record's
  mutable header list, so a serializer may add headers (a schema id, a type name);
* ``configure(config, is_key)``: called once by the producer with its resolved
  settings; ``is_key`` says whether it serializes keys or values;
* ``close()``: called when the producer closes.

A plain callable ``fn(data) -> bytes`` or ``fn(topic, data, headers) -> bytes`` is
accepted too (see :func:`resolve_serializer`). Whatever a serializer raises reaches
the caller of ``send()`` as :class:`~kafkalite.errors.SerializationError` naming the
topic and whether the key or the value failed.

Example::

    from kafkalite import Producer
    from kafkalite.serialization import JsonSerializer, StringSerializer

    producer = Producer({"bootstrap.servers": "127.0.0.1:9092",
                         "key.serializer": StringSerializer(),
                         "value.serializer": JsonSerializer()})
    producer.send("orders", key="order-7", value={"qty": 3})

Built-in names work as setting values: ``"bytes"``, ``"str"`` (``"string"``),
``"int"`` (``"integer"``, Java's 4-byte big-endian), ``"long"`` (8 bytes), ``"float"``
(``"double"``, 8-byte IEEE 754 big-endian, as Java's DoubleSerializer), ``"json"``.
"""

from __future__ import annotations

import inspect
import json
import struct
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.plugins import instantiate

__all__ = [
    "BUILTIN_SERIALIZERS",
    "BytesSerializer",
    "DoubleSerializer",
    "FloatSerializer",
    "IntegerSerializer",
    "JsonSerializer",
    "LongSerializer",
    "Serializer",
    "StringSerializer",
    "resolve_serializer",
]

HeaderList = list[tuple[str, "bytes | None"]]
T = TypeVar("T")


@runtime_checkable
class Serializer(Protocol):
    """What the producer calls to turn keys and values into bytes.

    Example::

        class Upper(Serializer):
            def serialize(self, topic, data, headers=None):
                return None if data is None else data.upper().encode()

        with Producer({"bootstrap.servers": bootstrap, "value.serializer": Upper()}) as p:
            p.send("orders", "shouting").result(timeout=10)
    """

    def serialize(self, topic: str, data: Any, headers: HeaderList | None = None) -> bytes | None:
        """Return the bytes for ``data`` (None for null).

        Example::

            class Reversed(Serializer):
                def serialize(self, topic, data, headers=None):
                    return None if data is None else data[::-1]

            assert Reversed().serialize("orders", b"abc") == b"cba"
        """
        ...

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Receive the producer's settings (optional to implement).

        Example::

            class Prefixed(Serializer):
                def configure(self, config, is_key):
                    self.prefix = b"k:" if is_key else b"v:"
                def serialize(self, topic, data, headers=None):
                    return self.prefix + data

            with Producer({"bootstrap.servers": bootstrap, "key.serializer": Prefixed()}) as p:
                p.send("orders", b"v", key=b"1").result(timeout=10)      # the key is written as b"k:1"
        """
        ...

    def close(self) -> None:
        """Release resources (optional to implement).

        Example::

            class Noted(Serializer):
                def serialize(self, topic, data, headers=None):
                    return data
                def close(self):
                    print("producer closed")          # release files, connections ...

            Producer({"bootstrap.servers": bootstrap, "value.serializer": Noted()}).close()
        """
        ...


class ConfigurableBase:
    """The built-in serializers' and deserializers' base: ``configure()`` keeps
    ``is_key``, ``close()`` releases nothing, the repr is the class's name."""

    is_key: bool = False

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Called once by the client with its settings; ``is_key``: for keys, not values.

        Example::

            serializer = StringSerializer()
            serializer.configure({"bootstrap.servers": bootstrap}, is_key=True)   # what the producer calls
            assert serializer.serialize("orders", "k") == b"k"
        """
        self.is_key = is_key

    def close(self) -> None:
        """Called when the client closes: release what the serde holds.

        Example::

            serializer = StringSerializer()
            serializer.close()                            # built-ins hold nothing: a no-op
        """
        pass

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _Base(ConfigurableBase):
    """Convenience base: no-op configure/close; subclasses implement serialize()."""

    def serialize(self, topic: str, data: Any, headers: HeaderList | None = None) -> bytes | None:
        """``data`` as the bytes of a record's key or value (None stays None: a null).

        Example::

            StringSerializer().serialize("orders", "hello")   # b"hello"
        """
        # Abstract: each serializer implements it.
        raise NotImplementedError

    def __call__(self, topic: str, data: Any, headers: HeaderList | None = None) -> bytes | None:
        return self.serialize(topic, data, headers)


class BytesSerializer(_Base):
    """Passes bytes-like values through (bytes, bytearray, memoryview); None stays None.

    Example::

        with Producer({"bootstrap.servers": bootstrap, "value.serializer": BytesSerializer()}) as p:
            p.send("orders", bytearray(b"raw")).result(timeout=10)
    """

    def serialize(self, topic: str, data: Any, headers: HeaderList | None = None) -> bytes | None:
        if data is None or type(data) is bytes:
            return data
        if isinstance(data, (bytes, bytearray, memoryview)):
            return bytes(data)
        raise SerializationError(
            f"expected bytes, bytearray or memoryview, got {type(data).__name__}; "
            "set key.serializer / value.serializer (e.g. 'str' or 'json') for other types",
            topic=topic,
        )


class StringSerializer(_Base):
    """str -> bytes in ``encoding`` (UTF-8 by default).

    Example::

        assert StringSerializer().serialize("names", "René") == "René".encode()
    """

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, data: Any, headers: HeaderList | None = None) -> bytes | None:
        if data is None:
            return None
        if isinstance(data, str):
            return data.encode(self.encoding)
        raise SerializationError(f"expected str, got {type(data).__name__}", topic=topic)


class _StructSerializer(_Base):
    _struct: struct.Struct
    _kind: str

    def serialize(self, topic: str, data: Any, headers: HeaderList | None = None) -> bytes | None:
        if data is None:
            return None
        try:
            return self._struct.pack(data)
        except (struct.error, TypeError) as exc:
            raise SerializationError(f"cannot serialize {data!r} as {self._kind}: {exc}", topic=topic) from None


class IntegerSerializer(_StructSerializer):
    """int -> 4 bytes big-endian (Java's IntegerSerializer).

    Example::

        assert IntegerSerializer().serialize("counts", 256) == bytes([0, 0, 1, 0])
    """

    _struct = struct.Struct(">i")
    _kind = "a 32-bit integer"


class LongSerializer(_StructSerializer):
    """int -> 8 bytes big-endian (Java's LongSerializer).

    Example::

        assert LongSerializer().serialize("ids", 7) == bytes([0, 0, 0, 0, 0, 0, 0, 7])
    """

    _struct = struct.Struct(">q")
    _kind = "a 64-bit integer"


class DoubleSerializer(_StructSerializer):
    """float -> 8 bytes IEEE 754 big-endian (Java's DoubleSerializer).

    Example::

        assert DoubleSerializer().serialize("prices", 2.5) == bytes([0x40, 0x04, 0, 0, 0, 0, 0, 0])
    """

    _struct = struct.Struct(">d")
    _kind = "a double"


class FloatSerializer(_StructSerializer):
    """float -> 4 bytes IEEE 754 big-endian (Java's FloatSerializer).

    Example::

        assert FloatSerializer().serialize("ratios", 1.5) == bytes([0x3F, 0xC0, 0, 0])
    """

    _struct = struct.Struct(">f")
    _kind = "a float"


class JsonSerializer(_Base):
    """Any JSON-serializable object -> compact UTF-8 JSON; None stays None (a tombstone).

    ``dumps`` options (e.g. ``default=str``, ``sort_keys=True``) are passed to
    :func:`json.dumps`.

    Example::

        assert JsonSerializer().serialize("events", {"id": 1, "tags": ["a"]}) == b'{"id":1,"tags":["a"]}'
    """

    def __init__(self, **dumps_options: Any) -> None:
        self._options = {"separators": (",", ":"), "ensure_ascii": False, **dumps_options}

    def serialize(self, topic: str, data: Any, headers: HeaderList | None = None) -> bytes | None:
        if data is None:
            return None
        try:
            return json.dumps(data, **self._options).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"cannot serialize {type(data).__name__} as JSON: {exc}", topic=topic) from None


BUILTIN_SERIALIZERS: dict[str, Callable[[], Serializer]] = {
    "bytes": BytesSerializer,
    "bytearray": BytesSerializer,
    "str": StringSerializer,
    "string": StringSerializer,
    "int": IntegerSerializer,
    "integer": IntegerSerializer,
    "long": LongSerializer,
    "float": DoubleSerializer,
    "double": DoubleSerializer,
    "float32": FloatSerializer,
    "json": JsonSerializer,
}


class _CallableSerializer(_Base):
    """Adapts ``fn(data)`` or ``fn(topic, data[, headers])`` to the protocol."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self._arity = callable_arity(fn)

    def serialize(self, topic: str, data: Any, headers: HeaderList | None = None) -> bytes | None:
        # The application's function: the producer checks that it returned bytes or None.
        out: bytes | None
        if self._arity == 1:
            out = self.fn(data)
        elif self._arity == 2:
            out = self.fn(topic, data)
        else:
            out = self.fn(topic, data, headers)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.fn!r})"


def callable_arity(fn: Callable[..., Any]) -> int:
    """How many of (topic, data, headers) a serializer or deserializer function takes:
    1 (data), 2 (topic, data) or 3 (all, also for ``*args``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    required = [p for p in positional if p.default is p.empty]
    return max(1, min(3, len(required) if required else len(positional)))


def builtin(spec: str, setting: str, table: Mapping[str, Callable[[], T]], what: str) -> T:
    """The built-in ``what`` (serializer or deserializer) named ``spec`` in ``table``, made
    new; ConfigError naming ``setting`` and the known names when there is none."""
    factory = table.get(spec.strip().lower())
    if factory is None:
        raise ConfigError(f"setting '{setting}' names no built-in {what}: {spec!r} "
                          f"(known: {', '.join(sorted(table))})")
    return factory()


def resolve_serializer(spec: Any, setting: str) -> Serializer | None:
    """Turn a ``key.serializer``/``value.serializer`` setting into a Serializer.

    Accepts None (bytes only, the fast path: returns None), a built-in name, a
    Serializer object, a Serializer class (instantiated with no arguments), or a
    callable. Raises :class:`ConfigError` naming ``setting`` otherwise.

    Example::

        from kafkalite.serialization.base import resolve_serializer
        assert isinstance(resolve_serializer("string", "key.serializer"), StringSerializer)
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        return builtin(spec, setting, BUILTIN_SERIALIZERS, "serializer")
    if isinstance(spec, type):
        spec = instantiate(setting, spec)
    if hasattr(spec, "serialize") and callable(spec.serialize):
        return cast(Serializer, spec)  # a plugin is duck-typed: it has serialize()
    if callable(spec):
        return _CallableSerializer(spec)
    raise ConfigError(
        f"setting '{setting}' must be a serializer object, class, callable or built-in name; got {spec!r}"
    )
