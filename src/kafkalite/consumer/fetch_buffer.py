"""Fetched data waiting for poll(): lazy decoding, transaction filtering, slicing.

The engine puts one :class:`CompletedFetch` per partition and Fetch response into the
:class:`FetchBuffer`; it holds the partition's raw records bytes (a zero-copy view of
the response frame) and is decoded batch by batch only when poll() takes records from
it, in the thread that calls poll(). Each batch is decoded with one call into the record
kernels (C when built) straight into :class:`~kafkalite.types.ConsumerRecord` tuples,
and poll() slices the decoded list: no per-record Python work beyond building the record.

Filtering follows the Java client's ``CompletedFetch``:

* control batches (transaction markers) are never returned, at any isolation level;
* with ``read_committed`` the response's aborted-transactions list, ordered by first
  offset, marks producers whose transactional batches are skipped until their ABORT
  marker is seen (the broker already stops at the last stable offset);
* records before the fetch offset (a batch that starts earlier, e.g. a compressed one)
  are skipped; the position after a drained batch is the batch's next offset, never
  "last offset + 1" assumed contiguous (compaction and markers leave gaps);
* a batch that fails its CRC check raises :class:`CorruptRecordsError` naming topic,
  partition and offset, after the records before it were returned; it keeps raising
  until the application seeks past it.

Example (poll side)::

    fetch = buffer.peek()
    taken = fetch.take(500, out)   # appends up to 500 ConsumerRecords to the list ``out``
"""

from __future__ import annotations

import heapq
import struct
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

from kafkalite.errors import CorruptRecordsError, IllegalStateError, KafkaError
from kafkalite.protocol import compression as _compression
from kafkalite.protocol.record_codec import decode_records
from kafkalite.protocol.record_types import (
    BATCH_OVERHEAD,
    CODEC_MASK,
    CONTROL_FLAG,
    TIMESTAMP_TYPE_FLAG,
    ControlRecordType,
)
from kafkalite.protocol.records import Batch, RecordBatch, iter_batches
from kafkalite.types import ConsumerRecord, TopicPartition

_OFFSET_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_ABORT = int(ControlRecordType.ABORT)
_LOG_OVERHEAD = 12
_MIN_ENTRY = 14  # crc + magic + attributes + key and value lengths of a v0 message


def scan_end_offset(data: Any, fetch_offset: int) -> tuple[int, int, int]:
    """(next offset after the last whole batch, bytes of whole batches, its leader epoch).

    Reads batch headers only (no CRC, no records): the engine uses it to know where the
    next prefetch starts (and, KIP-320, the epoch of the last record fetched, sent as
    the next fetch's ``LastFetchedEpoch``) while poll() has not decoded this data yet.
    The epoch is -1 when unknown (legacy message sets, no whole batch).
    """
    pos, end, next_offset, epoch = 0, len(data), fetch_offset, -1
    while end - pos >= _LOG_OVERHEAD:
        base, length = _OFFSET_LENGTH.unpack_from(data, pos)
        # Shorter than the smallest legacy message cannot even hold its magic byte: a
        # corrupt length (decoding names it); the scan just stops (found by tools/fuzz).
        if length < _MIN_ENTRY or pos + _LOG_OVERHEAD + length > end:
            break
        if data[pos + 16] == 2 and length >= BATCH_OVERHEAD - _LOG_OVERHEAD:
            (delta,) = _LAST_OFFSET_DELTA.unpack_from(data, pos + 23)
            last = base + delta
            (epoch,) = _LAST_OFFSET_DELTA.unpack_from(data, pos + 12)
        else:
            # Legacy message sets: a compressed wrapper's offset is its last inner offset.
            last = base
            epoch = -1
        if last + 1 > next_offset:
            next_offset = last + 1
        pos += _LOG_OVERHEAD + length
    return next_offset, pos, epoch


