"""CooperativeStickyAssignor: the KIP-429 two-round protocol, simulated without a broker.

A simulated group runs rebalances the way the classic coordinator does: members send
what they own and their generation; each member revokes what its new assignment lacks;
when something was revoked, a follow-up rebalance runs. The invariant checked at every
step: no partition is assigned to a member while another still owns it.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.consumer.assignors import (
    Assignment,
    CooperativeStickyAssignor,
    RebalanceProtocol,
    Subscription,
    validate_cooperative_assignment,
)
from kafkalite.consumer.assignors.sticky import MemberData
from kafkalite.types import TopicPartition as TP
from tests.helpers.assignors import check_valid, groups


def tps(*names: str) -> list[TP]:
    return [TP(n.rpartition("-")[0], int(n.rpartition("-")[2])) for n in names]


def rebalance(ppt, topics_of: dict[str, list[str]], owned: dict[str, list[TP]], generation: int):
    """One rebalance; returns the new owned map after members revoke/receive."""
    subs = {m: Subscription(topics_of[m], None, owned.get(m, []), generation if owned.get(m) is not None else -1)
            for m in topics_of}
    result = CooperativeStickyAssignor().assign(ppt, subs)
    validate_cooperative_assignment({m: owned.get(m, []) for m in topics_of}, result)
    check_valid(ppt, subs, result, complete=False)
    return {m: list(a.partitions) for m, a in result.items()}


def settle(ppt, topics_of, owned, generation=1, max_rounds=4):
    """Rebalance until nothing is revoked any more; returns (owned, rounds)."""
    for rounds in range(1, max_rounds + 1):
        new = rebalance(ppt, topics_of, owned, generation)
        generation += 1
        revoked = any(set(owned.get(m, [])) - set(new[m]) for m in topics_of)
        owned = new
        if not revoked:
            return owned, rounds
    raise AssertionError(f"no stable assignment after {max_rounds} rounds: {owned}")


def test_new_member_gets_moved_partitions_in_the_follow_up_round() -> None:
    ppt = {"t": 4}
    topics = {"A": ["t"], "B": ["t"]}
    r1 = rebalance(ppt, topics, {"A": tps("t-0", "t-1", "t-2", "t-3")}, 5)
    assert r1 == {"A": tps("t-0", "t-1"), "B": []}  # t-2, t-3 revoked first
    r2 = rebalance(ppt, topics, r1, 6)
    assert r2 == {"A": tps("t-0", "t-1"), "B": tps("t-2", "t-3")}


def test_partitions_nobody_owned_are_assigned_at_once() -> None:
    ppt = {"t": 3}
    r1 = rebalance(ppt, {"A": ["t"], "B": ["t"]}, {}, 1)
    assert sorted(len(v) for v in r1.values()) == [1, 2]


def test_same_generation_double_claim_is_withheld_from_both() -> None:
    ppt = {"t": 2}
    subs = {
        "A": Subscription(["t"], None, tps("t-0"), 4),
        "B": Subscription(["t"], None, tps("t-0", "t-1"), 4),
    }
    result = CooperativeStickyAssignor().assign(ppt, subs)
    assert all(TP("t", 0) not in a.partitions for a in result.values())
    assert result["B"].partitions == tps("t-1")


def test_stale_generation_claim_does_not_block_the_current_owner() -> None:
    ppt = {"t": 2}
    subs = {
        "A": Subscription(["t"], None, tps("t-0"), 2),      # missed a rebalance
        "B": Subscription(["t"], None, tps("t-0", "t-1"), 3),
    }
    result = CooperativeStickyAssignor().assign(ppt, subs)
    # A's claim is stale (generation 2 < 3): B is the owner of both and keeps its quota
    # (one), the lowest partition first as Java's ConstrainedAssignmentBuilder does; t-1
    # is revoked from B and cannot go to A in the same (cooperative) round.
    assert result["B"].partitions == tps("t-0")
    assert result["A"].partitions == []


def test_unsubscribed_partitions_are_revoked_then_reassigned() -> None:
    ppt = {"a": 1, "b": 1}
    topics = {"X": ["a"], "Y": ["a", "b"]}
    r1 = rebalance(ppt, topics, {"X": tps("a-0", "b-0"), "Y": []}, 3)
    assert r1 == {"X": tps("a-0"), "Y": []}
    assert rebalance(ppt, topics, r1, 4) == {"X": tps("a-0"), "Y": tps("b-0")}


def test_generation_from_user_data_for_old_subscription_versions() -> None:
    a = CooperativeStickyAssignor()
    a.on_assignment(Assignment(tps("t-0")), 17)
    ud = a.subscription_user_data({"t"})
    assert ud == b"\x00\x00\x00\x11"
    # v0/v1 subscription: no generation field, so the user data's int32 counts
    assert a.member_data(Subscription(["t"], ud, tps("t-0"))) == MemberData(tps("t-0"), 17)
    assert a.member_data(Subscription(["t"], b"\x01", tps("t-0"))) == MemberData(tps("t-0"), -1)
    assert a.member_data(Subscription(["t"], None, [])) == MemberData([], None)
    # v2+: the field wins over the user data
    assert a.member_data(Subscription(["t"], ud, [], 20)).generation == 20


def test_supports_cooperative_then_eager() -> None:
    assert CooperativeStickyAssignor.supported_protocols == [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]


@given(groups(with_owned=False), st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_membership_changes_settle_in_two_rounds_without_double_ownership(case, data) -> None:
    ppt, subs = case
    topics_of = {m: s.topics for m, s in subs.items()}
    owned, _ = settle(ppt, topics_of, {})
    # change membership: some leave, some join (with random subscriptions)
    leaving = data.draw(st.lists(st.sampled_from(sorted(topics_of)), unique=True, max_size=len(topics_of) - 1))
    for m in leaving:
        del topics_of[m]
        del owned[m]
    for i in range(data.draw(st.integers(0, 3))):
        topics_of[f"joiner-{i}"] = data.draw(st.lists(st.sampled_from(sorted(ppt)), min_size=1, unique=True))
    final, rounds = settle(ppt, topics_of, owned, generation=10)
    assert rounds <= 2
    full = {m: Subscription(t) for m, t in topics_of.items()}
    check_valid(ppt, full, {m: Assignment(v) for m, v in final.items()})  # complete again


@given(groups(same_subscriptions=True), st.integers(0, 3))
@settings(max_examples=150, deadline=None)
def test_balanced_after_settling_with_identical_subscriptions(case, joiners) -> None:
    ppt, subs = case
    topics = next(iter(subs.values())).topics
    owned = {m: s.owned_partitions for m, s in subs.items()}  # random, even conflicting, claims
    topics_of = {m: topics for m in subs} | {f"j{i}": topics for i in range(joiners)}
    final, _ = settle(ppt, topics_of, owned)
    counts = [len(v) for v in final.values()]
    assert max(counts) - min(counts) <= 1
