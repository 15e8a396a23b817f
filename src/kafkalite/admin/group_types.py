"""Arguments and results of the group calls (classic, consumer / KIP-848, share groups)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kafkalite.admin.types import AclOperation, Node
from kafkalite.types import TopicPartition


class GroupState(str, enum.Enum):
    """Group states as the broker names them (classic and KIP-848 states together).

    Example::

        tp = TopicPartition("orders", 0)
        consumer.assign([tp])
        consumer.commit({tp: 1})
        group = consumer.config["group.id"]
        assert admin.describe_consumer_groups([group])[group].result().state is GroupState.EMPTY
    """

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
    """A group as ``list_groups`` reports it: id, protocol type, state and type.

    Example::

        tp = TopicPartition("orders", 0)
        consumer.assign([tp])
        consumer.commit({tp: 1})
        for listing in admin.list_groups():
            print(listing.group_id, listing.type.value, listing.state.value)
    """

    group_id: str
    protocol_type: str
    state: GroupState
    type: GroupType

    @property
    def is_consumer_group(self) -> bool:
        """Classic groups with the consumer protocol (or none: simple), or KIP-848 groups.

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            consumer.commit({tp: 1})
            mine = [g for g in admin.list_groups() if g.group_id == consumer.config["group.id"]]
            assert mine and mine[0].is_consumer_group
        """
        return self.type == GroupType.CONSUMER or (
            self.type in (GroupType.CLASSIC, GroupType.UNKNOWN) and self.protocol_type in ("consumer", ""))


@dataclass
class MemberDescription:
    """One member. ``assignment`` is what it owns now; ``target_assignment`` (KIP-848
    groups only) is what the coordinator wants it to own.

    Example::

        consumer.subscribe(["orders"])
        consumer.poll(timeout=10.0)
        group = consumer.config["group.id"]
        (member,) = admin.describe_consumer_groups([group])[group].result().members
        print(member.member_id, member.client_id, sorted(member.assignment))
    """

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
    """A consumer group as ``describe_consumer_groups`` reports it: state, type, assignor, coordinator and members.

    Example::

        consumer.subscribe(["orders"])
        consumer.poll(timeout=10.0)
        group = consumer.config["group.id"]
        description = admin.describe_consumer_groups([group])[group].result()
        print(description.state.value, description.type.value, description.coordinator)
    """

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
    """A share group (KIP-932) as ``describe_share_groups`` reports it: state, coordinator and members.

    Example::

        share_consumer.subscribe(["orders"])
        share_consumer.poll(timeout=10.0)
        description = admin.describe_share_groups([share_group])[share_group].result()
        assert description.group_id == share_group and len(description.members) == 1
    """

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
    or by ``member_id`` (dynamic members, Kafka 4+ brokers).

    Example::

        static = Consumer({"bootstrap.servers": bootstrap, "group.id": "static-members",
                           "group.instance.id": "host-1"})
        static.subscribe(["orders"])
        static.poll(timeout=10.0)
        admin.remove_members_from_consumer_group("static-members", [MemberToRemove(group_instance_id="host-1")]).all()
        static.close()
    """

    member_id: str | None = None
    group_instance_id: str | None = None

    def __str__(self) -> str:
        return (f"member instance '{self.group_instance_id}'" if self.group_instance_id
                else f"member '{self.member_id}'")


@dataclass(frozen=True)
class SharePartitionOffset:
    """The start offset of a share group on one partition (-1: not initialised).

    Example::

        share_consumer.subscribe(["orders"])
        share_consumer.poll(timeout=10.0)
        share_consumer.commit_sync()
        offsets = admin.list_share_group_offsets([share_group])[share_group].result()
        print({tp.partition: (o.start_offset, o.lag) for tp, o in offsets.items()})
    """

    start_offset: int
    leader_epoch: int | None = None
    lag: int | None = None
