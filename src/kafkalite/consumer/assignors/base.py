"""The client-side partition assignor interface and the consumer protocol's wire format.

In the classic group protocol the broker elects one member as the group *leader*; the
leader receives every member's :class:`Subscription` (from JoinGroup), runs the
assignor that all members agreed on, and sends each member its :class:`Assignment`
(through SyncGroup). Both travel as opaque bytes in the "consumer" protocol type,
encoded as Java's ``ConsumerProtocol`` does: an int16 version followed by the
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` struct at that version.
Groups can mix kafkalite and Java members, so these bytes, the assignor names and the
assignors' ``user_data`` formats are exactly Java's.

Example (what a group leader does)::

    from kafkalite.consumer.assignors import assignor_by_name, decode_subscription, encode_assignment

    assignor = assignor_by_name("cooperative-sticky")
    subs = {m.member_id: decode_subscription(m.metadata) for m in join_response.members}
    for m in join_response.members:                 # static membership comes from JoinGroup
        subs[m.member_id].group_instance_id = m.group_instance_id
    result = assignor.assign({"orders": 6}, subs)
    sync_payload = {member: encode_assignment(a) for member, a in result.items()}

A custom assignor subclasses :class:`ConsumerPartitionAssignor` (or just provides the
same attributes and methods) and is passed to ``partition.assignment.strategy`` as a
class, an instance, or an importable ``"module.ClassName"``; the names are resolved in
:mod:`kafkalite.consumer.assignors.registry`, which knows the built-in assignors (they
import this module, so it cannot know them).
"""

from __future__ import annotations

import enum
import struct
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkalite.errors import IllegalStateError, ProtocolError
from kafkalite.protocol.messages.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
    ConsumerProtocolAssignmentTopicPartition,
)
from kafkalite.protocol.messages.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
    ConsumerProtocolSubscriptionTopicPartition,
)
from kafkalite.types import TopicPartition

__all__ = [
    "Assignment",
    "ConsumerPartitionAssignor",
    "RebalanceProtocol",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "java_string_key",
    "member_sort_key",
    "validate_assignment",
    "validate_cooperative_assignment",
]

#: Highest ConsumerProtocol version this client knows (Kafka 4.x: 3, adds rack id).
CONSUMER_PROTOCOL_VERSION = ConsumerProtocolSubscription.MAX_VERSION

#: The JoinGroup protocol type of consumer groups.
PROTOCOL_TYPE = "consumer"

_INT16 = struct.Struct(">h")


class RebalanceProtocol(enum.IntEnum):
    """How a group moves partitions (KIP-429); values are Java's ``RebalanceProtocol.id()``.

    EAGER: every member revokes everything before a rebalance and receives a full new
    assignment. COOPERATIVE: members keep what they still own; partitions that move are
    first revoked by their old owner, then assigned in a follow-up rebalance.
    """

    EAGER = 0
    COOPERATIVE = 1


@dataclass
class Subscription:
    """One member's subscription as the group leader sees it.

    ``generation_id`` is -1 when unknown (protocol versions < 2 or a new member);
    ``group_instance_id`` is not on the wire: the coordinator fills it in from the
    JoinGroup response for static members (KIP-345), which range and round robin use
    to order members.
    """

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    group_instance_id: str | None = None


@dataclass
class Assignment:
    """The partitions given to one member, plus the assignor's optional user data."""

    partitions: list[TopicPartition]
    user_data: bytes | None = None


