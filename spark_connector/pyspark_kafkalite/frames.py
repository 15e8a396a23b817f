"""Batch reads and writes as DataFrame functions, on every Spark release (3.5 and later).

``format("kafkalite")`` needs Spark's Python Data Source API (open-source PySpark >= 4.0,
see :mod:`pyspark_kafkalite.capabilities`). These functions need only ``mapInArrow``
(Spark 3.3+), so they run on Spark 3.5 runtimes too, with the data source's own code:

* :func:`read_kafka` plans the offset ranges on the driver with
  :class:`~pyspark_kafkalite.planning.Planner` (the same options, checked by
  :class:`~pyspark_kafkalite.options.ReadOptions`), then reads each range in a task of
  ``spark.range(n, numPartitions=n).mapInArrow(...)``: task *i* reads range *i* with
  :func:`~pyspark_kafkalite.reading.read_range`, the same Arrow conversion, so the rows
  and the schema are the data source's (and Spark's JVM connector's);
* :func:`write_kafka` sends each partition of the DataFrame with
  :func:`~pyspark_kafkalite.sending.send_all`, the sink's code: the same columns,
  options and guarantees (at least once).

Example::

    from pyspark_kafkalite import read_kafka, write_kafka

    df = read_kafka(spark, {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"})
    write_kafka(df.selectExpr("key", "upper(CAST(value AS STRING)) AS value"),
                {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic": "orders-upper"})
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.types import LongType, StructField, StructType

from kafkalite.errors import InvalidArgumentTypeError
from pyspark_kafkalite.capabilities import refuse_streaming_read_options, require_streaming_reads
from pyspark_kafkalite.options import ReadOptions, WriteOptions
from pyspark_kafkalite.planning import OffsetRange, Planner
from pyspark_kafkalite.reading import read_range
from pyspark_kafkalite.schema import kafka_schema
from pyspark_kafkalite.sending import check_write_schema, send_all
from pyspark_kafkalite.shipping import ShippedToTasks

__all__ = [
    "WRITTEN_SCHEMA",
    "RangeTask",
    "SendTask",
    "frame_of_ranges",
    "plain_options",
    "read_kafka",
    "read_kafka_stream",
    "write_kafka",
]

#: What each write task returns: the rows it sent, every one acknowledged.
WRITTEN_SCHEMA = StructType([StructField("rows", LongType(), False)])
#: The sink's columns; the others are not sent to the tasks.
SINK_COLUMNS = ("key", "value", "topic", "partition", "headers")


def plain_options(options: Mapping[str, Any]) -> dict[str, str]:
    """The options as strings (None left out, as Spark's ``.option()`` does); an
    ``InvalidArgumentTypeError`` (a ``TypeError``) for a non-dict."""
    if not isinstance(options, Mapping):
        raise InvalidArgumentTypeError(
            f"options must be a dict of option names to values, got {type(options).__name__}")
    return {str(k): str(v) for k, v in options.items() if v is not None}


class RangeTask(ShippedToTasks):
    """``mapInArrow`` function of a read: the input rows' ``id`` picks the range to read.

    Pickled to the tasks through :class:`~pyspark_kafkalite.shipping.ShippedToTasks`, so an
    executor without kafkalite fails with the same clear error as the data source's.
    """

    def __init__(self, opts: ReadOptions, ranges: Sequence[OffsetRange]) -> None:
        self.opts = opts
        self.ranges = [(r.topic, r.partition, r.start, r.end) for r in ranges]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        opts = self.opts
        settings = opts.consumer_settings()
        for batch in batches:
            for index in batch.column(0).to_pylist():
                topic, partition, start, end = self.ranges[index]
                yield from read_range(settings, topic, partition, start, end, include_headers=opts.include_headers,
                                      fail_on_data_loss=opts.fail_on_data_loss, poll_timeout_ms=opts.poll_timeout_ms)


def frame_of_ranges(spark: Any, opts: ReadOptions, ranges: Sequence[OffsetRange]) -> Any:
    """The DataFrame of the records in ``ranges``: one task per range (an empty one for none)."""
    tasks = max(1, len(ranges))
    return spark.range(0, len(ranges), 1, tasks).mapInArrow(RangeTask(opts, ranges),
                                                            kafka_schema(opts.include_headers))


def read_kafka(spark: Any, options: Mapping[str, Any]) -> Any:
    """A batch read of Kafka, as ``spark.read.format("kafkalite").options(**options).load()``,
    on every Spark release.

    ``options`` are the source's batch options, keyed as ``.option()`` keys are:
    ``subscribe`` / ``subscribePattern`` / ``assign``, ``startingOffsets`` /
    ``endingOffsets`` (and their timestamp variants), ``minPartitions``,
    ``maxRecordsPerPartition``, ``includeHeaders``, ``failOnDataLoss``,
    ``startingOffsets=group`` with ``kafka.group.id``, and every ``kafka.*`` setting. The
    offsets are fixed here, on the driver (a bad option or a missing topic fails now,
    before any task runs); the DataFrame reads exactly those records each time it is
    evaluated. Streaming trigger options (``maxOffsetsPerTrigger`` ...) are refused: see
    :func:`~pyspark_kafkalite.read_kafka_incremental`.

    Example (not run: needs a Spark session; tests/spark runs the data source)::

        df = read_kafka(spark, {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders",
                                "startingOffsets": "earliest", "includeHeaders": "true"})
        df.selectExpr("CAST(value AS STRING)").show()
    """
    plain = plain_options(options)
    refuse_streaming_read_options(plain, "read_kafka")
    opts = ReadOptions.parse(plain)
    with Planner(opts) as planner:
        ranges = planner.batch_ranges()
    return frame_of_ranges(spark, opts, ranges)


class SendTask(ShippedToTasks):
    """``mapInArrow`` function of a write: sends its partition's rows, returns how many."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = send_all(self.opts, batches)
        yield pa.RecordBatch.from_arrays([pa.array([rows], pa.int64())], schema=pa.schema(
            [pa.field("rows", pa.int64(), nullable=False)]))


def write_kafka(df: Any, options: Mapping[str, Any]) -> int:
    """Write ``df`` to Kafka with the sink's semantics (``df.write.format("kafkalite")``), on
    every Spark release; returns the number of records written.

    Columns: ``value`` (binary or string, required; null writes a tombstone), ``key``,
    ``topic`` (the ``topic`` option overrides it), ``partition`` (int) and ``headers``
    (``array<struct<key:string,value:binary>>``); others are ignored. Options: ``topic``
    and every ``kafka.*`` producer setting. The schema is checked here, on the driver, so a
    missing ``value`` column or a wrong type fails before any task runs. At least once:
    every task flushes and checks every send; a failed task fails the write (Spark may
    retry it, which can write some rows twice).

    Example (not run: needs a Spark session; tests/spark runs the data source)::

        written = write_kafka(df.selectExpr("CAST(id AS STRING) AS key", "payload AS value"),
                              {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic": "orders"})
    """
    opts = WriteOptions.parse(plain_options(options))
    check_write_schema(df.schema, opts)
    columns = [name for name in df.columns if name in SINK_COLUMNS]
    counts = df.select(*columns).mapInArrow(SendTask(opts), WRITTEN_SCHEMA).collect()
    return sum(int(row["rows"]) for row in counts)


def read_kafka_stream(spark: Any, options: Mapping[str, Any]) -> Any:
    """``spark.readStream.format("kafkalite")`` with ``options``, the data source registered
    first (a Spark Connect client's session needs that); a clear error on a Spark without
    the Python Data Source API (open-source Spark 3.5), saying what to use there.

    Example (not run: needs a Spark session; tests/spark runs the data source)::

        stream = read_kafka_stream(spark, {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"})
    """
    plain = plain_options(options)
    require_streaming_reads("read_kafka_stream()")
    return spark.readStream.format(register_source(spark)).options(**plain).load()


def register_source(spark: Any) -> str:
    """Register ``format("kafkalite")`` in ``spark`` (a no-op where PySpark's lookup did
    already); returns its name.

    Example (not run: needs a Spark session; tests/spark runs the data source)::

        spark.read.format(register_source(spark)).option("subscribe", "orders")...
    """
    from pyspark_kafkalite.source import KafkaLiteDataSource

    name = KafkaLiteDataSource.name()
    try:
        spark.dataSource.register(KafkaLiteDataSource)
    except Exception as exc:
        # PySpark 4.0 refuses a second registration of a name, the one its own lookup of
        # pyspark_* modules made included (DATA_SOURCE_ALREADY_EXISTS); 4.1 and later replace it.
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(exc):
            raise
    return name
