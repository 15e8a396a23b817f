"""Rack helpers shared by the rack-aware assignors (KIP-881).

A member's rack is the ``client.rack`` it sends in its subscription (protocol v3+); a
partition's racks are the racks of the brokers holding its replicas (all replicas, in
or out of sync, as Java: replicas out of the ISR are expected back soon and consumers do
not rebalance on ISR changes).
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from kafkalite.consumer.assignors.base import Subscription
from kafkalite.types import TopicPartition

__all__ = ["consumer_racks", "use_rack_aware_assignment"]


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
