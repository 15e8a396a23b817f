"""Rack helpers shared by the rack-aware assignors (KIP-881).

A member's rack is the ``client.rack`` it sends in its subscription (protocol v3+); a
partition's racks are the racks of the brokers holding its replicas (all replicas, in
or out of sync, as Java: replicas out of the ISR are expected back soon and consumers do
not rebalance on ISR changes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set

from kafkalite.consumer.assignors.base import Subscription
from kafkalite.types import TopicPartition

__all__ = ["RackMatcher", "consumer_racks", "use_rack_aware_assignment"]


def consumer_racks(subscriptions: Mapping[str, Subscription]) -> dict[str, str]:
    """member id -> rack, for members that sent a non-empty rack id."""
    return {m: s.rack_id for m, s in subscriptions.items() if s.rack_id}


def use_rack_aware_assignment(
    member_racks: Set[str],
    partition_racks: Set[str],
    racks_per_partition: Mapping[TopicPartition, Set[str]],
) -> bool:
    """Java's rule: rack-aware only if some member rack holds replicas, and not every
    partition has replicas on the same set of racks (then every choice is equally local)."""
    if not member_racks or member_racks.isdisjoint(partition_racks):
        return False
    return any(racks != partition_racks for racks in racks_per_partition.values())


class RackMatcher:
    """Which members and partitions share a rack, for the sticky assignors; inactive
    (nothing matches or mismatches) unless Java's rack-aware condition holds."""

    def __init__(self, subscriptions: Mapping[str, Subscription],
                 partitions: Iterable[TopicPartition],
                 partition_racks: Mapping[TopicPartition, set[str]] | None) -> None:
        member_racks = consumer_racks(subscriptions)
        self.member_rack: dict[str, str] = {}
        self.partition_racks: dict[TopicPartition, set[str]] = {}
        self.members_on_racks: dict[TopicPartition, int] = {}
        if not member_racks or not partition_racks:
            return
        per_partition = {tp: set(partition_racks.get(tp, ())) for tp in partitions}
        all_racks: set[str] = set().union(*per_partition.values()) if per_partition else set()
        if use_rack_aware_assignment(set(member_racks.values()), all_racks, per_partition):
            self.member_rack = member_racks
            self.partition_racks = per_partition
            count: dict[str, int] = {}
            for rack in member_racks.values():
                count[rack] = count.get(rack, 0) + 1
            self.members_on_racks = {
                tp: sum(count.get(r, 0) for r in racks) for tp, racks in per_partition.items()
            }

    @property
    def active(self) -> bool:
        return bool(self.member_rack)

    def mismatch(self, member: str, tp: TopicPartition) -> bool:
        rack = self.member_rack.get(member)
        return rack is not None and rack not in self.partition_racks.get(tp, ())

    def matches(self, member: str, tp: TopicPartition) -> bool:
        rack = self.member_rack.get(member)
        return rack is not None and rack in self.partition_racks.get(tp, ())
