"""What a consumer's group member is given, and what the consumer asks of it.

The consumer core (:mod:`kafkalite.consumer.core`) builds one group member when the
application first subscribes: :class:`~kafkalite.consumer.coordinator.ClassicGroupMember`
(``group.protocol=classic``) or :class:`~kafkalite.consumer.group_consumer_protocol.ConsumerGroupMember`
(KIP-848). Both take a :class:`GroupMemberContext`: the collaborators they work with,
named one by one, so that neither knows the core (they import this module, the core
imports them: imports point one way). The core in turn sees either member as a
:class:`GroupMember`.

A member hands partitions over through :class:`PartitionOwner` (the core): ``revoke``
commits what was consumed (auto-commit, unless the partitions are lost), stops fetching
them and runs the rebalance listener in the polling thread; ``assign`` takes the new
assignment and runs ``on_partitions_assigned``, as Java's ``ConsumerCoordinator`` and
``ConsumerMembershipManager`` do through ``ConsumerRebalanceListenerInvoker``.

Example (what the core does)::

    context = GroupMemberContext(cfg, client, subs, metrics, loop, tasks.task_done, notify_poll,
                                 call_soon, last_poll=lambda: core.last_poll, api_timeout_s=60.0,
                                 after_metadata=core.after_metadata, partitions=core)
    member = ClassicGroupMember(context)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kafkalite.config import Config
from kafkalite.consumer.metrics import ConsumerMetrics
from kafkalite.consumer.offsets import Generation
from kafkalite.consumer.subscription import SubscriptionState
from kafkalite.errors import KafkaError
from kafkalite.net.client import NetworkClient
from kafkalite.types import TopicPartition

__all__ = ["GroupMember", "GroupMemberContext", "PartitionOwner"]


class PartitionOwner(Protocol):
    """Who owns the consumer's partitions: a group member gives and takes them here (engine side)."""

    async def revoke(self, partitions: set[TopicPartition], *, lost: bool = False, always: bool = False) -> None:
        """Commit (auto-commit, unless ``lost``), stop fetching, call the listener
        (``on_partitions_lost`` when ``lost``; ``always``: even for no partitions, as an
        eager rebalance does)."""

    async def assign(self, partitions: set[TopicPartition], added: set[TopicPartition]) -> None:
        """Take ``partitions`` as the assignment, then call ``on_partitions_assigned(added)``."""


@dataclass(frozen=True)
class GroupMemberContext:
    """The collaborators of a group member, given by the consumer core.

    Attributes:
        cfg: the consumer's resolved settings.
        client: its network client (coordinator lookup, metadata).
        subs: its subscription state (topics, assignment).
        metrics: its consumer metrics (join, sync, heartbeat, rebalance).
        loop: the engine's event loop, on which the member's tasks run.
        task_done: called with each of the member's tasks when it ends (a task that
            dies reports its error from the next poll()).
        notify_poll: wakes a waiting poll() (a fatal error is raised from there).
        call_soon: runs a callable on the engine; used from the polling thread.
        last_poll: the monotonic time poll() last ran (``max.poll.interval.ms``).
        api_timeout_s: ``default.api.timeout.ms`` in seconds, the bound of a lookup.
        after_metadata: the consumer's reaction to fresh metadata (pattern matching).
        partitions: the owner of the partitions (revoke, assign).
    """

    cfg: Config
    client: NetworkClient
    subs: SubscriptionState
    metrics: ConsumerMetrics
    loop: asyncio.AbstractEventLoop
    task_done: Callable[[asyncio.Task[Any]], None]
    notify_poll: Callable[[], None]
    call_soon: Callable[..., None]
    last_poll: Callable[[], float]
    api_timeout_s: float
    after_metadata: Callable[[], None]
    partitions: PartitionOwner


class GroupMember(Protocol):
    """What the consumer core asks of its group member, classic or KIP-848."""

    @property
    def state(self) -> Any:
        """The membership state (``STABLE`` when the member has its assignment)."""

    def start(self) -> None:
        """Start the member's tasks (on the engine loop; idempotent)."""

    def stop(self) -> list[asyncio.Task[None]]:
        """Cancel the member's tasks and return them (await with ``cancel_and_wait``)."""

    def generation(self) -> Generation:
        """The generation (or member epoch) a commit carries."""

    def raise_fatal(self) -> None:
        """Raise the member's fatal error, if any (poll side)."""

    def check_can_commit(self) -> None:
        """Refuse a commit the group would not take now."""

    def commit_error(self, error: KafkaError, sent: Generation) -> KafkaError:
        """What a failed commit raises, classed as the member's protocol does."""

    def on_commit_result(self, error: BaseException | None) -> None:
        """A commit completed (``None``) or failed."""

    def on_poll(self, now: float) -> None:
        """Poll side: the application polled at ``now``."""

    def on_subscription_change(self) -> None:
        """The subscription changed (engine side)."""

    def on_metadata_update(self) -> None:
        """Fresh metadata arrived (engine side)."""

    async def leave(self, reason: str) -> None:
        """Leave the group."""
