"""Arguments and results of operational calls: leader election, reassignments, log
dirs, producers and transactions."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kafkalite.errors import InvalidArgumentTypeError, KafkaError
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
    """A running reassignment of one partition: the replicas, and those being added and removed.

    Example::

        for tp, moving in admin.list_partition_reassignments().items():    # none on this broker
            print(tp, moving.replicas, moving.adding_replicas, moving.removing_replicas)
    """

    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


@dataclass(frozen=True)
class ReplicaInfo:
    """One replica in a log directory: its size in bytes, its lag, and whether it is a future replica.

    Example::

        dirs = admin.describe_log_dirs().all()
        for log_dir in next(iter(dirs.values())).values():
            info = log_dir.replicas[TopicPartition("orders", 0)]
            print(info.size, info.offset_lag, info.is_future)
    """

    size: int
    offset_lag: int
    is_future: bool


@dataclass
class LogDirDescription:
    """One log directory of a broker: path, error, replicas and (KIP-827) its total and usable bytes.

    Example::

        for broker, dirs in admin.describe_log_dirs().all().items():
            for path, log_dir in dirs.items():
                print(broker, path, log_dir.error, log_dir.total_bytes, log_dir.usable_bytes)
    """

    path: str
    error: KafkaError | None
    replicas: dict[TopicPartition, ReplicaInfo] = field(default_factory=dict)
    total_bytes: int | None = None
    usable_bytes: int | None = None


@dataclass(frozen=True)
class ProducerState:
    """An active idempotent or transactional producer of a partition, as ``describe_producers`` reports it.

    Example::

        producer.send("orders", b"v", partition=0).result(timeout=10)
        tp = TopicPartition("orders", 0)
        for state in admin.describe_producers([tp]).all()[tp]:
            print(state.producer_id, state.producer_epoch, state.last_sequence)
    """

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    current_transaction_start_offset: int | None


@dataclass(frozen=True)
class TransactionListing:
    """A transaction as ``list_transactions`` reports it: transactional id, producer id, state.

    Example::

        tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-listing"})
        tx.init_transactions()
        print([(t.transactional_id, t.state) for t in admin.list_transactions()])
        tx.close()
    """

    transactional_id: str
    producer_id: int
    state: str


@dataclass
class TransactionDescription:
    """A transactional id as ``describe_transactions`` reports it: state, producer, timeout and partitions.

    Example::

        tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-description"})
        tx.init_transactions()
        with tx.transaction():
            tx.send("orders", b"v", partition=0).result(timeout=10)
            d = admin.describe_transactions(["docs-description"])["docs-description"].result()
            assert d.state == "Ongoing" and d.topic_partitions == {TopicPartition("orders", 0)}
        tx.close()
    """

    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    topic_partitions: set[TopicPartition]


@dataclass(frozen=True)
class AbortTransactionSpec:
    """A hanging transaction to abort on one partition (see ``describe_producers``).

    Example::

        spec = AbortTransactionSpec(TopicPartition("orders", 0), producer_id=4000, producer_epoch=0, coordinator_epoch=0)
        try:
            AbortTransactionSpec(TopicPartition("orders", 0), 4000, 0, None)
        except TypeError as exc:                       # InvalidArgumentTypeError, a TypeError
            print(exc)                                 # AbortTransactionSpec.coordinator_epoch must be an int ...
    """

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __post_init__(self) -> None:
        # describe_producers() reports an unknown coordinator epoch as None; sent as is it
        # would fail deep in the request encoder, so refuse it here, naming the field.
        if not isinstance(self.topic_partition, TopicPartition):
            raise InvalidArgumentTypeError(f"AbortTransactionSpec.topic_partition must be a TopicPartition, "
                            f"got {type(self.topic_partition).__name__}")
        for name in ("producer_id", "producer_epoch", "coordinator_epoch"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidArgumentTypeError(f"AbortTransactionSpec.{name} must be an int, got {value!r} "
                                "(kafka-transactions abort uses 0 for an unknown coordinator epoch)")


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    """A producer id and its epoch, as ``fence_producers`` reports them for each fenced transactional id.

    Example::

        tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-fence-me"})
        tx.init_transactions()
        fenced = admin.fence_producers(["docs-fence-me"]).all()["docs-fence-me"]
        print(fenced.producer_id, fenced.producer_epoch)
        tx.close()
    """

    producer_id: int
    producer_epoch: int
