"""The KIP-848 member state machine (reconciliation, epochs, fencing), without a broker."""

from __future__ import annotations

import uuid

import pytest

from kafkalite.clients_common.membership import LEAVE_EPOCH, HeartbeatAnswer
from kafkalite.clients_common.membership import MembershipState as State
from kafkalite.consumer.kip848_member import STATIC_LEAVE_EPOCH, ConsumerMemberState, Next
from kafkalite.types import TopicPartition

T = uuid.UUID(int=7)
A0, A1, A2 = (TopicPartition("a", p) for p in range(3))
SUB = ("names", ("a",))


def stable(target: dict[uuid.UUID, list[int]] | None = None) -> ConsumerMemberState:
    member = ConsumerMemberState("m-1")
    member.start_joining()
    assert member.on_heartbeat_response(HeartbeatAnswer(0, "m-1", 1, 3000, target or {T: [0, 1]})) is Next.RECONCILE
    assert member.take_target_change() and not member.take_target_change()
    plan = member.reconcile({A0, A1}, ())
    assert member.reconciled(member.target)
    assert plan.added == {A0, A1}
    return member


def test_joining_then_a_first_target() -> None:
    member = ConsumerMemberState("m-1")
    assert member.state is State.UNSUBSCRIBED and member.should_heartbeat(subscribed=True)
    member.start_joining()
    assert member.state is State.JOINING and member.member_epoch == 0 and not member.can_commit()
    # Joining sends everything.
    assert member.heartbeat_fields(0, SUB, ()) == (True, True, True)
    member.sent(0, 0, SUB, ())
    result = HeartbeatAnswer(0, "m-2", 3, 2500, {T: [0, 1]})
    assert member.on_heartbeat_response(result) is Next.RECONCILE
    assert (member.member_id, member.member_epoch, member.interval_s) == ("m-2", 3, 2.5)
    assert member.state is State.STABLE and member.can_commit()
    plan = member.reconcile({A0, A1}, ())
    assert member.state is State.RECONCILING
    assert plan.added == {A0, A1} and not plan.revoked and plan.assign
    assert member.reconciled(member.target) and member.state is State.STABLE


def test_the_first_reconciliation_assigns_even_nothing() -> None:
    member = ConsumerMemberState("m-1")
    member.start_joining()
    member.on_heartbeat_response(HeartbeatAnswer(0, "m-1", 1, 0, {}))
    plan = member.reconcile((), ())
    assert plan.assign and not plan.added  # on_partitions_assigned(set()) once, as Java
    assert not member.reconcile((), ()).assign


def test_heartbeats_are_incremental() -> None:
    member = stable()
    owned = (("t", (0, 1)),)
    member.sent(0, 1, SUB, owned)
    assert member.heartbeat_fields(1, SUB, owned) == (False, False, False)
    assert member.heartbeat_fields(1, SUB, (("t", (0,)),)) == (False, False, True)
    assert member.heartbeat_fields(1, ("regex", "a.*"), owned) == (False, True, False)
    member.sent(None, 1, SUB, owned)  # a failed heartbeat: the next one is full
    assert member.heartbeat_fields(1, SUB, owned).full


def test_revoke_then_assign_as_the_target_moves() -> None:
    member = stable()
    # The broker moves a-1 away and gives a-2: revoke a-1, add a-2.
    assert member.on_heartbeat_response(HeartbeatAnswer(0, "m-1", 2, 0, {T: [0, 2]})) is Next.RECONCILE
    target = member.target
    plan = member.reconcile({A0, A2}, {A0, A1})
    assert plan.revoked == {A1} and plan.added == {A2} and plan.wanted == {A0, A2}
    # The same target again is no news.
    assert member.on_heartbeat_response(HeartbeatAnswer(0, "m-1", 2, 0, {T: [0, 2]})) is Next.OK
    assert member.reconciled(target)


def test_a_newer_target_during_reconciliation_keeps_reconciling() -> None:
    member = stable()
    member.on_heartbeat_response(HeartbeatAnswer(0, "m-1", 2, 0, {T: [0]}))
    first = member.target
    member.reconcile({A0}, {A0, A1})
    member.on_heartbeat_response(HeartbeatAnswer(0, "m-1", 3, 0, {T: [0, 2]}))
    assert not member.reconciled(first) and member.state is State.RECONCILING
    assert member.target_changed


@pytest.mark.parametrize("code", [25, 110])
def test_fenced_or_unknown_member_loses_partitions_and_rejoins_at_epoch_zero(code: int) -> None:
    member = stable()
    member.sent(0, 1, SUB, ())
    assert member.on_heartbeat_response(HeartbeatAnswer(code)) is Next.LOST
    assert member.member_epoch == 0 and member.state is State.JOINING and member.target is None
    assert member.heartbeat_fields(0, SUB, ()).full
    member.on_heartbeat_response(HeartbeatAnswer(0, "m-1", 5, 0, {T: [1]}))
    assert member.reconcile({A1}, ()).assign  # the first reconciliation after rejoining


@pytest.mark.parametrize("code,expected", [
    (14, Next.COORDINATOR), (15, Next.COORDINATOR), (16, Next.COORDINATOR),
    (30, Next.FATAL), (35, Next.FATAL), (111, Next.FATAL), (112, Next.FATAL), (128, Next.FATAL),
    (58, Next.IGNORE),
])
def test_error_codes(code: int, expected: Next) -> None:
    member = stable()
    assert member.on_heartbeat_response(HeartbeatAnswer(code)) is expected
    if expected is Next.FATAL:
        assert member.state is State.FATAL and member.fatal_code == code
        assert not member.should_heartbeat(subscribed=True)
    else:
        assert member.member_epoch == 1 and member.should_heartbeat(subscribed=True)


def test_leaving_dynamic_and_static() -> None:
    member = stable()
    assert member.should_send_leave() and member.leave_epoch() == LEAVE_EPOCH
    member.left()
    assert member.state is State.UNSUBSCRIBED and not member.should_send_leave()
    static = ConsumerMemberState("m-2", instance_id="i-1")
    assert static.leave_epoch() == STATIC_LEAVE_EPOCH
    # A leave heartbeat (negative epoch) never counts as the baseline of the next one.
    static.sent(0, LEAVE_EPOCH, SUB, ())
    assert static.heartbeat_fields(1, SUB, ()).full


def test_poll_timeout_waits_for_the_next_poll_and_joins_afresh() -> None:
    member = stable()
    assert member.poll_timed_out(10.0, 5.0) and not member.poll_timed_out(1.0, 5.0)
    member.poll_timeout()
    assert not member.should_heartbeat(subscribed=True)
    member.allow_rejoin()
    member.start_joining()
    assert member.state is State.JOINING and member.member_epoch == 0
