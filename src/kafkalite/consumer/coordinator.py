"""Classic consumer group membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

:class:`ClassicGroupMember` runs on the consumer's engine, talking to the group
coordinator on its own connection (``COORDINATOR_CHANNEL``), so a JoinGroup that waits
for the whole group never queues behind a fetch, and heartbeats go on while the
application processes records.

A rebalance, as in Java's ``ConsumerCoordinator``:

1. prepare: with auto-commit, commit what was consumed; eager assignors revoke
   everything (``on_partitions_revoked``, possibly empty); cooperative ones revoke only
   partitions of topics no longer subscribed; a member that lost its membership calls
   ``on_partitions_lost`` instead;
2. JoinGroup with one protocol per configured assignor (its subscription: topics, owned
   partitions, generation, rack); the elected leader runs the agreed assignor over
   every member's subscription;
3. SyncGroup hands out (or receives) the assignments;
4. complete: eager members take the new assignment; cooperative members first revoke
   what moved away, keep what stays (still fetched throughout), add the rest, and
   rejoin once more if they revoked anything (the second round of KIP-429).

Listener calls run in the thread that calls poll() (see :mod:`kafkalite.consumer.core`).
The member joins only while the application polls: exceeding ``max.poll.interval.ms``
makes it leave the group (LeaveGroup, unless static), and the next poll() rejoins.
Static members (``group.instance.id``, KIP-345) never send LeaveGroup; a newer member
with the same instance id fences this one: poll() then raises FencedInstanceIdError.
"""

from __future__ import annotations

import asyncio
import logging
import time

from kafkalite.backoff import ExponentialBackoff
from kafkalite.consumer._frontend import require_group
from kafkalite.consumer.assignors import (
    PROTOCOL_TYPE,
    Assignment,
    RebalanceProtocol,
    Subscription,
    assignors_from_config,
    common_rebalance_protocol,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    validate_assignment,
    validate_cooperative_assignment,
)
from kafkalite.consumer.classic_member import (
    COORDINATOR_LOAD_IN_PROGRESS,
    ClassicMemberState,
    CommitGate,
    JoinResult,
    MemberState,
    Next,
)
from kafkalite.consumer.group_member import GroupMemberContext
from kafkalite.consumer.offsets import Generation
from kafkalite.errors import (
    ApiError,
    CommitFailedError,
    FencedInstanceIdError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    RebalanceInProgressError,
    UnsupportedFeatureError,
    error_for_code,
)
from kafkalite.net.client import COORDINATOR_CHANNEL
from kafkalite.net.features import STATIC_MEMBERSHIP
from kafkalite.protocol.message import Request, ResponseT
from kafkalite.protocol.messages.heartbeat import HeartbeatRequest
from kafkalite.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from kafkalite.protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
)
from kafkalite.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from kafkalite.types import TopicPartition

log = logging.getLogger("kafkalite.consumer.group")

__all__ = ["ClassicGroupMember", "MemberState"]


#: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID
_COMMIT_GROUP_CODES = frozenset({22, 25, 27, 82})


class _Rejoin(Exception):
    """The join/sync round must start over (REBALANCE_IN_PROGRESS and friends)."""


