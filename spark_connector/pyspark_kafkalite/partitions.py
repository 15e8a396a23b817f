"""One task's input and what the task runs for it, for the batch and the streaming reader.

The batch reader (:mod:`pyspark_kafkalite.source`) and the micro-batch reader
(:mod:`pyspark_kafkalite.stream`) both plan offset ranges and hand each task one
:class:`KafkaInputPartition`; the task reads it with :func:`read_partition`. Both live
here so that neither reader imports the other.

Example::

    part = KafkaInputPartition("orders", 0, 100, 200)   # offsets 100..199
    batches = read_partition(opts, part)                 # Arrow record batches
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from pyspark_kafkalite.options import ReadOptions
from pyspark_kafkalite.planning import OffsetRange
from pyspark_kafkalite.reading import read_range


class KafkaInputPartition(InputPartition):
    """One task's input: ``(topic, partition, start, end)``, ``end`` exclusive (picklable)."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end

    @classmethod
    def of(cls, r: OffsetRange) -> KafkaInputPartition:
        return cls(r.topic, r.partition, r.start, r.end)


def read_partition(opts: ReadOptions, part: InputPartition) -> Iterator[pa.RecordBatch]:
    """What a task runs for one :class:`KafkaInputPartition` (batch or micro-batch)."""
    if not isinstance(part, KafkaInputPartition):
        return iter(())
    return read_range(opts.consumer_settings(), part.topic, part.partition, part.start, part.end,
                      include_headers=opts.include_headers, fail_on_data_loss=opts.fail_on_data_loss,
                      poll_timeout_ms=opts.poll_timeout_ms)
