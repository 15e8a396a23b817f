"""The round robin assignor (Java's ``RoundRobinAssignor``, protocol name ``roundrobin``).

All partitions of all subscribed topics, sorted by topic then partition, are dealt to
the members in order (static members by group.instance.id first, then the others by
member id), skipping a member that is not subscribed to the partition's topic. With
identical subscriptions the counts differ by at most one; with different subscriptions
the result can be unbalanced (use a sticky assignor for that).

Deterministic and identical to Java's result, so kafkalite and Java members can share a
group whichever leads.

Example::

    RoundRobinAssignor().assign({"t0": 3, "t1": 3}, {"C0": Subscription(["t0", "t1"]),
                                                      "C1": Subscription(["t0", "t1"])})
    # C0: t0-0, t0-2, t1-1    C1: t0-1, t1-0, t1-2
"""

from __future__ import annotations

from kafkalite.consumer.assignors.base import (
    Assignment,
    ConsumerPartitionAssignor,
    RebalanceProtocol,
    Subscription,
    java_string_key,
    member_sort_key,
    to_assignments,
)
from kafkalite.types import TopicPartition

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(ConsumerPartitionAssignor):
    """Deal partitions to members in turn; see the module documentation."""

    name = "roundrobin"
    supported_protocols = [RebalanceProtocol.EAGER]
    version = 0

    def assign(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, Subscription],
        *,
        partition_racks: dict[TopicPartition, set[str]] | None = None,
    ) -> dict[str, Assignment]:
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        members = sorted(subscriptions, key=lambda m: member_sort_key(m, subscriptions[m].group_instance_id))
        topics_of = {m: frozenset(subscriptions[m].topics) for m in members}
        all_topics = sorted({t for m in members for t in topics_of[m]}, key=java_string_key)
        n = len(members)
        i = 0  # the circular iterator's position, carried across partitions as in Java
        for topic in all_topics:
            count = partitions_per_topic.get(topic)
            if not count:
                continue
            for p in range(count):
                # Some member is subscribed (the topic came from a subscription), so this ends.
                while topic not in topics_of[members[i]]:
                    i = (i + 1) % n
                result[members[i]].append(TopicPartition(topic, p))
                i = (i + 1) % n
        return to_assignments(result)
