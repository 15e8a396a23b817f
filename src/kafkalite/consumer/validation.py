"""KIP-320 position validation: OffsetsForLeaderEpoch after a leader change (engine side).

A consumer's position is only safe on the leader whose log it was read from. After a
leader change (a newer leader epoch in metadata or a Fetch response's leader hint,
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH followed by a metadata refresh), or for a
position that came with a record epoch from outside (a committed offset, ``seek`` with
an :class:`~kafkalite.types.OffsetAndMetadata`), the partition is held back
(``awaiting_validation``, see :class:`~kafkalite.consumer.subscription.SubscriptionState`)
and this module asks the current leader where the epoch of the last consumed record
ends: ``OffsetsForLeaderEpoch(leader_epoch=<position epoch>)``, v3+ as Java requires
(older brokers skip validation, as Java does).

The answer is judged by ``SubscriptionState.complete_validation`` exactly as Java's
``SubscriptionState.maybeCompleteValidation``: an end offset at or past the position
validates it; one below it means the new leader's log was truncated under us (unclean
leader election). Then, with ``auto.offset.reset`` earliest/latest the position moves to
that end offset (the first offset known to diverge) and an INFO line is logged; with
``none`` poll() raises :class:`~kafkalite.errors.LogTruncationError` naming the
partition, the position and the divergent offset, until the application seeks.

A Fetch response carrying ``DivergingEpoch`` (the fetcher sends ``LastFetchedEpoch``,
Fetch v12+) is handled the same way by :meth:`ConsumerCore.on_diverging
<kafkalite.consumer.core.ConsumerCore.on_diverging>`, without a separate round trip.

Per-partition errors follow Java's ``OffsetsForLeaderEpochUtils``: stale-leader and
unavailable errors refresh metadata and retry after ``retry.backoff.ms``;
TOPIC_AUTHORIZATION_FAILED is raised from poll().
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable

from kafkalite.config import Config
from kafkalite.consumer.fetch_buffer import CompletedFetch, FetchBuffer
from kafkalite.consumer.subscription import LogTruncation, SubscriptionState
from kafkalite.errors import KafkaError, LogTruncationError, error_for_code
from kafkalite.net.client import NetworkClient
from kafkalite.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestOffsetForLeaderPartition,
    OffsetForLeaderEpochRequestOffsetForLeaderTopic,
)
from kafkalite.types import OffsetAndMetadata, TopicPartition

log = logging.getLogger("kafkalite.consumer")

#: OffsetsForLeaderEpoch v3 is the first a consumer may use (topic permissions, KIP-320).
MIN_VERSION = 3
_TOPIC_AUTHORIZATION_FAILED = 29


def truncation_error(truncation: LogTruncation, position_epoch: int | None) -> LogTruncationError:
    """The error poll() raises for a truncation found with ``auto.offset.reset=none``."""
    tp = truncation.tp
    name = f"{tp.topic}-{tp.partition}"
    at = f"offset {truncation.fetch_offset}" + (f" (leader epoch {position_epoch})" if position_epoch is not None
                                                else "")
    if truncation.divergent is None:
        message = (f"log truncation detected for {name} at {at}: the current leader does not know that "
                   f"epoch; auto.offset.reset is 'none', so seek() to a valid position")
        divergent: dict[TopicPartition, OffsetAndMetadata] = {}
    else:
        end, epoch = truncation.divergent
        message = (f"log truncation detected for {name} at {at}: the leader's log ends that epoch at offset "
                   f"{end} (leader epoch {epoch}), so the records from offset {end} on that were consumed are "
                   f"gone or differ; auto.offset.reset is 'none', so seek() to a valid position "
                   f"(e.g. seek({tp!r}, {end}))")
        divergent = {tp: OffsetAndMetadata(end, "", epoch)}
    err = LogTruncationError(message, divergent_offsets=divergent, topic=tp.topic, partition=tp.partition)
    err.context["offsets"] = {tp: truncation.fetch_offset}
    return err


class PositionValidator:
    """Sends OffsetsForLeaderEpoch for partitions awaiting validation (one per leader).

    Args:
        client: the consumer's network client.
        subs: its subscription state (positions, validation marks).
        buffer: its fetch buffer, where a truncation error waits for poll() as a fetch
            of that position would (stale once the application seeks).
        cfg: its settings (``retry.backoff.ms``, ``request.timeout.ms``).
        notify_poll: wakes a waiting poll() (an error is queued).
        request_metadata: asks for a metadata refresh of these topics (a leader moved).
        wake_fetcher: validated partitions may be fetched again.
    """

    def __init__(self, client: NetworkClient, subs: SubscriptionState, buffer: FetchBuffer, cfg: Config, *,
                 notify_poll: Callable[[], None], request_metadata: Callable[[Iterable[str]], None],
                 wake_fetcher: Callable[[], None]) -> None:
        self.client = client
        self.subs = subs
        self.buffer = buffer
        self.notify_poll = notify_poll
        self.request_metadata = request_metadata
        self.wake_fetcher = wake_fetcher
        self._backoff_s = cfg["retry.backoff.ms"] / 1000.0
        self._timeout_ms = cfg["request.timeout.ms"]

    def report(self, truncation: LogTruncation) -> None:
        """Queue a truncation for poll() to raise (stale once the application seeks)."""
        with self.subs.lock:
            state = self.subs.assignment.get(truncation.tp)
            if state is None or state.position != truncation.fetch_offset:
                return
            token, epoch = state.token, state.position_epoch
        err = truncation_error(truncation, epoch)
        self.buffer.add(CompletedFetch(truncation.tp, token, truncation.fetch_offset, None, error=err))
        self.notify_poll()

    def next_retry(self) -> float | None:
        """Seconds until the earliest postponed validation is due (None: none waits)."""
        with self.subs.lock:
            times = [s.validation_retry_at for s in self.subs.assignment.values() if s.awaiting_validation]
        if not times:
            return None
        return max(0.0, min(times) - time.monotonic())

    async def validate(self) -> None:
        """Validate every partition that is due; errors are retried later or queued for poll()."""
        now = time.monotonic()
        due = self.subs.partitions_needing_validation(now)
        if not due:
            return
        meta = self.client.metadata
        by_leader: dict[int, dict[TopicPartition, tuple[int, int, int, int]]] = defaultdict(dict)
        unknown: set[str] = set()
        for tp, (offset, epoch, token) in due.items():
            leader = meta.leader_for(tp.topic, tp.partition)
            leader_epoch = meta.leader_epoch(tp.topic, tp.partition)
            if leader is None:
                unknown.add(tp.topic)
                self.subs.validation_failed([tp], now + self._backoff_s)
                continue
            if leader_epoch < 0:
                # No epoch in metadata (an old broker): nothing to validate against (Java).
                self.subs.skip_validation(tp, token)
                continue
            if self.subs.validation_started(tp, token, leader_epoch):
                by_leader[leader][tp] = (offset, epoch, token, leader_epoch)
        if unknown:
            self.request_metadata(unknown)
        if by_leader:
            await asyncio.gather(*(self._validate_on(node, parts) for node, parts in by_leader.items()))
        self.wake_fetcher()

    async def _validate_on(self, node: int, parts: dict[TopicPartition, tuple[int, int, int, int]]) -> None:
        subs = self.subs
        try:
            conn = await self.client.connection(node)
            version = conn.versions.negotiate(OffsetForLeaderEpochRequest) if conn.versions is not None else None
            if version is None or version < MIN_VERSION:
                # Java skips validation when the broker lacks OffsetsForLeaderEpoch v3.
                for tp, (_o, _e, token, _l) in parts.items():
                    subs.skip_validation(tp, token)
                return
            topics: dict[str, list[OffsetForLeaderEpochRequestOffsetForLeaderPartition]] = defaultdict(list)
            for tp, (_offset, epoch, _token, leader_epoch) in parts.items():
                topics[tp.topic].append(OffsetForLeaderEpochRequestOffsetForLeaderPartition(
                    partition=tp.partition, current_leader_epoch=leader_epoch, leader_epoch=epoch))
            request = OffsetForLeaderEpochRequest(replica_id=-1, topics=[
                OffsetForLeaderEpochRequestOffsetForLeaderTopic(topic=t, partitions=p) for t, p in topics.items()])
            response = await conn.request(request, api_version=version, timeout_ms=self._timeout_ms)
        except asyncio.CancelledError:
            raise
        except KafkaError as exc:
            log.debug("validating positions on node %d failed: %s", node, exc)
            subs.validation_failed(parts, time.monotonic() + self._backoff_s)
            self.request_metadata({tp.topic for tp in parts})
            return
        retry_at = time.monotonic() + self._backoff_s
        answered: set[TopicPartition] = set()
        refresh: set[str] = set()
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.topic, p.partition)
                asked = parts.get(tp)
                if asked is None:
                    continue
                answered.add(tp)
                offset, epoch, token, _ = asked
                if p.error_code == 0:
                    log.debug("%s: leader %d says epoch %d ends at offset %d (position %d, epoch %d)",
                              tp, node, p.leader_epoch, p.end_offset, offset, epoch)
                    truncation = subs.complete_validation(tp, offset, token, p.end_offset, p.leader_epoch,
                                                          retry_at=retry_at)
                    if truncation is not None:
                        self.report(truncation)
                    continue
                err = error_for_code(p.error_code, f"validating the position of {tp.topic}-{tp.partition} failed",
                                     topic=tp.topic, partition=tp.partition)
                if p.error_code == _TOPIC_AUTHORIZATION_FAILED:
                    self.buffer.add(CompletedFetch(tp, token, offset, None, error=err))
                    self.notify_poll()
                    subs.validation_failed([tp], retry_at)
                    continue
                log.debug("%s: %s; validating again after a metadata refresh", tp, err)
                subs.validation_failed([tp], retry_at)
                refresh.add(tp.topic)
        missing = [tp for tp in parts if tp not in answered]
        if missing:
            subs.validation_failed(missing, retry_at)
            refresh.update(tp.topic for tp in missing)
        if refresh:
            self.request_metadata(refresh)
