"""Arguments and results of the admin client: topics, configs, offsets, cluster.

Groups, ACLs, SCRAM, quotas and operations have their types in
:mod:`kafkalite.admin.group_types`, :mod:`kafkalite.admin.security_types` and
:mod:`kafkalite.admin.ops_types`; every public name is also importable from
:mod:`kafkalite.admin`.

Example::

    from kafkalite.admin import NewTopic, ConfigResource, AlterConfigOp, OffsetSpec
    NewTopic("orders", num_partitions=6, replication_factor=1, config={"retention.ms": "60000"})
    ConfigResource("topic", "orders")                 # or ConfigResource(ResourceType.TOPIC, ...)
    AlterConfigOp("retention.ms", "60000")            # SET; AlterConfigOp.delete("retention.ms")
    OffsetSpec.latest(), OffsetSpec.for_timestamp(1700000000000)
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafkalite.errors import ConfigError

# ------------------------------------------------------------------ acl operations
# Bit i of an "authorized operations" field is AclOperation code i (KIP-430).
_NOT_REQUESTED = -(2**31)


class AclOperation(enum.IntEnum):
    """An operation an ACL allows or denies (Kafka's ``AclOperation``, same codes).

    Example::

        entry = AccessControlEntry("User:alice", "*", AclOperation.READ, "allow")
        assert entry.operation is AclOperation.READ
    """

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


def decode_authorized_operations(bits: int | None) -> frozenset[AclOperation] | None:
    """The operations set in a KIP-430 bit field; None when the broker did not send them.

    Example::

        from kafkalite.admin.types import decode_authorized_operations
        assert decode_authorized_operations(1 << AclOperation.READ) == frozenset({AclOperation.READ})
    """
    if bits is None or bits == _NOT_REQUESTED:
        return None
    return frozenset(op for op in AclOperation if op > AclOperation.ANY and bits & (1 << op))


# ------------------------------------------------------------------ topics


@dataclass
class NewTopic:
    """A topic to create.

    Give ``num_partitions`` and ``replication_factor`` (-1 for the broker's defaults),
    or ``replica_assignment`` ({partition: [broker ids]}) instead of both.

    Example::

        topic = NewTopic("audit", num_partitions=3, replication_factor=1, config={"retention.ms": "86400000"})
        admin.create_topics([topic]).all()
    """

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: Mapping[int, Sequence[int]] | None = None
    config: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.replica_assignment and (self.num_partitions != -1 or self.replication_factor != -1):
            raise ConfigError(
                f"NewTopic {self.name!r}: give replica_assignment or num_partitions/replication_factor, not both"
            )


@dataclass
class NewPartitions:
    """Grow a topic to ``total_count`` partitions (optionally placing the new ones).

    Example::

        admin.create_topics([NewTopic("clicks", num_partitions=1, replication_factor=1)]).all()
        admin.create_partitions({"clicks": NewPartitions(total_count=3)}).all()
    """

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True)
class Node:
    """A broker: its id, address, rack and (KIP-1073) whether it is fenced.

    Example::

        node = admin.describe_cluster().nodes[0]
        print(node.id, node.host, node.port, node.rack)
    """

    id: int
    host: str
    port: int
    rack: str | None = None
    is_fenced: bool = False

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (id: {self.id}{f' rack: {self.rack}' if self.rack else ''})"


@dataclass
class TopicPartitionInfo:
    """One partition of a described topic: leader, replicas, in-sync replicas and (KIP-966) eligible leader replicas.

    Example::

        info = admin.describe_topics(["orders"])["orders"].result().partitions[0]
        print(info.partition, info.leader, info.replicas, info.isr)
    """

    partition: int
    leader: int | None  # None: no leader (offline)
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int] = field(default_factory=list)
    leader_epoch: int = -1
    #: Eligible leader replicas (KIP-966): replicas outside the ISR that may still
    #: become leader without data loss. None when unknown (described through the
    #: Metadata request, or a broker before DescribeTopicPartitions).
    elr: list[int] | None = None
    #: The ELR members last known before the partition went leaderless (KIP-966).
    last_known_elr: list[int] | None = None

    @property
    def under_replicated(self) -> bool:
        """True when fewer replicas are in sync than the partition has.

        Example::

            partitions = admin.describe_topics(["orders"])["orders"].result().partitions
            assert not any(p.under_replicated for p in partitions)
        """
        return len(self.isr) < len(self.replicas)


@dataclass
class TopicDescription:
    """A topic as ``describe_topics`` reports it: id, internal flag, partitions, authorized operations.

    Example::

        description = admin.describe_topics(["orders"])["orders"].result()
        assert description.name == "orders" and len(description.partitions) == 3
    """

    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: list[TopicPartitionInfo]
    authorized_operations: frozenset[AclOperation] | None = None


@dataclass
class TopicListing:
    """A topic as ``list_topics`` reports it: name, id and whether it is internal.

    Example::

        listing = admin.list_topics()["orders"]
        assert listing.name == "orders" and not listing.is_internal
    """

    name: str
    topic_id: uuid.UUID
    is_internal: bool


@dataclass
class CreateTopicResult:
    """What the controller created (or would create, with validate_only).

    Example::

        created = admin.create_topics([NewTopic("metrics", num_partitions=2, replication_factor=1)]).all()["metrics"]
        assert created.num_partitions == 2 and created.topic_id is not None
    """

    name: str
    topic_id: uuid.UUID | None
    num_partitions: int
    replication_factor: int
    config: dict[str, ConfigEntry] = field(default_factory=dict)


@dataclass
class ClusterDescription:
    """The cluster as ``describe_cluster`` reports it: id, controller and brokers.

    Example::

        cluster = admin.describe_cluster()
        assert cluster.cluster_id and len(cluster.nodes) == 1
    """

    cluster_id: str | None
    controller: Node | None
    nodes: list[Node]
    authorized_operations: frozenset[AclOperation] | None = None


@dataclass
class FeatureMetadata:
    """Feature levels (KIP-584): the finalized level of each feature and the range the brokers support.

    Example::

        features = admin.describe_features()
        low, high = features.supported["metadata.version"]
        assert low <= features.finalized["metadata.version"] <= high
    """

    finalized: dict[str, int]
    supported: dict[str, tuple[int, int]]
    finalized_epoch: int = -1


@dataclass
class FeatureUpdate:
    """``upgrade_type``: 'upgrade', 'safe_downgrade' or 'unsafe_downgrade'.

    Example::

        level = admin.describe_features().finalized["transaction.version"]
        admin.update_features({"transaction.version": FeatureUpdate(level)}, validate_only=True).all()
    """

    max_version_level: int
    upgrade_type: str = "upgrade"


# ------------------------------------------------------------------ configs


class ResourceType(enum.IntEnum):
    """ConfigResource types (wire codes of DescribeConfigs / IncrementalAlterConfigs).

    Example::

        assert ConfigResource("topic", "orders").type is ResourceType.TOPIC
    """

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


_RESOURCE_NAMES = {
    "topic": ResourceType.TOPIC, "topics": ResourceType.TOPIC,
    "broker": ResourceType.BROKER, "brokers": ResourceType.BROKER,
    "broker_logger": ResourceType.BROKER_LOGGER, "broker-loggers": ResourceType.BROKER_LOGGER,
    "broker-logger": ResourceType.BROKER_LOGGER,
    "client_metrics": ResourceType.CLIENT_METRICS, "client-metrics": ResourceType.CLIENT_METRICS,
    "group": ResourceType.GROUP, "groups": ResourceType.GROUP,
}


def resource_type(value: ResourceType | str | int) -> ResourceType | int:
    """Parse a resource type name ('topic', 'brokers', 'client-metrics', ...).

    Unknown names raise :class:`ConfigError`; unknown integers pass through so that the
    broker answers for them (a per-item INVALID_REQUEST).

    Example::

        from kafkalite.admin.types import resource_type
        assert resource_type("client-metrics") is ResourceType.CLIENT_METRICS
    """
    if isinstance(value, ResourceType):
        return value
    if isinstance(value, int):
        try:
            return ResourceType(value)
        except ValueError:
            return value
    key = str(value).strip().lower()
    if key in _RESOURCE_NAMES:
        return _RESOURCE_NAMES[key]
    if key.upper() in ResourceType.__members__:
        return ResourceType[key.upper()]
    raise ConfigError(
        f"unknown config resource type {value!r} (expected topic, broker, broker-logger, group or client-metrics)"
    )


@dataclass(frozen=True, init=False)
class ConfigResource:
    """A thing that has configs: ``ConfigResource("topic", "orders")``.

    The broker resource's name is the broker id as a string; ``""`` is the cluster-wide
    default. ``type`` accepts a :class:`ResourceType`, its name, or a wire code.

    Example::

        broker = ConfigResource("broker", str(admin.describe_cluster().nodes[0].id))
        configs = admin.describe_configs([broker]).all()[broker]
        print(configs["num.io.threads"].value)
    """

    type: ResourceType | int  # a code this client does not know stays an int
    name: str

    def __init__(self, type: ResourceType | str | int, name: str) -> None:
        object.__setattr__(self, "type", resource_type(type))
        object.__setattr__(self, "name", str(name))

    def __str__(self) -> str:
        kind = self.type.name.lower() if isinstance(self.type, ResourceType) else f"type-{self.type}"
        if self.type == ResourceType.BROKER and self.name == "":
            return "broker default"
        return f"{kind} '{self.name}'"


class ConfigSource(enum.IntEnum):
    """Where a config's value comes from (topic, broker, default ...), as the broker reports it.

    Example::

        orders = ConfigResource("topic", "orders")
        entry = admin.describe_configs([orders]).all()[orders]["cleanup.policy"]
        assert entry.source in (ConfigSource.DEFAULT_CONFIG, ConfigSource.STATIC_BROKER_CONFIG)
    """

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8

    @classmethod
    def of(cls, code: int) -> ConfigSource:
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class ConfigType(enum.IntEnum):
    """A config's value type, as reported with ``include_documentation=True`` (KIP-569).

    Example::

        orders = ConfigResource("topic", "orders")
        entry = admin.describe_configs([orders], include_documentation=True).all()[orders]["retention.ms"]
        assert entry.type is ConfigType.LONG
    """

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


@dataclass(frozen=True)
class ConfigSynonym:
    """A config's value at one level of precedence (topic, dynamic broker, static broker, default).

    Example::

        orders = ConfigResource("topic", "orders")
        entry = admin.describe_configs([orders], include_synonyms=True).all()[orders]["retention.ms"]
        for synonym in entry.synonyms:
            print(synonym.name, synonym.value, synonym.source.name)
    """

    name: str
    value: str | None
    source: ConfigSource


@dataclass
class ConfigEntry:
    """One config of a resource, as described by the broker.

    ``value`` is None for sensitive configs (the broker never sends those back).
    ``synonyms`` lists where the value could come from, highest precedence first.

    Example::

        orders = ConfigResource("topic", "orders")
        entry = admin.describe_configs([orders]).all()[orders]["min.insync.replicas"]
        print(entry.name, entry.value, entry.source.name, entry.is_read_only)
    """

    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    is_sensitive: bool = False
    is_read_only: bool = False
    synonyms: list[ConfigSynonym] = field(default_factory=list)
    type: ConfigType = ConfigType.UNKNOWN
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        """True when the value is the default (``source`` is ``DEFAULT_CONFIG``).

        Example::

            orders = ConfigResource("topic", "orders")
            assert admin.describe_configs([orders]).all()[orders]["compression.type"].is_default
        """
        return self.source == ConfigSource.DEFAULT_CONFIG


class AlterConfigOpType(enum.IntEnum):
    """The operations of ``incremental_alter_configs`` (KIP-339).

    Example::

        assert AlterConfigOp.append("cleanup.policy", "compact").op is AlterConfigOpType.APPEND
    """

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class AlterConfigOp:
    """One incremental config change: SET (default), DELETE, APPEND or SUBTRACT.

    APPEND and SUBTRACT work on list configs (``cleanup.policy``, ...) and take one or
    more comma-separated elements.

    Example::

        orders = ConfigResource("topic", "orders")
        admin.incremental_alter_configs({orders: [AlterConfigOp.set("retention.ms", "7200000"),
                                                  AlterConfigOp.delete("segment.ms")]}).all()
    """

    name: str
    value: str | None = None
    op: AlterConfigOpType = AlterConfigOpType.SET

    @classmethod
    def set(cls, name: str, value: str) -> AlterConfigOp:
        """Set the config to ``value`` (``SET``).

        Example::

            AlterConfigOp.set("retention.ms", "86400000")
        """
        return cls(name, str(value), AlterConfigOpType.SET)

    @classmethod
    def delete(cls, name: str) -> AlterConfigOp:
        """Remove the config, back to its default (``DELETE``).

        Example::

            AlterConfigOp.delete("retention.ms")
        """
        return cls(name, None, AlterConfigOpType.DELETE)

    @classmethod
    def append(cls, name: str, value: str) -> AlterConfigOp:
        """Append ``value`` to a list config (``APPEND``).

        Example::

            AlterConfigOp.append("cleanup.policy", "compact")
        """
        return cls(name, str(value), AlterConfigOpType.APPEND)

    @classmethod
    def subtract(cls, name: str, value: str) -> AlterConfigOp:
        """Remove ``value`` from a list config (``SUBTRACT``).

        Example::

            AlterConfigOp.subtract("cleanup.policy", "delete")
        """
        return cls(name, str(value), AlterConfigOpType.SUBTRACT)


# ------------------------------------------------------------------ offsets


class OffsetSpec:
    """Which offset ``list_offsets`` asks for (a timestamp or a special value).

    ``OffsetSpec.earliest()``, ``latest()``, ``max_timestamp()`` (offset of the record
    with the largest timestamp, KIP-734), ``for_timestamp(ms)`` (first offset whose
    timestamp is >= ms), ``earliest_local()`` and ``latest_tiered()`` (KIP-1005).

    Example::

        tp = TopicPartition("orders", 0)
        offsets = admin.list_offsets({tp: OffsetSpec.earliest()}).all()
        assert offsets[tp].offset == 0
    """

    LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
    _NAMES = {-1: "latest", -2: "earliest", -3: "max_timestamp", -4: "earliest_local", -5: "latest_tiered"}
    __slots__ = ("timestamp",)

    def __init__(self, timestamp: int) -> None:
        if timestamp < -5:
            raise ConfigError(f"OffsetSpec timestamp must be >= 0 or a special value, got {timestamp}")
        self.timestamp = int(timestamp)

    @classmethod
    def latest(cls) -> OffsetSpec:
        """The log end offset (the offset of the next record).

        Example::

            tp = TopicPartition("orders", 1)
            assert admin.list_offsets({tp: OffsetSpec.latest()}).all()[tp].offset == 1
        """
        return cls(cls.LATEST)

    @classmethod
    def earliest(cls) -> OffsetSpec:
        """The first offset of the partition.

        Example::

            admin.list_offsets({TopicPartition("orders", 0): OffsetSpec.earliest()})
        """
        return cls(cls.EARLIEST)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        """The offset of the record with the highest timestamp (KIP-734).

        Example::

            tp = TopicPartition("orders", 0)
            newest = admin.list_offsets({tp: OffsetSpec.max_timestamp()}).all()[tp]
            assert newest.offset == 0                       # the partition's one record
        """
        return cls(cls.MAX_TIMESTAMP)

    @classmethod
    def earliest_local(cls) -> OffsetSpec:
        """The first offset still in local storage (tiered storage, KIP-1005).

        Example::

            tp = TopicPartition("orders", 0)
            assert admin.list_offsets({tp: OffsetSpec.earliest_local()}).all()[tp].offset == 0   # no tiered storage
        """
        return cls(cls.EARLIEST_LOCAL)

    @classmethod
    def latest_tiered(cls) -> OffsetSpec:
        """The highest offset in remote (tiered) storage (KIP-1005).

        Example::

            tp = TopicPartition("orders", 0)
            print(admin.list_offsets({tp: OffsetSpec.latest_tiered()}).all()[tp].offset)   # -1: nothing tiered
        """
        return cls(cls.LATEST_TIERED)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        """The first offset whose timestamp is at or after ``timestamp_ms``.

        Example::

            OffsetSpec.for_timestamp(1_700_000_000_000)
        """
        if timestamp_ms < 0:
            raise ConfigError(f"OffsetSpec.for_timestamp needs a timestamp >= 0, got {timestamp_ms}")
        return cls(timestamp_ms)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OffsetSpec) and other.timestamp == self.timestamp

    def __hash__(self) -> int:
        return hash(self.timestamp)

    def __repr__(self) -> str:
        name = self._NAMES.get(self.timestamp)
        return f"OffsetSpec.{name}()" if name else f"OffsetSpec.for_timestamp({self.timestamp})"


@dataclass(frozen=True)
class ListOffsetsResultInfo:
    """``offset`` -1 means no record matched (a timestamp after the last record).

    Example::

        tp = TopicPartition("orders", 0)
        info = admin.list_offsets({tp: "latest"}).all()[tp]
        print(info.offset, info.timestamp, info.leader_epoch)
    """

    offset: int
    timestamp: int
    leader_epoch: int | None


@dataclass(frozen=True)
class DeletedRecords:
    """What ``delete_records`` left: the partition's new low watermark (its first offset).

    Example::

        tp = TopicPartition("orders", 2)
        assert admin.delete_records({tp: -1}).all()[tp].low_watermark == 1   # -1: up to the end
    """

    low_watermark: int