class ClassicGroupMember:
    """This consumer's membership in a classic group (engine side).

    The decisions live in :class:`~kafkalite.consumer.classic_member.ClassicMemberState`
    (``self.member``); this class does the I/O, calls the listener through the core and
    feeds every answer back to it.
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
        self.assignors = assignors_from_config(cfg["partition.assignment.strategy"])
        self.protocol = common_rebalance_protocol(self.assignors)
        self.member = ClassicMemberState(self.protocol, self.instance_id)
        self.session_timeout_ms: int = cfg["session.timeout.ms"]
        self.heartbeat_interval_s: float = cfg["heartbeat.interval.ms"] / 1000.0
        self.rebalance_timeout_ms: int = cfg["max.poll.interval.ms"]
        self._fatal: KafkaError | None = None
        self._wake = asyncio.Event()
        self._hb_wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])
        self._last_heartbeat_ok = time.monotonic()

    # ------------------------------------------------------------ what the core reads

    @property
    def state(self) -> MemberState:
        return self.member.state

    @property
    def generation_id(self) -> int:
        return self.member.generation_id

    @property
    def member_id(self) -> str:
        return self.member.member_id

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._tasks:
            return
        loop = self.context.loop
        for coro, name in ((self._run(), "join"), (self._heartbeat_loop(), "heartbeat")):
            task = loop.create_task(coro, name=f"kafkalite-group-{name}")
            task.add_done_callback(self.context.task_done)
            self._tasks.append(task)

    def stop(self) -> list[asyncio.Task[None]]:
        """Cancel the join and heartbeat tasks; returns them (await with cancel_and_wait)."""
        for task in self._tasks:
            task.cancel()
        return list(self._tasks)

    def generation(self) -> Generation:
        return Generation(self.member.generation_id, self.member.member_id, self.instance_id)

    def raise_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def check_can_commit(self) -> None:
        """Refuse a commit that could not carry a stable generation (see
        :meth:`ClassicMemberState.commit_gate`): retry after poll() while rejoining,
        CommitFailedError when the membership is gone."""
        if not self.subs.has_auto_assignment:
            return
        gate = self.member.commit_gate()
        if gate is CommitGate.REBALANCING:
            raise self._rebalancing_error("this member is rejoining the group")
        if gate is not CommitGate.OPEN:
            raise CommitFailedError(
                f"cannot commit: this consumer is not an active member of group {self.group_id!r} "
                "(it was removed from the group, e.g. after missing heartbeats or max.poll.interval.ms); "
                "poll() rejoins, and records since the last commit may be delivered again",
                group_id=self.group_id)

    def commit_error(self, error: KafkaError, sent: Generation) -> KafkaError:
        """The error a failed commit raises, as Java's ``OffsetCommitResponseHandler``
        classes it: group codes become RebalanceInProgressError (retry after poll()),
        CommitFailedError (the membership is gone: partitions reported lost, rejoin) or
        the fatal fenced-instance error; other errors are returned unchanged."""
        code = getattr(error, "code", None)
        if not isinstance(code, int) or code not in _COMMIT_GROUP_CODES:
            return error
        gate = self.member.on_commit_error(code, sent.generation_id)
        if gate is CommitGate.REBALANCING:
            self._wake.set()
            return self._rebalancing_error(
                f"the commit carried generation {sent.generation_id} and the group moved on "
                f"({error_for_code(code).name})")
        if gate is CommitGate.FATAL:
            self._set_fatal(error)
            return self._fatal or error
        self._lose(self.member.lost)
        return CommitFailedError(
            f"commit failed: this consumer is no longer a member of group {self.group_id!r} in "
            f"generation {sent.generation_id} ({error_for_code(code).name}: the group rebalanced "
            "without it); poll() rejoins, and records since the last commit may be delivered again",
            group_id=self.group_id)

    def _rebalancing_error(self, why: str) -> RebalanceInProgressError:
        return RebalanceInProgressError(
            f"cannot commit while group {self.group_id!r} is rebalancing ({why}); call poll() to "
            "complete the rebalance, then commit again", group_id=self.group_id)

    def on_commit_result(self, error: BaseException | None) -> None:
        return None

    # ------------------------------------------------------------ signals (engine side unless noted)

    def on_poll(self, now: float) -> None:
        """Poll side: the application is polling, joining is allowed again."""
        if not self.member.rejoin_allowed:
            self.context.call_soon(self._allow_rejoin)

    def _allow_rejoin(self) -> None:
        self.member.allow_rejoin()
        self._wake.set()

    def request_rejoin(self, reason: str) -> None:
        if self.member.request_rejoin(reason):
            log.info("group %s: rejoining (%s)", self.group_id, reason)
        self._wake.set()

    def on_subscription_change(self) -> None:
        subs = self.subs
        if subs.has_auto_assignment and self.member.on_subscription_change(subs.topics):
            log.info("group %s: rejoining (the subscription changed)", self.group_id)
        self._wake.set()

    def on_metadata_update(self) -> None:
        meta = self.client.metadata
        counts = {t: meta.partition_count(t) or 0 for t in self.member.partition_counts}
        if self.member.on_metadata_update(counts):
            log.info("group %s: rejoining (the partitions of subscribed topics changed)", self.group_id)
            self._wake.set()

    def _lose(self, lost: bool) -> None:
        """The membership is gone: stop fetching what we owned (reported lost later)."""
        if lost and self.subs.assignment:
            self.subs.mark_pending_revocation(self.subs.assigned_partitions())
        self._wake.set()

    # ------------------------------------------------------------ the join loop

    async def _run(self) -> None:
        attempt = 0
        while True:
            await self._wait_for_work()
            try:
                await self._rebalance()
                attempt = 0
            except asyncio.CancelledError:
                raise
            except KafkaError as exc:
                if isinstance(exc, UnsupportedFeatureError) or (
                        isinstance(exc, ApiError) and self.member.is_fatal(exc.code)):
                    self._set_fatal(exc)
                    continue
                self.member.rebalance_failed()
                attempt += 1
                delay = self._backoff.delay_s(attempt - 1)
                log.info("group %s: rebalance attempt failed (%s); retrying in %.2fs", self.group_id, exc, delay)
                self.metrics.failed_rebalance.record()
                await asyncio.sleep(delay)

    def _set_fatal(self, exc: KafkaError) -> None:
        code = getattr(exc, "code", None)
        if isinstance(exc, FencedInstanceIdError) or code == 82:
            exc = FencedInstanceIdError(
                f"another consumer joined group {self.group_id!r} with the same group.instance.id "
                f"{self.instance_id!r}; this one was fenced and must be closed (static member ids must "
                "be unique)", group_id=self.group_id)
        elif isinstance(exc, ApiError):
            exc.with_context(group_id=self.group_id)
        log.error("group %s: fatal error: %s", self.group_id, exc)
        self._fatal = exc
        self._lose(self.member.set_fatal(code if isinstance(code, int) else -1))
        self.context.notify_poll()

    async def _wait_for_work(self) -> None:
        subs = self.subs
        while not self.member.should_join(subs.has_auto_assignment):
            self._wake.clear()
            await self._wake.wait()

    async def _coordinator(self) -> int:
        return await self.client.find_coordinator(self.group_id, timeout_s=self.context.api_timeout_s)

    async def _send(self, request: Request[ResponseT], timeout_ms: float | None = None) -> ResponseT:
        node = await self._coordinator()
        try:
            return await self.client.send(node, request, channel=COORDINATOR_CHANNEL, timeout_ms=timeout_ms)
        except KafkaConnectionError:
            self.client.invalidate_coordinator(self.group_id)
            raise

    def _coordinator_moved(self, code: int) -> None:
        if code != COORDINATOR_LOAD_IN_PROGRESS:
            self.client.invalidate_coordinator(self.group_id)

    async def _rebalance(self) -> None:
        subs = self.subs
        await self._refresh_subscription_metadata()
        revocation = self.member.prepare(subs.assigned_partitions(), subs.topics)
        if revocation.lost:
            await self.partitions.revoke(set(revocation.partitions), lost=True)
        elif revocation.partitions or revocation.always:
            await self.partitions.revoke(set(revocation.partitions), always=revocation.always)
        started = time.monotonic()
        while True:
            lost = self.member.take_lost(subs.assigned_partitions())
            if lost is not None:
                await self.partitions.revoke(set(lost), lost=True)
            try:
                join = await self._join()
                self.metrics.join_latency.record((time.monotonic() - started) * 1000.0)
                sync_started = time.monotonic()
                assignment_bytes = await self._sync(join)
                self.metrics.sync_latency.record((time.monotonic() - sync_started) * 1000.0)
                break
            except _Rejoin as why:
                log.debug("group %s: %s; joining again", self.group_id, why)
                continue
        await self._complete(join, assignment_bytes)

    async def _refresh_subscription_metadata(self) -> None:
        subs = self.subs
        try:
            if subs.pattern is not None:
                await self.client.refresh_metadata(all_topics=True, timeout_s=self.context.api_timeout_s)
                self.context.after_metadata()
            elif subs.topics:
                await self.client.refresh_metadata(subs.topics, timeout_s=self.context.api_timeout_s)
        except KafkaTimeoutError as exc:
            log.debug("metadata before joining: %s", exc)

    def _subscription_bytes(self, topics: list[str], owned: list[TopicPartition]) -> list[JoinGroupRequestProtocol]:
        rack = self.cfg["client.rack"] or None
        out = []
        for assignor in self.assignors:
            sub = Subscription(topics=topics, user_data=assignor.subscription_user_data(set(topics)),
                               owned_partitions=owned, generation_id=self.generation_id, rack_id=rack)
            out.append(JoinGroupRequestProtocol(name=assignor.name, metadata=encode_subscription(sub)))
        return out

    async def _join(self) -> JoinGroupResponse:
        subs = self.subs
        member = self.member
        while True:
            topics = sorted(subs.topics)
            member.joining(topics)
            owned = sorted(subs.assigned_partitions())
            if self.instance_id is not None:
                # JoinGroup before v5 has no group.instance.id: Java's JoinGroupRequest.Builder
                # refuses to drop it, and so does this (a static member that silently became
                # a dynamic one would rebalance on every restart).
                node = await self._coordinator()
                conn = await self.client.connection(node, COORDINATOR_CHANNEL)
                conn.require(STATIC_MEMBERSHIP, group_id=self.group_id)
            request = JoinGroupRequest(
                group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=member.member_id,
                group_instance_id=self.instance_id, protocol_type=PROTOCOL_TYPE,
                protocols=self._subscription_bytes(topics, owned), reason=member.rejoin_reason,
            )
            timeout = max(self.cfg["request.timeout.ms"], self.rebalance_timeout_ms + 5000)
            response = await self._send(request, timeout_ms=timeout)
            code = response.error_code
            outcome = member.on_join_response(JoinResult(code, response.generation_id, response.member_id,
                                                         response.protocol_name, response.leader))
            if outcome is Next.OK:
                return response
            if outcome is Next.JOIN_AGAIN:
                self._lose(member.lost)
                continue
            if outcome is Next.COORDINATOR:
                self._coordinator_moved(code)
            raise error_for_code(code, "JoinGroup failed", group_id=self.group_id)

    async def _sync(self, join: JoinGroupResponse) -> bytes:
        assignments: list[SyncGroupRequestAssignment] = []
        if join.leader == join.member_id and not join.skip_assignment:
            assignments = await self._leader_assign(join)
        request = SyncGroupRequest(
            group_id=self.group_id, generation_id=join.generation_id, member_id=join.member_id,
            group_instance_id=self.instance_id, protocol_type=PROTOCOL_TYPE, protocol_name=join.protocol_name,
            assignments=assignments,
        )
        response = await self._send(request)
        code = response.error_code
        outcome = self.member.on_sync_response(code)
        if outcome is Next.OK:
            return bytes(response.assignment or b"")
        if outcome is Next.JOIN_AGAIN:
            self._lose(self.member.lost)
            raise _Rejoin(f"SyncGroup said {error_for_code(code).name}")
        if outcome is Next.COORDINATOR:
            self._coordinator_moved(code)
        raise error_for_code(code, "SyncGroup failed", group_id=self.group_id)

    async def _leader_assign(self, join: JoinGroupResponse) -> list[SyncGroupRequestAssignment]:
        subscriptions: dict[str, Subscription] = {}
        for m in join.members:
            sub = decode_subscription(m.metadata)
            sub.group_instance_id = m.group_instance_id
            subscriptions[m.member_id] = sub
        all_topics = sorted({t for s in subscriptions.values() for t in s.topics})
        self.subs.group_topics = frozenset(all_topics)
        self.client.track_topics(all_topics)
        if all_topics:
            try:
                await self.client.refresh_metadata(all_topics, timeout_s=self.context.api_timeout_s)
            except KafkaTimeoutError as exc:
                log.warning("group %s: leader could not refresh metadata: %s", self.group_id, exc)
        meta = self.client.metadata
        per_topic = {t: meta.partition_count(t) or 0 for t in all_topics}
        per_topic = {t: n for t, n in per_topic.items() if n > 0}
        self.member.partition_counts = dict(per_topic)
        assignor = next((a for a in self.assignors if a.name == join.protocol_name), None)
        if assignor is None:
            raise error_for_code(23, f"the group chose assignor {join.protocol_name!r}, which this member "
                                     "does not have", group_id=self.group_id)
        racks = None
        if any(s.rack_id for s in subscriptions.values()):
            racks = {}
            for t in per_topic:
                for p in meta.partitions_for(t):
                    racks[TopicPartition(t, p.partition)] = {
                        b.rack for r in p.replicas if (b := meta.broker(r)) is not None and b.rack}
        result = assignor.assign(per_topic, subscriptions, partition_racks=racks)
        validate_assignment(result, per_topic, subscriptions)
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            validate_cooperative_assignment({m: s.owned_partitions for m, s in subscriptions.items()}, result)
        log.info("group %s: leader assigned %s", self.group_id,
                 {m: sorted(a.partitions) for m, a in result.items()})
        return [SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(result.get(m, Assignment([]))))
                for m in subscriptions]

    async def _complete(self, join: JoinGroupResponse, assignment_bytes: bytes) -> None:
        assignment = decode_assignment(assignment_bytes)
        assignor = next((a for a in self.assignors if a.name == join.protocol_name), None)
        if assignor is not None:
            assignor.on_assignment(assignment, join.generation_id)
        change = self.member.complete(assignment.partitions, self.subs.assigned_partitions(), self.subs.topics)
        self._last_heartbeat_ok = time.monotonic()
        self._hb_wake.set()
        log.info("group %s: generation %d, member %s, assigned %s", self.group_id, join.generation_id,
                 join.member_id, sorted(change.assigned))
        if change.revoked:
            await self.partitions.revoke(set(change.revoked))
        await self.partitions.assign(set(change.assigned), set(change.added))
        self.metrics.rebalance.record()
        self.metrics.last_rebalance = time.monotonic()
        if change.rejoin_reason:
            log.info("group %s: rejoining (%s)", self.group_id, change.rejoin_reason)
            self._wake.set()

    # ------------------------------------------------------------ heartbeats

    async def _heartbeat_loop(self) -> None:
        max_poll_s = self.cfg["max.poll.interval.ms"] / 1000.0
        while True:
            self._hb_wake.clear()
            try:
                await asyncio.wait_for(self._hb_wake.wait(), self.heartbeat_interval_s)
                continue  # woken: a new generation started, wait a full interval
            except asyncio.TimeoutError:
                pass
            if not self.member.should_heartbeat():
                continue
            if time.monotonic() - self.context.last_poll() > max_poll_s:
                await self._poll_timeout()
                continue
            await self._heartbeat()

    async def _poll_timeout(self) -> None:
        log.warning(
            "group %s: poll() was not called for more than max.poll.interval.ms=%d; leaving the group "
            "(the next poll() rejoins). Process faster or raise max.poll.interval.ms / lower "
            "max.poll.records.", self.group_id, self.cfg["max.poll.interval.ms"])
        self.member.rejoin_allowed = False
        try:
            await self.leave("consumer poll timeout has expired")
        except KafkaError as exc:
            log.debug("LeaveGroup after poll timeout failed: %s", exc)
        self._lose(self.member.poll_timeout())

    async def _heartbeat(self) -> None:
        member = self.member
        request = HeartbeatRequest(group_id=self.group_id, generation_id=member.generation_id,
                                   member_id=member.member_id, group_instance_id=self.instance_id)
        started = time.monotonic()
        try:
            response = await self._send(request)
        except KafkaError as exc:
            log.debug("group %s: heartbeat failed: %s", self.group_id, exc)
            if time.monotonic() - self._last_heartbeat_ok > self.session_timeout_ms / 1000.0:
                self.client.invalidate_coordinator(self.group_id)
            return
        now = time.monotonic()
        self.metrics.heartbeat_latency.record((now - started) * 1000.0, now)
        code = response.error_code
        outcome = member.on_heartbeat_response(code)
        if outcome in (Next.OK, Next.REJOIN):
            self._last_heartbeat_ok = now
            if code == 0:
                self.metrics.last_heartbeat = now
            if outcome is Next.REJOIN:
                log.info("group %s: rejoining (the group is rebalancing)", self.group_id)
                self._wake.set()
        elif outcome is Next.LOST:
            log.info("group %s: heartbeat says %s; the membership is lost", self.group_id,
                     error_for_code(code).name)
            self._lose(True)
        elif outcome is Next.FATAL:
            self._set_fatal(error_for_code(code))
        elif outcome is Next.COORDINATOR:
            self._coordinator_moved(code)
        else:
            log.warning("group %s: heartbeat error %s", self.group_id, error_for_code(code))

    # ------------------------------------------------------------ leaving

    async def leave(self, reason: str) -> None:
        """LeaveGroup (dynamic members only), then forget the generation."""
        member = self.member
        if member.should_send_leave():
            node = await self._coordinator()
            conn = await self.client.connection(node, COORDINATOR_CHANNEL)
            if conn.api_version(LeaveGroupRequest) >= 3:
                request = LeaveGroupRequest(group_id=self.group_id, members=[
                    LeaveGroupRequestMemberIdentity(member_id=member.member_id, reason=reason)])
            else:
                request = LeaveGroupRequest(group_id=self.group_id, member_id=member.member_id)
            try:
                response = await self._send(request)
                if response.error_code:
                    log.debug("LeaveGroup: %s", error_for_code(response.error_code))
            finally:
                log.info("group %s: member %s left (%s)", self.group_id, member.member_id, reason)
        member.left()
