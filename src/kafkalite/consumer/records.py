"""What one ``poll()`` returns: a list of records that also knows their partitions.

:class:`ConsumerRecords` is a ``list`` of :class:`~kafkalite.types.ConsumerRecord`
(iterate it, index it, ``len()`` it) in the order they were fetched; the records of one
partition are in offset order. ``partitions()`` and ``records(tp)`` give the grouping by
partition that Java's ``ConsumerRecords`` offers.

Example::

    records = consumer.poll(1.0)
    for tp in records.partitions():
        batch = records.records(tp)
        process(batch)
        consumer.commit({tp: OffsetAndMetadata(batch[-1].offset + 1)})
"""

from __future__ import annotations

from kafkalite.types import ConsumerRecord, TopicPartition


class ConsumerRecords(list[ConsumerRecord]):
    """Records from one poll(), grouped by partition on request."""

    __slots__ = ("_ranges",)

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self._ranges: list[tuple[TopicPartition, int, int]] = []

    def partitions(self) -> set[TopicPartition]:
        """The partitions that have records in this result."""
        if not self._ranges and self:
            return {r.topic_partition for r in self}
        return {tp for tp, _, _ in self._ranges}

    def records(self, tp: TopicPartition) -> list[ConsumerRecord]:
        """The records of one partition, in offset order."""
        if not self._ranges and self:
            return [r for r in self if r.topic_partition == tp]
        out: list[ConsumerRecord] = []
        for rtp, start, end in self._ranges:
            if rtp == tp:
                out.extend(self[start:end])
        return out

    def by_partition(self) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Every partition's records."""
        return {tp: self.records(tp) for tp in self.partitions()}

    def __repr__(self) -> str:
        return f"ConsumerRecords({len(self)} records, {len(self.partitions())} partitions)"


# The consumer fills a ConsumerRecords through these two functions (not methods, so that
# the public type shows only what an application uses).

def add_range(records: ConsumerRecords, tp: TopicPartition, start: int, end: int) -> None:
    """Records ``start .. end - 1`` of ``records`` are ``tp``'s (a run after the last
    run of ``tp`` continues it)."""
    ranges = records._ranges
    if ranges and ranges[-1][0] == tp and ranges[-1][2] == start:
        ranges[-1] = (tp, ranges[-1][1], end)
    else:
        ranges.append((tp, start, end))


def grouped_like(records: ConsumerRecords) -> ConsumerRecords:
    """An empty result with the partition runs of ``records``, to be filled with records
    in the same order (deserialized copies)."""
    out = ConsumerRecords()
    out._ranges = records._ranges
    return out
