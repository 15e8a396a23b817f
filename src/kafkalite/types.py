"""Value types shared by the producer, consumer and admin client.

They are small and immutable where the Java client's are (``TopicPartition``,
``OffsetAndMetadata``, ``RecordMetadata``), hashable where they are used as keys, and
picklable (Spark ships them to executors).

Example::

    tp = TopicPartition("orders", 0)
    offsets = {tp: OffsetAndMetadata(42, "checkpoint-7")}
"""

from __future__ import annotations

import enum
from operator import itemgetter as _itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

Header = tuple[str, "bytes | None"]
"""One record header: a string key and a bytes value (or None). Keys may repeat."""


class TimestampType(enum.IntEnum):
    """Where a record's timestamp comes from.

    Example::

        metadata = producer.send("orders", b"v").result(timeout=10)
        consumer.assign([TopicPartition("orders", metadata.partition)])
        consumer.seek(TopicPartition("orders", metadata.partition), metadata.offset)
        assert consumer.poll(timeout=10.0)[0].timestamp_type == TimestampType.CREATE_TIME
    """

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class TopicPartition(NamedTuple):
    """A partition of a topic.

    Example::

        tp = TopicPartition("orders", 0)
        consumer.assign([tp])
        assert tp.topic == "orders" and tp.partition == 0
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class OffsetAndMetadata(NamedTuple):
    """A committed position: the offset of the NEXT record to read, plus optional metadata.

    ``leader_epoch`` lets a consumer detect log truncation after a leader change (KIP-320).

    Example::

        tp = TopicPartition("orders", 0)
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(1, metadata="processed by worker 3")})
        assert consumer.committed([tp])[tp].metadata == "processed by worker 3"
    """

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class RecordMetadata(NamedTuple):
    """Where a sent record was written. ``offset`` is -1 with acks=0 (nobody told us).

    Example::

        metadata = producer.send("orders", b"v", key=b"k").result(timeout=10)
        print(metadata.topic, metadata.partition, metadata.offset, metadata.timestamp)
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int = -1
    serialized_value_size: int = -1

    @property
    def topic_partition(self) -> TopicPartition:
        """The record's ``TopicPartition(topic, partition)``.

        Example::

            metadata = producer.send("orders", b"v", partition=1).result(timeout=10)
            assert metadata.topic_partition == TopicPartition("orders", 1)
        """
        return TopicPartition(self.topic, self.partition)


