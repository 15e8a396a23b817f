"""The sticky assignment algorithm (shared) and the eager ``StickyAssignor``.

Goals, in order (Java's ``AbstractStickyAssignor``):

1. *Balance*: with identical subscriptions every member gets ``floor`` or ``ceil`` of
   partitions / members. With different subscriptions the result is as balanced as the
   subscriptions allow: no partition can be moved (directly or along a chain of moves)
   from a member to one with two or more fewer partitions. That is the optimum (it
   minimises the sum of squared member loads), which is stronger than Java's
   single-move guarantee.
2. *Stickiness*: a member keeps the partitions it owned as far as balance allows;
   partitions that must move are preferably ones that were not kept anyway.

Previous ownership comes from each member's subscription (owned partitions and
generation for cooperative-sticky; the eager assignor's user data). When two members
claim the same partition, the claim of the higher generation wins; two claims of the
same highest generation are both dropped and the partition is treated as new (and, for
cooperative, withheld for one round so no two members ever own it at once).

Rack awareness (KIP-881): when members send racks and some partitions have replicas
only on a subset of racks, an owned partition on a different rack than its member is
not kept, and partitions go to members on a matching rack where balance allows.

Which of two equally good partitions a member gets can differ from Java's choice (Java
iterates hash maps); the guarantees above are the contract, and any member accepts the
leader's assignment, so kafkalite and Java members still mix freely.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkalite.consumer.assignors.base import (
    Assignment,
    ConsumerPartitionAssignor,
    RebalanceProtocol,
    Subscription,
    java_string_key,
)
from kafkalite.consumer.assignors.racks import consumer_racks, use_rack_aware_assignment
from kafkalite.errors import IllegalStateError
from kafkalite.types import TopicPartition

__all__ = [
    "DEFAULT_GENERATION",
    "AbstractStickyAssignor",
    "MemberData",
    "StickyAssignor",
    "StickyPlan",
    "decode_sticky_user_data",
    "encode_sticky_user_data",
    "sticky_assign",
]

DEFAULT_GENERATION = -1


@dataclass
class MemberData:
    """What the leader knows of a member's previous assignment."""

    partitions: list[TopicPartition]
    generation: int | None = None  # None: not known


@dataclass
class StickyPlan:
    """The result of :func:`sticky_assign`.

    ``claims`` maps each previously owned partition to its one valid previous owner
    (after generation conflicts); ``doubly_claimed`` holds partitions claimed by two
    members of the same highest generation (no valid owner).
    """

    assignment: dict[str, list[TopicPartition]]
    claims: dict[TopicPartition, str] = field(default_factory=dict)
    doubly_claimed: set[TopicPartition] = field(default_factory=set)
    constrained: bool = False


# ---------------------------------------------------------------- claims and racks


def _resolve_claims(
    partitions_per_topic: Mapping[str, int], data: Mapping[str, MemberData], order: list[str]
) -> tuple[dict[TopicPartition, str], set[TopicPartition]]:
    """One valid owner per previously owned partition: the highest generation wins.

    Java decides pairwise in hash-map order; deciding on the highest generation among
    all claimants gives the same answer whenever Java's is order-independent.
    """
    best: dict[TopicPartition, tuple[int, list[str]]] = {}
    for member in order:
        md = data[member]
        gen = DEFAULT_GENERATION if md.generation is None else md.generation
        for tp in dict.fromkeys(md.partitions):
            count = partitions_per_topic.get(tp.topic, 0)
            if not 0 <= tp.partition < count:
                continue  # topic gone (or never known): nothing to keep or protect
            cur = best.get(tp)
            if cur is None or gen > cur[0]:
                best[tp] = (gen, [member])
            elif gen == cur[0]:
                cur[1].append(member)
    claims = {tp: ms[0] for tp, (_, ms) in best.items() if len(ms) == 1}
    doubly = {tp for tp, (_, ms) in best.items() if len(ms) > 1}
    return claims, doubly


class _Racks:
    """Rack matching state; inactive unless Java's rack-aware condition holds."""

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


