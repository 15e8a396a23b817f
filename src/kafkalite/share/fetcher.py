"""ShareFetch and ShareAcknowledge (engine side), one share session per broker.

Follows Java's ``ShareConsumeRequestManager``:

* records are fetched only when ``poll()`` found nothing left to hand out
  (:meth:`ShareFetcher.request_fetch`); once an answer brought acquired records, fetching
  stops until the application asks again. Acquired records are locked to this member
  for the acquisition lock time, so fetching ahead of the application would only make
  them time out and go to another member;
* one request at a time per broker: ShareFetch and ShareAcknowledge share the session
  epoch, so they are serialized by a per-node lock;
* acknowledgements ride on the next ShareFetch to the broker that delivered the records
  (when ``poll()`` fetches anyway), or go in a ShareAcknowledge (commits, close, and
  when ``poll()`` still has records to hand out). A new session (epoch 0) cannot carry
  the acknowledgements of an old one: those fail with SHARE_SESSION_NOT_FOUND and the
  records come back after their lock times out;
* commit_sync retries retriable errors until its deadline; asynchronous commits until
  ``default.api.timeout.ms``; close never retries and ends every session with epoch -1,
  which also releases the records the member still holds.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from kafkalite.backoff import ExponentialBackoff
from kafkalite.clients_common.tasks import wait_for_wake
from kafkalite.config import Config
from kafkalite.errors import (
    ConfigError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ShareSessionNotFoundError,
    error_for_code,
)
from kafkalite.net.client import NetworkClient
from kafkalite.protocol.messages.share_acknowledge import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeRequestAcknowledgementBatch,
    ShareAcknowledgeRequestAcknowledgePartition,
    ShareAcknowledgeRequestAcknowledgeTopic,
)
from kafkalite.protocol.messages.share_fetch import (
    ShareFetchRequest,
    ShareFetchRequestAcknowledgementBatch,
    ShareFetchRequestFetchPartition,
    ShareFetchRequestFetchTopic,
    ShareFetchRequestForgottenTopic,
    ShareFetchResponse,
)
from kafkalite.share.acks import Acknowledgements, AckOutcome
from kafkalite.share.completed_fetch import ShareCompletedFetch
from kafkalite.share.metrics import ShareConsumerMetrics
from kafkalite.share.session import ShareSession
from kafkalite.types import TopicPartition

log = logging.getLogger("kafkalite.share")

#: partition errors after which metadata is refreshed (the leader moved, the topic changed)
_METADATA_ERRORS = frozenset({3, 6, 74, 100, 103})
#: TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED: raised from poll()
_FATAL_PARTITION_ERRORS = frozenset({29, 30})

PartAcks = dict[TopicPartition, Acknowledgements]


class FetchingMember(Protocol):
    """The share group membership as the fetcher sees it
    (:class:`~kafkalite.share.heartbeat.ShareGroupMember`)."""

    @property
    def member_id(self) -> str: ...

    @property
    def active(self) -> bool:
        """Whether the member has joined (a ShareFetch needs its member id)."""

    @property
    def assignment(self) -> frozenset[TopicPartition]: ...


class FetchReports(Protocol):
    """What the fetcher tells the share consumer (engine side)."""

    def notify_poll(self) -> None:
        """Records arrived: wake a waiting poll()."""

    def request_metadata(self) -> None:
        """A leader or a topic id is unknown or moved: refresh metadata."""

    def report_error(self, exc: BaseException) -> None:
        """An error for poll() to raise."""

    def report_acks(self, outcomes: list[AckOutcome]) -> None:
        """Acknowledgements completed (for the acknowledgement commit callback)."""


class ShareFetcher:
    """Share sessions, ShareFetch and ShareAcknowledge for one share consumer.

    Args:
        cfg: the share consumer's settings.
        group_id: its share group.
        client: its network client.
        loop: the engine's event loop (the fetcher's tasks run there).
        member: its share group membership (member id, assignment).
        buffer: where fetched data waits for poll().
        metrics: its share consumer metrics.
        reports: where outcomes go (the share consumer core).
        task_done: called with each fetch task when it ends (a task that dies
            reports its error from the next poll()).
    """

    def __init__(self, cfg: Config, group_id: str, client: NetworkClient, loop: asyncio.AbstractEventLoop,
                 member: FetchingMember, buffer: deque[ShareCompletedFetch], metrics: ShareConsumerMetrics,
                 reports: FetchReports, task_done: Callable[[asyncio.Task[Any]], None]) -> None:
        self.cfg = cfg
        self.client = client
        self.loop = loop
        self.member = member
        self.buffer = buffer
        self.metrics = metrics
        self.reports = reports
        self.task_done = task_done
        self.group_id = group_id
        self.api_timeout_s = cfg["default.api.timeout.ms"] / 1000.0
        self.sessions: dict[int, ShareSession] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self._busy: set[int] = set()
        self._not_before: dict[int, float] = {}
        self._errors: dict[int, int] = {}
        self.fetch_more = False
        self.piggyback: dict[int, PartAcks] = {}
        self.acquisition_lock_timeout_ms: int | None = None
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[object]] = set()
        self._closing = False
        self._backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])
        self._max_wait_ms = cfg["fetch.max.wait.ms"]
        self._request_timeout_ms = cfg["request.timeout.ms"]
        self._record_limit = cfg["share.acquire.mode"] == "record_limit"
        self._check_crcs = cfg["check.crcs"]

    def wake(self) -> None:
        self._wake.set()

    def request_fetch(self, acks: dict[int, PartAcks]) -> None:
        """poll() has nothing left to hand out: fetch, carrying ``acks`` (engine thread)."""
        for node, per_tp in acks.items():
            target = self.piggyback.setdefault(node, {})
            for tp, a in per_tp.items():
                target[tp] = target[tp].merge(a) if tp in target else a
        self.fetch_more = True
        self._wake.set()

    # ------------------------------------------------------------ fetch loop

    async def run(self) -> None:
        while not self._closing:
            self._wake.clear()
            await wait_for_wake(self._wake, self._start_fetches())

    def _start_fetches(self) -> float | None:
        """Start a ShareFetch to every broker that needs one; the seconds until a node
        in backoff may be tried again (None: wait for a wake-up)."""
        by_node: dict[int, dict[TopicPartition, uuid.UUID]] = {}
        if self.member.active:
            meta = self.client.metadata
            for tp in self.member.assignment:
                leader = meta.leader_for(tp.topic, tp.partition)
                topic_id = meta.topic_id(tp.topic)
                if leader is None or leader < 0 or topic_id.int == 0:
                    self.reports.request_metadata()
                    continue
                by_node.setdefault(leader, {})[tp] = topic_id
        # Acknowledgements for brokers this member no longer fetches from go on their own.
        for node in [n for n in self.piggyback if n not in by_node]:
            acks = self.piggyback.pop(node)
            self.spawn(self.acknowledge({node: acks}, time.monotonic() + self.api_timeout_s))
        if not self.fetch_more:
            return None
        now = time.monotonic()
        soonest: float | None = None
        for node, parts in by_node.items():
            if node in self._busy:
                continue
            ready_at = self._not_before.get(node, 0.0)
            if ready_at > now:
                soonest = ready_at - now if soonest is None else min(soonest, ready_at - now)
                continue
            self._busy.add(node)
            self.spawn(self._fetch(node, parts))
        return soonest

    def spawn(self, coro: Coroutine[Any, Any, object]) -> None:
        """Run ``coro`` as a task the fetcher tracks (and waits for on close)."""
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self.task_done)

    def _lock(self, node: int) -> asyncio.Lock:
        lock = self._locks.get(node)
        if lock is None:
            lock = self._locks[node] = asyncio.Lock()
        return lock

    def _failed(self, node: int) -> None:
        n = self._errors.get(node, 0) + 1
        self._errors[node] = n
        self._not_before[node] = time.monotonic() + self._backoff.delay_s(n - 1)

    async def _fetch(self, node: int, parts: dict[TopicPartition, uuid.UUID]) -> None:
        acks: PartAcks = {}
        outcomes: list[AckOutcome] = []
        try:
            async with self._lock(node):
                session = self.sessions.get(node)
                if session is None:
                    session = self.sessions[node] = ShareSession(node)
                acks = self.piggyback.pop(node, {})
                elsewhere = {tp: a for tp, a in acks.items() if tp not in parts}
                if elsewhere:  # no longer fetched from this broker: a ShareAcknowledge of their own
                    acks = {tp: a for tp, a in acks.items() if tp in parts}
                    self.spawn(self.acknowledge({node: elsewhere}, time.monotonic() + self.api_timeout_s))
                if session.is_new and acks:
                    outcomes += _fail_all(acks, _no_session(node))
                    acks = {}
                plan = session.build_fetch(parts)
                topics: dict[uuid.UUID, dict[int, ShareFetchRequestFetchPartition]] = {}
                for tp, tid in plan.added:
                    topics.setdefault(tid, {})[tp.partition] = ShareFetchRequestFetchPartition(
                        partition_index=tp.partition)
                for tp, a in acks.items():
                    tid = parts[tp]
                    entry = topics.setdefault(tid, {}).get(tp.partition)
                    if entry is None:
                        entry = topics[tid][tp.partition] = ShareFetchRequestFetchPartition(partition_index=tp.partition)
                    entry.acknowledgement_batches = [ShareFetchRequestAcknowledgementBatch(
                        first_offset=b.first_offset, last_offset=b.last_offset, acknowledge_types=b.types)
                        for b in a.batches()]
                forgotten: dict[uuid.UUID, list[int]] = {}
                for tp, tid in plan.forgotten:
                    forgotten.setdefault(tid, []).append(tp.partition)
                max_records = self.cfg["max.poll.records"]
                request = ShareFetchRequest(
                    group_id=self.group_id, member_id=self.member.member_id, share_session_epoch=plan.epoch,
                    max_wait_ms=self._max_wait_ms, min_bytes=self.cfg["fetch.min.bytes"],
                    max_bytes=self.cfg["fetch.max.bytes"], max_records=max_records, batch_size=max_records,
                    share_acquire_mode=1 if self._record_limit else 0,
                    topics=[ShareFetchRequestFetchTopic(topic_id=tid, partitions=list(ps.values()))
                            for tid, ps in topics.items()],
                    forgotten_topics_data=[ShareFetchRequestForgottenTopic(topic_id=tid, partitions=ps)
                                           for tid, ps in forgotten.items()])
                started = time.monotonic()
                try:
                    conn = await self.client.connection(node)
                    version = conn.api_version(ShareFetchRequest)
                    if self._record_limit and version < 2:
                        raise ConfigError("share.acquire.mode=record_limit needs ShareFetch v2 (Kafka 4.2+); "
                                          f"broker {node} supports v{version}")
                    response = await conn.request(request, api_version=version,
                                                  timeout_ms=self._request_timeout_ms + self._max_wait_ms)
                except (KafkaConnectionError, KafkaTimeoutError) as exc:
                    session.reset()
                    outcomes += _fail_all(acks, exc)
                    self._failed(node)
                    log.debug("ShareFetch to node %d failed: %s", node, exc)
                    return
                code = response.error_code
                session.on_response(code)
                if code:
                    err = error_for_code(code, response.error_message or "ShareFetch failed", group_id=self.group_id)
                    outcomes += _fail_all(acks, err)
                    self._failed(node)
                    if code == 100:
                        self.reports.request_metadata()
                    elif code in (30, 42, 35):
                        self.reports.report_error(err)
                    log.debug("ShareFetch to node %d: %s", node, err)
                    return
                if response.acquisition_lock_timeout_ms > 0:
                    self.acquisition_lock_timeout_ms = response.acquisition_lock_timeout_ms
                partition_errors = [0]
                outcomes += self._take_response(node, response, acks, started, partition_errors)
                if partition_errors[0]:
                    self._failed(node)  # back off: the same partitions would fail again at once
                else:
                    self._errors.pop(node, None)
        except KafkaError as exc:  # e.g. ConfigError above: poll() raises it
            outcomes += _fail_all(acks, exc)
            self._failed(node)
            self.reports.report_error(exc)
        finally:
            self._busy.discard(node)
            if outcomes:
                self.reports.report_acks(outcomes)
            self._wake.set()

    def _take_response(self, node: int, response: ShareFetchResponse, acks: PartAcks, started: float,
                       partition_errors: list[int]) -> list[AckOutcome]:
        meta = self.client.metadata
        outcomes: list[AckOutcome] = []
        acquired_total = 0
        size = 0
        for topic in response.responses:
            name = meta.topic_name(topic.topic_id)
            for p in topic.partitions:
                if name is None:
                    self.reports.request_metadata()
                    continue
                tp = TopicPartition(name, p.partition_index)
                a = acks.pop(tp, None)
                if a is not None:
                    err = (error_for_code(p.acknowledge_error_code, p.acknowledge_error_message,
                                          topic=tp.topic, partition=tp.partition)
                           if p.acknowledge_error_code else None)
                    outcomes.append(AckOutcome(tp, frozenset(a.offsets()), err))
                if p.error_code:
                    partition_errors[0] += 1
                    err = error_for_code(p.error_code, p.error_message, topic=tp.topic, partition=tp.partition)
                    if p.error_code in _METADATA_ERRORS:
                        self.reports.request_metadata()
                    elif p.error_code in _FATAL_PARTITION_ERRORS:
                        self.reports.report_error(err)
                    log.debug("ShareFetch %s from node %d: %s", tp, node, err)
                    continue
                if p.acquired_records:
                    fetch = ShareCompletedFetch(tp, node, p.records,
                                                [(r.first_offset, r.last_offset, r.delivery_count)
                                                 for r in p.acquired_records], self._check_crcs)
                    acquired_total += fetch.acquired_count
                    size += fetch.bytes
                    self.buffer.append(fetch)
        # Acknowledged partitions the answer did not mention cannot be known to have landed.
        outcomes += _fail_all(acks, KafkaError("the ShareFetch answer did not cover these acknowledgements"))
        self.metrics.record_fetch((time.monotonic() - started) * 1000.0, size, acquired_total,
                                  response.throttle_time_ms)
        if acquired_total:
            self.fetch_more = False
            self.reports.notify_poll()
        return outcomes

    # ------------------------------------------------------------ acknowledgements

    async def acknowledge(self, acks: dict[int, PartAcks], deadline: float, *,
                          closing: bool = False) -> list[AckOutcome]:
        """Send ``acks`` with ShareAcknowledge, one request per broker at a time; retriable
        errors are retried until ``deadline`` (not when closing). With ``closing`` every
        session ends (epoch -1), with or without acknowledgements."""
        nodes = set(acks) | (set(self.sessions) if closing else set())
        results = await asyncio.gather(*(self._acknowledge_node(n, dict(acks.get(n, {})), deadline, closing)
                                         for n in nodes))
        outcomes = [o for r in results for o in r]
        if outcomes:
            self.reports.report_acks(outcomes)
        return outcomes

    async def _acknowledge_node(self, node: int, pending: PartAcks, deadline: float,
                                closing: bool) -> list[AckOutcome]:
        out: list[AckOutcome] = []
        attempt = 0
        meta = self.client.metadata
        while True:
            retry_error: KafkaError | None = None
            async with self._lock(node):
                session = self.sessions.get(node)
                if session is None or session.is_new:
                    return out + _fail_all(pending, _no_session(node))
                topics: dict[uuid.UUID, list[ShareAcknowledgeRequestAcknowledgePartition]] = {}
                for tp, a in pending.items():
                    topics.setdefault(meta.topic_id(tp.topic), []).append(ShareAcknowledgeRequestAcknowledgePartition(
                        partition_index=tp.partition, acknowledgement_batches=[
                            ShareAcknowledgeRequestAcknowledgementBatch(
                                first_offset=b.first_offset, last_offset=b.last_offset, acknowledge_types=b.types)
                            for b in a.batches()]))
                epoch = session.close_epoch() if closing else session.epoch
                request = ShareAcknowledgeRequest(
                    group_id=self.group_id, member_id=self.member.member_id, share_session_epoch=epoch,
                    topics=[ShareAcknowledgeRequestAcknowledgeTopic(topic_id=t, partitions=ps)
                            for t, ps in topics.items()])
                try:
                    timeout_ms = max(1.0, (deadline - time.monotonic()) * 1000.0)
                    response = await self.client.send(node, request,
                                                      timeout_ms=min(timeout_ms, self._request_timeout_ms))
                except (KafkaConnectionError, KafkaTimeoutError) as exc:
                    session.reset()
                    if closing:
                        self.sessions.pop(node, None)
                    return out + _fail_all(pending, exc)
                if closing:
                    self.sessions.pop(node, None)
                else:
                    session.on_response(response.error_code)
                if response.error_code:
                    err = error_for_code(response.error_code, response.error_message or "ShareAcknowledge failed",
                                         group_id=self.group_id)
                    if not (err.retriable and not closing and time.monotonic() < deadline):
                        return out + _fail_all(pending, err)
                    retry_error = err
                else:
                    for topic in response.responses:
                        name = meta.topic_name(topic.topic_id)
                        for p in topic.partitions:
                            tp = TopicPartition(name or "", p.partition_index)
                            if tp not in pending:
                                continue
                            a = pending[tp]
                            if not p.error_code:
                                out.append(AckOutcome(tp, frozenset(a.offsets()), None))
                                del pending[tp]
                                continue
                            err = error_for_code(p.error_code, p.error_message, topic=tp.topic,
                                                 partition=tp.partition)
                            if err.retriable and not closing:
                                retry_error = err
                                if p.error_code in _METADATA_ERRORS:
                                    self.reports.request_metadata()
                            else:
                                out.append(AckOutcome(tp, frozenset(a.offsets()), err))
                                del pending[tp]
                    if retry_error is None and pending:
                        out += _fail_all(pending, KafkaError("the ShareAcknowledge answer did not cover "
                                                             "these acknowledgements"))
            if not pending:
                return out
            attempt += 1
            delay = self._backoff.delay_s(attempt - 1)
            if time.monotonic() + delay >= deadline:
                return out + _fail_all(pending, KafkaTimeoutError(
                    f"acknowledgements to broker {node} not completed before the deadline: {retry_error}"))
            await asyncio.sleep(delay)

    # ------------------------------------------------------------ shutdown

    def stop_fetching(self) -> None:
        """No new ShareFetch from now on (close)."""
        self._closing = True
        self._wake.set()

    async def close(self, timeout_s: float) -> list[asyncio.Task[object]]:
        """Stop fetching and wait (bounded) for the requests in flight; cancels those
        still running then and returns them (await with cancel_and_wait)."""
        self._closing = True
        self._wake.set()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        return tasks


def _fail_all(acks: PartAcks, error: BaseException) -> list[AckOutcome]:
    out = [AckOutcome(tp, frozenset(a.offsets()), error) for tp, a in acks.items()]
    acks.clear()
    return out


def _no_session(node: int) -> KafkaError:
    return ShareSessionNotFoundError(
        f"no share session with broker {node} to acknowledge through (it was reset); the records "
        "will be delivered again when their acquisition lock times out")

