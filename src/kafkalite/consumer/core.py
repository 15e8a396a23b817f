"""The consumer's core: one per consumer, shared by the blocking and asyncio front ends.

It owns, on the engine's event loop: the :class:`NetworkClient`, the fetcher
(prefetching into the fetch buffer), the position initializer (committed offsets, then
``auto.offset.reset``), periodic metadata refreshes (and pattern matching), offset
commits, and the group member (classic or KIP-848).

The thread that calls ``poll()`` (or the task, for asyncio) works through the
``poll_*`` methods below, which never block and never do I/O: they run queued
*application calls* (rebalance listener and commit callbacks, which must run in the
polling thread, never on the engine), commit automatically, and slice records out of
the fetch buffer, decoding lazily (:class:`~kafkalite.consumer.collector.RecordCollector`). The engine asks for an application call with
:meth:`ConsumerCore.app_call` and waits for the poll side to run it; meanwhile
heartbeats go on.

Commits are written to the coordinator in the order they are made (one lock around
"find coordinator, write request"; responses are awaited outside it), so an older
asynchronous commit never lands after a newer one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from kafkalite.clients_common.tasks import BackgroundTasks, wait_for_wake
from kafkalite.config import Config
from kafkalite.consumer.app_calls import AppCallQueue, AppFunction
from kafkalite.consumer.collector import RecordCollector
from kafkalite.consumer.deserializing import RecordDeserializer
from kafkalite.consumer.fetch_buffer import CompletedFetch, FetchBuffer
from kafkalite.consumer.fetcher import Fetcher
from kafkalite.consumer.group_member import GroupMember, GroupMemberContext
from kafkalite.consumer.interceptors import load_consumer_interceptors
from kafkalite.consumer.metrics import ConsumerMetrics
from kafkalite.consumer.observability import ConsumerObservability
from kafkalite.consumer.offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    Generation,
    OffsetsClient,
)
from kafkalite.consumer.records import ConsumerRecords
from kafkalite.consumer.subscription import SubscriptionState, SubscriptionType
from kafkalite.consumer.validation import PositionValidator
from kafkalite.errors import (
    AuthenticationError,
    AuthorizationError,
    ClientClosedError,
    CommitFailedError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    RebalanceInProgressError,
)
from kafkalite.metrics import Metrics
from kafkalite.net.client import NetworkClient
from kafkalite.net.engine import cancel_and_wait
from kafkalite.protocol.records import Batch
from kafkalite.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

log = logging.getLogger("kafkalite.consumer")

_STALE_MEMBER_EPOCH = 113  # KIP-848: the commit carried an older member epoch
#: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH: a commit without a
#: generation (assign()) met a group that has members
_GROUP_MEMBER_CODES = frozenset({22, 25, 110})

CommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], "BaseException | None"], object]
#: What a rebalance listener's method returned: None, or (asyncio) a coroutine to await.
ListenerResult = Coroutine[Any, Any, None] | None


class ConsumerCore:
    """Everything a consumer does, minus the front end's waiting.

    Args:
        cfg: resolved consumer settings.
        loop: the engine's event loop.
        notify_poll: wakes a waiting poll() (called on the engine; must be thread-safe
            for the blocking front end).
        call_soon: runs a callable on the engine (thread-safe), used by the poll side.
    """

    def __init__(self, cfg: Config, loop: asyncio.AbstractEventLoop, notify_poll: Callable[[], None],
                 call_soon: Callable[..., None]) -> None:
        self.cfg = cfg
        self.loop = loop
        self.notify_poll = notify_poll
        self.call_soon = call_soon
        self.group_id: str | None = cfg["group.id"] or None
        self.client = NetworkClient(cfg)
        self.subs = SubscriptionState(cfg["auto.offset.reset"], cfg["exclude.internal.topics"])
        self.subs.set_change_callback(self._subscription_changed)
        self.buffer = FetchBuffer()
        self.read_committed = cfg["isolation.level"] == "read_committed"
        self.registry = Metrics(cfg["metrics.sample.window.ms"], cfg["metrics.num.samples"],
                                cfg["metrics.recording.level"])
        self.metrics = ConsumerMetrics(self.registry, self.subs, self.read_committed, cfg["client.id"])
        self.client.stats.register(self.registry, "consumer-metrics",
                                   {"client-id": cfg["client.id"]} if cfg["client.id"] else None)
        self._positions_wake = asyncio.Event()
        self.fetcher = Fetcher(self.client, self.subs, self.buffer, cfg, notify_poll,
                               self._on_out_of_range, self.request_metadata, self.metrics,
                               on_validation_needed=self._positions_wake.set, on_diverging=self.on_diverging)
        self.validator = PositionValidator(self.client, self.subs, self.buffer, cfg, notify_poll=notify_poll,
                                           request_metadata=self.request_metadata, wake_fetcher=self.fetcher.wake)
        self.observe = ConsumerObservability(cfg, self.subs, self.fetcher, self.metrics, self.client, self.registry,
                                             group=lambda: self.group, read_committed=self.read_committed,
                                             last_poll=lambda: self.last_poll)
        self.offsets = OffsetsClient(self.client, cfg, self.group_id)
        self.group: GroupMember | None = None
        self.max_poll_records: int = cfg["max.poll.records"]
        self.auto_commit = bool(cfg["enable.auto.commit"]) and self.group_id is not None
        self._auto_commit_interval = cfg["auto.commit.interval.ms"] / 1000.0
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval
        self._last_poll = time.monotonic()
        self._in_poll = False
        #: What the last auto-commit wrote or is writing (None: it failed, or another commit came since).
        self._auto_committed: dict[TopicPartition, OffsetAndMetadata] | None = None
        self.app_calls = AppCallQueue(loop, notify_poll, call_soon)
        self.errors: deque[BaseException] = deque()
        self.tasks = BackgroundTasks(loop, "kafkalite-consumer", "consumer", log, on_death=self._report_death,
                                     is_closed=lambda: self.closed)
        self._started = False
        self.closed = False
        self._metadata_wake = asyncio.Event()
        self._metadata_topics: set[str] = set()
        self._commit_lock = asyncio.Lock()
        self._commits_in_flight: set[asyncio.Task[bool]] = set()
        self.deserializer = RecordDeserializer(cfg)
        self.collector = RecordCollector(self.buffer, self.subs, self.fetcher, self.metrics, self.observe,
                                         self.deserializer, call_soon=call_soon,
                                         defer_error=self.errors.appendleft)
        self._api_timeout = cfg["default.api.timeout.ms"] / 1000.0
        self.interceptors = load_consumer_interceptors(cfg["interceptor.classes"], cfg)

    # ------------------------------------------------------------ lifecycle (engine)

    def start(self) -> None:
        """Start the background tasks (idempotent; on the engine loop)."""
        if self._started or self.closed:
            return
        self._started = True
        self.tasks.spawn(self.fetcher.run(), "fetcher")
        self.tasks.spawn(self._positions_loop(), "positions")
        self.tasks.spawn(self._metadata_loop(), "metadata")
        self.observe.start(self.loop, self.tasks.spawn)
        if self.group is not None:
            self.group.start()

    def report_unrecoverable(self, exc: BaseException) -> None:
        """Hand a background failure that waiting will not fix to the next poll().

        A refused login and a missing permission (group, topic, cluster) are raised from
        poll() as the Java consumer does, instead of being retried silently until the
        application wonders why nothing arrives. The background task keeps retrying at
        its backoff (the permission may be granted meanwhile); one error of a kind is
        queued at a time, so a caller that polls rarely does not find a backlog.
        """
        if not isinstance(exc, (AuthenticationError, AuthorizationError)) or self.closed:
            return
        if not any(type(queued) is type(exc) for queued in self.errors):
            self.errors.append(exc)
            self.notify_poll()

    def _report_death(self, exc: BaseException) -> None:
        """A background task died: raise its error from the next poll()."""
        self.errors.append(exc)
        self.notify_poll()

    def ensure_group(self) -> GroupMember:
        """The group member, created on first subscribe() (classic or KIP-848)."""
        if self.group is None:
            context = GroupMemberContext(self.cfg, self.client, self.subs, self.metrics, self.loop,
                                         self.tasks.task_done, self.notify_poll, self.call_soon,
                                         last_poll=lambda: self.last_poll, api_timeout_s=self._api_timeout,
                                         after_metadata=self._after_metadata, partitions=self)
            # Imported here: a consumer without a group (or of the other protocol) need not
            # load a member's machinery (the classic one loads the assignors).
            if self.cfg["group.protocol"] == "consumer":
                from kafkalite.consumer.group_consumer_protocol import ConsumerGroupMember

                self.group = ConsumerGroupMember(context)
            else:
                from kafkalite.consumer.coordinator import ClassicGroupMember

                self.group = ClassicGroupMember(context)
            if self._started:
                self.group.start()
        return self.group

    async def close(self, timeout_s: float, *, commit: bool, leave: bool = True) -> None:
        """Commit (if asked), leave the group, stop everything; bounded by ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        try:
            await self.observe.close(timeout_s)  # KIP-714: the terminating push first, while connected
            if commit and self.auto_commit and self.subs.assignment and self.group_id:
                try:
                    await self.commit(self.subs.all_consumed(), timeout_s=max(0.01, deadline - time.monotonic()))
                except Exception as exc:
                    log.warning("auto-commit on close failed: %s", exc)
            if self.group is not None:
                # Stop heartbeats and joins first: nothing may rejoin while we leave.
                await cancel_and_wait(self.group.stop(), max(0.05, deadline - time.monotonic()))
            if self.group is not None and leave:
                try:
                    await asyncio.wait_for(self.group.leave("the consumer is closing"),
                                           max(0.01, deadline - time.monotonic()))
                except Exception as exc:
                    log.debug("leaving the group on close: %r", exc)
        finally:
            self.closed = True
            tasks: list[asyncio.Future[Any]] = list(self.tasks.tasks)
            if self.group is not None:
                tasks += self.group.stop()
            tasks += self.fetcher.close()
            self.app_calls.cancel_all()
            try:
                # One cancel() may not stop a task on Python < 3.12 (gh-86296): see cancel_and_wait.
                await cancel_and_wait(tasks, max(0.05, deadline - time.monotonic()))
            finally:
                await self.client.close()

    # ------------------------------------------------------------ application calls

    async def app_call(self, fn: AppFunction, *args: object) -> None:
        """Run ``fn(*args)`` in the polling thread and wait until it ran (engine side)."""
        if self.closed:
            raise ClientClosedError("the consumer is closed")
        await self.app_calls.call(fn, *args)

    # ------------------------------------------------------------ partitions given and taken

    def _listener_call(self, method: str, partitions: set[TopicPartition]) -> object:
        listener = self.subs.listener
        fn = getattr(listener, method, None) if listener is not None else None
        if fn is None:
            if method == "on_partitions_lost" and listener is not None:
                fn = getattr(listener, "on_partitions_revoked", None)
            if fn is None:
                return None
        return fn(set(partitions))

    def _after_listener(self, result: object, then: Callable[[], None]) -> ListenerResult:
        if asyncio.iscoroutine(result):
            async def finish() -> None:
                try:
                    await result
                finally:
                    then()
            return finish()
        then()
        return None

    def revoke_now(self, partitions: set[TopicPartition], method: str = "on_partitions_revoked") -> ListenerResult:
        """Poll side: call the listener, then stop owning the partitions."""
        def remove() -> None:
            self.subs.remove_partitions(partitions)
            self.buffer.drop(lambda f: f.tp not in partitions)
            self.metrics.forget_partitions(partitions)
            self.observe.forget(partitions)
        try:
            result = self._listener_call(method, partitions)
        except BaseException:
            remove()
            raise
        return self._after_listener(result, remove)

    def assigned_now(self, partitions: set[TopicPartition]) -> ListenerResult:
        """Poll side: call on_partitions_assigned, then let the partitions be fetched."""
        def release() -> None:
            self.subs.callback_done(partitions)
        try:
            result = self._listener_call("on_partitions_assigned", partitions)
        except BaseException:
            release()
            raise
        return self._after_listener(result, release)

    async def revoke(self, partitions: set[TopicPartition], *, lost: bool = False, always: bool = False) -> None:
        """Engine side: commit (auto-commit, unless lost), stop fetching, call the listener."""
        if not partitions and not always:
            return
        if lost:
            self.subs.mark_pending_revocation(partitions)
            self.buffer.drop(lambda f: f.tp not in partitions)
            if partitions:
                await self.app_call(self.revoke_now, set(partitions), "on_partitions_lost")
            return
        if self.auto_commit and partitions:
            offsets = {tp: om for tp, om in self.subs.all_consumed().items() if tp in partitions}
            try:
                await self.commit(offsets, timeout_s=self.cfg["max.poll.interval.ms"] / 1000.0)
            except Exception as exc:
                log.warning("auto-commit before revoking %s failed: %s", sorted(partitions), exc)
        self.buffer.drop(lambda f: f.tp not in partitions)
        await self.app_call(self.revoke_now, set(partitions))

    async def assign(self, partitions: set[TopicPartition], added: set[TopicPartition]) -> None:
        """Engine side: take the new assignment, then run on_partitions_assigned(added)."""
        self.subs.assign_from_subscribed(partitions, awaiting_callback=added)
        self._positions_wake.set()
        await self.app_call(self.assigned_now, set(added))

    # ------------------------------------------------------------ metadata

    def request_metadata(self, topics: Iterable[str] = ()) -> None:
        self._metadata_topics.update(topics)
        self._metadata_wake.set()

    def _subscription_changed(self) -> None:
        # May run in the poll thread: hop to the engine.
        self.call_soon(self._on_subscription_changed)

    def _on_subscription_changed(self) -> None:
        subs = self.subs
        with subs.lock:
            topics = set(subs.topics) | set(subs.group_topics)
            pattern = subs.type is SubscriptionType.AUTO_PATTERN
        self.client.track_all_topics(pattern)
        if topics:
            self.client.track_topics(topics)
            self._metadata_topics.update(topics)
        self._metadata_wake.set()
        self._positions_wake.set()
        self.fetcher.wake()
        if self.group is not None:
            self.group.on_subscription_change()

    async def _metadata_loop(self) -> None:
        max_age = self.cfg["metadata.max.age.ms"] / 1000.0
        backoff = self.cfg["retry.backoff.ms"] / 1000.0
        while True:
            await wait_for_wake(self._metadata_wake, max_age)
            self._metadata_wake.clear()
            topics, self._metadata_topics = self._metadata_topics, set()
            try:
                await self.client.refresh_metadata(topics, timeout_s=self._api_timeout)
            except KafkaError as exc:
                log.debug("metadata refresh failed: %s", exc)
                self.report_unrecoverable(exc)
                self._metadata_topics.update(topics)
                await asyncio.sleep(backoff)
                self._metadata_wake.set()
                continue
            self._after_metadata()
            await asyncio.sleep(backoff)  # coalesce bursts of refresh requests

    def _after_metadata(self) -> None:
        subs = self.subs
        meta = self.client.metadata
        if subs.type is SubscriptionType.AUTO_PATTERN:
            matched = {name for name, t in meta.topics.items() if subs.matches(name, t.is_internal)}
            subs.update_pattern_topics(matched)
        self.fetcher.wake()
        self._positions_wake.set()
        if self.group is not None:
            self.group.on_metadata_update()

    # ------------------------------------------------------------ positions

    async def _positions_loop(self) -> None:
        backoff = self.cfg["retry.backoff.ms"] / 1000.0
        attempt = 0
        while not self.closed:
            retry = self.validator.next_retry()
            await wait_for_wake(self._positions_wake, retry)  # woken, or a postponed validation is due
            self._positions_wake.clear()
            try:
                await self.update_positions(self._api_timeout)
                await self.validator.validate()
                attempt = 0
                if self.subs.partitions_needing_reset():
                    # A lookup answered without an offset for some (a partition error):
                    # again after the backoff, as Java's poll() retries its resets.
                    await asyncio.sleep(backoff)
                    self._positions_wake.set()
            except KafkaError as exc:
                attempt += 1
                log.debug("initializing positions failed (attempt %d): %s", attempt, exc)
                # e.g. GroupAuthorizationError fetching committed offsets after assign()
                self.report_unrecoverable(exc)
                await asyncio.sleep(min(backoff * (2 ** min(attempt, 5)), 1.0))
                self._positions_wake.set()

    async def update_positions(self, timeout_s: float) -> None:
        """Give every assigned partition a position: committed offset, else reset."""
        need = self.subs.partitions_needing_position()
        if need:
            if self.group_id is not None:
                tokens = self.subs.tokens(need)
                try:
                    committed = await self.offsets.fetch_committed(need, timeout_s, self.generation_for_fetch())
                except KafkaError:
                    # assign() then seek(): the lookup starts at assign(), the seek gives
                    # the position meanwhile. Java looks committed offsets up only for what
                    # still has no position at poll(); an error (e.g. the group not
                    # authorized) about partitions that all have one now is nobody's.
                    if not set(need) & set(self.subs.partitions_needing_position()):
                        need = []
                    else:
                        raise
                    committed = {}
                reset = []
                for tp in need:
                    om = committed.get(tp)
                    if om is not None:
                        # KIP-320: a committed offset with its epoch is validated first (Java).
                        self.subs.set_position_if_unset(tp, om.offset, om.leader_epoch, tokens.get(tp),
                                                        validate=True)
                    else:
                        reset.append(tp)
                # Not what a seek() gave a position while the lookup ran (a new token):
                # Java resets only partitions still initializing.
                self._request_default_reset(self.subs.still_without_position(reset, tokens))
            else:
                self._request_default_reset(need)
        resets = self.subs.partitions_needing_reset()
        if resets:
            await self._reset_offsets(resets, timeout_s)
        self.fetcher.wake()

    def _request_default_reset(self, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return
        if self.subs.default_reset == "none":
            with self.subs.lock:
                partitions = [tp for tp in partitions if tp in self.subs.assignment
                              and self.subs.assignment[tp].position is None]
            if partitions:
                self.errors.append(self._no_offset_error(partitions))
                self.notify_poll()
            return
        self.subs.request_reset(partitions)

    def _still_without_position(self, error: NoOffsetForPartitionError) -> NoOffsetForPartitionError | None:
        with self.subs.lock:
            left = [tp for tp in error.partitions or ()
                    if tp in self.subs.assignment and self.subs.assignment[tp].position is None]
        if left == list(error.partitions or ()):
            return error
        if not left:
            return None
        return self._no_offset_error(left)

    def _no_offset_error(self, partitions: list[TopicPartition]) -> NoOffsetForPartitionError:
        names = ", ".join(sorted(f"{tp.topic}-{tp.partition}" for tp in partitions))
        return NoOffsetForPartitionError(
            f"no committed offset for {names} and auto.offset.reset is 'none'; "
            "seek() to a position first", partitions=partitions, group_id=self.group_id)

    async def _reset_offsets(self, resets: dict[TopicPartition, str], timeout_s: float) -> None:
        tokens = self.subs.tokens(resets)
        stamps = {tp: (EARLIEST_TIMESTAMP if s == "earliest" else LATEST_TIMESTAMP) for tp, s in resets.items()}
        listed = await self.offsets.list_offsets(stamps, timeout_s)
        for tp, found in listed.items():
            if found is not None:
                self.subs.set_reset_position(tp, found.offset, tokens.get(tp))

    def _on_out_of_range(self, tp: TopicPartition, token: int, fetch_offset: int) -> None:
        with self.subs.lock:
            state = self.subs.assignment.get(tp)
            if state is None or state.token != token or state.position != fetch_offset:
                return
            if self.subs.default_reset == "none":
                err = OffsetOutOfRangeError(
                    f"fetch offset {fetch_offset} is out of range for {tp.topic}-{tp.partition} and "
                    "auto.offset.reset is 'none'; seek() to a valid position",
                    topic=tp.topic, partition=tp.partition)
                err.context["offsets"] = {tp: fetch_offset}
                self.buffer.add(CompletedFetch(tp, token, fetch_offset, None, error=err))
                self.notify_poll()
                return
            # Under the same hold of the lock as the check: a seek() in between must win.
            self.subs.request_reset([tp])
        log.info("fetch offset %d is out of range for %s; resetting to %s", fetch_offset, tp,
                 self.subs.default_reset)
        self._positions_wake.set()

    def on_diverging(self, tp: TopicPartition, token: int, end_offset: int, end_epoch: int) -> None:
        """Engine: a Fetch response's DivergingEpoch (KIP-320) for ``tp``."""
        retry_at = time.monotonic() + self.cfg["retry.backoff.ms"] / 1000.0
        truncation = self.subs.diverged(tp, token, end_offset, end_epoch, retry_at=retry_at)
        if truncation is not None:
            self.validator.report(truncation)
        self._positions_wake.set()
        self.fetcher.wake()

    def wake_positions(self) -> None:
        self._positions_wake.set()
        self.fetcher.wake()

    async def wait_for_position(self, tp: TopicPartition, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while True:
            pos = self.subs.valid_position(tp)
            if pos is not None:
                return pos
            self.raise_errors()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KafkaTimeoutError(f"the position of {tp.topic}-{tp.partition} was not known within "
                                        f"{timeout_s:.1f}s", topic=tp.topic, partition=tp.partition)
            await self.update_positions(remaining)
            await self.validator.validate()
            if self.subs.valid_position(tp) is None:
                await asyncio.sleep(min(0.05, max(0.0, remaining)))

    # ------------------------------------------------------------ commits

    def generation(self) -> Generation:
        if self.group is not None and self.subs.has_auto_assignment:
            return self.group.generation()
        return Generation(-1, "", None)

    def generation_for_fetch(self) -> Generation | None:
        """What an OffsetFetch carries: KIP-848 members send their member id and epoch."""
        if self.group is not None and self.cfg["group.protocol"] == "consumer":
            return self.group.generation()
        return None

    def group_metadata(self) -> ConsumerGroupMetadata:
        if self.group_id is None:
            from kafkalite.errors import InvalidGroupIdError

            raise InvalidGroupIdError("group_metadata() needs the setting 'group.id'")
        gen = self.generation()
        return ConsumerGroupMetadata(self.group_id, gen.generation_id, gen.member_id,
                                     self.cfg["group.instance.id"])

    def check_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """A member may only commit partitions it owns (never silently a revoked one)."""
        if self.group_id is None:
            from kafkalite.errors import InvalidGroupIdError

            raise InvalidGroupIdError("committing offsets needs the setting 'group.id'")
        if self.group is not None:
            self.group.raise_fatal()  # a member that failed for good commits nothing
        if self.subs.has_auto_assignment:
            with self.subs.lock:
                not_owned = sorted(tp for tp in offsets if tp not in self.subs.assignment)
            if not_owned:
                names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in not_owned)
                raise CommitFailedError(
                    f"cannot commit {names}: not assigned to this member of group {self.group_id!r} "
                    "(revoked by a rebalance, or never assigned); commit only partitions you own, "
                    "e.g. in on_partitions_revoked", group_id=self.group_id)

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_s: float,
                     *, retry: bool = True, auto: bool = False) -> None:
        """Commit ``offsets`` in order with all other commits (engine side).

        With ``retry`` (synchronous commits) retriable errors are tried again until the
        deadline, as Java's ``commitSync`` does, except a rebalance in progress: only
        poll() completes a rebalance, so RebalanceInProgressError goes to the caller
        (retriable: poll(), then commit again). Group errors are classed by the group
        member (``commit_error``): Java's RebalanceInProgressException versus
        CommitFailedException.
        """
        if not offsets:
            return
        if not auto:
            self._auto_committed = None  # the group's offsets may differ now: auto-commit writes again
        member = self.group if self.group is not None and self.subs.has_auto_assignment else None
        started = time.monotonic()
        deadline = started + timeout_s
        offsets = {TopicPartition(*tp): (om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(int(om)))
                   for tp, om in offsets.items()}
        attempt = 0
        try:
            while True:
                if member is not None:
                    member.check_can_commit()
                gen = self.generation()
                try:
                    async with self._commit_lock:
                        # Ordering: every commit waits for the one before it to be written;
                        # the request is written before the lock is released.
                        pending = await self.offsets.start_commit(offsets, gen, deadline)
                    await self.offsets.finish_commit(pending, offsets, gen)
                    break
                except (KafkaError, asyncio.TimeoutError) as exc:
                    error = self._commit_error(exc, gen, member)
                    # KIP-848: the member epoch moved on while the commit was in flight; a
                    # synchronous commit tries again with the current epoch, as Java does.
                    stale_epoch = getattr(error, "code", None) == _STALE_MEMBER_EPOCH
                    if (not retry or not (error.retriable or stale_epoch)
                            or isinstance(error, RebalanceInProgressError)):
                        raise error from (None if error is exc else exc)
                    attempt += 1
                    delay = 0.0 if stale_epoch else self.offsets.retry_delay_s(attempt)
                    if time.monotonic() + delay >= deadline:
                        raise KafkaTimeoutError(
                            f"could not commit offsets of group {self.group_id!r} within {timeout_s:.1f}s: "
                            f"{error}", group_id=self.group_id) from None
                    await asyncio.sleep(delay)
        finally:
            self.metrics.commit_latency.record((time.monotonic() - started) * 1000.0)
        if self.group is not None:
            self.group.on_commit_result(None)
        if self.interceptors is not None and self.interceptors.wants_commits:
            self.app_calls.post(self.interceptors.on_commit, offsets)  # in the polling thread, as Java

    def _commit_error(self, exc: KafkaError | asyncio.TimeoutError, gen: Generation,
                      member: GroupMember | None) -> KafkaError:
        """What a failed commit raises: the group member classes group codes; without
        one (assign()), generation and member errors mean the group has live members."""
        if isinstance(exc, asyncio.TimeoutError):
            return KafkaTimeoutError(f"offset commit for group {self.group_id!r} timed out",
                                     group_id=self.group_id)
        if member is not None:
            return member.commit_error(exc, gen)
        if getattr(exc, "code", None) in _GROUP_MEMBER_CODES:
            return CommitFailedError(
                f"commit failed ({exc}): group {self.group_id!r} has active members; a consumer using "
                "assign() can only commit to a group that no subscribed member uses",
                group_id=self.group_id)
        return exc

    def commit_async_from_poll(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                               callback: CommitCallback | None,
                               on_done: Callable[[asyncio.Task[bool]], object] | None = None,
                               auto: bool = False) -> None:
        """Engine side entry of commit_async: never retries; callback runs in poll().
        ``on_done`` (engine side) gets the task, whose result says whether the commit
        succeeded; ``auto``: the auto-commit's."""
        async def run() -> bool:
            err: BaseException | None = None
            try:
                await self.commit(offsets, self._api_timeout, retry=False, auto=auto)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                err = exc
                if callback is None:
                    log.warning("asynchronous offset commit failed: %s", exc)
            if callback is not None and not self.closed:
                self.app_calls.post(callback, dict(offsets), err)
            return err is None
        task = self.loop.create_task(run())
        if on_done is not None:
            task.add_done_callback(on_done)
        self._commits_in_flight.add(task)
        task.add_done_callback(self._commits_in_flight.discard)

    async def wait_commits(self, timeout_s: float) -> None:
        if self._commits_in_flight:
            await asyncio.wait(list(self._commits_in_flight), timeout=timeout_s)

    # ------------------------------------------------------------ poll side

    def raise_errors(self) -> None:
        while self.errors:
            error = self.errors.popleft()
            if isinstance(error, NoOffsetForPartitionError):
                # Java looks for positions inside poll(), so assign() + seek() never meet
                # a "no offset" error; here the engine may look in between. What counts is
                # the state now: partitions sought (or unassigned) since are left out.
                narrowed = self._still_without_position(error)
                if narrowed is None:
                    continue
                raise narrowed
            raise error
        if self.group is not None:
            self.group.raise_fatal()

    @property
    def last_poll(self) -> float:
        """When the application last called poll(): now while a poll() is still waiting
        inside (Java's consumer resets its poll timer on every turn of its poll loop, so
        a long poll(timeout) is not a slow application), else when the last one returned."""
        return time.monotonic() if self._in_poll else self._last_poll

    def poll_end(self) -> None:
        """Poll side: poll() returns (or raises); ``max.poll.interval.ms`` counts from here."""
        self._last_poll = time.monotonic()
        self._in_poll = False

    def poll_begin(self) -> None:
        """Poll side, before taking records: liveness, auto-commit, group progress."""
        now = time.monotonic()
        self.metrics.record_poll(now)
        self._last_poll = now
        self._in_poll = True
        self.observe.poll_began(now)
        if self.group is not None:
            self.group.on_poll(now)
        if self.auto_commit and now >= self._next_auto_commit:
            self._next_auto_commit = now + self._auto_commit_interval
            offsets = self.subs.all_consumed()
            # Positions that the last auto-commit wrote already (and no other commit since)
            # are not written again: librdkafka skips unchanged offsets too; Java writes
            # them every interval, which costs an idle consumer a request each time
            # (issue 27). Brokers keep an active group's offsets (KIP-211, Kafka 2.1).
            if offsets and offsets != self._auto_committed and (self.subs.is_user_assigned
                                                                 or self.group is not None):
                # What earlier polls returned: positions advance only as records are handed out.
                self._auto_committed = offsets  # written or on its way (undone if it fails)
                self.call_soon(self._auto_commit, offsets)

    def _auto_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        """Engine side of auto-commit: commit_async without a callback; if it fails, the
        next interval writes the positions again."""
        def forget_if_failed(task: asyncio.Task[bool]) -> None:
            if (task.cancelled() or not task.result()) and self._auto_committed is offsets:
                self._auto_committed = None

        self.commit_async_from_poll(offsets, None, on_done=forget_if_failed, auto=True)

    def collect(self, max_records: int) -> ConsumerRecords:
        """Poll side: take up to ``max_records`` records from the buffer (the collector's)."""
        return self.collector.collect(max_records)

    def collect_batches(self, max_bytes: int) -> list[tuple[TopicPartition, list[Batch]]]:
        """Poll side, columnar path: whole fetched batches, undecoded (the collector's)."""
        return self.collector.collect_batches(max_bytes)

    def has_buffered_data(self) -> bool:
        return len(self.buffer) > 0

