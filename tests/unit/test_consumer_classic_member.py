"""The classic group member state machine, driven without a broker."""

from __future__ import annotations

import pytest

from kafkalite.consumer.assignors import RebalanceProtocol
from kafkalite.consumer.classic_member import (
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    MEMBER_ID_REQUIRED,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    ClassicMemberState,
    CommitGate,
    JoinResult,
    MemberState,
    Next,
)
from kafkalite.types import TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
EAGER, COOPERATIVE = RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE


def joined(protocol: RebalanceProtocol = EAGER, generation: int = 1, instance_id: str | None = None,
           owned: frozenset[TopicPartition] = frozenset()) -> ClassicMemberState:
    member = ClassicMemberState(protocol, instance_id)
    member.prepare((), ["a"])
    member.joining(["a"])
    assert member.on_join_response(JoinResult(0, generation, "m-1", "range", "m-1")) is Next.OK
    assert member.on_sync_response(0) is Next.OK
    member.complete(owned, ())
    return member


def test_first_join_walks_the_states() -> None:
    member = ClassicMemberState(EAGER)
    assert member.state is MemberState.UNJOINED and member.should_join(subscribed=True)
    assert not member.should_join(subscribed=False)
    assert member.prepare((), ["a"]).partitions == frozenset()
    member.joining(["a"])
    assert member.state is MemberState.PREPARING_REBALANCE and not member.need_rejoin
    assert not member.should_heartbeat()  # no heartbeats while JoinGroup is outstanding
    # KIP-394: the first JoinGroup is answered with a member id to join with.
    assert member.on_join_response(JoinResult(MEMBER_ID_REQUIRED, member_id="m-1")) is Next.JOIN_AGAIN
    assert member.member_id == "m-1"
    assert member.on_join_response(JoinResult(0, 5, "m-1", "range", "m-2")) is Next.OK
    assert member.state is MemberState.COMPLETING_REBALANCE and member.generation_id == 5
    assert not member.is_leader and member.should_heartbeat()
    assert member.commit_gate() is CommitGate.REBALANCING  # between JoinGroup and SyncGroup
    change = member.complete({A0, A1}, ())
    assert member.state is MemberState.STABLE
    assert change.assigned == change.added == {A0, A1} and not change.revoked and not change.rejoin_reason


def test_eager_revokes_everything_before_joining_even_nothing() -> None:
    member = joined(EAGER, owned=frozenset({A0, A1}))
    revocation = member.prepare({A0, A1}, ["a"])
    assert revocation.partitions == {A0, A1} and not revocation.lost and revocation.always
    assert joined(EAGER).prepare((), ["a"]).always  # on_partitions_revoked(set()) as Java


def test_cooperative_keeps_owned_partitions_and_revokes_in_a_second_round() -> None:
    member = joined(COOPERATIVE, owned=frozenset({A0, A1}))
    # Before joining only partitions of topics no longer subscribed are revoked.
    assert member.prepare({A0, A1, B0}, ["a"]).partitions == {B0}
    member.joining(["a"])
    member.on_join_response(JoinResult(0, 2, "m-1", "cooperative-sticky", "m-1"))
    change = member.complete({A0}, {A0, A1})
    assert change.revoked == {A1} and change.added == frozenset() and change.assigned == {A0}
    assert change.rejoin_reason and member.need_rejoin  # KIP-429: rejoin after revoking
    member.joining(["a"])
    member.on_join_response(JoinResult(0, 3, "m-1", "cooperative-sticky", "m-1"))
    change = member.complete({A0, B0}, {A0}, ["a", "b"])
    assert change.added == {B0} and not change.revoked and not change.rejoin_reason


def test_an_assignment_of_unsubscribed_topics_asks_for_a_rebalance() -> None:
    member = joined(COOPERATIVE)
    member.joining(["a"])
    member.on_join_response(JoinResult(0, 2, "m-1", "x", "m-2"))
    change = member.complete({A0, B0}, (), ["a"])
    assert "does not subscribe" in change.rejoin_reason and member.need_rejoin


@pytest.mark.parametrize("code,keeps_member", [(UNKNOWN_MEMBER_ID, False), (ILLEGAL_GENERATION, True)])
def test_join_errors_reset_the_generation_and_join_again(code: int, keeps_member: bool) -> None:
    member = joined(owned=frozenset({A0}))
    member.joining(["a"])
    assert member.on_join_response(JoinResult(code)) is Next.JOIN_AGAIN
    assert member.generation_id == -1 and (member.member_id == "m-1") is keeps_member
    assert member.lost  # what we owned is reported lost, not revoked
    assert member.take_lost({A0}) == {A0} and member.take_lost({A0}) is None


