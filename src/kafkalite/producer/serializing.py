"""Turning what ``send()`` was given into a record's bytes: serializers and headers.

:class:`RecordSerializer` holds ``key.serializer`` and ``value.serializer`` (resolved
and configured once) and applies them in the caller's thread before the record is
partitioned, so a failure raises from ``send()`` itself with the topic named and
nothing is queued. Without a serializer a key or value must be bytes (or None);
bytearray and memoryview are copied into bytes. Headers become an ordered list of
``(str, bytes | None)``; names may repeat.

Example::

    serializer = RecordSerializer.from_config(cfg)     # value.serializer=str
    serializer.serialize("orders", "héllo", None, is_key=False)   # b'h\\xc3\\xa9llo'
    serializer.check_headers({"trace": "1"}, "orders")           # [('trace', b'1')]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalite.config import Config
from kafkalite.errors import SerializationError
from kafkalite.serialization.base import Serializer, resolve_serializer

__all__ = ["RecordSerializer"]


class RecordSerializer:
    """The producer's key and value serializers and header checks (see the module doc)."""

    def __init__(self, key_serializer: Serializer | None, value_serializer: Serializer | None) -> None:
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        #: No serializer at all: send() hands keys and values to the append path as they are.
        self.raw = key_serializer is None and value_serializer is None

    @classmethod
    def from_config(cls, cfg: Config) -> RecordSerializer:
        """``key.serializer`` / ``value.serializer`` resolved; ``configure(cfg, is_key)`` called on them."""
        key_serializer = resolve_serializer(cfg["key.serializer"], "key.serializer")
        value_serializer = resolve_serializer(cfg["value.serializer"], "value.serializer")
        for serializer, is_key in ((key_serializer, True), (value_serializer, False)):
            configure = getattr(serializer, "configure", None)
            if callable(configure):
                configure(cfg, is_key)
        return cls(key_serializer, value_serializer)

    def serialize(self, topic: str, data: Any, headers: Any, is_key: bool) -> bytes | None:
        """The key's (``is_key``) or value's bytes; SerializationError naming the topic."""
        serializer = self.key_serializer if is_key else self.value_serializer
        what = "key" if is_key else "value"
        if serializer is None:
            if data is None or type(data) is bytes:
                return data
            if isinstance(data, (bytearray, memoryview)):
                return bytes(data)
            raise SerializationError(
                f"the {what} must be bytes (or None) without a {what}.serializer; got {type(data).__name__} "
                f"(set {what}.serializer, e.g. 'str' or 'json')", topic=topic)
        try:
            out = serializer.serialize(topic, data, headers)
        except SerializationError as exc:
            exc.message = f"{what} serializer failed: {exc.message}"
            raise exc.with_context(topic=topic) from None
        except Exception as exc:
            raise SerializationError(f"{what} serializer {serializer!r} failed: {exc!r}", topic=topic) from exc
        if out is not None and type(out) is not bytes:
            if isinstance(out, (bytearray, memoryview)):
                return bytes(out)
            raise SerializationError(
                f"{what} serializer {serializer!r} returned {type(out).__name__}, not bytes", topic=topic)
        return out

    @staticmethod
    def check_headers(headers: Any, topic: str) -> list[tuple[str, bytes | None]]:
        """Headers as an ordered list of (str, bytes | None); duplicates kept."""
        if type(headers) is not list and isinstance(headers, Mapping):  # (a list: no ABC check per send)
            headers = list(headers.items())
        out = []
        try:
            for name, value in headers:
                if not isinstance(name, str):
                    raise SerializationError(f"header names must be str, got {type(name).__name__}", topic=topic)
                if value is not None and type(value) is not bytes:
                    if isinstance(value, (bytearray, memoryview)):
                        value = bytes(value)
                    elif isinstance(value, str):
                        value = value.encode("utf-8")
                    else:
                        raise SerializationError(
                            f"header {name!r} value must be bytes, str or None, got {type(value).__name__}",
                            topic=topic)
                out.append((name, value))
        except (TypeError, ValueError) as exc:
            if isinstance(exc, SerializationError):
                raise
            raise SerializationError(f"headers must be a list of (str, bytes) pairs: {exc}", topic=topic) from None
        return out