class ConsumerPartitionAssignor(ABC):
    """Base class of client-side assignors (Java's ``ConsumerPartitionAssignor``).

    Subclasses set ``name`` (the protocol name sent in JoinGroup; all members must
    share at least one) and implement :meth:`assign`. ``supported_protocols`` lists the
    rebalance protocols the assignor can run under, preferred first.

    Example::

        class OnePerMember(ConsumerPartitionAssignor):
            name = "one-per-member"

            def assign(self, partitions_per_topic, subscriptions, *, partition_racks=None):
                ...  # return {member_id: Assignment([...]) for member_id in subscriptions}
    """

    name: str = ""
    supported_protocols: list[RebalanceProtocol] = [RebalanceProtocol.EAGER]
    version: int = 0

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        """Bytes this member sends in its subscription (None: nothing)."""
        return None

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        """Called on every member when it receives its assignment for ``generation_id``."""
        return None

    @abstractmethod
    def assign(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, Subscription],
        *,
        partition_racks: dict[TopicPartition, set[str]] | None = None,
    ) -> dict[str, Assignment]:
        """Compute every member's assignment (called on the group leader only).

        ``partitions_per_topic`` holds the partition count of each subscribed topic with
        metadata (topics without metadata are left out and get no assignment);
        ``partition_racks`` the racks of each partition's replicas, for rack-aware
        assignment (KIP-881) when members also send a ``rack_id``.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


# ---------------------------------------------------------------- ordering helpers


def java_string_key(s: str) -> bytes:
    """Sort key giving Java's ``String.compareTo`` order (UTF-16 code units).

    Python orders by code points; the two differ only for characters beyond the BMP,
    which can occur in member ids (client.id) and group.instance.id.
    """
    return s.encode("utf-16-be", "surrogatepass")


def member_sort_key(member_id: str, group_instance_id: str | None) -> tuple[int, bytes]:
    """Java's ``MemberInfo`` order: static members by group.instance.id first, then the
    dynamic ones by member id."""
    if group_instance_id is not None:
        return (0, java_string_key(group_instance_id))
    return (1, java_string_key(member_id))


def _partition_key(tp: TopicPartition) -> tuple[bytes, int]:
    return (java_string_key(tp.topic), tp.partition)


def _group_by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        lst = grouped.get(topic)
        if lst is None:
            grouped[topic] = [partition]
        else:
            lst.append(partition)
    return grouped


# ---------------------------------------------------------------- wire format


def _check_version(version: int, what: str, max_version: int) -> int:
    if version < 0:
        raise ProtocolError(f"unsupported consumer protocol {what} version {version}")
    # A newer member may send a higher version: newer versions only append fields, so
    # read the highest version we know and ignore the rest, as Java does.
    return min(version, max_version)


def encode_subscription(sub: Subscription, version: int = CONSUMER_PROTOCOL_VERSION) -> bytes:
    """The JoinGroup protocol metadata for ``sub``: int16 version + the struct.

    As Java: topics sorted, owned partitions sorted and grouped by topic, fields the
    version cannot carry (owned partitions < v1, generation < v2, rack < v3) dropped.
    """
    version = _check_version(version, "subscription", ConsumerProtocolSubscription.MAX_VERSION)
    owned = sorted(sub.owned_partitions, key=_partition_key)
    msg = ConsumerProtocolSubscription(
        topics=sorted(sub.topics, key=java_string_key),
        user_data=None if sub.user_data is None else bytes(sub.user_data),
        owned_partitions=[
            ConsumerProtocolSubscriptionTopicPartition(topic=topic, partitions=parts)
            for topic, parts in _group_by_topic(owned).items()
        ],
        generation_id=sub.generation_id if sub.generation_id >= 0 else -1,
        rack_id=sub.rack_id,
    )
    out = bytearray(_INT16.pack(version))
    msg.encode_into(out, version)
    return bytes(out)


def _read_version(data: bytes | bytearray | memoryview, what: str) -> int:
    if len(data) < 2:
        raise ProtocolError(f"consumer protocol {what} is {len(data)} bytes: too short for its version")
    (version,) = _INT16.unpack_from(data, 0)
    return int(version)


def decode_subscription(data: bytes | bytearray | memoryview) -> Subscription:
    """Parse a member's JoinGroup metadata (any version >= 0; trailing bytes ignored)."""
    version = _check_version(
        _read_version(data, "subscription"), "subscription", ConsumerProtocolSubscription.MAX_VERSION
    )
    msg = ConsumerProtocolSubscription.decode(data, version, 2, exact=False)
    owned = [TopicPartition(tp.topic, p) for tp in msg.owned_partitions for p in tp.partitions]
    return Subscription(
        topics=list(msg.topics),
        user_data=msg.user_data,
        owned_partitions=owned,
        generation_id=msg.generation_id if msg.generation_id >= 0 else -1,
        rack_id=msg.rack_id or None,  # Java treats "" as no rack
    )