class CompletedFetch:
    """One partition's data from one Fetch response, drained by poll()."""

    __slots__ = (
        "_aborted",
        "_aborted_pids",
        "_batch_epoch",
        "_batch_next",
        "_batches",
        "_check_crcs",
        "_done",
        "_error",
        "_idx",
        "_recs",
        "bytes",
        "data",
        "end_epoch",
        "end_offset",
        "error",
        "extra_lag_info",
        "fetch_offset",
        "high_watermark",
        "last_epoch",
        "last_stable_offset",
        "log_start_offset",
        "next_offset",
        "partition",
        "read_committed",
        "records_taken",
        "token",
        "topic",
        "tp",
    )

    def __init__(self, tp: TopicPartition, token: int, fetch_offset: int, data: Any, *,
                 high_watermark: int = -1, last_stable_offset: int = -1, log_start_offset: int = -1,
                 aborted: list[tuple[int, int]] | None = None, read_committed: bool = False,
                 check_crcs: bool = True, error: KafkaError | None = None) -> None:
        self.tp = tp
        self.topic, self.partition = tp
        self.token = token
        self.fetch_offset = fetch_offset
        self.next_offset = fetch_offset
        self.data = data
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        self.read_committed = read_committed
        self.error = error  # a partition-level error to raise from poll()
        self.last_epoch: int | None = None
        self.records_taken = 0
        self.extra_lag_info = None
        self._check_crcs = check_crcs
        self._aborted: list[tuple[int, int]] = []
        if read_committed and aborted:
            self._aborted = [(first, pid) for pid, first in aborted]
            heapq.heapify(self._aborted)
        self._aborted_pids: set[int] = set()
        self._batches: Iterator[Batch] | None = None
        self._done = False
        self._recs: list[ConsumerRecord] | None = None
        self._idx = 0
        self._batch_next = fetch_offset
        self._batch_epoch: int | None = None
        self._error: KafkaError | None = None
        if data is not None and len(data):
            self.end_offset, self.bytes, self.end_epoch = scan_end_offset(data, fetch_offset)
        else:
            self.end_offset, self.bytes, self.end_epoch = fetch_offset, 0, -1

    @property
    def exhausted(self) -> bool:
        """Nothing more to return (all batches decoded and handed out, or an error)."""
        return self._recs is None and self._done and self._error is None

    def __repr__(self) -> str:
        return (f"CompletedFetch({self.topic}-{self.partition}, fetch_offset={self.fetch_offset}, "
                f"next={self.next_offset}, end={self.end_offset}, bytes={self.bytes})")

    # ------------------------------------------------------------ draining

    def take(self, n: int, out: list[ConsumerRecord]) -> int:
        """Append up to ``n`` records to ``out``; return how many were appended.

        Raises the corruption error of a bad batch once no records precede it.
        """
        taken = 0
        while taken < n:
            recs = self._recs
            if recs is not None:
                i = self._idx
                avail = len(recs) - i
                need = n - taken
                if avail <= need:
                    if i == 0:
                        out += recs
                    else:
                        out += recs[i:]
                    taken += avail
                    self._recs = None
                    self.next_offset = self._batch_next
                    self.last_epoch = self._batch_epoch
                    continue
                out += recs[i : i + need]
                self._idx = i + need
                taken += need
                self.next_offset = recs[i + need - 1][0] + 1
                self.last_epoch = self._batch_epoch
                break
            if self._error is not None:
                if taken:
                    break
                raise self._error
            if not self._load_next_batch():
                break
        self.records_taken += taken
        return taken

    def _load_next_batch(self) -> bool:
        """Decode the next batch that has records to return; False at the end."""
        if self._done:
            return False
        batches = self._batches
        if batches is None:
            if self.data is None:
                self._done = True
                return False
            batches = self._batches = iter_batches(self.data, check_crcs=self._check_crcs)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                self._finish()
                return False
            except CorruptRecordsError as exc:
                self._fail(exc)
                return False
            next_offset = batch.next_offset
            if next_offset <= self.next_offset:
                continue  # already returned (or before the fetch offset)
            if isinstance(batch, RecordBatch):
                records = self._decode_v2(batch)
            else:
                records = self._decode_legacy(batch)
            if records is None:
                return False
            self._batch_next = next_offset
            self._batch_epoch = (batch.partition_leader_epoch
                                 if isinstance(batch, RecordBatch) and batch.partition_leader_epoch >= 0 else None)
            if records and records[0][0] < self.next_offset:
                start = self.next_offset
                records = [r for r in records if r[0] >= start]
            if not records:
                # An empty batch (compaction), a control batch or an aborted one: move on.
                # Its epoch counts as fetched, as in Java's CompletedFetch.lastEpoch (it
                # is what KIP-320 validates the position with).
                self.next_offset = next_offset
                if self._batch_epoch is not None:
                    self.last_epoch = self._batch_epoch
                continue
            self._recs = records
            self._idx = 0
            return True

    def _skip_v2(self, batch: RecordBatch) -> bool:
        """Whether ``batch`` holds nothing to return: a control batch, an aborted
        transaction's batch (read_committed), or no records (compaction)."""
        attributes = batch.attributes
        if self.read_committed:
            aborted = self._aborted
            while aborted and aborted[0][0] <= batch.last_offset:
                self._aborted_pids.add(heapq.heappop(aborted)[1])
            if attributes & CONTROL_FLAG:
                if batch.producer_id in self._aborted_pids and self._is_abort_marker(batch):
                    self._aborted_pids.discard(batch.producer_id)
                return True
            if batch.is_transactional and batch.producer_id in self._aborted_pids:
                return True
        elif attributes & CONTROL_FLAG:
            return True
        return batch.record_count == 0

    def _decode_v2(self, batch: RecordBatch) -> list[ConsumerRecord] | None:
        if self._skip_v2(batch):
            return []
        attributes = batch.attributes
        count = batch.record_count
        try:
            view = batch.buffer()
            codec = attributes & CODEC_MASK
            if codec:
                data: Any = _compression.decompress(codec, view[BATCH_OVERHEAD:])
                start, end = 0, len(data)
            else:
                data, start, end = view, BATCH_OVERHEAD, len(view)
            epoch = batch.partition_leader_epoch
            return decode_records(  # type: ignore[no-any-return]
                data, start, end, count, batch.base_offset, batch.base_timestamp,
                batch.max_timestamp if attributes & TIMESTAMP_TYPE_FLAG else None,
                ConsumerRecord,
                (1 if attributes & TIMESTAMP_TYPE_FLAG else 0, self.topic, self.partition,
                 epoch if epoch >= 0 else None),
            )
        except KafkaError as exc:
            self._fail(exc, batch.base_offset)
            return None

    def _decode_legacy(self, batch: Batch) -> list[ConsumerRecord] | None:
        try:
            out = []
            for r in batch.records(self.topic, self.partition):
                if r.control_type is not None:
                    continue
                out.append(ConsumerRecord._make((r.offset, r.timestamp, r.key, r.value, r.headers,
                                                 r.timestamp_type, self.topic, self.partition, None)))
            return out
        except KafkaError as exc:
            self._fail(exc, batch.base_offset)
            return None

    def take_batches(self, out: list[Batch]) -> int:
        """Append this fetch's remaining data batches, undecoded, to ``out``.

        The columnar path (e.g. the Spark connector turns ``RecordBatch.columns()``
        into Arrow arrays) takes whole batches instead of records. The filtering is
        :meth:`take`'s: control batches, aborted transactions (read_committed), empty
        batches and batches wholly before the fetch offset are left out. The first
        batch may start before the fetch offset (a compressed batch is fetched whole):
        callers drop records with offsets below the position they asked for.

        Afterwards the fetch is drained and ``next_offset`` is past its last batch.
        A corrupt batch stops the walk: the batches before it are returned, and the
        next call (with nothing before it) raises its :class:`CorruptRecordsError`.
        Cannot be mixed with :meth:`take` on one fetch.
        """
        if self._recs is not None:
            raise IllegalStateError(
                f"take_batches() on {self.topic}-{self.partition} after take() left records undrained")
        if self._error is not None:
            raise self._error
        if self._done:
            return 0
        if self.data is None:
            self._done = True
            return 0
        batches = self._batches
        if batches is None:
            batches = self._batches = iter_batches(self.data, check_crcs=self._check_crcs)
        n = 0
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except CorruptRecordsError as exc:
                self._fail(exc)
                break
            next_offset = batch.next_offset
            if next_offset <= self.next_offset:
                continue
            if isinstance(batch, RecordBatch):
                if batch.partition_leader_epoch >= 0:
                    self.last_epoch = batch.partition_leader_epoch
                if self._skip_v2(batch):
                    self.next_offset = next_offset
                    continue
            out.append(batch)
            n += 1
            self.next_offset = next_offset
        if self._error is None:
            self._done = True
            self._batches = None
            if self.end_offset > self.next_offset:
                self.next_offset = self.end_offset
            # ``data`` stays referenced by the batches handed out; drop ours.
            self.data = None
        if not n and self._error is not None:
            raise self._error
        return n

    @staticmethod
    def _is_abort_marker(batch: RecordBatch) -> bool:
        try:
            records = batch.records()
        except KafkaError:
            return False
        return bool(records) and records[0].control_type == _ABORT

    def _fail(self, exc: KafkaError, offset: int | None = None) -> None:
        where = f" at offset {offset}" if offset is not None else f" after offset {self.next_offset}"
        message = exc.message if isinstance(exc, KafkaError) else str(exc)
        if "offset" not in message:
            message = f"record batch{where}: {message}"
        err = CorruptRecordsError(
            f"corrupt data in {self.topic}-{self.partition} ({message}); seek past offset "
            f"{offset if offset is not None else self.next_offset} to skip it",
            topic=self.topic, partition=self.partition,
        )
        err.context["offset"] = offset if offset is not None else self.next_offset
        self._error = err
        self._done = True

    def _finish(self) -> None:
        self._done = True
        self._batches = None
        if self.end_offset > self.next_offset:
            self.next_offset = self.end_offset
            if self.end_epoch >= 0:
                self.last_epoch = self.end_epoch
        self.data = None  # release the response frame


