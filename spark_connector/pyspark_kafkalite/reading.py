"""Executor side of a read: one consumer per task, one offset range, Arrow out.

``read_range`` is what a Spark task runs for a batch or a micro-batch: it builds its
own :class:`kafkalite.Consumer` (no group, nothing automatic: ``auto.offset.reset`` is
``none``), assigns the one partition, seeks to the range's start and turns what
:meth:`~kafkalite.Consumer.poll_batches` returns into Arrow record batches until the
position reaches the range's end.

Data loss (``failOnDataLoss``): the start offset deleted by retention or
``delete_records`` (the broker answers OFFSET_OUT_OF_RANGE), or the partition ending
before the range does (truncated after an unclean leader election), fails the task
with an error naming the option; with ``failOnDataLoss=false`` the task reads what is
left and logs a warning. Gaps inside the range (compaction, transaction markers) are
normal and not data loss.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kafkalite import Consumer, TopicPartition
from kafkalite.errors import KafkaTimeoutError, OffsetOutOfRangeError
from pyspark_kafkalite.arrow import ArrowBuilder
from pyspark_kafkalite.tracing import TaskSpan

log = logging.getLogger("pyspark_kafkalite")

# Bigger fetches than the consumer's defaults: a task reads one partition from a known
# offset to a known end, so fewer, larger responses mean fewer round trips.
TASK_CONSUMER_DEFAULTS = {"max.partition.fetch.bytes": 8 * 1024 * 1024, "fetch.max.bytes": 64 * 1024 * 1024}


def read_range(settings: dict[str, Any], topic: str, partition: int, start: int, end: int, *,
               include_headers: bool, fail_on_data_loss: bool, poll_timeout_ms: int
               ) -> Iterator[pa.RecordBatch]:
    """Yield Arrow record batches with the records ``start <= offset < end`` of one partition.

    With ``otel.tracer.provider`` in ``settings`` the task records one receive span
    (:mod:`pyspark_kafkalite.tracing`); its consumer is not traced.
    """
    if start >= end:
        return
    tp = TopicPartition(topic, partition)
    config = dict(TASK_CONSUMER_DEFAULTS)
    config.update(settings)
    span = TaskSpan.take(config, "receive", topic, partition, (start, end))
    if span is None:
        yield from _read(config, tp, start, end, include_headers, fail_on_data_loss, poll_timeout_ms)
        return
    error: BaseException | None = None
    try:
        # The headers column is built to find the links, and dropped when not asked for.
        for rb in _read(config, tp, start, end, True, fail_on_data_loss, poll_timeout_ms):
            span.count += rb.num_rows
            span.link_arrow(rb.column("headers"))
            yield rb if include_headers else rb.drop_columns(["headers"])
    except GeneratorExit:  # Spark stopped reading (a limit): not a failure
        raise
    except BaseException as exc:
        error = exc
        raise
    finally:
        span.end(error)


def _read(config: dict[str, Any], tp: TopicPartition, start: int, end: int, include_headers: bool,
          fail_on_data_loss: bool, poll_timeout_ms: int) -> Iterator[pa.RecordBatch]:
    topic, partition = tp.topic, tp.partition
    builder = ArrowBuilder(include_headers)
    consumer = Consumer(config)
    try:
        consumer.assign([tp])
        consumer.seek(tp, start)
        position = start
        poll_timeout = poll_timeout_ms / 1000.0
        stalled_since = time.monotonic()
        while position < end:
            try:
                polled = consumer.poll_batches(timeout=min(1.0, poll_timeout))
            except OffsetOutOfRangeError:
                earliest = consumer.beginning_offsets([tp])[tp]
                lost = f"offsets {position}..{min(earliest, end) - 1} of {topic}-{partition} were deleted"
                if fail_on_data_loss:
                    raise OffsetOutOfRangeError(
                        f"{lost} before this query read them (option failOnDataLoss=true; set it to false "
                        "to read what is left)", topic=topic, partition=partition) from None
                log.warning("kafkalite: %s; skipping to %d (failOnDataLoss=false)", lost, earliest)
                if earliest >= end:
                    return
                position = earliest
                consumer.seek(tp, position)
                continue
            for _, batches in polled:
                rb = builder.build(topic, partition, batches, position, end)
                if rb is not None:
                    yield rb
            now_at = consumer.position(tp)
            if now_at > position:
                position = now_at
                stalled_since = time.monotonic()
                continue
            if time.monotonic() - stalled_since >= poll_timeout:
                log_end = consumer.end_offsets([tp])[tp]
                if log_end < end:
                    message = (f"{topic}-{partition} ends at offset {log_end}, before the end of the range "
                               f"read ({end}): records were lost (truncated)")
                    if fail_on_data_loss:
                        raise OffsetOutOfRangeError(f"{message}; option failOnDataLoss=true",
                                                    topic=topic, partition=partition)
                    log.warning("kafkalite: %s (failOnDataLoss=false)", message)
                    return
                raise KafkaTimeoutError(
                    f"no records of {topic}-{partition} arrived at offset {position} within "
                    f"kafkaConsumer.pollTimeoutMs ({poll_timeout_ms} ms)", topic=topic, partition=partition)
    finally:
        consumer.close(timeout=5.0)
