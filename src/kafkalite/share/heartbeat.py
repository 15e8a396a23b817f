"""Share group membership (KIP-932): ShareGroupHeartbeat to the share coordinator.

The share group's coordinator is the group coordinator of its id: FindCoordinator
``key_type=0`` (GROUP), as Java's share consumer does (``key_type=2``, SHARE, finds the
share-*state* coordinator of a "group:topicId:partition" key, which only brokers use). It
is talked to on the client's coordinator channel, so a heartbeat never waits behind a
ShareFetch. The
broker assigns partitions (its ``simple`` assignor gives one partition to many members)
and sets the heartbeat interval; this driver heartbeats at that interval, applies each
new assignment (topic ids resolved through metadata), and leaves with epoch -1.
Every decision is taken by :class:`~kafkalite.share.member.ShareMemberState`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from kafkalite.backoff import ExponentialBackoff
from kafkalite.clients_common.membership import (
    COORDINATOR_LOAD_IN_PROGRESS,
    LEAVE_EPOCH,
    HeartbeatAnswer,
    MembershipState,
)
from kafkalite.clients_common.tasks import wait_for_wake
from kafkalite.config import Config
from kafkalite.errors import (
    KafkaConnectionError,
    KafkaError,
    UnsupportedFeatureError,
    error_for_code,
)
from kafkalite.net.client import COORDINATOR_CHANNEL, COORDINATOR_GROUP, NetworkClient
from kafkalite.net.engine import cancel_and_wait
from kafkalite.net.features import SHARE_GROUPS
from kafkalite.protocol.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kafkalite.share.member import Next, ShareMemberState
from kafkalite.share.metrics import ShareConsumerMetrics
from kafkalite.types import TopicPartition

log = logging.getLogger("kafkalite.share")


class ShareGroupMember:
    """This consumer's membership in its share group (engine side).

    Args:
        cfg: the share consumer's settings.
        group_id: its share group.
        client: its network client.
        loop: the engine's event loop (the heartbeat task runs there).
        metrics: its share consumer metrics.
        task_done: called with the heartbeat task when it ends (a task that dies
            reports its error from the next poll()).
        subscription: the topic names subscribed now.
        notify_poll: wakes a waiting poll() (a fatal error is raised from there).
        request_metadata: asks for a metadata refresh (topic ids not known yet).
        on_assignment: the partitions assigned changed (fetch them).
    """

    def __init__(self, cfg: Config, group_id: str, client: NetworkClient, loop: asyncio.AbstractEventLoop,
                 metrics: ShareConsumerMetrics, *, task_done: Callable[[asyncio.Task[Any]], None],
                 subscription: Callable[[], frozenset[str]], notify_poll: Callable[[], None],
                 request_metadata: Callable[[], None],
                 on_assignment: Callable[[frozenset[TopicPartition]], None]) -> None:
        self.client = client
        self.group_id = group_id
        self.loop = loop
        self.metrics = metrics
        self.task_done = task_done
        self.subscription = subscription
        self.notify_poll = notify_poll
        self.request_metadata = request_metadata
        self.on_assignment = on_assignment
        self.rack: str | None = cfg["client.rack"] or None
        self.member = ShareMemberState()
        self.fatal: KafkaError | None = None
        self.assignment: frozenset[TopicPartition] = frozenset()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])
        self._api_timeout = cfg["default.api.timeout.ms"] / 1000.0

    @property
    def member_id(self) -> str:
        return self.member.member_id

    @property
    def active(self) -> bool:
        return self.member.active

    def start(self) -> None:
        if self._task is None:
            self._task = self.loop.create_task(self._run(), name="kafkalite-share-heartbeat")
            self._task.add_done_callback(self.task_done)

    def stop(self) -> list[asyncio.Task[None]]:
        """Cancel the heartbeat task; returns it (await with cancel_and_wait)."""
        if self._task is None:
            return []
        self._task.cancel()
        return [self._task]

    def wake(self) -> None:
        """Heartbeat now (the subscription changed, or metadata arrived for the assignment)."""
        self._wake.set()

    # ------------------------------------------------------------ heartbeat loop

    async def _run(self) -> None:
        attempt = 0
        member = self.member
        while True:
            while not member.should_heartbeat(bool(self.subscription())):
                self._wake.clear()
                await self._wake.wait()
            member.start_joining()
            self._wake.clear()
            try:
                response = await self._heartbeat(member.member_epoch)
            except asyncio.CancelledError:
                raise
            except UnsupportedFeatureError as exc:
                # A broker without share groups (before Kafka 4.1, or share.version=0).
                self.fatal = exc
                log.error("share group %s: %s", self.group_id, self.fatal)
                self.notify_poll()
                return
            except KafkaError as exc:
                attempt += 1
                log.debug("share group %s: heartbeat failed: %s", self.group_id, exc)
                await asyncio.sleep(self._backoff.delay_s(attempt - 1))
                continue
            if self._handle(response):
                attempt = 0
                wait = member.interval_s
            else:
                attempt += 1
                wait = self._backoff.delay_s(attempt - 1)
            if member.assignment and not self._resolve():
                wait = min(wait, self._backoff.delay_s(1))
            await wait_for_wake(self._wake, wait)

    async def _heartbeat(self, epoch: int) -> ShareGroupHeartbeatResponse:
        member = self.member
        subscription = tuple(sorted(self.subscription()))
        node = await self.client.find_coordinator(self.group_id, COORDINATOR_GROUP, timeout_s=self._api_timeout)
        try:
            conn = await self.client.connection(node, COORDINATOR_CHANNEL)
        except KafkaConnectionError:
            self.client.invalidate_coordinator(self.group_id, COORDINATOR_GROUP)
            raise
        conn.require(SHARE_GROUPS, group_id=self.group_id)
        full, send_topics = member.fields(subscription) if epoch >= 0 else (False, False)
        request = ShareGroupHeartbeatRequest(group_id=self.group_id, member_id=member.member_id,
                                             member_epoch=epoch)
        if full:
            request.rack_id = self.rack
        if send_topics:
            request.subscribed_topic_names = list(subscription)
        started = time.monotonic()
        try:
            response = await conn.request(request)
        except KafkaConnectionError:
            self.client.invalidate_coordinator(self.group_id, COORDINATOR_GROUP)
            member.sent(None, subscription)
            raise
        if epoch >= 0:
            member.sent(response.error_code, subscription)
        now = time.monotonic()
        self.metrics.heartbeat_latency.record((now - started) * 1000.0, now)
        return response

    def _handle(self, response: ShareGroupHeartbeatResponse) -> bool:
        """Apply one answer; False when it was an error to back off from."""
        code = response.error_code
        member = self.member
        outcome = member.on_response(HeartbeatAnswer.of(response))
        if code == 0:
            self.metrics.last_heartbeat = time.monotonic()
            if outcome is Next.ASSIGNMENT:
                self._resolve()
            return True
        message = response.error_message or ""
        if outcome is Next.FENCED:
            log.info("share group %s: %s; joining again", self.group_id, error_for_code(code).name)
            self._apply(frozenset())
        elif outcome is Next.COORDINATOR:
            if code != COORDINATOR_LOAD_IN_PROGRESS:
                self.client.invalidate_coordinator(self.group_id, COORDINATOR_GROUP)
        elif outcome is Next.FATAL:
            text = message or "ShareGroupHeartbeat failed"
            if code == 35:
                text = ("the broker does not support share groups (KIP-932): it needs Kafka 4.1+ with the "
                        f"share.version feature enabled ({message or 'UNSUPPORTED_VERSION'})")
            elif code == 23:
                text = (f"group {self.group_id!r} exists and is not a share group: a share consumer needs a "
                        f"group id of its own ({message or 'INCONSISTENT_GROUP_PROTOCOL'})")
            err = error_for_code(code, text, group_id=self.group_id)
            log.error("share group %s: fatal error: %s", self.group_id, err)
            self.fatal = err
            self._apply(frozenset())
            self.notify_poll()
        else:
            log.warning("share group %s: heartbeat error %s", self.group_id, error_for_code(code, message))
        return False

    def _resolve(self) -> bool:
        """Turn the assignment's topic ids into names; False (and a metadata refresh) if
        some are unknown yet."""
        meta = self.client.metadata
        wanted: set[TopicPartition] = set()
        missing = False
        for topic_id, partitions in self.member.assignment.items():
            name = meta.topic_name(topic_id)
            if name is None:
                missing = True
                continue
            wanted.update(TopicPartition(name, p) for p in partitions)
        if missing:
            self.request_metadata()
        self._apply(frozenset(wanted))
        return not missing

    def _apply(self, partitions: frozenset[TopicPartition]) -> None:
        if partitions != self.assignment:
            self.assignment = partitions
            log.info("share group %s: member %s epoch %d assigned %s", self.group_id, self.member.member_id,
                     self.member.member_epoch, sorted(partitions))
            self.metrics.rebalance.record()
            self.on_assignment(partitions)

    # ------------------------------------------------------------ leaving

    async def leave(self) -> None:
        """Leave the group (epoch -1); the assignment is dropped."""
        # The heartbeat loop must be gone before the leaving heartbeat goes out.
        await cancel_and_wait(self.stop(), 1.0)
        member = self.member
        try:
            if member.should_send_leave() and member.state is not MembershipState.FATAL:
                member.leaving()
                response = await self._heartbeat(LEAVE_EPOCH)
                if response.error_code and response.error_code not in (25, 110):
                    log.debug("leaving share group %s: %s", self.group_id, error_for_code(response.error_code))
                log.info("share group %s: member %s left", self.group_id, member.member_id)
        finally:
            member.left()
            self._apply(frozenset())
            self._task = None
