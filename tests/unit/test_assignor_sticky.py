"""The shared sticky algorithm and the eager StickyAssignor.

Scenarios from the behaviour Java documents for StickyAssignor / AbstractStickyAssignor,
property tests (validity, balance, stickiness) and an oracle that enumerates every
assignment of small groups.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafkalite.consumer.assignors import (
    Assignment,
    CooperativeStickyAssignor,
    StickyAssignor,
    Subscription,
)
from kafkalite.consumer.assignors.sticky import (
    MemberData,
    decode_sticky_user_data,
    encode_sticky_user_data,
    sticky_assign,
)
from kafkalite.types import TopicPartition as TP
from tests.helpers.assignors import (
    brute_force,
    check_valid,
    groups,
    loads,
    partitions_in,
    square_sum,
)


def tps(*names: str) -> list[TP]:
    out = []
    for n in names:
        topic, _, p = n.rpartition("-")
        out.append(TP(topic, int(p)))
    return out


def user_data(parts: list[TP], generation: int = 1) -> bytes:
    return encode_sticky_user_data(parts, generation)


def assign(ppt, members: dict[str, tuple[list[str], list[TP]]], generation: int = 1):
    subs = {m: Subscription(t, user_data(owned, generation) if owned else None) for m, (t, owned) in members.items()}
    return StickyAssignor().assign(ppt, subs)


def as_sets(result) -> dict[str, set[TP]]:
    return {m: set(a.partitions) for m, a in result.items()}


# ---------------------------------------------------------------- documented examples


def test_java_example_1_preserves_everything_when_a_member_leaves() -> None:
    ppt = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
    all_topics = list(ppt)
    before = {
        "C0": tps("t0-0", "t1-1", "t3-0"),
        "C1": tps("t0-1", "t2-0", "t3-1"),
        "C2": tps("t1-0", "t2-1"),
    }
    after = as_sets(assign(ppt, {"C0": (all_topics, before["C0"]), "C2": (all_topics, before["C2"])}))
    assert set(before["C0"]) <= after["C0"] and set(before["C2"]) <= after["C2"]
    assert sorted(len(v) for v in after.values()) == [4, 4]


def test_java_example_2_different_subscriptions() -> None:
    ppt = {"t0": 1, "t1": 2, "t2": 3}
    subs = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    first = as_sets(assign(ppt, {m: (t, []) for m, t in subs.items()}))
    assert first == {"C0": set(tps("t0-0")), "C1": set(tps("t1-0", "t1-1")), "C2": set(tps("t2-0", "t2-1", "t2-2"))}
    # C0 leaves: sticky keeps all 5 other assignments (round robin would keep 3)
    second = as_sets(assign(ppt, {"C1": (subs["C1"], sorted(first["C1"])), "C2": (subs["C2"], sorted(first["C2"]))}))
    assert second == {"C1": set(tps("t1-0", "t1-1", "t0-0")), "C2": set(tps("t2-0", "t2-1", "t2-2"))}


def test_new_member_takes_only_what_balance_needs() -> None:
    ppt = {"t": 6}
    first = as_sets(assign(ppt, {"A": (["t"], []), "B": (["t"], [])}))
    second = as_sets(assign(ppt, {m: (["t"], sorted(first[m])) for m in first} | {"C": (["t"], [])}))
    assert [len(second[m]) for m in "ABC"] == [2, 2, 2]
    assert second["A"] <= first["A"] and second["B"] <= first["B"]  # only moves to C


def test_unsubscribed_topic_partitions_are_given_up() -> None:
    ppt = {"a": 2, "b": 2}
    res = as_sets(assign(ppt, {"X": (["a"], tps("a-0", "a-1", "b-0", "b-1")), "Y": (["a", "b"], [])}))
    # X gives up b (not subscribed); only Y can take it; X keeps a: two each, balanced.
    assert res == {"X": set(tps("a-0", "a-1")), "Y": set(tps("b-0", "b-1"))}


def test_partitions_of_deleted_topics_are_ignored() -> None:
    res = as_sets(assign({"t": 2}, {"A": (["t", "gone"], tps("gone-0", "t-0")), "B": (["t", "gone"], [])}))
    assert res == {"A": set(tps("t-0")), "B": set(tps("t-1"))}


def test_higher_generation_claim_wins() -> None:
    subs = {
        "old": Subscription(["t"], user_data(tps("t-0", "t-1"), 3)),
        "new": Subscription(["t"], user_data(tps("t-0"), 4)),
        "free": Subscription(["t"]),
    }
    res = as_sets(StickyAssignor().assign({"t": 3}, subs))
    assert TP("t", 0) in res["new"] and TP("t", 1) in res["old"]


def test_same_generation_double_claim_keeps_nobody_sticky() -> None:
    data = {"A": MemberData(tps("t-0"), 5), "B": MemberData(tps("t-0"), 5)}
    subs = {m: Subscription(["t"]) for m in data}
    plan = sticky_assign({"t": 1}, subs, data)
    assert plan.doubly_claimed == {TP("t", 0)} and TP("t", 0) not in plan.claims
    assert sorted(len(v) for v in plan.assignment.values()) == [0, 1]


def test_rack_aware_prefers_local_partitions() -> None:
    ppt = {"t": 4}
    racks = {TP("t", p): {"r0" if p % 2 == 0 else "r1"} for p in range(4)}
    subs = {"A": Subscription(["t"], rack_id="r0"), "B": Subscription(["t"], rack_id="r1")}
    res = as_sets(StickyAssignor().assign(ppt, subs, partition_racks=racks))
    assert res == {"A": set(tps("t-0", "t-2")), "B": set(tps("t-1", "t-3"))}


def test_rack_mismatched_owned_partitions_move_to_local_members() -> None:
    ppt = {"t": 4}
    racks = {TP("t", p): {"r0" if p % 2 == 0 else "r1"} for p in range(4)}
    subs = {
        "A": Subscription(["t"], user_data(tps("t-1", "t-3")), rack_id="r0"),
        "B": Subscription(["t"], user_data(tps("t-0", "t-2")), rack_id="r1"),
    }
    res = as_sets(StickyAssignor().assign(ppt, subs, partition_racks=racks))
    assert res == {"A": set(tps("t-0", "t-2")), "B": set(tps("t-1", "t-3"))}


def test_user_data_v0_without_generation_and_garbage() -> None:
    v0 = encode_sticky_user_data(tps("t-2", "u-0"), None)
    assert decode_sticky_user_data(v0) == MemberData(tps("t-2", "u-0"), None)
    assert decode_sticky_user_data(b"\x00\x00") == MemberData([], -1)
    assert decode_sticky_user_data(b"\x00\x00\x00\x01\xff\xff") == MemberData([], -1)
    assert decode_sticky_user_data(None) == MemberData([], None)


def test_on_assignment_feeds_next_subscription() -> None:
    a = StickyAssignor()
    assert a.subscription_user_data({"t"}) is None
    a.on_assignment(Assignment(tps("t-1", "t-0")), 8)
    assert decode_sticky_user_data(a.subscription_user_data({"t"})) == MemberData(tps("t-1", "t-0"), 8)


def test_no_members_and_no_partitions() -> None:
    assert StickyAssignor().assign({"t": 3}, {}) == {}
    res = StickyAssignor().assign({"t": 0}, {"A": Subscription(["t"]), "B": Subscription(["t", "x"])})
    assert res == {"A": Assignment([]), "B": Assignment([])}


# ---------------------------------------------------------------- properties


def _plan(ppt, subs):
    data = {m: MemberData(s.owned_partitions, None if s.generation_id < 0 else s.generation_id) for m, s in subs.items()}
    return sticky_assign(ppt, subs, data)


@given(groups())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_every_partition_exactly_once_to_a_subscriber(case) -> None:
    ppt, subs = case
    plan = _plan(ppt, subs)
    check_valid(ppt, subs, {m: Assignment(v) for m, v in plan.assignment.items()})


@given(groups(same_subscriptions=True))
@settings(max_examples=300)
def test_identical_subscriptions_differ_by_at_most_one(case) -> None:
    ppt, subs = case
    counts = [len(v) for v in _plan(ppt, subs).assignment.values()]
    assert max(counts) - min(counts) <= 1


def _doubly_claimed_case() -> tuple[dict[str, int], dict[str, Subscription]]:
    """t0-0 is claimed by member-2 and member-3 in the same generation (neither keeps
    it); balance needs member-3 on t1 only, and member-2 can then keep t0-1 only if a
    chain of moves frees a t0 partition for member-0 or member-1."""
    ppt = {"t0": 3, "t1": 2, "t2": 1}
    subs = {
        "member-0": Subscription(["t0"]),
        "member-1": Subscription(["t0"]),
        "member-2": Subscription(["t0", "t2"], None, tps("t0-0", "t0-1"), 3),
        "member-3": Subscription(["t0", "t1"], None, tps("t0-0", "t0-2"), 3),
    }
    return ppt, subs


def test_equal_balance_ties_are_broken_by_stickiness() -> None:
    ppt, subs = _doubly_claimed_case()
    plan = _plan(ppt, subs)
    result = as_sets({m: Assignment(v) for m, v in plan.assignment.items()})
    assert result["member-3"] == set(tps("t1-0", "t1-1"))
    assert result["member-2"] == set(tps("t0-1", "t2-0"))  # keeps t0-1
    assert sorted(len(result[m]) for m in ("member-0", "member-1")) == [1, 1]
    # cooperative: the same plan; t0-0 (doubly claimed) and t0-2 (moving away from
    # member-3) are withheld for one round
    coop = as_sets(CooperativeStickyAssignor().assign(ppt, subs))
    assert coop["member-2"] == set(tps("t0-1", "t2-0")) and coop["member-3"] == set(tps("t1-0", "t1-1"))
    assert TP("t0", 0) not in coop["member-0"] | coop["member-1"]
    assert TP("t0", 2) not in coop["member-0"] | coop["member-1"]


@given(groups(max_topics=3, max_partitions=3, max_members=4))
@example(_doubly_claimed_case())
@settings(max_examples=400, deadline=None)
def test_oracle_optimal_balance_then_stickiness(case) -> None:
    ppt, subs = case
    if partitions_in(ppt, subs) > 8:
        return
    plan = _plan(ppt, subs)
    result = {m: Assignment(v) for m, v in plan.assignment.items()}
    best_squares, best_kept = brute_force(ppt, subs, plan.claims)
    assert square_sum(result) == best_squares
    kept = sum(plan.claims.get(tp) == m for m, v in plan.assignment.items() for tp in v)
    assert kept == best_kept


@given(groups(with_owned=False), st.data())
@settings(max_examples=200, deadline=None)
def test_member_leaving_moves_only_its_partitions_when_balance_allows(case, data) -> None:
    ppt, subs = case
    if len(subs) < 2:
        return
    first = _plan(ppt, subs).assignment
    gone = data.draw(st.sampled_from(sorted(subs)))
    rest = {m: Subscription(s.topics, None, first[m], 1) for m, s in subs.items() if m != gone}
    second = _plan(ppt, rest).assignment
    moved = {tp for m in rest for tp in first[m] if tp not in second[m]}
    orphans = first[gone]
    # The remaining members keep everything if giving the orphans out is enough for
    # balance: i.e. if keeping it all and handing out the orphans is already optimal.
    keep_all = {m: list(first[m]) for m in rest}
    for tp in orphans:
        eligible = [m for m in rest if tp.topic in rest[m].topics]
        if eligible:
            keep_all[min(eligible, key=lambda m: (len(keep_all[m]), m))].append(tp)
    if square_sum({m: Assignment(v) for m, v in keep_all.items()}) == square_sum(
            {m: Assignment(v) for m, v in second.items()}):
        assert not moved


@given(groups(with_owned=False, same_subscriptions=True), st.integers(1, 3))
@settings(max_examples=200, deadline=None)
def test_members_joining_keep_their_quota_of_owned_partitions(case, joining) -> None:
    ppt, subs = case
    first = _plan(ppt, subs).assignment
    topics = next(iter(subs.values())).topics
    grown = {m: Subscription(topics, None, first[m], 1) for m in subs}
    grown |= {f"new-{i}": Subscription(topics) for i in range(joining)}
    second = _plan(ppt, grown).assignment
    quota_floor = partitions_in(ppt, grown) // len(grown)
    for m in subs:
        kept = set(first[m]) & set(second[m])
        assert len(kept) >= min(len(first[m]), quota_floor)
    check_valid(ppt, grown, {m: Assignment(v) for m, v in second.items()})
    assert max(loads({m: Assignment(v) for m, v in second.items()}).values()) - min(len(v) for v in second.values()) <= 1


@given(groups(), st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_result_does_not_depend_on_input_order(case, rnd) -> None:
    """The leader may see members, topics and owned partitions in any order (and a
    caller may build them from sets): the assignment must be the same."""
    ppt, subs = case
    shuffled_ppt = dict(rnd.sample(list(ppt.items()), len(ppt)))
    shuffled = {
        m: Subscription(rnd.sample(s.topics, len(s.topics)), None,
                        rnd.sample(s.owned_partitions, len(s.owned_partitions)), s.generation_id)
        for m, s in rnd.sample(list(subs.items()), len(subs))
    }
    expected = {m: sorted(v) for m, v in _plan(ppt, subs).assignment.items()}
    assert {m: sorted(v) for m, v in _plan(shuffled_ppt, shuffled).assignment.items()} == expected
    coop = CooperativeStickyAssignor()
    assert coop.assign(shuffled_ppt, shuffled) == coop.assign(ppt, subs)
