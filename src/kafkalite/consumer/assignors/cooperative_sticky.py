"""The cooperative sticky assignor (Java's ``CooperativeStickyAssignor``,
protocol name ``cooperative-sticky``; KIP-429 incremental rebalancing).

Same assignment goals as the sticky assignor, but members keep consuming the partitions
they keep during a rebalance. Previous ownership comes from the subscription's
``owned_partitions`` and ``generation_id`` (protocol v2+; the generation also travels as
an int32 in ``user_data`` for older leaders, as Java sends it).

A partition that moves from one member to another is left out of everyone's assignment
in that rebalance: its old owner sees it missing and revokes it, then rejoins, and the
follow-up rebalance gives it to the new owner. So no partition ever has two owners. The
same holds for a partition claimed by two members of the same generation.

Example::

    a = CooperativeStickyAssignor()
    round1 = a.assign({"t": 4}, {"A": Subscription(["t"], owned_partitions=[TopicPartition("t", p) for p in range(4)],
                                                   generation_id=5),
                                 "B": Subscription(["t"])})
    # A keeps t-0, t-1 (t-2 and t-3 are revoked); B gets nothing yet.
    # In the next round (A owns t-0, t-1) B gets t-2 and t-3.
"""

from __future__ import annotations

import struct

from kafkalite.consumer.assignors.base import (
    Assignment,
    RebalanceProtocol,
    Subscription,
)
from kafkalite.consumer.assignors.sticky import (
    DEFAULT_GENERATION,
    AbstractStickyAssignor,
    MemberData,
    StickyPlan,
)
from kafkalite.types import TopicPartition

__all__ = ["CooperativeStickyAssignor", "withhold_transfers"]

_I32 = struct.Struct(">i")


def withhold_transfers(plan: StickyPlan) -> dict[str, list[TopicPartition]]:
    """Drop from the plan every partition that another member still validly owns (or
    that two members claimed in the same generation): it is revoked this round and
    assigned in the next one."""
    result: dict[str, list[TopicPartition]] = {}
    claims, doubly = plan.claims, plan.doubly_claimed
    for member, parts in plan.assignment.items():
        keep = []
        for tp in parts:
            owner = claims.get(tp)
            if tp in doubly or (owner is not None and owner != member):
                continue
            keep.append(tp)
        result[member] = keep
    return result


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """Sticky assignment for the cooperative protocol; see the module documentation."""

    name = "cooperative-sticky"
    # Cooperative preferred; eager still works when another configured assignor (say
    # range, during an upgrade) only supports eager.
    supported_protocols = [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]
    version = 0

    def __init__(self) -> None:
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._generation = generation_id

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        # Java's COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0: just the int32 generation,
        # for leaders that read subscriptions older than v2.
        return _I32.pack(self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        owned = list(subscription.owned_partitions)
        if subscription.generation_id >= 0:  # protocol v2+: the field is authoritative
            return MemberData(owned, subscription.generation_id)
        data = subscription.user_data
        if data is None:
            return MemberData(owned, None)
        if len(data) < 4:
            return MemberData(owned, DEFAULT_GENERATION)
        return MemberData(owned, _I32.unpack_from(data, 0)[0])

    def assign(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, Subscription],
        *,
        partition_racks: dict[TopicPartition, set[str]] | None = None,
    ) -> dict[str, Assignment]:
        plan = self.plan(partitions_per_topic, subscriptions, partition_racks)
        return {m: Assignment(sorted(parts)) for m, parts in withhold_transfers(plan).items()}
