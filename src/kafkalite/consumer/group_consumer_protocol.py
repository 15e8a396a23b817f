"""KIP-848 group membership (``group.protocol=consumer``): ConsumerGroupHeartbeat.

The broker computes assignments (``group.remote.assignor``: ``uniform`` or ``range``)
and moves partitions incrementally: there is no group-wide stop-the-world rebalance.
The member only heartbeats: its subscription (topic names, or a regex the broker
evaluates, ConsumerGroupHeartbeat v1+), the partitions it owns, and its member epoch.
A response may carry a new target assignment, which the member *reconciles*:

1. partitions it owns but no longer has as target are revoked: auto-commit, then
   ``on_partitions_revoked`` (in the polling thread), then dropped; the next heartbeat
   tells the broker they are released, and only then does the broker hand them on;
2. new partitions are added and ``on_partitions_assigned`` runs (with the added set,
   possibly empty) before any of their records is returned.

The listener rules are the cooperative ones (see :mod:`kafkalite.consumer.listener`).
A fenced member (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) loses its partitions
(``on_partitions_lost``) and joins again with epoch 0. Leaving sends epoch -1 (or -2
for a static member, which keeps its assignment for a quick restart).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from kafkalite.backoff import ExponentialBackoff
from kafkalite.clients_common.membership import (
    COORDINATOR_LOAD_IN_PROGRESS,
    HeartbeatAnswer,
    MembershipState,
)
from kafkalite.clients_common.tasks import wait_for_wake
from kafkalite.consumer._frontend import require_group
from kafkalite.consumer.group_member import GroupMemberContext
from kafkalite.consumer.kip848_member import ConsumerMemberState, Next
from kafkalite.consumer.offsets import Generation
from kafkalite.errors import (
    CommitFailedError,
    KafkaConnectionError,
    KafkaError,
    UnsupportedFeatureError,
    error_for_code,
)
from kafkalite.net.client import COORDINATOR_CHANNEL
from kafkalite.net.features import KIP848_GROUPS
from kafkalite.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from kafkalite.types import TopicPartition

log = logging.getLogger("kafkalite.consumer.group")

__all__ = ["ConsumerGroupMember"]


class ConsumerGroupMember:
    """This consumer's membership in a KIP-848 consumer group (engine side).

    Decisions live in :class:`~kafkalite.consumer.kip848_member.ConsumerMemberState`
    (``self.member``); this class sends the heartbeats and runs reconciliations.
    """

    def __init__(self, context: GroupMemberContext) -> None:
        self.context = context
        cfg = context.cfg
        self.cfg = cfg
        self.client = context.client
        self.subs = context.subs
        self.metrics = context.metrics
        self.partitions = context.partitions
        self.group_id = require_group(cfg, "joining a group")  # subscribe() checked it already
        self.instance_id: str | None = cfg["group.instance.id"]
        self.member = ConsumerMemberState(instance_id=self.instance_id)
        self.server_assignor: str | None = cfg["group.remote.assignor"]
        self.rack: str | None = cfg["client.rack"] or None
        self._fatal: KafkaError | None = None
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._reconciler: asyncio.Task[None] | None = None
        self._backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])

    @property
    def member_id(self) -> str:
        return self.member.member_id

    @property
    def member_epoch(self) -> int:
        return self.member.member_epoch

    @property
    def state(self) -> MembershipState:
        return self.member.state

    # ------------------------------------------------------------ interface used by the core

    def start(self) -> None:
        if not self._tasks:
            task = self.context.loop.create_task(self._run(), name="kafkalite-group-heartbeat")
            task.add_done_callback(self.context.task_done)
            self._tasks.append(task)

    def stop(self) -> list[asyncio.Task[None]]:
        """Cancel the heartbeat and reconciliation tasks; returns them (await with cancel_and_wait)."""
        tasks = list(self._tasks)
        if self._reconciler is not None:
            tasks.append(self._reconciler)
        for task in tasks:
            task.cancel()
        return tasks

    def generation(self) -> Generation:
        return Generation(self.member.member_epoch, self.member.member_id, self.instance_id)

    def raise_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def check_can_commit(self) -> None:
        if not self.member.can_commit() and self.subs.has_auto_assignment:
            raise CommitFailedError(
                f"cannot commit: this consumer is not an active member of group {self.group_id!r} "
                "(joining, or the membership was lost); poll() to rejoin", group_id=self.group_id)

    def commit_error(self, error: KafkaError, sent: Generation) -> KafkaError:
        """KIP-848 as Java's ``CommitRequestManager``: a fenced or unknown member cannot
        commit (CommitFailedError; the heartbeat rejoins with epoch 0); STALE_MEMBER_EPOCH
        stays as it is (a synchronous commit retries it with the current epoch)."""
        code = getattr(error, "code", None)
        if code in (25, 110):  # UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH
            return CommitFailedError(
                f"commit failed: this consumer is no longer a member of group {self.group_id!r} "
                f"(member epoch {sent.generation_id}, {error_for_code(code).name}); poll() rejoins, and "
                "records since the last commit may be delivered again", group_id=self.group_id)
        return error

    def on_commit_result(self, error: BaseException | None) -> None:
        return None

    def on_poll(self, now: float) -> None:
        if not self.member.rejoin_allowed:
            self.context.call_soon(self._allow_rejoin)

    def _allow_rejoin(self) -> None:
        self.member.allow_rejoin()
        self._wake.set()

    def on_subscription_change(self) -> None:
        self._wake.set()

    def on_metadata_update(self) -> None:
        if self.member.target is not None and self.member.state is MembershipState.RECONCILING:
            self._wake.set()

    # ------------------------------------------------------------ heartbeat loop

    async def _run(self) -> None:
        attempt = 0
        max_poll_s = self.cfg["max.poll.interval.ms"] / 1000.0
        member = self.member
        while True:
            subs = self.subs
            while not member.should_heartbeat(subs.has_auto_assignment):
                self._wake.clear()
                await self._wake.wait()
            if member.poll_timed_out(time.monotonic() - self.context.last_poll(), max_poll_s):
                await self._poll_timeout()
                continue
            member.start_joining()
            self._wake.clear()
            try:
                response = await self._heartbeat(member.member_epoch)
                attempt = 0
            except asyncio.CancelledError:
                raise
            except UnsupportedFeatureError as exc:
                log.error("group %s: %s", self.group_id, exc)
                self._fatal = exc
                self.context.notify_poll()
                return
            except KafkaError as exc:
                attempt += 1
                log.debug("group %s: heartbeat failed: %s", self.group_id, exc)
                await asyncio.sleep(self._backoff.delay_s(attempt - 1))
                continue
            self._handle(response)
            if member.target_changed and (self._reconciler is None or self._reconciler.done()):
                member.take_target_change()
                self._reconciler = self.context.loop.create_task(self._reconcile(), name="kafkalite-reconcile")
            await wait_for_wake(self._wake, member.interval_s)

    async def _heartbeat(self, epoch: int) -> ConsumerGroupHeartbeatResponse:
        """Send one heartbeat; fields that did not change since the last one are null
        (KIP-848), except when joining or after an error, when everything is sent."""
        subs = self.subs
        member = self.member
        owned: dict[uuid.UUID, list[int]] = {}
        meta = self.client.metadata
        for tp in sorted(subs.assigned_partitions()):
            state = subs.assignment.get(tp)
            if state is not None and state.pending_revocation:
                continue
            owned.setdefault(meta.topic_id(tp.topic), []).append(tp.partition)
        node = await self.client.find_coordinator(self.group_id, timeout_s=self.context.api_timeout_s)
        try:
            conn = await self.client.connection(node, COORDINATOR_CHANNEL)
        except KafkaConnectionError:
            self.client.invalidate_coordinator(self.group_id)
            raise
        # A broker without KIP-848 (before 4.0, or 3.7-3.9 without the consumer protocol
        # enabled, whose answer is UNSUPPORTED_VERSION, below) fails the member at once,
        # as Java's ConsumerGroupHeartbeatRequestManager does.
        conn.require(KIP848_GROUPS, group_id=self.group_id)
        version = conn.api_version(ConsumerGroupHeartbeatRequest)
        regex = subs.pattern.pattern if subs.pattern is not None and version >= 1 else None
        names = tuple(sorted(subs.topics))
        subscription = ("regex", regex) if regex is not None else ("names", names)
        owned_key = tuple(sorted((str(t), tuple(p)) for t, p in owned.items()))
        fields = member.heartbeat_fields(epoch, subscription, owned_key)
        request = ConsumerGroupHeartbeatRequest(group_id=self.group_id, member_id=member.member_id,
                                                member_epoch=epoch)
        if fields.full:
            request.instance_id = self.instance_id
            request.rack_id = self.rack
            request.rebalance_timeout_ms = self.cfg["max.poll.interval.ms"]
            request.server_assignor = self.server_assignor
        if fields.subscription:
            if regex is not None:
                request.subscribed_topic_regex = regex
            else:
                request.subscribed_topic_names = list(names)
        if fields.owned:
            request.topic_partitions = [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=p)
                                        for t, p in owned.items()]
        else:
            request.topic_partitions = None
        if version == 0:
            request.member_id = member.member_id if member.member_epoch > 0 else ""
        started = time.monotonic()
        log.debug("group %s: heartbeat epoch %d owned %s%s", self.group_id, epoch,
                  {meta.topic_name(k): v for k, v in owned.items()}, " (full)" if fields.full else "")
        try:
            response = await conn.request(request, api_version=version)
        except KafkaConnectionError:
            self.client.invalidate_coordinator(self.group_id)
            member.sent(None, epoch, subscription, owned_key)
            raise
        member.sent(response.error_code, epoch, subscription, owned_key)
        now = time.monotonic()
        self.metrics.heartbeat_latency.record((now - started) * 1000.0, now)
        return response

    def _handle(self, response: ConsumerGroupHeartbeatResponse) -> None:
        code = response.error_code
        member = self.member
        old_epoch = member.member_epoch
        outcome = member.on_heartbeat_response(HeartbeatAnswer.of(response))
        if code == 0:
            self.metrics.last_heartbeat = time.monotonic()
            if member.member_epoch != old_epoch:
                log.debug("group %s: member epoch %d -> %d", self.group_id, old_epoch, member.member_epoch)
            if outcome is Next.RECONCILE:
                log.debug("group %s: epoch %d, target assignment %s", self.group_id, member.member_epoch,
                          {self.client.metadata.topic_name(k): v for k, v in (member.target or {}).items()})
            return
        message = response.error_message or ""
        if outcome is Next.LOST:
            log.info("group %s: %s; the partitions are lost, joining again", self.group_id,
                     error_for_code(code).name)
            self._fenced()
        elif outcome is Next.COORDINATOR:
            if code != COORDINATOR_LOAD_IN_PROGRESS:
                self.client.invalidate_coordinator(self.group_id)
        elif outcome is Next.FATAL:
            err = error_for_code(code, message or "ConsumerGroupHeartbeat failed", group_id=self.group_id)
            if code == 111:
                err = error_for_code(code, (
                    f"group.instance.id {self.instance_id!r} is already in use by another member of group "
                    f"{self.group_id!r}: static member ids must be unique ({message})"), group_id=self.group_id)
            elif code == 35:
                err = error_for_code(code, (
                    "the broker does not accept group.protocol=consumer (KIP-848) for this group; enable it "
                    "with group.coordinator.rebalance.protocols or use group.protocol=classic"),
                    group_id=self.group_id)
            log.error("group %s: fatal error: %s", self.group_id, err)
            self._fatal = err
            self.context.notify_poll()
        else:
            log.warning("group %s: heartbeat error %s", self.group_id, error_for_code(code, message))

    def _fenced(self) -> None:
        owned = self.subs.assigned_partitions()
        if self._reconciler is not None:
            self._reconciler.cancel()
        if owned:
            self._reconciler = self.context.loop.create_task(self.partitions.revoke(owned, lost=True))
        self._wake.set()

    async def _poll_timeout(self) -> None:
        log.warning(
            "group %s: poll() was not called for more than max.poll.interval.ms=%d; leaving the group "
            "(the next poll() rejoins)", self.group_id, self.cfg["max.poll.interval.ms"])
        self.member.rejoin_allowed = False
        try:
            await self._send_leave()
        except KafkaError as exc:
            log.debug("leaving after poll timeout failed: %s", exc)
        self.member.poll_timeout()
        owned = self.subs.assigned_partitions()
        if owned:
            self.subs.mark_pending_revocation(owned)
            self._reconciler = self.context.loop.create_task(self.partitions.revoke(owned, lost=True))

    # ------------------------------------------------------------ reconciliation

    async def _reconcile(self) -> None:
        member = self.member
        while True:
            target = member.target
            if target is None:
                return
            meta = self.client.metadata
            names = {tid: meta.topic_name(tid) for tid in target}
            if any(n is None for n in names.values()):
                try:
                    await self.client.refresh_metadata(all_topics=True, timeout_s=self.context.api_timeout_s)
                except KafkaError as exc:
                    log.debug("metadata for the assignment: %s", exc)
                meta = self.client.metadata
                names = {tid: meta.topic_name(tid) for tid in target}
                if any(n is None for n in names.values()):
                    await asyncio.sleep(self._backoff.delay_s(2))
                    if member.target is target:
                        continue
                    return
            # Every name is known here (the loop above returns or starts over otherwise).
            wanted = {TopicPartition(name, p) for tid, parts in target.items()
                      if (name := names[tid]) is not None for p in parts}
            plan = member.reconcile(wanted, self.subs.assigned_partitions())
            if plan.revoked:
                await self.partitions.revoke(set(plan.revoked))
                self._wake.set()  # tell the broker at once that they are released
            if plan.assign:
                self.client.track_topics({tp.topic for tp in plan.wanted})
                await self.partitions.assign(set(plan.wanted), set(plan.added))
                self.metrics.rebalance.record()
                self.metrics.last_rebalance = time.monotonic()
                log.info("group %s: epoch %d, assigned %s", self.group_id, member.member_epoch,
                         sorted(plan.wanted))
            if member.reconciled(target):
                if plan.revoked or plan.added:
                    self._wake.set()  # report the new owned partitions now
                return

    # ------------------------------------------------------------ leaving

    async def _send_leave(self) -> None:
        member = self.member
        if not member.should_send_leave():
            return
        epoch = member.leave_epoch()
        response = await self._heartbeat(epoch)
        if response.error_code and response.error_code not in (25, 110):
            log.debug("leaving group %s: %s", self.group_id, error_for_code(response.error_code))
        log.info("group %s: member %s left (epoch %d)", self.group_id, member.member_id, epoch)

    async def leave(self, reason: str) -> None:
        """Leave the group (epoch -1; -2 for a static member)."""
        if self._reconciler is not None:
            self._reconciler.cancel()
        try:
            await self._send_leave()
        finally:
            self.member.left()
