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
Reading the batches is :mod:`kafkalite.protocol.records`' job (CRC checks, decompression,
control and empty batches passed over by its ``BatchFilter``, records decoded by
``RecordBatch.records_as``); this module cuts them to the acquired ranges.

Example (poll side)::

    fetch = ShareCompletedFetch(tp, node, records_bytes, [(0, 9, 1)])
    n = fetch.take(500, out, gaps)      # up to 500 ShareConsumerRecords appended to out
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from operator import itemgetter

from kafkalite.errors import CorruptRecordsError, KafkaError
from kafkalite.protocol.records import BatchFilter, Buffer, iter_batches
from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord
from kafkalite.types import TopicPartition

#: ``acks(offset, type)``: an acknowledgement found while decoding (GAP, REJECT).
AckSink = Callable[[int, AcknowledgeType], None]
#: Decoded output, in offset order: records, or (offsets, error) for a corrupt batch.
Segment = list[ShareConsumerRecord] | tuple[list[int], CorruptRecordsError]

_offset_of = itemgetter(0)


class ShareCompletedFetch:
    """One partition of one ShareFetch answer (see the module doc)."""

    __slots__ = ("_acquired", "_check_crcs", "_data", "_segments", "acquired_count", "bytes", "node",
                 "records_returned", "topic", "tp")

    def __init__(self, tp: TopicPartition, node: int, data: Buffer | None, acquired: Iterable[tuple[int, int, int]],
                 check_crcs: bool = True) -> None:
        self.tp = tp
        self.topic = tp.topic
        self.node = node
        self._data = data
        self.bytes = len(data) if data is not None else 0
        self._acquired = sorted(acquired)
        self.acquired_count = sum(last - first + 1 for first, last, _ in self._acquired)
        self._check_crcs = check_crcs
        self._segments: deque[Segment] | None = None
        self.records_returned = 0

    def __repr__(self) -> str:
        return f"ShareCompletedFetch({self.tp}, node={self.node}, acquired={self.acquired_count})"

    @property
    def exhausted(self) -> bool:
        return self._segments is not None and not self._segments

    def take(self, n: int, out: list[ShareConsumerRecord], acks: AckSink) -> int:
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
                segments.popleft()
                offsets, error = head
                for offset in offsets:
                    acks(offset, AcknowledgeType.REJECT)
                raise error
            room = n - taken
            if len(head) <= room:
                out += head
                taken += len(head)
                segments.popleft()
            else:
                out += head[:room]
                segments[0] = head[room:]
                taken += room
        self.records_returned += taken
        return taken

    # ------------------------------------------------------------ decoding

    def _decode(self, acks: AckSink) -> deque[Segment]:
        ranges = self._acquired
        acquired: dict[int, int] = {}
        for first, last, count in ranges:
            acquired.update(dict.fromkeys(range(first, last + 1), count))
        segments: deque[Segment] = deque()
        # Every acquired offset is settled once: handed out, rejected or acknowledged as GAP.
        settled: set[int] = set()
        highest = -1  # the highest settled offset (batches come in offset order)
        data, self._data = self._data, None
        if acquired and data is not None and len(data):
            # No aborted transactions here: the broker acquires committed records only
            # (share.isolation.level) and archives the others.
            keep = BatchFilter()
            topic, partition = self.topic, self.tp.partition
            try:
                for batch in iter_batches(data, check_crcs=False):
                    first, last = batch.base_offset, batch.last_offset
                    overlapping = [r for r in ranges if r[0] <= last and first <= r[1]]
                    if not overlapping:
                        continue
                    try:
                        if self._check_crcs:
                            batch.ensure_valid()
                        # Decoded straight into ShareConsumerRecords with the delivery
                        # count of the first range: usually one range holds the batch.
                        records = (batch.records_as(ShareConsumerRecord, topic, partition,
                                                    extra=(overlapping[0][2],)) if keep(batch) else [])
                    except KafkaError as exc:
                        offsets = [o for lo, hi, _ in overlapping for o in range(max(lo, first), min(hi, last) + 1)
                                   if o not in settled]
                        if offsets:
                            settled.update(offsets)
                            highest = max(highest, offsets[-1])
                        segments.append((offsets, self._corrupt(exc, first)))
                        continue
                    offsets = list(map(_offset_of, records))
                    lo, hi, _ = overlapping[0]
                    if offsets and not (len(overlapping) == 1 and max(lo, highest + 1) <= min(offsets)
                                        and max(offsets) <= hi):
                        records = _cut(records, acquired, overlapping[0][2], settled)
                        offsets = list(map(_offset_of, records))
                    if offsets:
                        settled.update(offsets)
                        highest = max(highest, max(offsets))
                        segments.append(records)
            except CorruptRecordsError as exc:  # a broken batch header: nothing after it can be read
                rest = sorted(o for o in acquired if o not in settled)
                settled.update(rest)
                segments.append((rest, self._corrupt(exc, rest[0] if rest else -1)))
        if len(settled) < len(acquired):
            for offset in sorted(acquired.keys() - settled):
                acks(offset, AcknowledgeType.GAP)
        return segments

    def _corrupt(self, exc: KafkaError, offset: int) -> CorruptRecordsError:
        err = CorruptRecordsError(
            f"corrupt record batch at offset {offset} in {self.tp} ({exc.message}); its acquired records "
            "were rejected (archived)", topic=self.tp.topic, partition=self.tp.partition)
        err.context["offset"] = offset
        return err


def _cut(records: list[ShareConsumerRecord], acquired: dict[int, int], decoded_count: int,
         settled: set[int]) -> list[ShareConsumerRecord]:
    """The acquired ``records`` not settled yet, each with its range's delivery count."""
    out = []
    for r in records:
        count = acquired.get(r[0])
        if r[0] in settled:
            continue
        if count == decoded_count:
            out.append(r)
        elif count is not None:
            out.append(tuple.__new__(ShareConsumerRecord, (*r[:9], count, *r[10:])))
    return out