# ---------------------------------------------------------------- identical subscriptions


def _constrained(
    all_partitions: list[TopicPartition],
    order: list[str],
    kept: dict[str, list[TopicPartition]],
    racks: _Racks,
) -> dict[str, list[TopicPartition]]:
    """Every member subscribes to the same topics: counts differ by at most one.

    Each member keeps its owned partitions up to its quota (``ceil`` for as many members
    as there are extra partitions, preferring members that own that many, else
    ``floor``); the rest is dealt round robin to the members under quota.
    """
    n = len(order)
    min_q, extra = divmod(len(all_partitions), n)
    max_q = min_q + (1 if extra else 0)
    current_extra = 0
    result: dict[str, list[TopicPartition]] = {}
    under_min: list[str] = []  # members below min_q
    at_min: deque[str] = deque()  # members at min_q that may still get one more

    for member in order:
        owned = sorted(kept[member], key=lambda tp: (tp.partition, tp.topic))
        if len(owned) < min_q:
            result[member] = owned
            under_min.append(member)
        elif len(owned) >= max_q and current_extra < extra:
            result[member] = owned[:max_q]
            current_extra += 1
            if current_extra == extra:
                at_min.clear()
        else:
            result[member] = owned[:min_q]
            if current_extra < extra:
                at_min.append(member)

    taken = {tp for parts in result.values() for tp in parts}
    unassigned = [tp for tp in all_partitions if tp not in taken]

    def give(member: str, tp: TopicPartition) -> None:
        nonlocal current_extra
        parts = result[member]
        parts.append(tp)
        if len(parts) == max_q and max_q > min_q:
            current_extra += 1
            if current_extra == extra:
                at_min.clear()

    if racks.active and unassigned:
        # Partitions with the fewest same-rack members first, so they get one.
        unassigned.sort(key=lambda tp: racks.members_on_racks.get(tp, 0))
        left = []
        start = 0
        for tp in unassigned:
            chosen = None
            n_under = len(under_min)
            for i in range(n_under):
                idx = (start + i) % n_under
                if racks.matches(under_min[idx], tp):
                    chosen = under_min[idx]
                    if len(result[chosen]) + 1 >= min_q:
                        del under_min[idx]
                        start = idx % len(under_min) if under_min else 0
                        if len(result[chosen]) + 1 < max_q and current_extra < extra:
                            at_min.append(chosen)
                    else:
                        start = (idx + 1) % n_under
                    break
            if chosen is None and current_extra < extra:
                for candidate in at_min:
                    if racks.matches(candidate, tp):
                        chosen = candidate
                        at_min.remove(candidate)
                        break
            if chosen is None:
                left.append(tp)
            else:
                give(chosen, tp)
        unassigned = left

    # Round robin over the members under quota, then one extra each to members at min_q.
    i = 0
    for tp in unassigned:
        if under_min:
            i %= len(under_min)
            member = under_min[i]
            give(member, tp)
            if len(result[member]) >= min_q:
                del under_min[i]
                if len(result[member]) < max_q and current_extra < extra:
                    at_min.append(member)
            else:
                i += 1
        elif at_min:
            give(at_min.popleft(), tp)
        else:  # cannot happen: the quotas add up to the partition count
            raise IllegalStateError(f"sticky assignor: no member left with room for {tp}")
    if under_min:
        raise IllegalStateError(f"sticky assignor: members {under_min} stayed below quota {min_q}")
    return result


# ---------------------------------------------------------------- different subscriptions


