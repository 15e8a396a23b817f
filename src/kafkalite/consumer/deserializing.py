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

from kafkalite.consumer.records import ConsumerRecords, grouped_like
from kafkalite.errors import SerializationError
from kafkalite.serialization.deserializers import KeyValueDeserializers
from kafkalite.types import ConsumerRecord

__all__ = ["RecordDeserializer"]


class RecordDeserializer(KeyValueDeserializers):
    """The consumer's key and value deserializers (None: bytes as they are)."""

    def apply(self, records: ConsumerRecords) -> ConsumerRecords:
        """Deserialized copies of ``records`` (same partition grouping)."""
        out = grouped_like(records)
        for r in records:
            key, value = r[2], r[3]
            try:
                new_key, new_value = self.key_and_value(r[6], key, value, r[4])
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