def encode_assignment(a: Assignment, version: int = CONSUMER_PROTOCOL_VERSION) -> bytes:
    """The SyncGroup assignment bytes for ``a`` (partitions grouped by topic in order of
    first appearance, as Java)."""
    version = _check_version(version, "assignment", ConsumerProtocolAssignment.MAX_VERSION)
    msg = ConsumerProtocolAssignment(
        assigned_partitions=[
            ConsumerProtocolAssignmentTopicPartition(topic=topic, partitions=parts)
            for topic, parts in _group_by_topic(a.partitions).items()
        ],
        user_data=None if a.user_data is None else bytes(a.user_data),
    )
    out = bytearray(_INT16.pack(version))
    msg.encode_into(out, version)
    return bytes(out)


def decode_assignment(data: bytes | bytearray | memoryview) -> Assignment:
    """Parse the assignment bytes from a SyncGroup response.

    An empty buffer means "no assignment" (the broker sends one to members the leader
    left out); it decodes to an empty :class:`Assignment`, as Java's coordinator treats it.
    """
    if len(data) == 0:
        return Assignment([])
    version = _check_version(
        _read_version(data, "assignment"), "assignment", ConsumerProtocolAssignment.MAX_VERSION
    )
    msg = ConsumerProtocolAssignment.decode(data, version, 2, exact=False)
    parts = [TopicPartition(tp.topic, p) for tp in msg.assigned_partitions for p in tp.partitions]
    return Assignment(parts, msg.user_data)


# ---------------------------------------------------------------- validation helpers


def validate_assignment(
    result: Mapping[str, Assignment],
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
) -> None:
    """Check an assignor's result on the leader before sending it (Java's coordinator
    checks the same): only known members, each partition of a known topic at most
    once. Raises :class:`~kafkalite.errors.IllegalStateError` naming the problem."""
    owner: dict[TopicPartition, str] = {}
    for member, assignment in result.items():
        if member not in subscriptions:
            raise IllegalStateError(f"assignor returned an assignment for unknown member {member!r}")
        for tp in assignment.partitions:
            count = partitions_per_topic.get(tp.topic)
            if count is None or not 0 <= tp.partition < count:
                raise IllegalStateError(
                    f"assignor assigned a partition that does not exist to {member!r}",
                    topic=tp.topic, partition=tp.partition,
                )
            other = owner.setdefault(tp, member)
            if other != member:
                raise IllegalStateError(
                    f"assignor assigned the same partition to {other!r} and {member!r}",
                    topic=tp.topic, partition=tp.partition,
                )


def validate_cooperative_assignment(
    owned: Mapping[str, Iterable[TopicPartition]], result: Mapping[str, Assignment]
) -> None:
    """KIP-429 rule checked by a cooperative leader (as Java's coordinator): no partition
    may be added to one member in the same rebalance in which it is revoked from another;
    it must be revoked first and assigned in the follow-up rebalance."""
    added: dict[TopicPartition, str] = {}
    revoked: dict[TopicPartition, str] = {}
    # Members and partitions in sorted order, not set order: the partition reported
    # when several break the rule must not depend on string hashing (PYTHONHASHSEED).
    for member in sorted(set(owned) | set(result), key=java_string_key):
        mine = set(owned.get(member, ()))
        got = set(result[member].partitions) if member in result else set()
        for tp in sorted(got - mine, key=_partition_key):
            added[tp] = member
        for tp in sorted(mine - got, key=_partition_key):
            revoked[tp] = member
    for tp, member in added.items():
        if tp in revoked:
            raise IllegalStateError(
                f"cooperative assignor gave a partition still owned by {revoked[tp]!r} to "
                f"{member!r} without revoking it first",
                topic=tp.topic, partition=tp.partition,
            )


def to_assignments(raw: Mapping[str, Iterable[TopicPartition]]) -> dict[str, Assignment]:
    """Wrap raw lists as :class:`Assignment` objects, sorted by (topic, partition)."""
    return {m: Assignment(sorted(parts)) for m, parts in raw.items()}
