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
import enum
import logging
import time
import uuid
from typing import Any

from kafkalite.backoff import ExponentialBackoff
from kafkalite.consumer.offsets import Generation
from kafkalite.errors import CommitFailedError, KafkaConnectionError, KafkaError, error_for_code
from kafkalite.net.client import COORDINATOR_CHANNEL
from kafkalite.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
)
from kafkalite.types import TopicPartition

log = logging.getLogger("kafkalite.consumer.group")

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
_COORDINATOR_ERRORS = {14, 15, 16}
_FENCED = {25, 110}  # UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH
_FATAL = {30, 35, 42, 69, 81, 82, 111, 112, 128}
# GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION, INVALID_REQUEST, GROUP_ID_NOT_FOUND,
# GROUP_MAX_SIZE_REACHED, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR,
# INVALID_REGULAR_EXPRESSION


class State(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    STABLE = "stable"
    FENCED = "fenced"
    FATAL = "fatal"


class ConsumerGroupMember:
    """This consumer's membership in a KIP-848 consumer group (engine side)."""

    def __init__(self, core: Any) -> None:
        self.core = core
        cfg = core.cfg
        self.cfg = cfg
        self.client = core.client
        self.group_id: str = cfg["group.id"]
        self.instance_id: str | None = cfg["group.instance.id"]
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0
        self.state = State.UNSUBSCRIBED
        self.server_assignor: str | None = cfg["group.remote.assignor"]
        self.rack: str | None = cfg["client.rack"] or None
        self.interval_s = 5.0
        self._target: dict[uuid.UUID, list[int]] | None = None
        self._target_changed = False
        self._first_reconcile = True
        self._fatal: KafkaError | None = None
        self._rejoin_allowed = True
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self._reconciler: asyncio.Task[Any] | None = None
        self._backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])
        self._last_sent: tuple[Any, Any] | None = None

    # ------------------------------------------------------------ interface used by the core

    def start(self) -> None:
        if not self._tasks:
            task = self.core.loop.create_task(self._run(), name="kafkalite-group-heartbeat")
            task.add_done_callback(self.core._task_done)
            self._tasks.append(task)

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._reconciler is not None:
            self._reconciler.cancel()

    def generation(self) -> Generation:
        return Generation(self.member_epoch, self.member_id, self.instance_id)

    def raise_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def check_can_commit(self) -> None:
        if self.member_epoch <= 0 and self.core.subs.has_auto_assignment:
            raise CommitFailedError(
                f"cannot commit: this consumer is not an active member of group {self.group_id!r} "
                "(joining, or the membership was lost); poll() to rejoin", group_id=self.group_id)

    def on_commit_result(self, error: BaseException | None) -> None:
        return None

    def on_poll(self, now: float) -> None:
        if not self._rejoin_allowed:
            self.core.call_soon(self._allow_rejoin)

    def _allow_rejoin(self) -> None:
        self._rejoin_allowed = True
        self._wake.set()

    def on_subscription_change(self) -> None:
        self._wake.set()

    def on_metadata_update(self) -> None:
        if self._target is not None and self.state is State.RECONCILING:
            self._wake.set()

    # ------------------------------------------------------------ heartbeat loop

    async def _run(self) -> None:
        attempt = 0
        max_poll_s = self.cfg["max.poll.interval.ms"] / 1000.0
        while True:
            subs = self.core.subs
            while not (subs.has_auto_assignment and self._rejoin_allowed and self._fatal is None):
                self._wake.clear()
                await self._wake.wait()
            if self.member_epoch > 0 and time.monotonic() - self.core.last_poll > max_poll_s:
                await self._poll_timeout()
                continue
            if self.state is State.UNSUBSCRIBED:
                self.state = State.JOINING
                self.member_epoch = 0
                self._first_reconcile = True
            self._wake.clear()
            try:
                response = await self._heartbeat(self.member_epoch)
                attempt = 0
            except asyncio.CancelledError:
                raise
            except KafkaError as exc:
                attempt += 1
                log.debug("group %s: heartbeat failed: %s", self.group_id, exc)
                await asyncio.sleep(self._backoff.delay_s(attempt - 1))
                continue
            self._handle(response)
            if self._target_changed and (self._reconciler is None or self._reconciler.done()):
                self._target_changed = False
                self._reconciler = self.core.loop.create_task(self._reconcile(), name="kafkalite-reconcile")
            try:
                await asyncio.wait_for(self._wake.wait(), self.interval_s)
            except asyncio.TimeoutError:
                pass

    async def _heartbeat(self, epoch: int) -> Any:
        """Send one heartbeat; fields that did not change since the last one are null
        (KIP-848), except when joining or after an error, when everything is sent."""
        subs = self.core.subs
        owned: dict[uuid.UUID, list[int]] = {}
        meta = self.client.metadata
        for tp in sorted(subs.assigned_partitions()):
            state = subs.assignment.get(tp)
            if state is not None and state.pending_revocation:
                continue
            owned.setdefault(meta.topic_id(tp.topic), []).append(tp.partition)
        node = await self.client.find_coordinator(self.group_id, timeout_s=self.core._api_timeout)
        try:
            conn = await self.client.connection(node, COORDINATOR_CHANNEL)
        except KafkaConnectionError:
            self.client.invalidate_coordinator(self.group_id)
            raise
        version = conn.api_version(ConsumerGroupHeartbeatRequest)
        use_regex = subs.pattern is not None and version >= 1
        subscription = ("regex", subs.pattern.pattern) if use_regex and subs.pattern is not None else (
            "names", tuple(sorted(subs.topics)))
        owned_key = tuple(sorted((str(t), tuple(p)) for t, p in owned.items()))
        full = epoch <= 0 or self._last_sent is None
        request = ConsumerGroupHeartbeatRequest(group_id=self.group_id, member_id=self.member_id,
                                                member_epoch=epoch)
        if full:
            request.instance_id = self.instance_id
            request.rack_id = self.rack
            request.rebalance_timeout_ms = self.cfg["max.poll.interval.ms"]
            request.server_assignor = self.server_assignor
        if full or self._last_sent is None or self._last_sent[0] != subscription:
            if use_regex:
                request.subscribed_topic_regex = subscription[1]  # type: ignore[assignment]
            else:
                request.subscribed_topic_names = list(subscription[1])
        if full or self._last_sent is None or self._last_sent[1] != owned_key:
            request.topic_partitions = [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=p)
                                        for t, p in owned.items()]
        else:
            request.topic_partitions = None
        if version == 0:
            request.member_id = self.member_id if self.member_epoch > 0 else ""
        started = time.monotonic()
        log.debug("group %s: heartbeat epoch %d owned %s%s", self.group_id, epoch,
                  {meta.topic_name(k): v for k, v in owned.items()}, " (full)" if full else "")
        try:
            response = await conn.request(request, api_version=version)
        except KafkaConnectionError:
            self.client.invalidate_coordinator(self.group_id)
            self._last_sent = None
            raise
        if response.error_code == 0 and epoch >= 0:
            self._last_sent = (subscription, owned_key)
        else:
            self._last_sent = None
        now = time.monotonic()
        self.core.metrics.heartbeat_latency.record((now - started) * 1000.0, now)
        return response

    def _handle(self, response: Any) -> None:
        code = response.error_code
        if code == 0:
            self.core.metrics.last_heartbeat = time.monotonic()
            if response.member_id:
                self.member_id = response.member_id
            if response.heartbeat_interval_ms > 0:
                self.interval_s = response.heartbeat_interval_ms / 1000.0
            if response.member_epoch != self.member_epoch:
                log.debug("group %s: member epoch %d -> %d", self.group_id, self.member_epoch, response.member_epoch)
            self.member_epoch = response.member_epoch
            if self.state is State.JOINING:
                self.state = State.STABLE
            if response.assignment is not None:
                target = {t.topic_id: sorted(t.partitions) for t in response.assignment.topic_partitions}
                if target == self._target:
                    return
                self._target = target
                log.debug("group %s: epoch %d, target assignment %s", self.group_id, self.member_epoch,
                          {self.client.metadata.topic_name(k): v for k, v in self._target.items()})
                self._target_changed = True
            return
        message = response.error_message or ""
        if code in _FENCED:
            log.info("group %s: %s; the partitions are lost, joining again", self.group_id,
                     error_for_code(code).name)
            self._fenced()
            return
        if code in _COORDINATOR_ERRORS:
            if code != 14:
                self.client.invalidate_coordinator(self.group_id)
            return
        if code in _FATAL:
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
            self.state = State.FATAL
            self.core.notify_poll()
            return
        log.warning("group %s: heartbeat error %s", self.group_id, error_for_code(code, message))

    def _fenced(self) -> None:
        self.member_epoch = 0
        self._last_sent = None
        self.state = State.JOINING
        self._target = None
        self._target_changed = False
        owned = self.core.subs.assigned_partitions()
        if self._reconciler is not None:
            self._reconciler.cancel()
        if owned:
            self._reconciler = self.core.loop.create_task(self.core.revoke(owned, lost=True))
        self._first_reconcile = True
        self._wake.set()

    async def _poll_timeout(self) -> None:
        log.warning(
            "group %s: poll() was not called for more than max.poll.interval.ms=%d; leaving the group "
            "(the next poll() rejoins)", self.group_id, self.cfg["max.poll.interval.ms"])
        self._rejoin_allowed = False
        try:
            await self._send_leave()
        except KafkaError as exc:
            log.debug("leaving after poll timeout failed: %s", exc)
        self.state = State.UNSUBSCRIBED
        owned = self.core.subs.assigned_partitions()
        if owned:
            self.core.subs.mark_pending_revocation(owned)
            self._reconciler = self.core.loop.create_task(self.core.revoke(owned, lost=True))

    # ------------------------------------------------------------ reconciliation

    async def _reconcile(self) -> None:
        while True:
            target = self._target
            if target is None:
                return
            self.state = State.RECONCILING
            meta = self.client.metadata
            names = {tid: meta.topic_name(tid) for tid in target}
            if any(n is None for n in names.values()):
                try:
                    await self.client.refresh_metadata(all_topics=True, timeout_s=self.core._api_timeout)
                except KafkaError as exc:
                    log.debug("metadata for the assignment: %s", exc)
                meta = self.client.metadata
                names = {tid: meta.topic_name(tid) for tid in target}
                if any(n is None for n in names.values()):
                    await asyncio.sleep(self._backoff.delay_s(2))
                    if self._target is target:
                        continue
                    return
            wanted = {TopicPartition(names[tid], p) for tid, parts in target.items() for p in parts}  # type: ignore[arg-type]
            core = self.core
            owned = core.subs.assigned_partitions()
            revoked = owned - wanted
            added = wanted - owned
            if revoked:
                await core.revoke(revoked)
                self._wake.set()  # tell the broker at once that they are released
            if added or self._first_reconcile or revoked:
                self._first_reconcile = False
                self.client.track_topics({tp.topic for tp in wanted})
                await core.assign(wanted, added)
                core.metrics.rebalance.record()
                core.metrics.last_rebalance = time.monotonic()
                log.info("group %s: epoch %d, assigned %s", self.group_id, self.member_epoch, sorted(wanted))
            if self._target is target:
                self.state = State.STABLE
                if revoked or added:
                    self._wake.set()  # report the new owned partitions now
                return

    # ------------------------------------------------------------ leaving

    async def _send_leave(self) -> None:
        epoch = STATIC_LEAVE_EPOCH if self.instance_id is not None else LEAVE_EPOCH
        if self.member_epoch <= 0 and self.state is not State.STABLE:
            return
        response = await self._heartbeat(epoch)
        if response.error_code and response.error_code not in _FENCED:
            log.debug("leaving group %s: %s", self.group_id, error_for_code(response.error_code))
        log.info("group %s: member %s left (epoch %d)", self.group_id, self.member_id, epoch)

    async def leave(self, reason: str) -> None:
        """Leave the group (epoch -1; -2 for a static member)."""
        if self._reconciler is not None:
            self._reconciler.cancel()
        try:
            await self._send_leave()
        finally:
            self.member_epoch = 0
            self.state = State.UNSUBSCRIBED
            self._target = None
