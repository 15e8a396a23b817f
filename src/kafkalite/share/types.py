"""Value types of the share consumer (KIP-932): acknowledgement types, records with a
delivery count.

Example::

    from kafkalite import AcknowledgeType
    for record in share_consumer.poll(1.0):
        if record.delivery_count > 3:
            share_consumer.acknowledge(record, AcknowledgeType.REJECT)   # poison: archive it
"""

from __future__ import annotations

import enum
from operator import itemgetter as _itemgetter
from typing import TYPE_CHECKING

from kafkalite.errors import InvalidArgumentError
from kafkalite.types import ConsumerRecord, Header


class AcknowledgeType(enum.IntEnum):
    """How a share consumer settles a delivered record (the wire values of KIP-932).

    * ``ACCEPT``: processed; the record is never delivered again.
    * ``RELEASE``: not processed; the broker offers it again (to any member), with its
      delivery count raised, until ``share.delivery.count.limit`` is reached.
    * ``REJECT``: unprocessable; the record is archived and never delivered again.

    ``GAP`` (0) is what the client sends for acquired offsets that hold no record
    (transaction markers, compacted records); applications never use it.

    Example::

        assert AcknowledgeType.parse("release") is AcknowledgeType.RELEASE
    """

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3

    @classmethod
    def parse(cls, value: object) -> AcknowledgeType:
        """An AcknowledgeType from itself, its name (``"release"``) or wire value."""
        if isinstance(value, AcknowledgeType):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        elif isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                pass
        raise InvalidArgumentError(f"unknown acknowledge type {value!r} (use ACCEPT, RELEASE or REJECT)")


class ShareConsumerRecord(ConsumerRecord):
    """A record delivered by ``ShareConsumer.poll()``: a :class:`~kafkalite.ConsumerRecord`
    plus ``delivery_count``, how many times the broker has handed this record out
    (1 the first time; a released or timed-out record comes back with 2, 3, ...).

    Example::

        record = ShareConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", delivery_count=2)
        record.offset, record.delivery_count    # (42, 2)
    """

    __slots__ = ()

    # The tuple layout is a ConsumerRecord's with the delivery count right after the
    # leader epoch: ``(offset, timestamp, key, value, headers, timestamp_type, topic,
    # partition, leader_epoch, delivery_count[, serialized_key_size,
    # serialized_value_size])``, so the record decoder builds it in one call per batch
    # (the sizes are stored only once a deserializer replaced key or value).

    def __new__(cls, topic: str, partition: int, offset: int, timestamp: int, timestamp_type: int,
                key: object, value: object, headers: list[Header] | None = None,
                leader_epoch: int | None = None, serialized_key_size: int = -1,
                serialized_value_size: int = -1, delivery_count: int = 1) -> ShareConsumerRecord:
        fields: tuple[object, ...] = (offset, timestamp, key, value, headers if headers is not None else [],
                                      timestamp_type, topic, partition, leader_epoch, delivery_count)
        if serialized_key_size != -1 or serialized_value_size != -1:
            fields += (serialized_key_size, serialized_value_size)
        return tuple.__new__(cls, fields)

    if TYPE_CHECKING:
        @property
        def delivery_count(self) -> int: ...
    else:
        delivery_count = property(_itemgetter(9), doc="""How many times this record has been delivered (1 = first).

        Example::

            share_consumer.subscribe(["orders"])
            assert all(r.delivery_count == 1 for r in share_consumer.poll(timeout=10.0))   # first deliveries
        """)

    @property
    def serialized_key_size(self) -> int:
        """Size of the key as stored in Kafka (-1 for a null key).

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            assert consumer.poll(timeout=10.0)[0].serialized_key_size == 2     # b"k0"
        """
        if len(self) > 10:
            size: int = self[10]  # the layout's serialized key size
            return size
        key = self[2]
        return len(key) if key is not None else -1

    @property
    def serialized_value_size(self) -> int:
        """Size of the value as stored in Kafka (-1 for a null value).

        Example::

            record = ShareConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"value")
            assert record.serialized_value_size == 5
        """
        if len(self) > 11:
            size: int = self[11]  # the layout's serialized value size
            return size
        value = self[3]
        return len(value) if value is not None else -1

    def __repr__(self) -> str:
        return (f"ShareConsumerRecord(topic={self[6]!r}, partition={self[7]}, offset={self[0]}, "
                f"delivery_count={self[9]}, key={self[2]!r}, value={self[3]!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShareConsumerRecord):
            return NotImplemented
        return tuple.__eq__(self[:10], other[:10]) and (
            self.serialized_key_size == other.serialized_key_size
            and self.serialized_value_size == other.serialized_value_size
        )

    __hash__ = None

    def __reduce__(self) -> tuple[object, ...]:
        return (tuple.__new__, (ShareConsumerRecord, tuple(self)))