def test_rebalance_in_progress_on_join_and_sync() -> None:
    member = joined()
    member.joining(["a"])
    assert member.on_join_response(JoinResult(REBALANCE_IN_PROGRESS)) is Next.JOIN_AGAIN
    assert member.member_id == "m-1"
    member.on_join_response(JoinResult(0, 4, "m-1", "range", "m-1"))
    assert member.on_sync_response(REBALANCE_IN_PROGRESS) is Next.JOIN_AGAIN
    assert member.generation_id == 4  # the generation stands; only the round restarts
    assert member.on_sync_response(UNKNOWN_MEMBER_ID) is Next.JOIN_AGAIN and member.member_id == ""


@pytest.mark.parametrize("code,expected", [
    (15, Next.COORDINATOR), (16, Next.COORDINATOR), (14, Next.COORDINATOR),
    (23, Next.FATAL), (24, Next.FATAL), (30, Next.FATAL), (81, Next.FATAL), (FENCED_INSTANCE_ID, Next.FATAL),
    (58, Next.FAIL),
])
def test_join_and_sync_failures(code: int, expected: Next) -> None:
    member = ClassicMemberState(EAGER)
    member.joining(["a"])
    assert member.on_join_response(JoinResult(code)) is expected
    assert member.on_sync_response(code) is expected


def test_heartbeat_answers() -> None:
    member = joined(owned=frozenset({A0}))
    assert member.on_heartbeat_response(0) is Next.OK
    assert member.on_heartbeat_response(REBALANCE_IN_PROGRESS) is Next.REJOIN and member.need_rejoin
    member.joining(["a"])
    member.on_join_response(JoinResult(0, 2, "m-1", "range", "m-1"))
    # While completing a rebalance, REBALANCE_IN_PROGRESS is expected: nothing to do.
    assert member.on_heartbeat_response(REBALANCE_IN_PROGRESS) is Next.OK
    assert member.on_heartbeat_response(16) is Next.COORDINATOR
    assert member.on_heartbeat_response(58) is Next.IGNORE
    assert member.on_heartbeat_response(ILLEGAL_GENERATION) is Next.LOST
    assert member.state is MemberState.UNJOINED and member.member_id == "m-1" and member.lost
    assert not member.should_heartbeat() and member.commit_gate() is CommitGate.NOT_MEMBER
    assert member.prepare({A0}, ["a"]).lost  # on_partitions_lost, never revoked


def test_a_fenced_static_member_stops_for_good() -> None:
    member = joined(instance_id="i-1")
    assert member.on_heartbeat_response(FENCED_INSTANCE_ID) is Next.FATAL
    assert member.fatal_code == FENCED_INSTANCE_ID and not member.should_join(subscribed=True)
    assert member.is_fatal(FENCED_INSTANCE_ID) and not member.is_fatal(REBALANCE_IN_PROGRESS)


def test_poll_timeout_leaves_and_waits_for_the_next_poll() -> None:
    dynamic = joined()
    assert dynamic.should_send_leave()
    dynamic.left()
    dynamic.poll_timeout()
    assert dynamic.member_id == "" and not dynamic.should_join(subscribed=True)
    dynamic.allow_rejoin()
    assert dynamic.should_join(subscribed=True)
    static = joined(instance_id="i-1")
    assert not static.should_send_leave()  # KIP-345: static members never send LeaveGroup
    assert static.poll_timeout() and static.member_id == "m-1"


def test_subscription_and_metadata_changes_trigger_rebalances() -> None:
    member = joined()
    assert not member.on_subscription_change(["a"])
    assert member.on_subscription_change(["a", "b"]) and member.rejoin_reason == "the subscription changed"
    member = joined()
    member.partition_counts = {"a": 2}
    assert not member.on_metadata_update({"a": 2})
    assert member.on_metadata_update({"a": 3}) and member.need_rejoin


# ---------------------------------------------------------------- commits (Java's generationIfStable)


