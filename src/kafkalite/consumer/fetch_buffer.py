"""Fetched data waiting for poll(): lazy decoding, transaction filtering, slicing.

The engine puts one :class:`CompletedFetch` per partition and Fetch response into the
:class:`FetchBuffer`; it holds the partition's raw records bytes (a zero-copy view of
the response frame) and is decoded batch by batch only when poll() takes records from
it, in the thread that calls poll(). Reading the bytes is :mod:`kafkalite.protocol.records`'
job (batches, CRC checks, decompression, which batches hold records); each batch is
decoded with one call into the record kernels (C when built) straight into
:class:`~kafkalite.types.ConsumerRecord` tuples (``RecordBatch.records_as``), and poll()
slices the decoded list: no per-record Python work beyond building the record.

What this module adds, as the Java client's ``CompletedFetch`` does:

* the batches without records for the application (control batches, aborted
  transactions with ``read_committed``, empty ones) are passed over by
  :class:`~kafkalite.protocol.records.BatchFilter`, but still move the position;
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

import threading
from collections import deque
from collections.abc import Callable, Iterator

from kafkalite.errors import CorruptRecordsError, IllegalStateError, KafkaError
from kafkalite.protocol.records import Batch, BatchFilter, Buffer, iter_batches, scan_end_offset
from kafkalite.types import ConsumerRecord, TopicPartition

__all__ = ["CompletedFetch", "FetchBuffer", "scan_end_offset"]


class CompletedFetch:
    """One partition's data from one Fetch response, drained by poll()."""

    __slots__ = (
        "_batch_epoch",
        "_batch_next",
        "_batches",
        "_check_crcs",
        "_done",
        "_error",
        "_idx",
        "_keep",
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

    def __init__(self, tp: TopicPartition, token: int, fetch_offset: int, data: Buffer | None, *,
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
        self._keep = BatchFilter(aborted, read_committed=read_committed)
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
        keep = self._keep
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
            records: list[ConsumerRecord] = []
            if keep(batch):
                try:
                    records = batch.records_as(ConsumerRecord, self.topic, self.partition)
                except KafkaError as exc:
                    self._fail(exc, batch.base_offset)
                    return False
            self._batch_next = next_offset
            epoch = batch.partition_leader_epoch
            self._batch_epoch = epoch if epoch >= 0 else None
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
            if batch.partition_leader_epoch >= 0:
                self.last_epoch = batch.partition_leader_epoch
            if not self._keep(batch):
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

    def drop(self, keep: Callable[[CompletedFetch], bool] | None = None) -> None:
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
