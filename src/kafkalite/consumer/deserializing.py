"""``key.deserializer`` / ``value.deserializer`` applied to the records poll() returns.

The consumer core hands out raw records (bytes); when either setting is given,
:class:`RecordDeserializer` turns them into what the application asked for, record by
record, as Java's ``Fetcher`` does. Settings take built-in names (``"str"``,
``"json"`` ...), classes, objects and plain callables, as the producer's serializers do
(:func:`~kafkalite.serialization.deserializers.resolve_deserializer`), and a
deserializer's ``configure(config, is_key)`` is called once, like Java's.

A record that cannot be deserialized raises :class:`~kafkalite.errors.SerializationError`
naming its topic, partition and offset and how to skip it (``seek()`` past it); a
``SerializationError`` of the deserializer's own (an unknown schema id) keeps its type.

Example::

    deserializer = RecordDeserializer(cfg)
    if deserializer.active:
        records = deserializer.apply(records)
"""

from __future__ import annotations

from kafkalite.config import Config
from kafkalite.consumer.records import ConsumerRecords
from kafkalite.errors import SerializationError
from kafkalite.serialization.deserializers import Deserializer, resolve_deserializer
from kafkalite.types import ConsumerRecord

__all__ = ["RecordDeserializer"]


class RecordDeserializer:
    """The consumer's key and value deserializers (None: bytes as they are)."""

    def __init__(self, cfg: Config) -> None:
        self.key: Deserializer | None = resolve_deserializer(cfg["key.deserializer"], "key.deserializer")
        self.value: Deserializer | None = resolve_deserializer(cfg["value.deserializer"], "value.deserializer")
        for deserializer, is_key in ((self.key, True), (self.value, False)):
            configure = getattr(deserializer, "configure", None)
            if callable(configure):
                configure(cfg, is_key)

    @property
    def active(self) -> bool:
        """Whether either setting was given (else records pass through untouched)."""
        return self.key is not None or self.value is not None

    def apply(self, records: ConsumerRecords) -> ConsumerRecords:
        """Deserialized copies of ``records`` (same partition grouping)."""
        kd = self.key.deserialize if self.key is not None else None
        vd = self.value.deserialize if self.value is not None else None
        out = ConsumerRecords()
        out._ranges = records._ranges
        for r in records:
            key, value = r[2], r[3]
            try:
                new_key = kd(r[6], key, r[4]) if kd is not None and key is not None else key
                new_value = vd(r[6], value, r[4]) if vd is not None and value is not None else value
            except SerializationError as exc:  # keep its type (schema id unknown, bad bytes ...)
                exc.message = (f"cannot deserialize the record at offset {r[0]} of {r[6]}-{r[7]}: {exc.message}; "
                               f"seek() past offset {r[0]} to skip it")
                raise exc.with_context(topic=r[6], partition=r[7]) from None
            except Exception as exc:
                raise SerializationError(
                    f"cannot deserialize the record at offset {r[0]} of {r[6]}-{r[7]}: {exc}; "
                    f"seek() past offset {r[0]} to skip it", topic=r[6], partition=r[7]) from exc
            out.append(ConsumerRecord._make((r[0], r[1], new_key, new_value, r[4], r[5], r[6], r[7], r[8],
                                             len(key) if key is not None else -1,
                                             len(value) if value is not None else -1)))
        return out
