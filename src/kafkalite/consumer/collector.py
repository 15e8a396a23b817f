"""The consumer's poll side: records (or whole batches) taken out of the fetch buffer.

:class:`RecordCollector` runs in the thread (or task) that calls ``poll()``; it never
blocks and never does I/O. It takes the buffered fetches in order, drops those a seek,
reset, pause or revocation made stale, decodes lazily (``CompletedFetch.take``),
advances the positions as records are handed out, and reports what it handed out to
the metrics and the observability features. The engine side (the fetcher) is only
woken, through ``call_soon``.

Example (what the consumer core does)::

    collector = RecordCollector(buffer, subs, fetcher, metrics, observe, deserializer,
                                call_soon=call_soon, defer_error=errors.appendleft)
    records = collector.collect(500)                  # poll()
    batches = collector.collect_batches(1 << 20)      # poll_batches()
"""

from __future__ import annotations

from collections.abc import Callable

from kafkalite.consumer.deserializing import RecordDeserializer
from kafkalite.consumer.fetch_buffer import CompletedFetch, FetchBuffer
from kafkalite.consumer.fetcher import Fetcher
from kafkalite.consumer.metrics import ConsumerMetrics
from kafkalite.consumer.observability import ConsumerObservability
from kafkalite.consumer.records import ConsumerRecords, add_range
from kafkalite.consumer.subscription import SubscriptionState
from kafkalite.errors import KafkaError
from kafkalite.protocol.records import Batch
from kafkalite.types import TopicPartition

__all__ = ["RecordCollector"]


class RecordCollector:
    """Takes records out of the fetch buffer for ``poll()`` (see the module doc).

    Args:
        buffer: the fetch buffer the fetcher fills.
        subs: the subscription state: validity of a fetch, positions to advance.
        fetcher: woken (on the engine) when a drained partition may be fetched again.
        metrics: consumed records and bytes, lag.
        observe: records handed out (time lag) and errors raised, per partition.
        deserializer: applied to the records ``collect`` returns.
        call_soon: runs a callable on the engine (thread-safe).
        defer_error: keeps an error for the next poll() to raise, ahead of any other
            (a fetch's error met after some records were taken: those go out first).
    """

    def __init__(self, buffer: FetchBuffer, subs: SubscriptionState, fetcher: Fetcher,
                 metrics: ConsumerMetrics, observe: ConsumerObservability, deserializer: RecordDeserializer,
                 *, call_soon: Callable[..., None], defer_error: Callable[[BaseException], None]) -> None:
        self.buffer = buffer
        self.subs = subs
        self.fetcher = fetcher
        self.metrics = metrics
        self.observe = observe
        self.deserializer = deserializer
        self.call_soon = call_soon
        self.defer_error = defer_error

    def _next_fetch(self, collected: bool) -> CompletedFetch | None:
        """The buffered fetch to take records from next, or None.

        Drops fetches a seek, reset, pause or revocation made stale (the partition's
        token or position moved on). A fetch carrying an error is raised when nothing
        was ``collected`` yet; otherwise it is kept for the next poll() and None is
        returned, so the records before it go out first.
        """
        buffer = self.buffer
        subs = self.subs
        dropped = False
        try:
            while True:
                fetch = buffer.peek()
                if fetch is None:
                    return None
                with subs.lock:
                    state = subs.assignment.get(fetch.tp)
                    valid = (state is not None and state.token == fetch.token and not state.paused
                             and not state.pending_revocation and not state.awaiting_callback
                             and state.position == fetch.next_offset)
                if valid and fetch.error is None:
                    return fetch
                buffer.pop(fetch)
                dropped = True
                if not valid:
                    continue
                assert fetch.error is not None
                self.observe.raised(fetch.tp, fetch.error)
                if collected:
                    # Return what we have; the error is raised by the next poll().
                    self.defer_error(fetch.error)
                    return None
                raise fetch.error
        finally:
            if dropped:
                self.call_soon(self.fetcher.wake)

    def collect(self, max_records: int) -> ConsumerRecords:
        """Take up to ``max_records`` records from the buffer."""
        out = ConsumerRecords()
        remaining = max_records
        wake_fetcher = False
        consumed_bytes = 0
        last_timestamps: dict[TopicPartition, int] = {}  # of the records handed out (records-time-lag)
        while remaining > 0:
            fetch = self._next_fetch(bool(out))
            if fetch is None:
                break
            tp = fetch.tp
            start = len(out)
            try:
                n = fetch.take(remaining, out)
            except KafkaError as exc:
                self.observe.raised(tp, exc)
                if out:
                    break  # raised again by the next poll(); records before it go out now
                raise
            if n:
                add_range(out, tp, start, len(out))
                remaining -= n
                last_timestamps[tp] = out[-1][1]
            wake_fetcher = self._advance(fetch) or wake_fetcher
            if fetch.exhausted:
                consumed_bytes += fetch.bytes
        if wake_fetcher:
            self.call_soon(self.fetcher.wake)
        if out or consumed_bytes:
            self.metrics.record_consumed(len(out), consumed_bytes)
        self.observe.returned(last_timestamps)
        if out and self.deserializer.active:
            out = self.deserializer.apply(out)
        return out

    def _advance(self, fetch: CompletedFetch) -> bool:
        """After taking from ``fetch``: move its partition's position past what was taken
        and, once the fetch is drained, drop it from the buffer and record the lag. True
        when the fetcher must be woken for the partition (see
        :meth:`Fetcher.needs_wake_after_drain`, asked after the pop)."""
        tp = fetch.tp
        with self.subs.lock:
            self.subs.advance(tp, fetch.token, fetch.next_offset, fetch.last_epoch)
        if not fetch.exhausted:
            return False
        self.buffer.pop(fetch)
        wake = self.fetcher.needs_wake_after_drain(tp)
        self.metrics.record_lag(tp)
        return wake

    def collect_batches(self, max_bytes: int) -> list[tuple[TopicPartition, list[Batch]]]:
        """The columnar path: take whole fetched batches, undecoded.

        Like :meth:`collect` (same validity checks, errors and position updates) but
        hands out ``(partition, [RecordBatch, ...])`` per drained fetch, stopping once
        about ``max_bytes`` of batches are taken. Deserializers do not apply: callers
        read the raw key and value bytes (e.g. with ``RecordBatch.columns()``). The
        first batch of a partition may start before its position (see
        :meth:`CompletedFetch.take_batches`).
        """
        out: list[tuple[TopicPartition, list[Batch]]] = []
        taken_bytes = 0
        wake_fetcher = False
        last_timestamps: dict[TopicPartition, int] = {}
        while taken_bytes < max_bytes:
            fetch = self._next_fetch(bool(out))
            if fetch is None:
                break
            tp = fetch.tp
            batches: list[Batch] = []
            try:
                fetch.take_batches(batches)
            except KafkaError as exc:
                self.observe.raised(tp, exc)
                if out:
                    break  # raised again by the next call; batches before it go out now
                raise
            if batches:
                out.append((tp, batches))
                last_timestamps[tp] = batches[-1].max_timestamp
            wake_fetcher = self._advance(fetch) or wake_fetcher
            if fetch.exhausted:
                taken_bytes += fetch.bytes
            elif batches:
                break  # a corrupt batch follows: raised by the next call
        if wake_fetcher:
            self.call_soon(self.fetcher.wake)
        if taken_bytes:
            self.metrics.record_consumed(
                sum(int(getattr(b, "record_count", 1)) for _, bs in out for b in bs), taken_bytes)
        self.observe.returned(last_timestamps)
        return out