class _General:
    """Balance with different subscriptions by moving partitions along chains.

    A member's load can only drop by handing a partition to another member subscribed to
    its topic. An assignment minimises the sum of squared loads exactly when no chain of
    such moves leads from a member to one with at least two fewer partitions, so we find
    such chains (cheapest first: moving a partition its holder did not keep from before
    costs 0, moving a kept one costs 1) and shift one partition along each, until none
    is left.
    """

    def __init__(self, order: list[str], topics_of: dict[str, list[str]],
                 claims: Mapping[TopicPartition, str], racks: _Racks) -> None:
        self.order = order
        self.rank = {m: i for i, m in enumerate(order)}
        self.topics_of = topics_of
        self.claims = claims
        self.racks = racks
        self.load = dict.fromkeys(order, 0)
        # held[m][topic] -> partitions of topic held by m
        self.held: dict[str, dict[str, list[TopicPartition]]] = {m: {} for m in order}
        # holders[topic][m] -> how many partitions of topic m holds
        self.holders: dict[str, dict[str, int]] = {}
        # free[m][topic] -> how many of them m did not keep from before (cheap to move)
        self.free: dict[str, dict[str, int]] = {m: {} for m in order}

    def add(self, member: str, tp: TopicPartition) -> None:
        topic = tp.topic
        self.held[member].setdefault(topic, []).append(tp)
        holders = self.holders.setdefault(topic, {})
        holders[member] = holders.get(member, 0) + 1
        if self.claims.get(tp) != member:
            free = self.free[member]
            free[topic] = free.get(topic, 0) + 1
        self.load[member] += 1

    def _remove(self, member: str, tp: TopicPartition) -> None:
        topic = tp.topic
        parts = self.held[member][topic]
        parts.remove(tp)
        if not parts:
            del self.held[member][topic]
        holders = self.holders[topic]
        if holders[member] == 1:
            del holders[member]
        else:
            holders[member] -= 1
        if self.claims.get(tp) != member:
            self.free[member][topic] -= 1
        self.load[member] -= 1

    def _move(self, frm: str, tp: TopicPartition, to: str) -> None:
        self._remove(frm, tp)
        self.add(to, tp)

    def _pick(self, member: str, topic: str, to: str) -> TopicPartition:
        """The best partition of ``topic`` to hand from ``member`` to ``to``: one member
        did not keep from before; better one going back to its previous owner ``to`` (as
        Java reverses an earlier move); then one on ``to``'s rack."""
        best, best_key = None, None
        for tp in self.held[member][topic]:
            owner = self.claims.get(tp)
            key = (owner == member, owner != to, self.racks.mismatch(to, tp), -tp.partition)
            if best_key is None or key < best_key:
                best, best_key = tp, key
        assert best is not None
        return best

    def _find_chain(self, level: int) -> list[tuple[str, str, str]] | None:
        """A cheapest chain of moves ending at a member of load ``level`` and starting
        at one with load >= level + 2, as [(from, topic, to), ...] in move order."""
        load, free = self.load, self.free
        dist: dict[str, int] = {}
        via: dict[str, tuple[str, str]] = {}  # member -> (next member, topic)
        queue: deque[tuple[int, str]] = deque()
        for m in self.order:
            if load[m] == level:
                dist[m] = 0
                queue.append((0, m))
        done: set[str] = set()
        while queue:
            d, y = queue.popleft()
            if y in done or d != dist[y]:
                continue
            done.add(y)
            if load[y] >= level + 2:
                chain = []
                x = y
                while x in via:
                    nxt, topic = via[x]
                    chain.append((x, topic, nxt))
                    x = nxt
                return chain
            for topic in self.topics_of[y]:
                for x in self.holders.get(topic, ()):
                    if x in done or x == y:
                        continue
                    nd = d if free[x].get(topic) else d + 1
                    old = dist.get(x)
                    if old is None or nd < old:
                        dist[x] = nd
                        via[x] = (y, topic)
                        if nd == d:
                            queue.appendleft((nd, x))
                        else:
                            queue.append((nd, x))
        return None

    def balance(self) -> None:
        while True:
            levels = sorted(set(self.load.values()))
            top = levels[-1] if levels else 0
            chain = None
            for level in levels:
                if level + 2 > top:
                    break
                chain = self._find_chain(level)
                if chain:
                    break
            if not chain:
                return
            for frm, topic, to in chain:
                self._move(frm, self._pick(frm, topic, to), to)

    def improve_stickiness(self) -> None:
        """Give partitions back to their previous owners where balance stays the same:
        a direct move when the two loads differ by one (they swap), or a swap for a
        partition the owner did not keep from before."""
        claims, rank = self.claims, self.rank
        topic_sets = {m: set(ts) for m, ts in self.topics_of.items()}
        improved = True
        while improved:
            improved = False
            for x in self.order:
                for topic, parts in list(self.held[x].items()):
                    for tp in list(parts):
                        owner = claims.get(tp)
                        if owner is None or owner == x or owner not in rank:
                            continue
                        if topic not in topic_sets[owner] or self.racks.mismatch(owner, tp):
                            continue
                        if self.load[x] == self.load[owner] + 1:
                            self._move(x, tp, owner)
                            improved = True
                            continue
                        swap = next(
                            (q for t2, qs in self.held[owner].items() if t2 in topic_sets[x]
                             for q in qs if claims.get(q) != owner and not self.racks.mismatch(x, q)),
                            None,
                        )
                        if swap is not None:
                            self._move(x, tp, owner)
                            self._move(owner, swap, x)
                            improved = True

    def result(self) -> dict[str, list[TopicPartition]]:
        return {m: [tp for parts in self.held[m].values() for tp in parts] for m in self.order}


