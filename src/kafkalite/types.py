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
from typing import NamedTuple

Header = tuple[str, "bytes | None"]
"""One record header: a string key and a bytes value (or None). Keys may repeat."""


class TimestampType(enum.IntEnum):
    """Where a record's timestamp comes from."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class TopicPartition(NamedTuple):
    """A partition of a topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class OffsetAndMetadata(NamedTuple):
    """A committed position: the offset of the NEXT record to read, plus optional metadata.

    ``leader_epoch`` lets a consumer detect log truncation after a leader change (KIP-320).
    """

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class RecordMetadata(NamedTuple):
    """Where a sent record was written. ``offset`` is -1 with acks=0 (nobody told us)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int = -1
    serialized_value_size: int = -1

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class ConsumerRecord:
    """One record returned by ``Consumer.poll()``.

    ``key`` and ``value`` are None for a null key/value (a tombstone), distinct from b"".
    """

    __slots__ = (
        "headers", "key", "leader_epoch", "offset", "partition", "serialized_key_size",
        "serialized_value_size", "timestamp", "timestamp_type", "topic", "value",
    )

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int, timestamp_type: int,
                 key: object, value: object, headers: list[Header] | None = None,
                 leader_epoch: int | None = None, serialized_key_size: int = -1,
                 serialized_value_size: int = -1) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = headers if headers is not None else []
        self.leader_epoch = leader_epoch
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def __repr__(self) -> str:
        return (f"ConsumerRecord(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, "
                f"timestamp={self.timestamp}, key={self.key!r}, value={self.value!r}, headers={self.headers!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConsumerRecord):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (ConsumerRecord, tuple(getattr(self, s) for s in (
            "topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers",
            "leader_epoch", "serialized_key_size", "serialized_value_size")))


class ConsumerGroupMetadata(NamedTuple):
    """A consumer's group identity, passed to ``Producer.send_offsets_to_transaction``
    so the group coordinator can fence zombie members (KIP-447)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class IsolationLevel(enum.IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1
