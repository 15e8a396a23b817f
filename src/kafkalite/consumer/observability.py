"""The consumer's observability wiring: stall warnings, time lag, metrics outlets.

:class:`ConsumerObservability` is the one collaborator through which the consumer core
reports what the observability features need, so that the core only says *what
happened* (a poll began, records of these partitions were handed out, partitions were
revoked) and this module decides what that means:

* the :class:`~kafkalite.consumer.stall.StallDetector` (also handed to the fetcher,
  which reports fetch outcomes) and the engine task that checks it once a second;
* the time lag bookkeeping behind ``records-time-lag``: the timestamp of the last record
  returned per partition, stored once per fetch taken, never per record;
* :class:`~kafkalite.telemetry.hub.ClientTelemetry` (``metric.reporters``,
  ``otel.meter.provider``, KIP-714 push) with the consumer's KIP-714 resource
  attributes (group, instance and member id, rack), as Java's ``ClientTelemetryProvider``
  sets them.

Example (what the core does)::

    observe = ConsumerObservability(cfg, subs, fetcher, metrics, client, registry,
                                    group=lambda: core.group, read_committed=False,
                                    last_poll=lambda: core.last_poll)
    observe.start(loop, spawn)                 # stall watch + telemetry tasks
    observe.poll_began(now)
    observe.returned({tp: last_timestamp_ms})  # after handing out records
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from kafkalite.clients_common.membership import MembershipState
from kafkalite.config import CONSUMER, Config
from kafkalite.consumer import stall
from kafkalite.consumer.classic_member import MemberState
from kafkalite.consumer.metrics import ConsumerMetrics
from kafkalite.consumer.subscription import SubscriptionState
from kafkalite.metrics import Metrics
from kafkalite.net.client import NetworkClient
from kafkalite.telemetry.hub import ClientTelemetry
from kafkalite.types import TopicPartition

if TYPE_CHECKING:
    from kafkalite.consumer.fetcher import Fetcher
    from kafkalite.consumer.group_member import GroupMember

__all__ = ["ConsumerObservability", "group_is_stable"]

_STABLE = (MemberState.STABLE, MembershipState.STABLE)


def group_is_stable(group: GroupMember) -> bool:
    """Whether a group member (classic or KIP-848) has its assignment: not rebalancing."""
    return group.state in _STABLE


class ConsumerObservability:
    """What the consumer core tells the observability features (see the module doc).

    Args:
        cfg: the consumer's resolved settings.
        subs: its subscription state (assignment, positions, lag).
        fetcher: its fetcher (told of the stall detector: it reports fetch outcomes).
        metrics: its consumer metrics (time lag reads the last timestamps kept here).
        client: its network client (KIP-714 push).
        registry: its metric registry.
        group: returns the group member, or None (assign() or not subscribed yet).
        read_committed: ``isolation.level`` is read_committed (lag up to the LSO).
        last_poll: returns the monotonic time poll() last ran or was still waiting.
    """

    def __init__(self, cfg: Config, subs: SubscriptionState, fetcher: Fetcher, metrics: ConsumerMetrics,
                 client: NetworkClient, registry: Metrics, *, group: Callable[[], GroupMember | None],
                 read_committed: bool,
                 last_poll: Callable[[], float]) -> None:
        self.cfg = cfg
        self.subs = subs
        self.metrics = metrics
        self.read_committed = read_committed
        self._group = group
        self._last_poll = last_poll
        self.stall = fetcher.stall = stall.StallDetector(cfg["stall.warning.ms"], cfg["max.poll.interval.ms"])
        self.telemetry = ClientTelemetry(cfg, CONSUMER, client, registry, labels=self.telemetry_labels)

    def start(self, loop: asyncio.AbstractEventLoop,
              spawn: Callable[[Coroutine[Any, Any, None], str], object]) -> None:
        """Start the stall watch (through the core's ``spawn``) and the telemetry tasks."""
        spawn(stall.watch(self.stall, self.stall_views), "stall-watch")
        self.telemetry.start(loop)

    async def close(self, timeout_s: float) -> None:
        """KIP-714's terminating push and the last reports (before connections close)."""
        await self.telemetry.close(min(1.0, max(0.0, timeout_s / 4)))

    # ------------------------------------------------------------ what the core reports

    def poll_began(self, now: float) -> None:
        self.stall.polled(now)

    def returned(self, last_timestamps: Mapping[TopicPartition, int]) -> None:
        """poll() handed out records of these partitions, the last with this timestamp (ms)."""
        if last_timestamps:
            self.metrics.last_timestamp.update(last_timestamps)
            self.stall.returned(list(last_timestamps))

    def raised(self, tp: TopicPartition, error: BaseException) -> None:
        """poll() raises ``error`` of ``tp``'s fetched data (a stall names it)."""
        self.stall.raised(tp, error)

    def forget(self, partitions: set[TopicPartition]) -> None:
        """Partitions no longer assigned (revoked or lost)."""
        self.stall.forget(partitions)

    # ------------------------------------------------------------ what the observers read

    def telemetry_labels(self) -> dict[str, str | None]:
        """KIP-714 resource attributes, as Java's ClientTelemetryProvider sets them."""
        group = self._group()
        member = group.generation().member_id if group is not None and self.subs.has_auto_assignment else None
        return {"group_id": self.cfg["group.id"] or None, "group_instance_id": self.cfg["group.instance.id"],
                "group_member_id": member or None, "client_rack": self.cfg["client.rack"] or None}

    def stall_views(self) -> tuple[dict[TopicPartition, stall.PartitionView], bool]:
        """The assigned partitions as the stall check sees them, and whether the group rebalances."""
        group = self._group()
        rebalancing = group is not None and self.subs.has_auto_assignment and not group_is_stable(group)
        self.stall.still_polling(self._last_poll())
        return stall.partition_views(self.subs, self.read_committed), rebalancing
