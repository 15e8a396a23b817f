"""The ``kafkalite`` data source and its batch reader.

``spark.read.format("kafkalite")`` with Spark's Kafka options; see ``docs/spark.md``.
Options are checked when the DataFrame is defined (``load()`` asks for the schema), the
partitions and offsets when the query is planned (on the driver), and each task reads
one offset range in :func:`pyspark_kafkalite.reading.read_range`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from kafkalite.errors import ConfigError
from pyspark_kafkalite.options import ReadOptions, WriteOptions
from pyspark_kafkalite.partitions import KafkaInputPartition, read_partition
from pyspark_kafkalite.planning import Planner, PushedFilters
from pyspark_kafkalite.schema import check_schema, kafka_schema
from pyspark_kafkalite.shipping import ShippedToTasks

#: The error of ``mode("overwrite")`` (Spark's own error for the default mode points there).
OVERWRITE_REFUSED = (
    'save mode Overwrite is not allowed for the kafkalite sink: Kafka topics are append-only. '
    'Write with .mode("append"), which is what Spark\'s JVM connector does in its default mode '
    '(PySpark refuses the default ErrorIfExists mode for Python data sources)')

__all__ = ["KafkaInputPartition", "KafkaLiteBatchReader", "KafkaLiteDataSource", "check_schema", "kafka_schema",
           "read_partition"]


# ---------------------------------------------------------------- filter pushdown

def _micros(value: object) -> int | None:
    """A pushed timestamp literal as microseconds since the epoch (UTC)."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def push_filter(f: Any, pushed: PushedFilters) -> bool:
    """Fold one pushed filter into ``pushed``; True when the ranges apply it exactly
    (Spark need not check it again), False when Spark must still evaluate it."""
    name = type(f).__name__
    attr: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
    if len(attr) != 1:
        return False
    column = attr[0]
    value: Any = getattr(f, "value", None)
    if column == "topic":
        if name == "EqualTo" and isinstance(value, str):
            pushed.restrict_topics([value])
            return True
        if name == "In" and all(isinstance(v, str) for v in value):
            pushed.restrict_topics(value)
            return True
        return False
    if column in ("partition", "offset"):
        if name == "In":
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in value) or not value:
                return False
            if column == "partition":
                pushed.restrict_partitions(value)
                return True
            pushed.lower_offset(min(value))
            pushed.upper_offset(max(value) + 1)
            return False  # a range around the values; Spark keeps only the listed ones
        if not isinstance(value, int) or isinstance(value, bool):
            return False
        lo = {"EqualTo": value, "GreaterThan": value + 1, "GreaterThanOrEqual": value}.get(name)
        hi = {"EqualTo": value, "LessThan": value - 1, "LessThanOrEqual": value}.get(name)  # inclusive
        if lo is None and hi is None:
            return False
        if column == "partition":
            if lo is not None:
                pushed.lower_partition(lo)
            if hi is not None:
                pushed.upper_partition(hi)
        else:
            if lo is not None:
                pushed.lower_offset(lo)
            if hi is not None:
                pushed.upper_offset(hi + 1)
        return True
    if column == "timestamp" and name in ("GreaterThan", "GreaterThanOrEqual", "EqualTo"):
        micros = _micros(value)
        if micros is None:
            return False
        # Records have millisecond timestamps: ts_ms * 1000 > micros  <=>  ts_ms >= micros // 1000 + 1.
        ms = micros // 1000 + 1 if name == "GreaterThan" else -(-micros // 1000)
        pushed.lower_timestamp(ms)
        return False  # ListOffsets narrows the start; Spark still checks every row
    return False


class _PushFilters:
    """The reader's ``pushFilters``, seen by PySpark as not overridden.

    PySpark >= 4.1 refuses a reader whose class overrides ``pushFilters`` while
    ``spark.sql.python.filterPushdown.enabled`` is false (its default), and the reader
    cannot see that setting. This callable carries the base method as ``__func__`` (what
    PySpark's check compares), so the source works with the default configuration and
    pushes filters down when the setting is on (PySpark then calls it).
    """

    def __init__(self, reader: KafkaLiteBatchReader) -> None:
        self._reader = reader
        # An instance attribute: a function stored on the class would come back bound.
        self.__func__ = getattr(DataSourceReader, "pushFilters", None)

    def __call__(self, filters: list[Any]) -> Iterable[Any]:
        return self._reader.push_filters(filters)


