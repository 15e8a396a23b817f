"""The data source's batch and streaming writers (PySpark >= 4.0's Python Data Source API).

Each task sends its rows with one kafkalite producer (:mod:`pyspark_kafkalite.sending`,
which also says which columns are written and the guarantees: at least once).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamWriter,
    WriterCommitMessage,
)

from pyspark_kafkalite.options import WriteOptions
from pyspark_kafkalite.sending import check_write_schema, send_all
from pyspark_kafkalite.shipping import ShippedToTasks
from pyspark_kafkalite.worker_imports import lighten_zip_importers

__all__ = ["KafkaCommitMessage", "KafkaLiteBatchWriter", "KafkaLiteStreamWriter", "check_write_schema",
           "stream_writer", "write_all"]

try:  # PySpark >= 4.1
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # PySpark 4.0: rows, not Arrow, for streaming writes
    _StreamWriterBase = DataSourceStreamWriter  # type: ignore[assignment,misc]  # the 4.0 base


class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote (rows sent and acknowledged)."""

    def __init__(self, rows: int) -> None:
        self.rows = rows


def write_all(opts: WriteOptions, iterator: Iterator[Any]) -> KafkaCommitMessage:
    """Write everything ``iterator`` yields (Arrow record batches or Rows): one task's write."""
    return KafkaCommitMessage(send_all(opts, iterator))


class KafkaLiteBatchWriter(ShippedToTasks, DataSourceArrowWriter):
    """``df.write.format("kafkalite")``: one producer per task (see the module doc)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return write_all(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to do: every task flushed and checked its sends before committing
        (only this commit worker's next commits made cheaper, see worker_imports)."""
        lighten_zip_importers()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Records already acknowledged stay in Kafka (at least once)."""


class KafkaLiteStreamWriter(ShippedToTasks, _StreamWriterBase):
    """``writeStream.format("kafkalite")``: each micro-batch's tasks write and flush."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> KafkaCommitMessage:
        return write_all(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to do: the tasks flushed before committing."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """A failed micro-batch is retried by Spark; rows may be written again (at least once)."""


def stream_writer(opts: WriteOptions) -> DataSourceStreamWriter:
    return KafkaLiteStreamWriter(opts)
