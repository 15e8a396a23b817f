"""The prefetching fetcher: Fetch requests per broker, on the engine (asyncio).

It keeps at most one Fetch request in flight per broker (fetch sessions require
it, KIP-227) for every fetchable partition that broker leads, and puts each partition's
data into the :class:`~kafkalite.consumer.fetch_buffer.FetchBuffer` undecoded. It
fetches ahead: while poll() drains one fetch of a partition, the next one (starting
where the buffered data ends) is already on its way, up to
:data:`MAX_BUFFERED_FETCHES` undrained fetches per partition, which bounds memory to
about that many times ``max.partition.fetch.bytes`` per partition (and
``fetch.max.bytes`` per broker and request).

Requests use topic ids from Fetch v13 on (falling back to v12 and names while a topic's
id is unknown), ``isolation.level``, the fetch size settings and:

* KIP-320: the leader epoch the position was validated under (a stale one is fenced by
  the broker) and the epoch of the last record fetched (``LastFetchedEpoch``, v12+),
  so that a leader whose log diverged answers with ``DivergingEpoch`` in the same round
  trip. Before planning a partition the fetcher compares its validated epoch with
  metadata's: a new leader epoch holds the partition back until its position is
  validated (OffsetsForLeaderEpoch, see :mod:`kafkalite.consumer.validation`).
* KIP-392: with ``client.rack`` the leader may name a preferred read replica; it is
  fetched from until its lease (``metadata.max.age.ms``) expires, it leaves the
  metadata, a fetch from it fails, or it answers with an error; then the leader again
  (Java's ``AbstractFetch.selectReadReplica`` / ``FetchCollector``).

A partition error updates what the consumer knows: stale leaders refresh metadata
(using the KIP-951 leader hint when present), OFFSET_OUT_OF_RANGE hands over to the
core (reset or a typed error; from a preferred replica it only sends the partition back
to the leader), and other errors are queued so that poll() raises them naming the
partition.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kafkalite.backoff import ExponentialBackoff
from kafkalite.clients_common.tasks import wait_for_wake
from kafkalite.config import Config
from kafkalite.consumer.fetch_buffer import CompletedFetch, FetchBuffer
from kafkalite.consumer.fetch_session import FetchPlan, FetchSessionHandler, PartitionFetchData
from kafkalite.consumer.subscription import SubscriptionState, is_fetchable
from kafkalite.errors import KafkaError, UnsupportedVersionForClientError, error_for_code
from kafkalite.net.client import NetworkClient
from kafkalite.net.cluster import BrokerNode
from kafkalite.net.transport import BrokerConnection
from kafkalite.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestFetchPartition,
    FetchRequestFetchTopic,
    FetchRequestForgottenTopic,
    FetchResponse,
)
from kafkalite.protocol.primitives import ZERO_UUID
from kafkalite.types import TopicPartition

if TYPE_CHECKING:
    from kafkalite.consumer.metrics import ConsumerMetrics
    from kafkalite.consumer.stall import StallDetector

log = logging.getLogger("kafkalite.consumer")

#: Undrained fetches per partition before the fetcher stops fetching it ahead.
MAX_BUFFERED_FETCHES = 2

_OFFSET_OUT_OF_RANGE = 1
# Errors after which metadata is refreshed and the partition fetched again.
_REFRESH = {3, 5, 6, 9, 56, 74, 75, 100, 103, 106}
_UNKNOWN_LEADER_EPOCH = 76
_FETCH_SESSION_TOPIC_ID_ERROR = 106
# Top-level errors the next request settles by itself (KIP-227: the session is closed or
# opened again): fetched again at once, the first time.
_SESSION_ERRORS = {70, 71}  # FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH


class Fetcher:
    """Sends Fetch requests and buffers their data (engine side).

    ``stall`` (set by the core) is told of each partition's fetch outcome
    (:class:`kafkalite.consumer.stall.StallDetector`).

    Args:
        client: the consumer's network client.
        subs: subscription state (positions, fetchable partitions).
        buffer: where completed fetches go.
        cfg: consumer settings.
        on_data: called (on the engine) when new data was buffered.
        on_out_of_range: ``(tp, token, fetch_offset)`` when the broker says the fetch
            offset is out of range.
        on_metadata_needed: ``(topics)`` to request a metadata refresh.
        metrics: consumer metrics (fetch latency, sizes).
        on_validation_needed: a partition now awaits KIP-320 validation.
        on_diverging: ``(tp, token, end_offset, end_epoch)`` when a Fetch response says
            the log diverged from what was fetched (``DivergingEpoch``).
    """

    stall: StallDetector | None = None

    def __init__(self, client: NetworkClient, subs: SubscriptionState, buffer: FetchBuffer, cfg: Config,
                 on_data: Callable[[], None],
                 on_out_of_range: Callable[[TopicPartition, int, int], None],
                 on_metadata_needed: Callable[[set[str]], None],
                 metrics: ConsumerMetrics | None = None, *,
                 on_validation_needed: Callable[[], None] | None = None,
                 on_diverging: Callable[[TopicPartition, int, int, int], None] | None = None) -> None:
        self.client = client
        self.subs = subs
        self.buffer = buffer
        self.cfg = cfg
        self._on_data = on_data
        self._on_out_of_range = on_out_of_range
        self._on_metadata_needed = on_metadata_needed
        self._on_validation_needed = on_validation_needed
        self._on_diverging = on_diverging
        self.metrics = metrics
        self.read_committed = cfg["isolation.level"] == "read_committed"
        self._isolation = 1 if self.read_committed else 0
        self._check_crcs = cfg["check.crcs"]
        self._max_wait_ms = cfg["fetch.max.wait.ms"]
        self._min_bytes = cfg["fetch.min.bytes"]
        self._max_bytes = cfg["fetch.max.bytes"]
        self._partition_max_bytes = cfg["max.partition.fetch.bytes"]
        self._rack = cfg["client.rack"] or ""
        self._sessions: dict[int, FetchSessionHandler] = {}
        self._in_flight_nodes: set[int] = set()
        self._in_flight: set[TopicPartition] = set()
        self._wake = asyncio.Event()
        self._closed = False
        self._retry_at: dict[int, float] = {}
        # Answers in a row whose top-level error failed the whole fetch, per node.
        self._top_level_failures: dict[int, int] = {}
        self._top_level_backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])
        self._tasks: set[asyncio.Task[None]] = set()  # fetches connecting first
        self._responses: set[asyncio.Future[FetchResponse]] = set()  # fetches written, not answered

    # ------------------------------------------------------------ loop

    def wake(self) -> None:
        """Plan fetches again soon (called on the engine)."""
        self._wake.set()

    async def run(self) -> None:
        """Send fetches whenever something becomes fetchable, until closed."""
        while not self._closed:
            self._wake.clear()
            await wait_for_wake(self._wake, self.send_fetches())

    def needs_wake_after_drain(self, tp: TopicPartition) -> bool:
        """Whether poll() must wake the fetcher after draining a fetch of ``tp`` (any thread).

        Not while a fetch of ``tp`` is in flight: its answer plans the next one anyway
        (:meth:`_answered`, and ``_done`` on failures). Otherwise the fetcher may have
        held ``tp`` back (two fetches buffered, an error waiting), so yes. The poll side
        pops the fetch before asking and the engine marks a partition in flight only
        after reading its buffer, so neither order of the two threads misses a wake-up.
        Waking the engine after every poll() cost a self-pipe write in poll()'s return
        path and an engine wake-up competing with the caller for the GIL (issue 15).
        """
        return tp not in self._in_flight

    def close(self) -> list[asyncio.Future[Any]]:
        """Stop fetching; cancels the fetches in flight and returns them (await with cancel_and_wait)."""
        self._closed = True
        self._wake.set()
        pending: list[asyncio.Future[Any]] = [*self._tasks, *self._responses]
        for future in pending:
            future.cancel()
        return pending

    def send_fetches(self) -> float | None:
        """Start one fetch per broker with work; returns seconds until a retry is due.

        A fetch to a connected broker is written at once; one that must connect first
        runs as a task (connect, then write)."""
        plans, delay = self._plan()
        for node, (wanted, tokens) in plans.items():
            conn = self.client.connection_if_ready(node)
            if conn is not None:
                try:
                    self._start(node, conn, wanted, tokens)
                except Exception:  # the other nodes planned in this pass still go out
                    log.exception("starting a fetch from node %s failed", node)
                    self._done(node, wanted)
                continue
            task = asyncio.ensure_future(self._connect_and_start(node, wanted, tokens))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return delay

    def _plan(self) -> tuple[dict[int, tuple[dict[TopicPartition, PartitionFetchData], dict[TopicPartition, int]]], float | None]:
        now = time.monotonic()
        meta = self.client.metadata
        plans: dict[int, tuple[dict[TopicPartition, PartitionFetchData], dict[TopicPartition, int]]] = {}
        missing: set[str] = set()
        delay: float | None = None
        buffer = self.buffer
        subs = self.subs
        validate = False
        in_flight, in_flight_nodes, retry_at_of = self._in_flight, self._in_flight_nodes, self._retry_at
        buffered, partition_max_bytes = buffer.buffered, self._partition_max_bytes
        # Once per fetch answer over every assigned partition (10,000 at a time, issue 15):
        # the metadata of a topic is looked up once per run of its partitions, and each
        # partition's leader, epoch and topic id come from one PartitionMetadata.
        topic_name: str | None = None
        topic_meta = None
        with subs.lock:
            for tp, state in list(subs.assignment.items()):
                if not is_fetchable(state) or tp in in_flight:
                    continue
                if tp.topic != topic_name:
                    topic_name = tp.topic
                    topic_meta = meta.topics.get(topic_name)
                part = topic_meta.partitions.get(tp.partition) if topic_meta is not None else None
                leader_epoch = part.leader_epoch if part is not None else -1
                if state.leader_epoch != leader_epoch and subs.maybe_validate_for_leader(tp, leader_epoch):
                    validate = True  # a new leader: validate the position first (KIP-320)
                    continue
                n = buffered(tp)
                offset = state.position
                last_epoch = state.position_epoch
                if n:
                    if n >= MAX_BUFFERED_FETCHES:
                        continue
                    last = buffer.last_for(tp)
                    if last is not None and last.token == state.token:
                        if last.error is not None:
                            continue  # an error waits for poll() to raise it
                        if last.end_offset > last.fetch_offset:
                            offset, last_epoch = last.end_offset, last.end_epoch
                assert offset is not None
                node = -1
                if state.preferred_read_replica >= 0:
                    if now < state.preferred_replica_expires and state.preferred_read_replica in meta.brokers:
                        node = state.preferred_read_replica
                    else:
                        log.debug("%s: preferred read replica %d lease over or gone; back to the leader",
                                  tp, state.preferred_read_replica)
                        state.preferred_read_replica = -1
                if node < 0:
                    if part is None or part.leader < 0:
                        missing.add(tp.topic)
                        if self.stall is not None:
                            self.stall.no_leader(tp, now)
                        continue
                    node = part.leader
                if node in in_flight_nodes:
                    continue
                retry_at = retry_at_of.get(node, 0.0)
                if retry_at > now:
                    delay = retry_at - now if delay is None else min(delay, retry_at - now)
                    continue
                planned = plans.get(node)
                if planned is None:
                    planned = plans[node] = ({}, {})
                # A preferred read replica (KIP-392) can outlive its topic's metadata.
                topic_id = topic_meta.topic_id if topic_meta is not None else ZERO_UUID
                planned[0][tp] = PartitionFetchData(
                    topic_id, offset, partition_max_bytes,
                    state.leader_epoch if state.leader_epoch is not None else leader_epoch,
                    last_epoch if last_epoch is not None and last_epoch >= 0 else -1)
                planned[1][tp] = state.token
        if missing:
            self._on_metadata_needed(missing)
        if validate and self._on_validation_needed is not None:
            self._on_validation_needed()
        for node, (wanted, _) in plans.items():
            self._in_flight_nodes.add(node)
            self._in_flight.update(wanted)
        return plans, delay

    # ------------------------------------------------------------ one fetch

    def _session(self, node: int) -> FetchSessionHandler:
        session = self._sessions.get(node)
        if session is None:
            session = self._sessions[node] = FetchSessionHandler(node)
        return session

    async def _connect_and_start(self, node: int, wanted: dict[TopicPartition, PartitionFetchData],
                                 tokens: dict[TopicPartition, int]) -> None:
        try:
            conn = await self.client.connection(node)
        except asyncio.CancelledError:
            self._session(node).handle_error()
            self._done(node, wanted)  # whatever cancelled it, the node is not busy any more
            raise
        except KafkaError as exc:
            self._failed(node, wanted, tokens, exc)
            return
        except Exception:  # never let fetching stop silently
            self._crashed(node, wanted)
            return
        self._start(node, conn, wanted, tokens)

    def _start(self, node: int, conn: BrokerConnection, wanted: dict[TopicPartition, PartitionFetchData],
               tokens: dict[TopicPartition, int]) -> None:
        """Write one Fetch request to ``node``; its answer is handled in :meth:`_answered`.

        No task and no event-loop round between the previous answer and this request:
        the caller's poll() gets the GIL only once this thread blocks, which is at this
        request's socket write (issue 15: ~0.1 ms of end-to-end latency)."""
        session = self._session(node)
        started = time.monotonic()
        try:
            version = conn.api_version(FetchRequest)
            if version >= 13 and any(d.topic_id == ZERO_UUID for d in wanted.values()):
                version = 12
            if session.enabled != (version >= 7):
                session.enabled = version >= 7
                session.handle_error()
                session.epoch = 0 if session.enabled else -1
            plan = session.build(wanted)
            request = self._request(plan, version)
            timeout_ms = self.cfg["request.timeout.ms"] + self._max_wait_ms
            response = conn.send(request, api_version=version, timeout_ms=timeout_ms)
        except KafkaError as exc:
            self._failed(node, wanted, tokens, exc)
            return
        except Exception:
            self._crashed(node, wanted)
            return
        self._responses.add(response)
        response.add_done_callback(
            lambda answer: self._answered(answer, node, session, plan, wanted, tokens, version, started))

    def _answered(self, answer: asyncio.Future[FetchResponse], node: int, session: FetchSessionHandler,
                  plan: FetchPlan, wanted: dict[TopicPartition, PartitionFetchData],
                  tokens: dict[TopicPartition, int], version: int, started: float) -> None:
        self._responses.discard(answer)
        if answer.cancelled() or self._closed:
            # Closed: an answer that came just before close() is not handled after it
            # (a task awaiting it would have been cancelled).
            session.handle_error()
            self._done(node, wanted)
            return
        error = answer.exception()
        if isinstance(error, KafkaError):
            self._failed(node, wanted, tokens, error)
            return
        if error is not None:
            self._crashed(node, wanted, error)
            return
        try:
            self._handle(node, session, plan.wanted, tokens, answer.result(), version, started)
        except Exception:
            log.exception("unexpected error handling a fetch response from node %s", node)
            self._retry_at[node] = time.monotonic() + 1.0  # not again at once, in a loop
        finally:
            self._done(node, wanted, wake=False)
        if self._closed:
            return
        try:
            # The next fetch at once (see _start). This pass is the one planning pass for
            # this answer (a pass walks every assigned partition: with thousands, one
            # is worth saving); run() is woken only for a retry timer it must set.
            if self.send_fetches() is not None:
                self._wake.set()
        except BaseException:
            self._wake.set()  # run() plans again
            raise

    def _failed(self, node: int, wanted: dict[TopicPartition, PartitionFetchData],
                tokens: dict[TopicPartition, int], exc: KafkaError) -> None:
        # _done() whatever happens here: a node or partition left marked in flight
        # would never be fetched again.
        try:
            self._retry_at[node] = time.monotonic() + self.client.reconnect_delay(node) + \
                self.cfg["retry.backoff.ms"] / 1000.0
            self._session(node).handle_error()
            # A request this client cannot build for the broker is a client bug, not a
            # passing fault: say so where it is seen (a retry cannot mend it).
            level = logging.WARNING if isinstance(exc, UnsupportedVersionForClientError) else logging.DEBUG
            log.log(level, "fetch from node %s failed: %s", node, exc)
            if self.stall is not None:
                for tp in wanted:
                    self.stall.fetch_failed(tp, exc)
            self._clear_preferred(wanted, tokens)
            self._on_metadata_needed({tp.topic for tp in wanted})
        finally:
            self._done(node, wanted)

    def _crashed(self, node: int, wanted: dict[TopicPartition, PartitionFetchData],
                 error: BaseException | None = None) -> None:
        try:
            self._retry_at[node] = time.monotonic() + 1.0
            self._session(node).handle_error()
            log.error("unexpected error in a fetch from node %s", node,
                      exc_info=error if error is not None else True)
        finally:
            self._done(node, wanted)

    def _clear_preferred(self, partitions: Iterable[TopicPartition], tokens: dict[TopicPartition, int]) -> None:
        """Back to the leader for these partitions (Java clears the preferred read
        replica whenever a fetch fails or metadata must be refreshed)."""
        with self.subs.lock:
            for tp in partitions:
                state = self.subs.assignment.get(tp)
                if state is not None and state.token == tokens.get(tp, state.token):
                    state.preferred_read_replica = -1

    def _done(self, node: int, wanted: dict[TopicPartition, PartitionFetchData], *, wake: bool = True) -> None:
        self._in_flight_nodes.discard(node)
        self._in_flight.difference_update(wanted)
        if wake:
            self._wake.set()

    def _request(self, plan: FetchPlan, version: int) -> FetchRequest:
        topics: dict[str, FetchRequestFetchTopic] = {}
        for tp, d in plan.to_send.items():
            topic = topics.get(tp.topic)
            if topic is None:
                topic = topics[tp.topic] = FetchRequestFetchTopic(topic=tp.topic, topic_id=d.topic_id, partitions=[])
            # The last fetched epoch (KIP-595's diverging-epoch check) goes from Fetch v12
            # (Kafka 2.7) on; an older broker checks the leader epoch alone, as for Java.
            topic.partitions.append(FetchRequestFetchPartition(
                partition=tp.partition, current_leader_epoch=d.current_leader_epoch, fetch_offset=d.fetch_offset,
                last_fetched_epoch=d.last_fetched_epoch if version >= 12 else -1, log_start_offset=-1,
                partition_max_bytes=d.max_bytes))
        forgotten: dict[tuple[str, uuid.UUID], list[int]] = defaultdict(list)
        for tp, topic_id in plan.forgotten:
            forgotten[(tp.topic, topic_id)].append(tp.partition)
        return FetchRequest(
            replica_id=-1, max_wait_ms=self._max_wait_ms, min_bytes=self._min_bytes, max_bytes=self._max_bytes,
            isolation_level=self._isolation, session_id=plan.session_id, session_epoch=plan.epoch,
            topics=list(topics.values()),
            forgotten_topics_data=[FetchRequestForgottenTopic(topic=t, topic_id=i, partitions=p)
                                   for (t, i), p in forgotten.items()],
            rack_id=self._rack,
        )

    def _handle(self, node: int, session: FetchSessionHandler, wanted: dict[TopicPartition, PartitionFetchData],
                tokens: dict[TopicPartition, int], response: FetchResponse, version: int, started: float) -> None:
        if not session.handle_response(response.error_code, response.session_id):
            err = error_for_code(response.error_code, f"fetch from node {node} failed")
            failures = self._top_level_failures[node] = self._top_level_failures.get(node, 0) + 1
            if response.error_code not in _SESSION_ERRORS or failures > 1:
                # Asking again at once is right for a session error, once; any other error
                # (or the same again) would otherwise repeat as fast as the broker answers.
                self._retry_at[node] = time.monotonic() + self._top_level_backoff.delay_s(failures - 1)
            log.debug("fetch from node %s failed as a whole (%d in a row): %s", node, failures, err)
            if response.error_code in _REFRESH:
                self._on_metadata_needed({tp.topic for tp in wanted})
            return
        self._top_level_failures.pop(node, None)
        meta = self.client.metadata
        for endpoint in response.node_endpoints or ():
            meta.add_broker(BrokerNode(endpoint.node_id, endpoint.host, endpoint.port, endpoint.rack))
        added = False
        total_bytes = 0
        refresh: set[str] = set()
        now = time.monotonic()
        subs = self.subs
        for topic_response in response.responses:
            name = topic_response.topic if version < 13 else meta.topic_name(topic_response.topic_id)
            if name is None:
                refresh.update(tp.topic for tp in wanted)
                continue
            for p in topic_response.partitions:
                tp = TopicPartition(name, p.partition_index)
                data = wanted.get(tp)
                if data is None:
                    continue
                token = tokens.get(tp, -1)
                code = p.error_code
                if code == 0 and version >= 12 and p.diverging_epoch.epoch >= 0:
                    # KIP-320: the log diverged from what we fetched (no records come with it).
                    log.info("%s: the leader's log diverges from epoch %d at offset %d (fetch offset %d)",
                             tp, p.diverging_epoch.epoch, p.diverging_epoch.end_offset, data.fetch_offset)
                    if self._on_diverging is not None:
                        self._on_diverging(tp, token, p.diverging_epoch.end_offset, p.diverging_epoch.epoch)
                    continue
                if self.stall is not None:
                    if code == 0:
                        self.stall.fetch_ok(tp)
                    elif code != _OFFSET_OUT_OF_RANGE:
                        self.stall.fetch_failed(tp, error_for_code(code, f"fetching {name}-{p.partition_index}"))
                if code == 0:
                    with subs.lock:
                        state = subs.assignment.get(tp)
                        if state is None or state.token != token:
                            continue  # seeked, reset or revoked meanwhile
                        subs.update_marks(tp, p.high_watermark, p.last_stable_offset, p.log_start_offset)
                        if p.preferred_read_replica >= 0 and p.preferred_read_replica != node:
                            state.preferred_read_replica = p.preferred_read_replica
                            state.preferred_replica_expires = now + self.cfg["metadata.max.age.ms"] / 1000.0
                    records = p.records
                    if records is not None and len(records):
                        aborted = ([(a.producer_id, a.first_offset) for a in p.aborted_transactions]
                                   if self.read_committed and p.aborted_transactions else None)
                        fetch = CompletedFetch(tp, token, data.fetch_offset, records,
                                               high_watermark=p.high_watermark,
                                               last_stable_offset=p.last_stable_offset,
                                               log_start_offset=p.log_start_offset, aborted=aborted,
                                               read_committed=self.read_committed, check_crcs=self._check_crcs)
                        if fetch.bytes == 0:
                            # No whole batch: a broker older than KIP-74 cut a batch larger
                            # than our limits; Java raises RecordTooLarge in this case.
                            fetch.error = error_for_code(
                                10, f"the batch at offset {data.fetch_offset} of {name}-{p.partition_index} "
                                    f"is larger than max.partition.fetch.bytes={self._partition_max_bytes}",
                                topic=name, partition=p.partition_index)
                        total_bytes += len(records)
                        self.buffer.add(fetch)
                        added = True
                    elif self.metrics is not None:
                        self.metrics.record_lag(tp)
                elif code == _OFFSET_OUT_OF_RANGE and node != meta.leader_for(name, p.partition_index):
                    # A follower that lags says out of range: fetch from the leader instead
                    # (Java resets only on the leader's word).
                    log.debug("%s: out of range on read replica %d; back to the leader", tp, node)
                    self._clear_preferred((tp,), tokens)
                elif code == _OFFSET_OUT_OF_RANGE:
                    self._on_out_of_range(tp, token, data.fetch_offset)
                elif code in _REFRESH or code == _UNKNOWN_LEADER_EPOCH:
                    self._clear_preferred((tp,), tokens)
                    leader = p.current_leader
                    if leader is not None and leader.leader_id >= 0 and meta.update_leader(
                            name, p.partition_index, leader.leader_id, leader.leader_epoch):
                        continue  # KIP-951: the new leader is known, fetch from it at once
                    if code != _UNKNOWN_LEADER_EPOCH:
                        meta.forget_leader(name, p.partition_index)
                    refresh.add(name)
                else:
                    err = error_for_code(code, f"fetching {name}-{p.partition_index} failed",
                                         topic=name, partition=p.partition_index)
                    if err.retriable:
                        log.debug("retriable fetch error: %s", err)
                        continue
                    self.buffer.add(CompletedFetch(tp, token, data.fetch_offset, None, error=err))
                    added = True
        if self.metrics is not None:
            self.metrics.record_fetch(node, (time.monotonic() - started) * 1000.0, total_bytes)
        if refresh:
            self._on_metadata_needed(refresh)
        if added:
            self._on_data()

    def forget_sessions(self) -> None:
        """Start every broker's session afresh (e.g. after a big assignment change)."""
        for session in self._sessions.values():
            session.handle_error()