def _general(
    partitions_per_topic: Mapping[str, int],
    order: list[str],
    topics_of: dict[str, list[str]],
    kept: dict[str, list[TopicPartition]],
    claims: Mapping[TopicPartition, str],
    racks: _Racks,
) -> dict[str, list[TopicPartition]]:
    state = _General(order, topics_of, claims, racks)
    members_of: dict[str, list[str]] = {}
    for m in order:
        for topic in topics_of[m]:
            members_of.setdefault(topic, []).append(m)
        for tp in kept[m]:
            state.add(m, tp)
    taken = {tp for parts in kept.values() for tp in parts}
    # Topics with the fewest candidate members first (they have the least choice).
    topics = sorted(members_of, key=lambda t: (len(members_of[t]), t))
    unassigned = [
        TopicPartition(t, p) for t in topics for p in range(partitions_per_topic[t])
        if TopicPartition(t, p) not in taken
    ]
    load, rank = state.load, state.rank

    def least_loaded(candidates: list[str]) -> str:
        return min(candidates, key=lambda m: (load[m], rank[m]))

    if racks.active:
        rest = []
        for tp in unassigned:
            local = [m for m in members_of[tp.topic] if racks.matches(m, tp)]
            if local:
                state.add(least_loaded(local), tp)
            else:
                rest.append(tp)
        unassigned = rest
    for tp in unassigned:
        state.add(least_loaded(members_of[tp.topic]), tp)
    state.balance()
    state.improve_stickiness()
    return state.result()


# ---------------------------------------------------------------- entry point


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    member_data: Mapping[str, MemberData],
    partition_racks: Mapping[TopicPartition, set[str]] | None = None,
) -> StickyPlan:
    """Run the sticky algorithm; ``member_data`` gives each member's previous assignment."""
    for topic, count in partitions_per_topic.items():
        if count < 0:
            raise IllegalStateError(f"negative partition count {count}", topic=topic)
    order = sorted(subscriptions, key=java_string_key)
    if not order:
        return StickyPlan({})
    claims, doubly = _resolve_claims(partitions_per_topic, member_data, order)
    topics_of = {
        m: [t for t in dict.fromkeys(subscriptions[m].topics) if partitions_per_topic.get(t, 0) > 0]
        for m in order
    }
    subscribed = {t for ts in topics_of.values() for t in ts}
    all_partitions = [
        TopicPartition(t, p) for t in sorted(subscribed) for p in range(partitions_per_topic[t])
    ]
    racks = _Racks(subscriptions, all_partitions, partition_racks)
    topic_sets = {m: set(ts) for m, ts in topics_of.items()}
    kept: dict[str, list[TopicPartition]] = {m: [] for m in order}
    for tp, member in claims.items():
        if member in kept and tp.topic in topic_sets[member] and not racks.mismatch(member, tp):
            kept[member].append(tp)

    first = set(subscriptions[order[0]].topics)
    constrained = all(set(subscriptions[m].topics) == first for m in order)
    if constrained:
        raw = _constrained(all_partitions, order, kept, racks)
    else:
        raw = _general(partitions_per_topic, order, topics_of, kept, claims, racks)
    return StickyPlan(raw, claims, doubly, constrained)