class FetchBuffer:
    """Completed fetches in arrival order, shared by the engine and the poll() caller.

    Appends happen on the engine; poll() peeks at the head and pops drained fetches.
    The per-partition count lets the fetcher limit prefetching to a bounded number of
    undrained fetches per partition.
    """

    def __init__(self) -> None:
        self._queue: deque[CompletedFetch] = deque()
        self._lock = threading.Lock()
        self._counts: dict[TopicPartition, int] = {}
        self._last: dict[TopicPartition, CompletedFetch] = {}

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, fetch: CompletedFetch) -> None:
        with self._lock:
            self._queue.append(fetch)
            self._counts[fetch.tp] = self._counts.get(fetch.tp, 0) + 1
            self._last[fetch.tp] = fetch

    def peek(self) -> CompletedFetch | None:
        queue = self._queue
        return queue[0] if queue else None

    def pop(self, fetch: CompletedFetch) -> None:
        """Remove ``fetch`` (the head, or anywhere for a dropped one)."""
        with self._lock:
            queue = self._queue
            if queue and queue[0] is fetch:
                queue.popleft()
            else:
                try:
                    queue.remove(fetch)
                except ValueError:
                    return
            tp = fetch.tp
            left = self._counts.get(tp, 1) - 1
            if left <= 0:
                self._counts.pop(tp, None)
                self._last.pop(tp, None)
            else:
                self._counts[tp] = left

    def buffered(self, tp: TopicPartition) -> int:
        return self._counts.get(tp, 0)

    def last_for(self, tp: TopicPartition) -> CompletedFetch | None:
        return self._last.get(tp)

    def partitions(self) -> set[TopicPartition]:
        with self._lock:
            return set(self._counts)

    def drop(self, keep: Any = None) -> None:
        """Drop every fetch (or those for which ``keep(fetch)`` is false)."""
        with self._lock:
            kept = [f for f in self._queue if keep is not None and keep(f)]
            self._queue = deque(kept)
            self._counts = {}
            self._last = {}
            for f in kept:
                self._counts[f.tp] = self._counts.get(f.tp, 0) + 1
                self._last[f.tp] = f

    def buffered_bytes(self) -> int:
        with self._lock:
            return sum(f.bytes for f in self._queue)
