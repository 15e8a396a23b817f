"""The share consumer's core: one per share consumer, shared by both front ends.

On the engine's event loop it owns the :class:`NetworkClient`, the share group member
(:mod:`kafkalite.share.heartbeat`), the fetcher (:mod:`kafkalite.share.fetcher`) and a
metadata refresher. The thread that calls ``poll()`` (or the task, for asyncio) works
through the ``poll_*`` methods, which never block and never do I/O: they settle the
previous poll's records (implicit mode), take fetched data from the buffer, decode it
and keep the delivered records *in flight* until they are acknowledged
(:class:`~kafkalite.share.in_flight.InFlight`).

What happens to acknowledgements, as in Java's ``ShareConsumerImpl``:

* ``poll()`` with nothing buffered asks the engine to fetch and hands it the
  acknowledgements to piggy-back on that ShareFetch;
* ``poll()`` with records still buffered sends the acknowledgements in an asynchronous
  ShareAcknowledge;
* ``commit_sync()`` / ``commit_async()`` send them at once (ShareAcknowledge);
* ``close()`` sends them with the session-closing ShareAcknowledge (epoch -1), then
  leaves the group (ShareGroupHeartbeat epoch -1).

The outcome of every acknowledgement reaches the acknowledgement commit callback from
the next ``poll()`` / commit / close, in the polling thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from kafkalite.clients_common.tasks import BackgroundTasks, wait_for_wake
from kafkalite.config import SHARE_CONSUMER, Config
from kafkalite.errors import (
    IllegalStateError,
    InvalidGroupIdError,
    KafkaError,
    SerializationError,
)
from kafkalite.metrics import Metrics
from kafkalite.net.client import NetworkClient
from kafkalite.net.engine import cancel_and_wait
from kafkalite.serialization.deserializers import KeyValueDeserializers
from kafkalite.share.acks import AckOutcome
from kafkalite.share.completed_fetch import ShareCompletedFetch
from kafkalite.share.fetcher import ShareFetcher
from kafkalite.share.heartbeat import ShareGroupMember
from kafkalite.share.in_flight import AcksByNode, InFlight, merge_acks
from kafkalite.share.metrics import ShareConsumerMetrics
from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord
from kafkalite.telemetry.hub import ClientTelemetry
from kafkalite.types import TopicPartition

log = logging.getLogger("kafkalite.share")

#: ``callback(offsets_by_partition, error_or_None)``, Java's AcknowledgementCommitCallback
AckCallback = Callable[[dict[TopicPartition, set[int]], "BaseException | None"], object]
#: A deserializer as called: ``(topic, data, headers) -> value`` (the application's object).
DeserializeFunction = Callable[[str, bytes, list[tuple[str, bytes | None]]], Any]


class ShareConsumerCore:
    """Everything a share consumer does, minus the front end's waiting."""

    def __init__(self, cfg: Config, loop: asyncio.AbstractEventLoop, notify_poll: Callable[[], None],
                 call_soon: Callable[..., None]) -> None:
        self.cfg = cfg
        self.loop = loop
        self.notify_poll = notify_poll
        self.call_soon = call_soon
        group_id = cfg["group.id"]
        if group_id is None:  # config.parse() requires it of a share consumer
            raise InvalidGroupIdError("a share consumer needs the setting 'group.id' (its share group)")
        self.group_id = group_id
        self.explicit = cfg["share.acknowledgement.mode"] == "explicit"
        self.max_poll_records: int = cfg["max.poll.records"]
        self.api_timeout_s = cfg["default.api.timeout.ms"] / 1000.0
        self.client = NetworkClient(cfg)
        self.registry = Metrics(cfg["metrics.sample.window.ms"], cfg["metrics.num.samples"],
                                cfg["metrics.recording.level"])
        self.metrics = ShareConsumerMetrics(self.registry, cfg["client.id"])
        self.client.stats.register(self.registry, "consumer-share-metrics",
                                   {"client-id": cfg["client.id"]} if cfg["client.id"] else None)
        self.telemetry = ClientTelemetry(cfg, SHARE_CONSUMER, self.client, self.registry,
                                         labels=lambda: {"group_id": self.cfg["group.id"],
                                                         "client_rack": self.cfg["client.rack"] or None})
        self.subscription: frozenset[str] = frozenset()
        self.buffer: deque[ShareCompletedFetch] = deque()
        self.in_flight = InFlight()
        self.errors: deque[BaseException] = deque()
        self.ack_results: deque[AckOutcome] = deque()
        self.ack_callback: AckCallback | None = None
        self.closed = False
        self._started = False
        self.tasks = BackgroundTasks(loop, "kafkalite-share", "share consumer", log, on_death=self.report_error,
                                     is_closed=lambda: self.closed)
        self.member = ShareGroupMember(cfg, group_id, self.client, loop, self.metrics, task_done=self.tasks.task_done,
                                       subscription=lambda: self.subscription, notify_poll=notify_poll,
                                       request_metadata=self.request_metadata, on_assignment=self.on_assignment)
        self.fetcher = ShareFetcher(cfg, group_id, self.client, loop, self.member, self.buffer, self.metrics,
                                    reports=self, task_done=self.tasks.task_done)
        self._metadata_wake = asyncio.Event()
        self.deserializers = KeyValueDeserializers(cfg)

    # ------------------------------------------------------------ engine side

    def start(self) -> None:
        """Start the background tasks (idempotent; on the engine loop)."""
        if self._started or self.closed:
            return
        self._started = True
        self.tasks.spawn(self.fetcher.run(), "fetcher")
        self.tasks.spawn(self._metadata_loop(), "metadata")
        self.member.start()
        self.telemetry.start(self.loop)

    def report_error(self, exc: BaseException) -> None:
        self.errors.append(exc)
        self.notify_poll()

    def report_acks(self, outcomes: list[AckOutcome]) -> None:
        failed = sum(len(o.offsets) for o in outcomes if o.error is not None)
        self.metrics.record_acks(sum(len(o.offsets) for o in outcomes), failed)
        for o in outcomes:
            if o.error is not None:
                log.debug("acknowledgement of %d records of %s failed: %s", len(o.offsets), o.partition, o.error)
        if self.ack_callback is not None:
            self.ack_results.extend(outcomes)
            self.notify_poll()

    def request_metadata(self) -> None:
        self._metadata_wake.set()

    def assignment(self) -> frozenset[TopicPartition]:
        return self.member.assignment

    def on_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        self.client.track_topics({tp.topic for tp in partitions})
        self.fetcher.wake()

    def set_subscription(self, topics: frozenset[str]) -> None:
        """Engine side of subscribe()."""
        self.subscription = topics
        self.client.track_topics(topics)
        self._metadata_wake.set()
        self.member.start()
        self.member.wake()

    async def _metadata_loop(self) -> None:
        max_age = self.cfg["metadata.max.age.ms"] / 1000.0
        while True:
            await wait_for_wake(self._metadata_wake, max_age)
            self._metadata_wake.clear()
            if not self.subscription and not self.member.assignment:
                continue
            try:
                await self.client.refresh_metadata(timeout_s=self.api_timeout_s)
            except KafkaError as exc:
                log.debug("share consumer metadata refresh failed: %s", exc)
                await asyncio.sleep(self.cfg["retry.backoff.ms"] / 1000.0)
                continue
            self.member.wake()
            self.fetcher.wake()
            await asyncio.sleep(self.cfg["retry.backoff.ms"] / 1000.0)  # no refresh storms

    async def commit(self, acks: AcksByNode, timeout_s: float) -> dict[TopicPartition, BaseException | None]:
        """ShareAcknowledge ``acks`` now and wait for the outcome per partition."""
        outcomes = await self.fetcher.acknowledge(acks, time.monotonic() + timeout_s)
        result: dict[TopicPartition, BaseException | None] = {}
        for o in outcomes:
            if o.error is not None or o.partition not in result:
                result[o.partition] = o.error
        return result

    def commit_async(self, acks: AcksByNode) -> None:
        """Engine side of commit_async()."""
        if acks:
            self.fetcher.spawn(self.fetcher.acknowledge(acks, time.monotonic() + self.api_timeout_s))

    async def unsubscribe(self, acks: AcksByNode, timeout_s: float) -> None:
        """Send ``acks``, end the share sessions, leave the group (epoch -1)."""
        deadline = time.monotonic() + timeout_s
        self.subscription = frozenset()
        merge_acks(acks, self.fetcher.piggyback)
        self.fetcher.piggyback = {}
        self.fetcher.fetch_more = False
        try:
            await asyncio.wait_for(self.fetcher.acknowledge(acks, deadline, closing=True),
                                   max(0.01, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            log.debug("share consumer: acknowledgements on close timed out")
        try:
            await asyncio.wait_for(self.member.leave(), max(0.01, deadline - time.monotonic()))
        except (asyncio.TimeoutError, KafkaError) as exc:
            log.debug("leaving share group %s: %r", self.group_id, exc)
        self.buffer.clear()

    async def close(self, acks: AcksByNode, timeout_s: float) -> None:
        """Acknowledge, end the sessions, leave the group and stop; bounded by ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        try:
            await self.telemetry.close(min(1.0, max(0.0, timeout_s / 4)))  # KIP-714 terminating push
            if self.member.member.member_epoch > 0 or acks or self.fetcher.sessions:
                self.fetcher.stop_fetching()
                await self.unsubscribe(acks, max(0.01, deadline - time.monotonic()))
        finally:
            self.closed = True
            try:
                stopped = self.member.stop()
                fetches = await self.fetcher.close(max(0.0, min(1.0, deadline - time.monotonic())))
                # One cancel() may not stop a task on Python < 3.12 (gh-86296): see cancel_and_wait.
                await cancel_and_wait([*stopped, *fetches, *self.tasks.tasks], max(0.05, deadline - time.monotonic()))
            finally:
                await self.client.close()

    # ------------------------------------------------------------ poll side (caller's thread)

    def poll_begin(self) -> None:
        """Start of poll(): settle the last poll's records (implicit mode)."""
        now = time.monotonic()
        self.metrics.record_poll(now)
        if not self.explicit:
            self.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)

    def raise_errors(self) -> None:
        fatal = self.member.fatal
        if fatal is not None:
            raise fatal
        if self.errors:
            raise self.errors.popleft()

    def run_ack_callbacks(self) -> None:
        """Report finished acknowledgements to the acknowledgement commit callback."""
        callback = self.ack_callback
        results = self.ack_results
        while results:
            outcome = results.popleft()
            if callback is not None:
                callback({outcome.partition: set(outcome.offsets)}, outcome.error)

    def collect(self) -> list[ShareConsumerRecord]:
        """Hand out buffered records, or ask the engine to fetch (see the module doc).

        Raises IllegalStateError in explicit mode while the last poll's records are not
        all acknowledged (Java does the same), and decoding errors of the data.
        """
        flight = self.in_flight
        if len(flight):
            acks = flight.take_acknowledged()
            if acks:
                self.call_soon(self.commit_async, acks)
            raise IllegalStateError(
                f"{len(flight)} records of the last poll() are not acknowledged: with "
                "share.acknowledgement.mode=explicit every record must be acknowledged before the next poll()",
                group_id=self.group_id)
        out: list[ShareConsumerRecord] = []
        try:
            self._take(out)
        finally:
            acks = flight.take_acknowledged()
            if out:
                if acks:
                    self.call_soon(self.commit_async, acks)
            elif not self.buffer:
                self.call_soon(self.fetcher.request_fetch, acks)
            elif acks:
                self.call_soon(self.commit_async, acks)
        return out

    def _take(self, out: list[ShareConsumerRecord]) -> None:
        flight = self.in_flight
        buffer = self.buffer
        limit = self.max_poll_records
        assigned = self.member.assignment
        while buffer and len(out) < limit:
            fetch = buffer[0]
            node, tp = fetch.node, fetch.tp

            def ack(offset: int, kind: AcknowledgeType, node: int = node, tp: TopicPartition = tp) -> None:
                flight.add_ack(node, tp, offset, kind)

            if tp not in assigned and fetch.records_returned == 0:
                # No longer assigned: give its records back at once rather than on lock expiry.
                buffer.popleft()
                releasing: list[ShareConsumerRecord] = []
                try:
                    fetch.take(1 << 30, releasing, ack)
                except KafkaError:
                    pass  # a corrupt batch: its records were rejected
                for r in releasing:
                    flight.add_ack(node, tp, r[0], AcknowledgeType.RELEASE)
                continue
            start = len(out)
            try:
                fetch.take(limit - len(out), out, ack)
            except KafkaError as exc:
                if not out:
                    raise
                self.errors.append(exc)  # raised by the next poll(), after these records
                return
            finally:
                if fetch.exhausted:
                    buffer.popleft()
            if len(out) > start:
                records = out[start:]
                if self.deserializers.active:
                    records = self._deserialize(node, records, defer=start > 0)
                    out[start:] = records
                    if self.errors:
                        flight.add(node, records)
                        return
                flight.add(node, records)

    def _deserialize(self, node: int, records: list[ShareConsumerRecord], *,
                     defer: bool) -> list[ShareConsumerRecord]:
        """Deserialized copies; a record that fails is released with those after it, and
        the error is raised (or kept for the next poll() when records precede it)."""
        out: list[ShareConsumerRecord] = []
        for i, r in enumerate(records):
            key, value = r[2], r[3]
            try:
                new_key, new_value = self.deserializers.key_and_value(r[6], key, value, r[4])
            except Exception as exc:
                # Java releases the record and raises; the records before it are returned
                # by this poll() only if the error is raised on the next one.
                tp = TopicPartition(r[6], r[7])
                self.in_flight.add_ack(node, tp, r[0], AcknowledgeType.RELEASE)
                for later in records[i + 1:]:
                    self.in_flight.add_ack(node, tp, later[0], AcknowledgeType.RELEASE)
                message = (f"cannot deserialize the record at offset {r[0]} of {r[6]}-{r[7]}: {exc}; "
                           "the record was released (it is delivered again until share.delivery.count.limit)")
                err = exc if isinstance(exc, SerializationError) else SerializationError(message)
                if err is exc:
                    err.message = message
                err.with_context(topic=r[6], partition=r[7])
                if out or defer:
                    self.errors.append(err)
                    return out
                raise err from (None if err is exc else exc)
            out.append(tuple.__new__(ShareConsumerRecord, (r[0], r[1], new_key, new_value, *r[4:10],
                                                           len(key) if key is not None else -1,
                                                           len(value) if value is not None else -1)))
        return out