@pytest.mark.parametrize("protocol", [EAGER, COOPERATIVE])
def test_commits_go_out_only_with_a_stable_generation(protocol: RebalanceProtocol) -> None:
    member = joined(protocol, generation=4, owned=frozenset({A0}))
    assert member.commit_gate() is CommitGate.OPEN
    # The heartbeat says the group rebalances: the member still commits with generation 4
    # (the broker accepts it while preparing the rebalance) until it sends JoinGroup.
    assert member.on_heartbeat_response(REBALANCE_IN_PROGRESS) is Next.REJOIN
    assert member.commit_gate() is CommitGate.OPEN
    member.prepare({A0}, ["a"])
    member.joining(["a"])
    # JoinGroup is outstanding: the broker would answer a commit only after the join
    # completed, with generation 5 by then, so the commit is refused as "retry after poll".
    assert member.commit_gate() is CommitGate.REBALANCING
    member.on_join_response(JoinResult(0, 5, "m-1", "cooperative-sticky", "m-1"))
    assert member.state is MemberState.COMPLETING_REBALANCE
    assert member.commit_gate() is CommitGate.REBALANCING
    member.on_sync_response(0)
    member.complete({A0}, {A0})
    assert member.commit_gate() is CommitGate.OPEN and member.generation_id == 5


def test_a_member_without_a_generation_cannot_commit() -> None:
    member = joined(COOPERATIVE, generation=4, owned=frozenset({A0}))
    assert member.on_heartbeat_response(ILLEGAL_GENERATION) is Next.LOST
    assert member.commit_gate() is CommitGate.NOT_MEMBER
    assert ClassicMemberState(EAGER).commit_gate() is CommitGate.NOT_MEMBER


@pytest.mark.parametrize("code", [ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID])
def test_a_stale_generation_on_a_commit_means_retry_after_poll_when_the_member_moved_on(code: int) -> None:
    member = joined(COOPERATIVE, generation=4, owned=frozenset({A0}))
    member.joining(["a"])  # rejoining: JoinGroup outstanding
    assert member.on_commit_error(code, sent_generation=4) is CommitGate.REBALANCING
    assert member.has_generation and not member.lost  # nothing reset
    # Already stable in a newer generation: the commit only carried the old one.
    member.on_join_response(JoinResult(0, 5, "m-1", "cooperative-sticky", "m-1"))
    member.on_sync_response(0)
    member.complete({A0}, {A0})
    assert member.on_commit_error(code, sent_generation=4) is CommitGate.REBALANCING
    assert member.generation_id == 5 and member.commit_gate() is CommitGate.OPEN


@pytest.mark.parametrize(("code", "keeps_member"), [(ILLEGAL_GENERATION, True), (UNKNOWN_MEMBER_ID, False)])
def test_a_stale_generation_on_a_commit_of_a_stable_member_means_it_was_removed(code: int,
                                                                              keeps_member: bool) -> None:
    member = joined(COOPERATIVE, generation=4, owned=frozenset({A0}))
    assert member.on_commit_error(code, sent_generation=4) is CommitGate.NOT_MEMBER
    assert member.lost and not member.has_generation and member.need_rejoin
    assert (member.member_id == "m-1") is keeps_member
    assert member.commit_gate() is CommitGate.NOT_MEMBER


def test_rebalance_in_progress_on_a_commit_asks_for_a_rejoin_once() -> None:
    member = joined(COOPERATIVE, generation=4, owned=frozenset({A0}))
    member.need_rejoin = False
    assert member.on_commit_error(REBALANCE_IN_PROGRESS, sent_generation=4) is CommitGate.REBALANCING
    assert member.need_rejoin and member.has_generation
    member.joining(["a"])  # the rejoin is under way: another answer asks for nothing more
    assert member.on_commit_error(REBALANCE_IN_PROGRESS, sent_generation=4) is CommitGate.REBALANCING
    assert not member.need_rejoin


def test_a_fenced_static_member_commit_is_fatal_unless_it_already_rejoined() -> None:
    member = joined(COOPERATIVE, generation=4, instance_id="i-1", owned=frozenset({A0}))
    assert member.on_commit_error(FENCED_INSTANCE_ID, sent_generation=4) is CommitGate.FATAL
    member = joined(COOPERATIVE, generation=4, instance_id="i-1", owned=frozenset({A0}))
    member.joining(["a"])
    assert member.on_commit_error(FENCED_INSTANCE_ID, sent_generation=4) is CommitGate.REBALANCING
