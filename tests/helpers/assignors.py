"""Shared hypothesis strategies and checks for the assignor tests (not a test module)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from hypothesis import strategies as st

from kafkalite.consumer.assignors import Assignment, Subscription
from kafkalite.types import TopicPartition as TP


@st.composite
def groups(draw, max_topics: int = 4, max_partitions: int = 6, max_members: int = 6,
           same_subscriptions: bool | None = None, with_owned: bool = True):
    """(partitions_per_topic, {member: Subscription}) with random subscriptions and
    random (possibly conflicting) owned partitions and generations."""
    n_topics = draw(st.integers(1, max_topics))
    ppt = {f"t{i}": draw(st.integers(0, max_partitions)) for i in range(n_topics)}
    topics = list(ppt)
    n_members = draw(st.integers(1, max_members))
    same = draw(st.booleans()) if same_subscriptions is None else same_subscriptions
    everyone = draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
    all_parts = [TP(t, p) for t, n in ppt.items() for p in range(n)]
    subs = {}
    for i in range(n_members):
        mine = everyone if same else draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
        owned = draw(st.lists(st.sampled_from(all_parts), unique=True)) if with_owned and all_parts else []
        gen = draw(st.sampled_from([-1, 3, 4])) if owned else -1
        subs[f"member-{i}"] = Subscription(list(mine), None, owned, gen)
    return ppt, subs


def check_valid(ppt: Mapping[str, int], subs: Mapping[str, Subscription],
                result: Mapping[str, Assignment], complete: bool = True) -> None:
    """Each partition at most once (exactly once if ``complete``) and only to members
    subscribed to its topic; every member present."""
    assert set(result) == set(subs)
    seen: dict[TP, str] = {}
    for member, a in result.items():
        for tp in a.partitions:
            assert tp.topic in subs[member].topics, (member, tp)
            assert 0 <= tp.partition < ppt[tp.topic]
            assert tp not in seen, (tp, seen.get(tp), member)
            seen[tp] = member
    if complete:
        wanted = {TP(t, p) for s in subs.values() for t in s.topics for p in range(ppt.get(t, 0))}
        assert set(seen) == wanted


def loads(result: Mapping[str, Assignment]) -> dict[str, int]:
    return {m: len(a.partitions) for m, a in result.items()}


def square_sum(result: Mapping[str, Assignment]) -> int:
    return sum(n * n for n in loads(result).values())


def brute_force(ppt: Mapping[str, int], subs: Mapping[str, Subscription],
                keepers: Mapping[TP, str]) -> tuple[int, int]:
    """(least sum of squared loads, most partitions left with their keeper among the
    assignments reaching it) over every possible assignment: the oracle."""
    parts = [TP(t, p) for t in sorted({t for s in subs.values() for t in s.topics})
             for p in range(ppt.get(t, 0))]
    candidates = [[m for m, s in subs.items() if tp.topic in s.topics] for tp in parts]
    best: tuple[int, int] | None = None
    for combo in itertools.product(*candidates):
        count = dict.fromkeys(subs, 0)
        for m in combo:
            count[m] += 1
        key = (sum(n * n for n in count.values()), -sum(keepers.get(tp) == m for tp, m in zip(parts, combo)))
        if best is None or key < best:
            best = key
    assert best is not None
    return best[0], -best[1]


def partitions_in(ppt: Mapping[str, int], subs: Mapping[str, Subscription]) -> int:
    return sum(ppt.get(t, 0) for t in {t for s in subs.values() for t in s.topics})
