"""The range assignor (Java's ``RangeAssignor``, protocol name ``range``).

Per topic: partitions in numeric order, the topic's members in order (static members by
group.instance.id first, then the others by member id, as Java's ``MemberInfo``); each
member gets a contiguous range of ``n // members`` partitions and the first
``n % members`` members one more. With two topics of 3 partitions and members C0, C1:
C0 gets t0-0, t0-1, t1-0, t1-1 and C1 gets t0-2, t1-2.

Rack-aware range (KIP-881, Java 3.5+): used when members send a ``rack_id`` and some
partitions have replicas only on a subset of racks. Each member's quota per topic stays
the same; within it, partitions on the member's rack are preferred. Topics with the same
partition count and the same subscribers stay co-partitioned (partition i of each goes
to one member) whenever possible, which Java also puts before rack alignment.

This assignor is deterministic, and matches Java's partition for partition, so a group
can mix kafkalite and Java members whichever of them leads.

Example::

    RangeAssignor().assign({"t0": 3, "t1": 3}, {"C0": Subscription(["t0", "t1"]),
                                                 "C1": Subscription(["t0", "t1"])})
"""

from __future__ import annotations

from collections.abc import Callable

from kafkalite.consumer.assignors.base import (
    Assignment,
    ConsumerPartitionAssignor,
    RebalanceProtocol,
    Subscription,
    member_sort_key,
    to_assignments,
)
from kafkalite.consumer.assignors.racks import consumer_racks, use_rack_aware_assignment
from kafkalite.errors import IllegalStateError
from kafkalite.types import TopicPartition

__all__ = ["RangeAssignor"]


class _TopicState:
    """One topic's assignment in progress: quotas and what is still unassigned."""

    __slots__ = (
        "consumers", "needs_rack_aware", "num_assigned", "partition_racks", "per_consumer",
        "remaining_extra", "topic", "unassigned",
    )

    def __init__(self, topic: str, num_partitions: int, members: list[str],
                 racks_of: dict[str, str],
                 partition_racks: dict[TopicPartition, set[str]] | None) -> None:
        self.topic = topic
        # member -> rack (None: no rack), in assignment order
        self.consumers: dict[str, str | None] = {m: racks_of.get(m) for m in members}
        # dict as an insertion-ordered set: removal keeps partition order
        self.unassigned: dict[TopicPartition, None] = dict.fromkeys(
            TopicPartition(topic, p) for p in range(num_partitions)
        )
        self.num_assigned = dict.fromkeys(members, 0)
        n = len(members)
        self.per_consumer = num_partitions // n if n else 0
        self.remaining_extra = num_partitions % n if n else 0

        member_racks = {r for r in self.consumers.values() if r is not None}
        self.partition_racks: dict[TopicPartition, set[str]] = {}
        all_partition_racks: set[str] = set()
        if member_racks:
            given = partition_racks or {}
            for tp in self.unassigned:
                racks = set(given.get(tp, ()))
                self.partition_racks[tp] = racks
                all_partition_racks |= racks
        self.needs_rack_aware = use_rack_aware_assignment(
            member_racks, all_partition_racks, self.partition_racks
        )

    def racks_match(self, member: str, tp: TopicPartition) -> bool:
        rack = self.consumers[member]
        if rack is None:
            return True
        replica_racks = self.partition_racks.get(tp)
        return replica_racks is not None and rack in replica_racks

    def max_assignable(self, member: str) -> int:
        quota = self.per_consumer + (1 if self.remaining_extra > 0 else 0)
        return max(0, quota - self.num_assigned[member])

    def on_assigned(self, member: str, partitions: list[TopicPartition]) -> None:
        count = self.num_assigned[member] + len(partitions)
        self.num_assigned[member] = count
        if count > self.per_consumer:
            self.remaining_extra -= 1
        for tp in partitions:
            del self.unassigned[tp]

    def consumers_key(self) -> tuple[tuple[str, str | None], ...]:
        return tuple(self.consumers.items())


def _assign(member: str, partitions: list[TopicPartition], state: _TopicState,
            result: dict[str, list[TopicPartition]]) -> None:
    result[member].extend(partitions)
    state.on_assigned(member, partitions)


def _assign_ranges(state: _TopicState, may_assign: Callable[[str, TopicPartition], bool],
                   result: dict[str, list[TopicPartition]]) -> None:
    for member in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(member)
        if limit <= 0:
            continue
        chosen: list[TopicPartition] = []
        for tp in state.unassigned:
            if may_assign(member, tp):
                chosen.append(tp)
                if len(chosen) == limit:
                    break
        if chosen:
            _assign(member, chosen, state, result)


def _assign_co_partitioned(consumers: list[str], num_partitions: int, states: list[_TopicState],
                           result: dict[str, list[TopicPartition]]) -> None:
    """Give partition i of every topic in ``states`` to one member on a matching rack."""
    remaining = list(consumers)
    for p in range(num_partitions):
        match = None
        for member in remaining:
            if all(s.racks_match(member, TopicPartition(s.topic, p)) and s.max_assignable(member) > 0
                   for s in states):
                match = member
                break
        if match is None:
            continue
        for s in states:
            _assign(match, [TopicPartition(s.topic, p)], s, result)
        if not any(s.max_assignable(match) > 0 for s in states):
            remaining.remove(match)
            if not remaining:
                break


def _assign_with_rack_matching(states: list[_TopicState],
                               result: dict[str, list[TopicPartition]]) -> None:
    by_consumers: dict[tuple[tuple[str, str | None], ...], list[_TopicState]] = {}
    for s in states:
        by_consumers.setdefault(s.consumers_key(), []).append(s)
    for key, group in by_consumers.items():
        consumers = [member for member, _ in key]
        # Java groups by the size of the partition -> racks map, which is the partition
        # count when the topic's members have racks and 0 when none has.
        by_count: dict[int, list[_TopicState]] = {}
        for s in group:
            by_count.setdefault(len(s.partition_racks), []).append(s)
        for count, co_partitioned in by_count.items():
            if len(co_partitioned) > 1:
                _assign_co_partitioned(consumers, count, co_partitioned, result)
            else:
                s = co_partitioned[0]
                if s.needs_rack_aware:
                    _assign_ranges(s, s.racks_match, result)


def _always(member: str, tp: TopicPartition) -> bool:
    return True


class RangeAssignor(ConsumerPartitionAssignor):
    """Contiguous ranges per topic; see the module documentation."""

    name = "range"
    supported_protocols = [RebalanceProtocol.EAGER]
    version = 0

    def assign(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, Subscription],
        *,
        partition_racks: dict[TopicPartition, set[str]] | None = None,
    ) -> dict[str, Assignment]:
        order = sorted(subscriptions, key=lambda m: member_sort_key(m, subscriptions[m].group_instance_id))
        members_of: dict[str, list[str]] = {}
        for member in order:
            for topic in dict.fromkeys(subscriptions[member].topics):
                members_of.setdefault(topic, []).append(member)
        racks_of = consumer_racks(subscriptions)

        states = []
        for topic, count in partitions_per_topic.items():
            if count < 0:
                raise IllegalStateError(f"negative partition count {count}", topic=topic)
            if count > 0:
                states.append(_TopicState(topic, count, members_of.get(topic, []), racks_of,
                                          partition_racks))

        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        if any(s.needs_rack_aware for s in states):
            _assign_with_rack_matching(states, result)
        for s in states:
            _assign_ranges(s, _always, result)
        return to_assignments(result)
