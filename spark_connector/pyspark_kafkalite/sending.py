"""What a write task runs: its rows to Kafka with a kafkalite producer, on every Spark.

The producer is the Python worker's one for these settings, kept between its tasks
(:mod:`pyspark_kafkalite.producers`: idle and flushed when a task takes it, closed
when a task fails).

Shared by the data source's writers (:mod:`pyspark_kafkalite.writer`, PySpark >= 4.0)
and :func:`pyspark_kafkalite.frames.write_kafka` (``mapInArrow``, every release), so
this module imports nothing of Spark's Python Data Source API.

Columns as in Spark's Kafka sink: ``value`` (binary or string, required; null writes
a tombstone), ``key`` (binary or string), ``topic`` (string; the ``topic`` option
overrides it), ``partition`` (int), ``headers`` (array<struct<key string, value
binary>>). Other columns are ignored. The schema is checked when the write is
defined, so a missing ``value`` or a column of the wrong type fails before any task
runs, naming the column.

Guarantees: at least once. Every task flushes its producer and checks every send
before it reports success; the producer is idempotent by default (no duplicates from
its own retries). A failed send fails the task with the Kafka error (its class names
it, e.g. ``RecordTooLargeError``); Spark retries the task, which may write some rows
again. Rows arrive as Arrow record batches (PySpark's Arrow writers) and go to
``Producer.send_many`` (one call per Arrow batch when every row goes to the ``topic``
option's topic without partition or headers; ``Producer.send`` per row otherwise)
straight from the Arrow columns.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from kafkalite.errors import ConfigError, KafkaError
from pyspark_kafkalite.options import WriteOptions
from pyspark_kafkalite.producers import POOL
from pyspark_kafkalite.tracing import TaskSpan
from pyspark_kafkalite.worker_imports import lighten_zip_importers

_CHECK_EVERY = 4096  # how many sends between checks of the oldest pending futures
# A task sends a whole partition of rows as fast as it can: a longer linger than the
# producer's 5 ms fills batches; 512 KiB batches are what the Spark benchmarks of
# benchmarks/README.md measured (the producer's own default is 1,000,000 since issue
# 15). kafka.batch.size / kafka.linger.ms override them.
TASK_PRODUCER_DEFAULTS = {"batch.size": 512 * 1024, "linger.ms": 20}


def _type_error(column: str, expected: str, actual: Any) -> ConfigError:
    return ConfigError(f"column '{column}' must be {expected} for the kafkalite sink, "
                       f"got {actual.simpleString()}")


def check_write_schema(schema: StructType, opts: WriteOptions) -> None:
    """Raise ConfigError naming the column when the DataFrame cannot be written."""
    fields = {f.name: f.dataType for f in schema.fields}
    if "value" not in fields:
        raise ConfigError("the kafkalite sink needs a 'value' column (binary or string); "
                          f"the DataFrame has {', '.join(fields) or 'no columns'}")
    for name in ("value", "key"):
        if name in fields and not isinstance(fields[name], (BinaryType, StringType)):
            raise _type_error(name, "binary or string", fields[name])
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise _type_error("topic", "string", fields["topic"])
    if "topic" not in fields and opts.topic is None:
        raise ConfigError("no topic to write to: set the 'topic' option or add a 'topic' column")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise _type_error("partition", "int", fields["partition"])
    if "headers" in fields:
        h = fields["headers"]
        ok = (isinstance(h, ArrayType) and isinstance(h.elementType, StructType)
              and [f.name for f in h.elementType.fields] == ["key", "value"]
              and isinstance(h.elementType["key"].dataType, StringType)
              and isinstance(h.elementType["value"].dataType, BinaryType))
        if not ok:
            raise _type_error("headers", "array<struct<key:string,value:binary>>", h)



class Sender:
    """One task's producer and its pending sends (and, when traced, the task's span)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        settings = dict(TASK_PRODUCER_DEFAULTS)
        settings.update(opts.producer_settings())
        # Tracing is per task, never per record: the producer stays untraced, so the
        # rows' traceparent headers are written as they are (pyspark_kafkalite.tracing).
        self.span = TaskSpan.take(settings, "send", opts.topic)
        self.settings = settings
        # The worker's producer from an earlier task with these settings, if any
        # (pyspark_kafkalite.producers: it is idle, every record of that task acknowledged).
        self.producer = POOL.lend(settings)
        self.pending: deque[Any] = deque()
        self.rows = 0

    def check_done(self, everything: bool = False) -> None:
        pending = self.pending
        while pending and (everything or pending[0].done()):
            error = pending.popleft().exception()  # a RecordFuture or a SendManyResult
            if error is not None:
                raise self._failure(error)

    @staticmethod
    def _failure(exc: BaseException | None) -> BaseException:
        if isinstance(exc, KafkaError):
            return exc
        return KafkaError(f"writing to Kafka failed: {exc!r}")

    def send_arrow(self, batch: pa.RecordBatch) -> None:
        names = batch.schema.names
        n = batch.num_rows
        if not n:
            return

        def column(name: str) -> list[Any] | None:
            if name not in names:
                return None
            col = batch.column(names.index(name))
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                col = col.cast(pa.binary())
            values: list[Any] = col.to_pylist()  # pyarrow has no type information
            return values

        values = column("value")
        keys = column("key")
        partitions = column("partition")
        headers_col = column("headers")
        topic_opt = self.opts.topic
        topics = None if topic_opt is not None else batch.column(names.index("topic")).to_pylist()
        headers = None
        if headers_col is not None:
            headers = [None if h is None else [(e["key"], e["value"]) for e in h] for h in headers_col]
        self._send_all(n, topic_opt, topics, values, keys, partitions, headers)

    def send_rows(self, rows: Iterable[Any]) -> None:
        """PySpark 4.0's streaming writer hands Rows, not Arrow."""
        chunk: list[Any] = []
        for row in rows:
            chunk.append(row)
            if len(chunk) >= 10_000:
                self._send_row_chunk(chunk)
                chunk = []
        if chunk:
            self._send_row_chunk(chunk)

    def _send_row_chunk(self, rows: list[Any]) -> None:
        fields = rows[0].__fields__

        def column(name: str) -> list[Any] | None:
            if name not in fields:
                return None
            out = [r[name] for r in rows]
            return [v.encode() if isinstance(v, str) else v for v in out]

        topics = None if self.opts.topic is not None else [r["topic"] for r in rows]
        headers_col = column("headers")
        headers = None
        if headers_col is not None:
            headers = [None if h is None else [(e["key"], e["value"]) for e in h] for h in headers_col]
        self._send_all(len(rows), self.opts.topic, topics, column("value"), column("key"),
                       column("partition"), headers)

    def _send_all(self, n: int, topic: str | None, topics: list[Any] | None, values: list[Any] | None,
                  keys: list[Any] | None, partitions: list[Any] | None, headers: list[Any] | None) -> None:
        send = self.producer.send
        pending = self.pending
        append = pending.append
        assert values is not None
        if topics is not None and None in topics:
            i = topics.index(None)
            raise ConfigError(f"row {self.rows + i} has a null 'topic' and the 'topic' option is not set")
        if topics is None and partitions is None and headers is None:
            # One call for the whole chunk (no future per row): Producer.send_many.
            assert topic is not None
            append(self.producer.send_many(topic, values, keys))
        else:
            none = [None] * n
            ks = keys if keys is not None else none
            ps = partitions if partitions is not None else none
            hs = headers if headers is not None else none
            ts = topics if topics is not None else [topic] * n
            for t, k, v, p, h in zip(ts, ks, values, ps, hs):
                append(send(t, v, k, p, None, h))
        self.rows += n
        span = self.span
        if span is not None:
            span.count = self.rows
            if topics is not None:
                span.topics.update(topics)
            if headers is not None:
                span.link_rows(headers)
        if len(pending) >= _CHECK_EVERY:
            self.check_done()

    def finish(self) -> int:
        """Flush, then fail on the first failed send; the task commits only after this."""
        self.producer.flush()
        self.check_done(everything=True)
        return self.rows

    def close(self, succeeded: bool) -> None:
        """Give the producer back for the worker's next task after :meth:`finish`
        succeeded; close it after a failure (it may hold this task's unsent records)."""
        if succeeded:
            POOL.give_back(self.settings, self.producer)
        else:
            POOL.discard(self.producer)



def send_all(opts: WriteOptions, iterator: Iterator[Any]) -> int:
    """Write everything ``iterator`` yields (Arrow record batches or Rows); the rows
    sent, every one acknowledged (what one write task runs)."""
    # PySpark re-reads every zip on the worker's path before each task (Python < 3.12);
    # from the worker's next task on, only a changed one (pyspark_kafkalite.worker_imports).
    lighten_zip_importers()
    sender = Sender(opts)
    error: BaseException | None = None
    succeeded = False
    try:
        rows: list[Any] = []
        for item in iterator:
            if isinstance(item, pa.RecordBatch):
                sender.send_arrow(item)
            else:
                rows.append(item)
                if len(rows) >= 10_000:
                    sender.send_rows(rows)
                    rows = []
        if rows:
            sender.send_rows(rows)
        rows_sent = sender.finish()
        succeeded = True
        return rows_sent
    except BaseException as exc:
        error = exc
        raise
    finally:
        try:
            sender.close(succeeded)
        finally:
            if sender.span is not None:
                sender.span.end(error)
