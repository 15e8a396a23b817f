"""Arguments and results of operational calls: leader election, reassignments, log
dirs, producers and transactions."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kafkalite.errors import KafkaError
from kafkalite.types import TopicPartition


class ElectionType(enum.IntEnum):
    """Which leader ``elect_leaders()`` elects: the preferred replica, or any replica out of sync (unclean).

    Example::

        admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", 0)])
    """

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class PartitionReassignment:
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


@dataclass(frozen=True)
class ReplicaInfo:
    size: int
    offset_lag: int
    is_future: bool


@dataclass
class LogDirDescription:
    path: str
    error: KafkaError | None
    replicas: dict[TopicPartition, ReplicaInfo] = field(default_factory=dict)
    total_bytes: int | None = None
    usable_bytes: int | None = None


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    current_transaction_start_offset: int | None


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass
class TransactionDescription:
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    topic_partitions: set[TopicPartition]


@dataclass(frozen=True)
class AbortTransactionSpec:
    """A hanging transaction to abort on one partition (see ``describe_producers``)."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __post_init__(self) -> None:
        # describe_producers() reports an unknown coordinator epoch as None; sent as is it
        # would fail deep in the request encoder, so refuse it here, naming the field.
        if not isinstance(self.topic_partition, TopicPartition):
            raise TypeError(f"AbortTransactionSpec.topic_partition must be a TopicPartition, "
                            f"got {type(self.topic_partition).__name__}")
        for name in ("producer_id", "producer_epoch", "coordinator_epoch"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"AbortTransactionSpec.{name} must be an int, got {value!r} "
                                "(kafka-transactions abort uses 0 for an unknown coordinator epoch)")


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    producer_epoch: int