class AbstractStickyAssignor(ConsumerPartitionAssignor):
    """Shared part of the sticky assignors: subclasses say where previous ownership
    comes from (:meth:`member_data`) and may post-process the plan."""

    def member_data(self, subscription: Subscription) -> MemberData:
        raise NotImplementedError

    def plan(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, Subscription],
        partition_racks: dict[TopicPartition, set[str]] | None = None,
    ) -> StickyPlan:
        data = {m: self.member_data(s) for m, s in subscriptions.items()}
        return sticky_assign(partitions_per_topic, subscriptions, data, partition_racks)

    def assign(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, Subscription],
        *,
        partition_racks: dict[TopicPartition, set[str]] | None = None,
    ) -> dict[str, Assignment]:
        plan = self.plan(partitions_per_topic, subscriptions, partition_racks)
        return {m: Assignment(sorted(parts)) for m, parts in plan.assignment.items()}


# ---------------------------------------------------------------- eager StickyAssignor


_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int | None) -> bytes:
    """Java's ``StickyAssignor`` user data: schema V1 (previous assignment + generation),
    or V0 (assignment only) when ``generation`` is None.

    Layout: int32 topic count, per topic int16-length UTF-8 name, int32 partition count,
    int32 partitions; then int32 generation (V1).
    """
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    out = bytearray(_I32.pack(len(grouped)))
    for topic, parts in grouped.items():
        raw = topic.encode("utf-8")
        out += _I16.pack(len(raw))
        out += raw
        out += _I32.pack(len(parts))
        for p in parts:
            out += _I32.pack(p)
    if generation is not None:
        out += _I32.pack(generation)
    return bytes(out)


def _read_v0(data: bytes) -> tuple[list[TopicPartition], int]:
    pos = 0
    (n,) = _I32.unpack_from(data, pos)
    pos += 4
    if n < 0:
        raise ValueError("null topic array")
    parts: list[TopicPartition] = []
    for _ in range(n):
        (length,) = _I16.unpack_from(data, pos)
        pos += 2
        if length < 0 or pos + length > len(data):
            raise ValueError("bad topic name")
        topic = bytes(data[pos:pos + length]).decode("utf-8")
        pos += length
        (count,) = _I32.unpack_from(data, pos)
        pos += 4
        if count < 0 or pos + 4 * count > len(data):
            raise ValueError("bad partition array")
        parts.extend(TopicPartition(topic, p) for p in struct.unpack_from(f">{count}i", data, pos))
        pos += 4 * count
    return parts, pos


def decode_sticky_user_data(data: bytes | None) -> MemberData:
    """Parse ``StickyAssignor`` user data as Java does: V1, else V0 (no generation); data
    that parses as neither means "no previous assignment" with the default generation."""
    if not data:
        return MemberData([], None)
    try:
        parts, pos = _read_v0(data)
    except (ValueError, struct.error, UnicodeDecodeError):
        return MemberData([], DEFAULT_GENERATION)
    if pos + 4 <= len(data):
        (generation,) = _I32.unpack_from(data, pos)
        return MemberData(parts, generation)
    return MemberData(parts, None)


class StickyAssignor(AbstractStickyAssignor):
    """Eager sticky assignor (protocol name ``sticky``).

    Each member remembers its last assignment and generation and sends them as user data
    (Java's format), because under the eager protocol members revoke everything before
    they rejoin and send no owned partitions.
    """

    name = "sticky"
    supported_protocols = [RebalanceProtocol.EAGER]
    version = 0

    def __init__(self) -> None:
        self._partitions: list[TopicPartition] | None = None
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._partitions = list(assignment.partitions)
        self._generation = generation_id

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        if self._partitions is None:
            return None
        return encode_sticky_user_data(self._partitions, self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        return decode_sticky_user_data(subscription.user_data)
