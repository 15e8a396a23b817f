"""One partition's share-fetched data, cut down to the records this member acquired.

A ShareFetch answer holds whole record batches plus ``AcquiredRecords`` ranges
(first offset, last offset, delivery count): only the records inside those ranges
belong to this member; other records of the same batches are held by other members or
already settled. Following Java's ``ShareCompletedFetch``:

* records outside the acquired ranges are skipped;
* each returned record carries the delivery count of its range;
* an acquired offset with no record (a transaction marker, a compacted-away record,
  an aborted transaction's record) is acknowledged as GAP at once, so the broker
  archives it instead of handing it out again after the lock times out;
* a batch that fails its CRC check has its acquired records REJECTed (it can never be
  read) and raises :class:`~kafkalite.errors.CorruptRecordsError` after the records
  before it were returned.

Decoding happens in the thread that calls ``poll()``, the first time records are taken.

Example (poll side)::

    fetch = ShareCompletedFetch(tp, node, records_bytes, [(0, 9, 1)])
    n = fetch.take(500, out, gaps)      # up to 500 ShareConsumerRecords appended to out
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkalite.errors import CorruptRecordsError, KafkaError
from kafkalite.protocol import compression as _compression
from kafkalite.protocol.record_codec import decode_records
from kafkalite.protocol.record_types import (
    BATCH_OVERHEAD,
    CODEC_MASK,
    CONTROL_FLAG,
    TIMESTAMP_TYPE_FLAG,
)
from kafkalite.protocol.records import RecordBatch, iter_batches
from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord
from kafkalite.types import ConsumerRecord, TopicPartition

_new = tuple.__new__


class ShareCompletedFetch:
    """One partition of one ShareFetch answer (see the module doc)."""

    __slots__ = ("_acquired", "_check_crcs", "_data", "_segments", "acquired_count", "bytes", "node",
                 "records_returned", "topic", "tp")

    def __init__(self, tp: TopicPartition, node: int, data: Any, acquired: Iterable[tuple[int, int, int]],
                 check_crcs: bool = True) -> None:
        self.tp = tp
        self.topic = tp.topic
        self.node = node
        self._data = data
        self.bytes = len(data) if data is not None else 0
        self._acquired = sorted(acquired)
        self.acquired_count = sum(last - first + 1 for first, last, _ in self._acquired)
        self._check_crcs = check_crcs
        #: decoded output, in offset order: lists of records, or (offsets, error) for a corrupt batch
        self._segments: list[Any] | None = None
        self.records_returned = 0

    def __repr__(self) -> str:
        return f"ShareCompletedFetch({self.tp}, node={self.node}, acquired={self.acquired_count})"

    @property
    def exhausted(self) -> bool:
        return self._segments is not None and not self._segments

    def take(self, n: int, out: list[Any], acks: Any) -> int:
        """Append up to ``n`` records to ``out``; ``acks(offset, type)`` receives the GAP
        and REJECT acknowledgements found while decoding. Raises the corruption error of
        a bad batch once no records precede it in this call."""
        if self._segments is None:
            self._segments = self._decode(acks)
        segments = self._segments
        taken = 0
        while segments and taken < n:
            head = segments[0]
            if isinstance(head, tuple):  # a corrupt batch
                if taken:
                    break
                segments.pop(0)
                offsets, error = head
                for offset in offsets:
                    acks(offset, AcknowledgeType.REJECT)
                raise error
            room = n - taken
            if len(head) <= room:
                out += head
                taken += len(head)
                segments.pop(0)
            else:
                out += head[:room]
                segments[0] = head[room:]
                taken += room
        self.records_returned += taken
        return taken

    # ------------------------------------------------------------ decoding

    def _decode(self, acks: Any) -> list[Any]:
        ranges = self._acquired
        acquired: dict[int, int] = {}
        for first, last, count in ranges:
            acquired.update(dict.fromkeys(range(first, last + 1), count))
        segments: list[Any] = []
        settled: set[int] = set()
        data, self._data = self._data, None
        if acquired and data is not None and len(data):
            lo, hi = ranges[0][0], max(r[1] for r in ranges)
            try:
                for batch in iter_batches(data, check_crcs=False):
                    first, last = batch.base_offset, batch.last_offset
                    if last < lo or first > hi or not any(f <= last and first <= la for f, la, _ in ranges):
                        continue
                    try:
                        if self._check_crcs:
                            batch.ensure_valid()
                        records = self._records_of(batch)
                    except KafkaError as exc:
                        offsets = [o for o in range(first, last + 1) if o in acquired]
                        settled.update(offsets)
                        segments.append((offsets, self._corrupt(exc, first)))
                        continue
                    get = acquired.get
                    out = [_new(ShareConsumerRecord, (*r[:9], _size(r[2]), _size(r[3]), d))
                           for r in records if (d := get(r[0])) is not None]
                    settled.update(r[0] for r in out)
                    if out:
                        segments.append(out)
            except CorruptRecordsError as exc:  # a broken batch header: nothing after it can be read
                rest = [o for o in acquired if o not in settled]
                settled.update(rest)
                segments.append((sorted(rest), self._corrupt(exc, rest[0] if rest else -1)))
        if len(settled) < len(acquired):
            for offset in sorted(acquired.keys() - settled):
                acks(offset, AcknowledgeType.GAP)
        return segments

    def _records_of(self, batch: Any) -> list[Any]:
        if not isinstance(batch, RecordBatch):
            return [ConsumerRecord._make((r.offset, r.timestamp, r.key, r.value, r.headers, r.timestamp_type,
                                          self.topic, self.tp.partition, None))
                    for r in batch.records(self.topic, self.tp.partition) if r.control_type is None]
        attributes = batch.attributes
        if attributes & CONTROL_FLAG or batch.record_count == 0:
            return []
        view = batch.buffer()
        codec = attributes & CODEC_MASK
        if codec:
            data: Any = _compression.decompress(codec, view[BATCH_OVERHEAD:])
            start, end = 0, len(data)
        else:
            data, start, end = view, BATCH_OVERHEAD, len(view)
        epoch = batch.partition_leader_epoch
        return decode_records(  # type: ignore[no-any-return]
            data, start, end, batch.record_count, batch.base_offset, batch.base_timestamp,
            batch.max_timestamp if attributes & TIMESTAMP_TYPE_FLAG else None, ConsumerRecord,
            (1 if attributes & TIMESTAMP_TYPE_FLAG else 0, self.topic, self.tp.partition,
             epoch if epoch >= 0 else None))

    def _corrupt(self, exc: KafkaError, offset: int) -> CorruptRecordsError:
        err = CorruptRecordsError(
            f"corrupt record batch at offset {offset} in {self.tp} ({exc.message}); its acquired records "
            "were rejected (archived)", topic=self.tp.topic, partition=self.tp.partition)
        err.context["offset"] = offset
        return err


def _size(value: Any) -> int:
    return len(value) if value is not None else -1