class ConsumerRecord(tuple[Any, ...]):
    """One record returned by ``Consumer.poll()``.

    ``key`` and ``value`` are None for a null key/value (a tombstone), distinct from b"".
    ``headers`` is a list of ``(str, bytes | None)`` in wire order. ``timestamp_type`` is
    0 (create time), 1 (log-append time) or -1 (none). ``leader_epoch`` is the epoch of
    the leader that wrote the batch, or None.

    It is a tuple subclass on purpose: the record decoder (C or pure Python) builds it
    in one call per batch with no second object per record, which is what lets poll()
    keep up with the broker. Fields are read through attributes; the tuple layout
    ``(offset, timestamp, key, value, headers, timestamp_type, topic, partition,
    leader_epoch[, serialized_key_size, serialized_value_size])`` is an implementation
    detail. Records compare equal field by field, and pickle (Spark ships them).

    Example::

        record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v")
        record.topic, record.partition, record.offset, record.value   # ('orders', 0, 42, b'v')
    """

    __slots__ = ()

    def __new__(cls, topic: str, partition: int, offset: int, timestamp: int, timestamp_type: int,
                key: object, value: object, headers: list[Header] | None = None,
                leader_epoch: int | None = None, serialized_key_size: int = -1,
                serialized_value_size: int = -1) -> ConsumerRecord:
        fields: tuple[object, ...] = (offset, timestamp, key, value, headers if headers is not None else [],
                  timestamp_type, topic, partition, leader_epoch)
        if serialized_key_size != -1 or serialized_value_size != -1:
            fields += (serialized_key_size, serialized_value_size)
        return tuple.__new__(cls, fields)

    @classmethod
    def _make(cls, fields: tuple[object, ...]) -> ConsumerRecord:
        """Build from the internal tuple layout (used by the consumer's deserializing path)."""
        return tuple.__new__(cls, fields)

    if TYPE_CHECKING:
        # What the fields below are, for the type checker (at run time each is a C-level
        # itemgetter: the fastest attribute read). Key and value are bytes, or whatever
        # the application's deserializer made of them.
        @property
        def offset(self) -> int: ...
        @property
        def timestamp(self) -> int: ...
        @property
        def key(self) -> Any: ...
        @property
        def value(self) -> Any: ...
        @property
        def headers(self) -> list[Header]: ...
        @property
        def timestamp_type(self) -> int: ...
        @property
        def topic(self) -> str: ...
        @property
        def partition(self) -> int: ...
        @property
        def leader_epoch(self) -> int | None: ...
    else:
        offset = property(_itemgetter(0), doc="""The record's offset in its partition.

        Example::

            record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", [("trace", b"abc")], 5)
            assert record.offset == 42
        """)
        timestamp = property(_itemgetter(1), doc="""Milliseconds since the epoch (see timestamp_type).

        Example::

            record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", [("trace", b"abc")], 5)
            assert record.timestamp == 1700000000000
        """)
        key = property(_itemgetter(2), doc="""The key (bytes, a deserialized object, or None).

        Example::

            record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", [("trace", b"abc")], 5)
            assert record.key == b"k"
        """)
        value = property(_itemgetter(3), doc="""The value (bytes, a deserialized object, or None).

        Example::

            record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", [("trace", b"abc")], 5)
            assert record.value == b"v"
        """)
        headers = property(_itemgetter(4), doc="""List of (str, bytes | None) in wire order.

        Example::

            record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", [("trace", b"abc")], 5)
            assert record.headers == [("trace", b"abc")]
        """)
        timestamp_type = property(_itemgetter(5), doc="""0 create time, 1 log-append time, -1 none.

        Example::

            record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", [("trace", b"abc")], 5)
            assert record.timestamp_type == TimestampType.CREATE_TIME
        """)
        topic = property(_itemgetter(6), doc="""The topic.

        Example::

            record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", [("trace", b"abc")], 5)
            assert record.topic == "orders"
        """)
        partition = property(_itemgetter(7), doc="""The partition.

        Example::

            record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", [("trace", b"abc")], 5)
            assert record.partition == 0
        """)
        leader_epoch = property(_itemgetter(8), doc="""Leader epoch of the batch, or None.

        Example::

            record = ConsumerRecord("orders", 0, 42, 1700000000000, 0, b"k", b"v", [("trace", b"abc")], 5)
            assert record.leader_epoch == 5
        """)

    @property
    def serialized_key_size(self) -> int:
        """Size of the key as stored in Kafka (-1 for a null key).

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            assert consumer.poll(timeout=10.0)[0].serialized_key_size == 2     # b"k0"
        """
        if len(self) > 9:
            size: int = self[9]  # the layout's serialized key size
            return size
        key = self[2]
        return len(key) if key is not None else -1

    @property
    def serialized_value_size(self) -> int:
        """Size of the value as stored in Kafka (-1 for a null value).

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            assert consumer.poll(timeout=10.0)[0].serialized_value_size == 2   # b"v0"
        """
        if len(self) > 10:
            size: int = self[10]  # the layout's serialized value size
            return size
        value = self[3]
        return len(value) if value is not None else -1

    @property
    def topic_partition(self) -> TopicPartition:
        """The record's ``TopicPartition(topic, partition)``.

        Example::

            consumer.assign([TopicPartition("orders", 2)])
            assert consumer.poll(timeout=10.0)[0].topic_partition == TopicPartition("orders", 2)
        """
        """The record's ``TopicPartition(topic, partition)``."""
        return TopicPartition(self[6], self[7])

    def __repr__(self) -> str:
        return (f"ConsumerRecord(topic={self[6]!r}, partition={self[7]}, offset={self[0]}, "
                f"timestamp={self[1]}, key={self[2]!r}, value={self[3]!r}, headers={self[4]!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConsumerRecord):
            return NotImplemented
        return tuple.__eq__(self[:9], other[:9]) and (
            self.serialized_key_size == other.serialized_key_size
            and self.serialized_value_size == other.serialized_value_size
        )

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]  # compared field by field, like a list: unhashable

    def __reduce__(self) -> tuple[object, ...]:
        return (tuple.__new__, (ConsumerRecord, tuple(self)))


class ConsumerGroupMetadata(NamedTuple):
    """A consumer's group identity, passed to ``Producer.send_offsets_to_transaction``
    so the group coordinator can fence zombie members (KIP-447).

    Example::

        consumer.subscribe(["orders"])
        consumer.poll(timeout=10.0)
        meta = consumer.group_metadata()
        print(meta.group_id, meta.generation_id, meta.member_id)
    """

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class IsolationLevel(enum.IntEnum):
    """What a consumer reads: every record, or only committed ones (``isolation.level``).

    Example::

        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "committed-only",
                           "isolation.level": "read_committed"})
        assert reader.config["isolation.level"] == "read_committed"
        assert IsolationLevel.READ_COMMITTED == 1                   # the wire value
        reader.close()
    """

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1