class KafkaLiteBatchReader(ShippedToTasks, DataSourceReader):
    """Plans offset ranges on the driver; reads one range per task."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self.pushed = PushedFilters()

    @property
    def pushFilters(self) -> _PushFilters:
        return _PushFilters(self)

    def push_filters(self, filters: list[Any]) -> list[Any]:
        """Filters on topic, partition, offset (and a lower bound on timestamp) become
        offset ranges; the others (and the timestamp bound) are left to Spark."""
        return [f for f in filters if not push_filter(f, self.pushed)]

    def partitions(self) -> list[InputPartition]:
        with Planner(self.opts) as planner:
            ranges = planner.batch_ranges(self.pushed)
        if not ranges:
            return [InputPartition(None)]  # Spark needs a partition; it reads nothing
        return [KafkaInputPartition.of(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.opts, partition)


class KafkaLiteDataSource(ShippedToTasks, DataSource):
    """``format("kafkalite")``: Spark's Kafka source and sink, on kafkalite, no jar.

    Example (not run: needs a Spark session; tests/spark runs the data source)::

        df = (spark.read.format("kafkalite")
              .option("kafka.bootstrap.servers", "127.0.0.1:9092")
              .option("subscribe", "orders")
              .load())
        df.selectExpr("CAST(value AS STRING)").show()
    """

    @classmethod
    def name(cls) -> str:
        """The short name Spark knows the source by: ``spark.read.format("kafkalite")``.

        Example (not run: needs a Spark session; tests/spark runs the data source)::

            spark.dataSource.register(DefaultSource)
            df = spark.read.format(DefaultSource.name()).option("kafka.bootstrap.servers", bootstrap).load()
        """
        return "kafkalite"

    def schema(self) -> StructType:
        """The columns of Spark's Kafka source: key, value, topic, partition, offset, timestamp, timestampType (and headers with ``includeHeaders``).

        Example (not run: needs a Spark session; tests/spark runs the data source)::

            spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
                .option("subscribe", "orders").load().printSchema()       # key, value, topic, partition, offset, ...
        """
        # Called when the DataFrame is defined: bad options fail here, at analysis.
        opts = ReadOptions.parse(self.options, streaming=None)
        return kafka_schema(opts.include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader: ``spark.read.format("kafkalite")``; the options are checked here, at analysis.

        Example (not run: needs a Spark session; tests/spark runs the data source)::

            rows = spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
                .option("subscribe", "orders").option("startingOffsets", "earliest").load().collect()
        """
        opts = ReadOptions.parse(self.options)
        check_schema(schema, opts)
        return KafkaLiteBatchReader(opts)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The micro-batch reader: ``spark.readStream.format("kafkalite")``.

        Example (not run: needs a Spark session; tests/spark runs the data source)::

            query = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
                     .option("subscribe", "orders").load()
                     .writeStream.format("console").option("checkpointLocation", "/tmp/ckpt").start())
        """
        from pyspark_kafkalite.stream import KafkaLiteStreamReader

        opts = ReadOptions.parse(self.options, streaming=True)
        check_schema(schema, opts)
        return KafkaLiteStreamReader(opts)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """The batch writer: ``df.write.format("kafkalite")`` (append only, as Spark's Kafka sink).

        Example (not run: needs a Spark session; tests/spark runs the data source)::

            spark.createDataFrame([("k1", "v1")], "key STRING, value STRING").write.format("kafkalite") \
                .option("kafka.bootstrap.servers", bootstrap).option("topic", "orders").save()
        """
        from pyspark_kafkalite.worker_imports import lighten_zip_importers
        from pyspark_kafkalite.writer import KafkaLiteBatchWriter, check_write_schema

        lighten_zip_importers()  # this planning worker's next write (see the module)

        if overwrite:
            # Spark's JVM connector refuses Overwrite too and appends for its default mode
            # (ErrorIfExists), which PySpark refuses for every Python data source before
            # this code runs (UNSUPPORTED_DATA_SOURCE_SAVE_MODE): so append is the one mode.
            raise ConfigError(OVERWRITE_REFUSED)
        opts = WriteOptions.parse(self.options)
        check_write_schema(schema, opts)
        return KafkaLiteBatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """The streaming writer: ``df.writeStream.format("kafkalite")``.

        Example (not run: needs a Spark session; tests/spark runs the data source)::

            (spark.readStream.format("rate").load().selectExpr("CAST(value AS STRING) AS value")
                 .writeStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", "orders").option("checkpointLocation", "/tmp/ckpt-out").start())
        """
        from pyspark_kafkalite.writer import check_write_schema, stream_writer

        opts = WriteOptions.parse(self.options)
        check_write_schema(schema, opts)
        return stream_writer(opts)
