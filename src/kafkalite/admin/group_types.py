"""Arguments and results of the group calls (classic, consumer / KIP-848, share groups)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kafkalite.admin.types import AclOperation, Node
from kafkalite.types import TopicPartition


class GroupState(str, enum.Enum):
    """Group states as the broker names them (classic and KIP-848 states together)."""

    UNKNOWN = "Unknown"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    NOT_READY = "NotReady"

    @classmethod
    def parse(cls, text: str | None) -> GroupState:
        """Case-insensitive; accepts 'Stable', 'stable', 'PREPARING_REBALANCE' ..."""
        if not text:
            return cls.UNKNOWN
        key = text.replace("_", "").replace("-", "").lower()
        for state in cls:
            if state.value.lower() == key:
                return state
        return cls.UNKNOWN


class GroupType(str, enum.Enum):
    """The protocol a group runs (``ListGroups``' group type, KIP-848), as ``describe`` and ``list_groups`` report it.

    Example::

        admin.list_groups(types=[GroupType.CONSUMER])
    """

    UNKNOWN = "unknown"
    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"
    STREAMS = "streams"

    @classmethod
    def parse(cls, text: str | None) -> GroupType:
        if not text:
            return cls.UNKNOWN
        try:
            return cls(text.lower())
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: GroupState
    type: GroupType

    @property
    def is_consumer_group(self) -> bool:
        """Classic groups with the consumer protocol (or none: simple), or KIP-848 groups."""
        return self.type == GroupType.CONSUMER or (
            self.type in (GroupType.CLASSIC, GroupType.UNKNOWN) and self.protocol_type in ("consumer", ""))


@dataclass
class MemberDescription:
    """One member. ``assignment`` is what it owns now; ``target_assignment`` (KIP-848
    groups only) is what the coordinator wants it to own."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: set[TopicPartition] = field(default_factory=set)
    target_assignment: set[TopicPartition] | None = None
    member_epoch: int | None = None
    rack_id: str | None = None
    subscribed_topics: list[str] | None = None
    subscribed_topic_regex: str | None = None
    upgraded: bool | None = None  # KIP-848: a consumer-protocol member (vs a classic one in a mixed group)


@dataclass
class ConsumerGroupDescription:
    group_id: str
    is_simple_consumer_group: bool
    members: list[MemberDescription]
    partition_assignor: str
    type: GroupType
    state: GroupState
    coordinator: Node | None
    authorized_operations: frozenset[AclOperation] | None = None
    group_epoch: int | None = None
    target_assignment_epoch: int | None = None


@dataclass
class ShareGroupDescription:
    group_id: str
    members: list[MemberDescription]
    state: GroupState
    coordinator: Node | None
    authorized_operations: frozenset[AclOperation] | None = None
    group_epoch: int | None = None
    target_assignment_epoch: int | None = None
    assignor: str = ""


@dataclass(frozen=True)
class MemberToRemove:
    """A member to remove from a classic group: by ``group_instance_id`` (static members)
    or by ``member_id`` (dynamic members, Kafka 4+ brokers)."""

    member_id: str | None = None
    group_instance_id: str | None = None

    def __str__(self) -> str:
        return (f"member instance '{self.group_instance_id}'" if self.group_instance_id
                else f"member '{self.member_id}'")


@dataclass(frozen=True)
class SharePartitionOffset:
    """The start offset of a share group on one partition (-1: not initialised)."""

    start_offset: int
    leader_epoch: int | None = None
    lag: int | None = None
