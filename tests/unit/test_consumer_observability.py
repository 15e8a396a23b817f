"""The consumer core's observability collaborator, with no broker: what the stall check
sees, the time lag bookkeeping, and the KIP-714 resource attributes."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace
from typing import Any

import pytest

from kafkalite.clients_common.membership import MembershipState as Kip848State
from kafkalite.consumer.classic_member import MemberState
from kafkalite.consumer.metrics import ConsumerMetrics
from kafkalite.consumer.observability import ConsumerObservability, group_is_stable
from kafkalite.consumer.offsets import Generation
from kafkalite.consumer.subscription import SubscriptionState
from kafkalite.metrics import Metrics
from kafkalite.types import TopicPartition
from tests.helpers.settings import resolve

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class FakeGroup:
    """What the collaborator reads of a group member: its state and generation."""

    def __init__(self, state: Any, member_id: str = "member-1") -> None:
        self.state = state
        self._generation = Generation(3, member_id, None)

    def generation(self) -> Generation:
        return self._generation


def build(group: Any = None, **settings: Any) -> tuple[ConsumerObservability, SubscriptionState, Any]:
    cfg = resolve("consumer", {"bootstrap.servers": "127.0.0.1:1", "enable.metrics.push": False,
                               "stall.warning.ms": 1000, **settings})
    subs = SubscriptionState("earliest", True)
    metrics = ConsumerMetrics(Metrics(), subs, False)
    fetcher = SimpleNamespace(stall=None)
    holder = {"group": group, "last_poll": time.monotonic()}
    observe = ConsumerObservability(cfg, subs, fetcher, metrics, None, metrics.registry,
                                    group=lambda: holder["group"], read_committed=False,
                                    last_poll=lambda: holder["last_poll"])
    assert fetcher.stall is observe.stall  # the fetcher reports fetch outcomes to the same detector
    return observe, subs, holder


@pytest.mark.parametrize(("state", "stable"), [
    (MemberState.STABLE, True),
    (MemberState.UNJOINED, False),
    (MemberState.PREPARING_REBALANCE, False),
    (MemberState.COMPLETING_REBALANCE, False),
    (Kip848State.STABLE, True),
    (Kip848State.JOINING, False),
    (Kip848State.RECONCILING, False),
    (Kip848State.UNSUBSCRIBED, False),
])
def test_group_is_stable_for_both_protocols(state: Any, stable: bool) -> None:
    assert group_is_stable(FakeGroup(state)) is stable


def test_stall_views_name_lag_pause_and_rebalancing() -> None:
    observe, subs, holder = build()
    subs.assign_from_user([T0, T1])
    for tp in (T0, T1):
        subs.seek(tp, 5)
    subs.update_marks(T0, 12, 12, 0)
    subs.pause([T1])
    views, rebalancing = observe.stall_views()
    assert views[T0].lag == 7 and not views[T0].paused
    assert views[T1].lag is None and views[T1].paused
    assert rebalancing is False  # assign(): there is no group to rebalance

    # Subscribed, with a group member that is not stable: the group is rebalancing.
    observe, subs, holder = build(FakeGroup(MemberState.PREPARING_REBALANCE))
    subs.subscribe(["t"])
    subs.assign_from_subscribed([T0], awaiting_callback=[T0])
    views, rebalancing = observe.stall_views()
    assert rebalancing is True and views[T0].awaiting_rebalance
    holder["group"] = FakeGroup(Kip848State.STABLE)
    assert observe.stall_views()[1] is False


def test_stall_views_count_a_poll_still_waiting_as_polling() -> None:
    observe, _, holder = build()
    holder["last_poll"] = observe.stall.last_poll + 100.0
    observe.stall_views()
    assert observe.stall.last_poll == holder["last_poll"]


def test_returned_records_feed_time_lag_and_the_stall_detector() -> None:
    observe, subs, _ = build()
    subs.assign_from_user([T0, T1])
    subs.seek(T0, 10)
    subs.seek(T1, 10)
    subs.update_marks(T0, 20, 20, 0)   # ten records waiting
    subs.update_marks(T1, 10, 10, 0)   # caught up
    metrics = observe.metrics
    assert math.isnan(metrics.time_lag(T0))  # nothing returned yet: unknown
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    observe.returned({T0: an_hour_ago, T1: an_hour_ago})
    assert 3_600_000 <= metrics.time_lag(T0) < 3_700_000
    assert metrics.time_lag(T1) == 0.0
    assert set(observe.stall.last_returned) == {T0, T1}
    observe.returned({})  # nothing handed out: nothing changes
    observe.forget({T0})
    assert set(observe.stall.last_returned) == {T1}


def test_telemetry_labels_as_java_sets_them() -> None:
    observe, subs, holder = build(None, group_id="billing", group_instance_id="i-1", client_rack="rack-a")
    assert observe.telemetry_labels() == {"group_id": "billing", "group_instance_id": "i-1",
                                          "group_member_id": None, "client_rack": "rack-a"}
    holder["group"] = FakeGroup(MemberState.STABLE, "member-7")
    subs.subscribe(["t"])
    assert observe.telemetry_labels()["group_member_id"] == "member-7"
    observe, _, _ = build()
    assert observe.telemetry_labels() == {"group_id": None, "group_instance_id": None,
                                          "group_member_id": None, "client_rack": None}
