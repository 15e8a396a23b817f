"""Trace context through the Spark connector, and one span per task (real broker).

A record produced by a traced kafkalite producer (``traceparent``, and ``tracestate``
from its parent context) is copied by the connector (read with ``includeHeaders``, write
of the ``headers`` column) and consumed by a traced kafkalite consumer, whose process
span is the child of the original send span: the context survives unchanged. With
``kafka.otel.tracer.provider`` each read task and write task records one span linked to
the records' contexts.

The task code is first run in this process (the reader and writer functions without
Spark: spans in memory, failures and early stops); then a real Spark job in local mode,
whose Python workers build their provider from ``kafkalite.testing.spans`` and write
their spans to files (the worker flushes at the end of each task, so the spans are there
when the job returns).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    StatusCode,
    TraceFlags,
    TraceState,
)
from pyspark_kafkalite.arrow import arrow_schema
from pyspark_kafkalite.options import ReadOptions, WriteOptions
from pyspark_kafkalite.reading import read_range
from pyspark_kafkalite.writer import write_all

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.errors import OffsetOutOfRangeError
from kafkalite.otel import process_span

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]

#: The task spans of the in-process part (named by the option as 'module:attr').
TASK_EXPORTER = InMemorySpanExporter()
TASK_PROVIDER = TracerProvider()
TASK_PROVIDER.add_span_processor(SimpleSpanProcessor(TASK_EXPORTER))
TASK_OPTION = f"{__name__}:TASK_PROVIDER"
VENDOR_STATE = TraceState([("kafkalite", "spark-test")])


def produce_traced(bootstrap: str, topic: str) -> list[Any]:
    """Six records: one whose context carries tracestate, one plain traced send, a traced
    send_many of three (one context), one untraced. Returns the three send spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    parent = NonRecordingSpan(SpanContext(trace_id=0x5EED, span_id=0xF00D, is_remote=True,
                                          trace_flags=TraceFlags(TraceFlags.SAMPLED), trace_state=VENDOR_STATE))
    with Producer({"bootstrap.servers": bootstrap, "otel.tracer.provider": provider, "linger.ms": 0}) as producer:
        with trace.use_span(parent):
            producer.send(topic, b"with-state", key=b"k0", headers=[("app", b"a")]).result(10)
        producer.send(topic, b"traced", key=b"k1").result(10)
        assert producer.send_many(topic, [b"m0", b"m1", b"m2"]).result(10) == 3
    with Producer({"bootstrap.servers": bootstrap}) as plain:
        plain.send(topic, b"untraced").result(10)
    sends = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.PRODUCER]
    assert len(sends) == 3 and sends[0].context.trace_state == VENDOR_STATE
    return sends


def read_all(bootstrap: str, topic: str, n: int, **settings: Any) -> tuple[Consumer, list[Any]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, **settings})
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got: list[Any] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        got += consumer.poll(0.5)
    assert len(got) == n
    return consumer, got


def ids(span_context: Any) -> tuple[int, int]:
    return span_context.trace_id, span_context.span_id


def assert_context_survived(bootstrap: str, source: str, copy: str, sends: list[Any]) -> None:
    """The copy has the source's headers byte for byte, and a traced consumer's process
    spans are children of the original send spans, tracestate included."""
    plain, originals = read_all(bootstrap, source, 6)
    plain.close()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    consumer, copies = read_all(bootstrap, copy, 6, otel_tracer_provider=provider)
    with consumer:
        assert sorted((r.value, r.headers) for r in copies) == sorted((r.value, r.headers) for r in originals)
        by_value = {r.value: r for r in copies}
        assert [h[0] for h in by_value[b"with-state"].headers] == ["app", "traceparent", "tracestate"]
        for record in copies:
            with process_span(record, consumer):
                pass
    process = {s.attributes["messaging.kafka.message.offset"]: s for s in exporter.get_finished_spans()
               if s.name == f"{copy} process"}
    parents = {by_offset: ids(span.parent) if span.parent else None for by_offset, span in process.items()}
    offset_of = {r.value: r.offset for r in copies}
    assert parents[offset_of[b"with-state"]] == ids(sends[0].context)
    assert parents[offset_of[b"traced"]] == ids(sends[1].context)
    assert {parents[offset_of[v]] for v in (b"m0", b"m1", b"m2")} == {ids(sends[2].context)}
    assert parents[offset_of[b"untraced"]] is None
    assert process[offset_of[b"with-state"]].context.trace_state == VENDOR_STATE


def test_task_code_records_one_span_per_task_and_keeps_headers(kafka_broker: Any, topic_factory: Any) -> None:
    bootstrap = kafka_broker.bootstrap
    source, copy = topic_factory(partitions=1), topic_factory(partitions=1)
    sends = produce_traced(bootstrap, source)
    contexts = {ids(s.context) for s in sends}
    TASK_EXPORTER.clear()
    read_opts = ReadOptions.parse({"kafka.bootstrap.servers": bootstrap, "subscribe": source,
                                   "kafka.otel.tracer.provider": TASK_OPTION, "kafka.client.id": "reader"})

    def read(include_headers: bool, end: int = 6, poll_timeout_ms: int = 30_000) -> Any:
        return read_range(read_opts.consumer_settings(), source, 0, 0, end, include_headers=include_headers,
                          fail_on_data_loss=True, poll_timeout_ms=poll_timeout_ms)

    # Without includeHeaders the rows have no headers column, yet the span has the links.
    batches = list(read(False))
    assert all(rb.schema == arrow_schema(False) for rb in batches) and sum(rb.num_rows for rb in batches) == 6
    (span,) = TASK_EXPORTER.get_finished_spans()
    assert span.name == f"{source} receive" and span.kind is SpanKind.CONSUMER
    assert span.attributes["messaging.batch.message_count"] == 6
    assert span.attributes["messaging.client_id"] == "reader"
    assert (span.attributes["kafkalite.spark.offsets.start"], span.attributes["kafkalite.spark.offsets.end"]) == (0, 6)
    assert {ids(link.context) for link in span.links} == contexts
    assert span.status.status_code is StatusCode.UNSET

    # A task that fails records its span with the error.
    TASK_EXPORTER.clear()
    with pytest.raises(OffsetOutOfRangeError):
        list(read(True, end=9, poll_timeout_ms=1000))
    (failed,) = TASK_EXPORTER.get_finished_spans()
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "OFFSET_OUT_OF_RANGE"
    assert failed.attributes["messaging.batch.message_count"] == 6

    # The column path: read with headers, write the headers column; the producer inside the
    # write task is untraced, so traceparent / tracestate are written as they were read.
    TASK_EXPORTER.clear()
    table = pa.Table.from_batches(list(read(True))).select(["key", "value", "headers"])
    write_opts = WriteOptions.parse({"kafka.bootstrap.servers": bootstrap, "topic": copy,
                                     "kafka.otel.tracer.provider": TASK_OPTION})
    assert write_all(write_opts, iter(table.to_batches(max_chunksize=4))).rows == 6
    _, write_span = TASK_EXPORTER.get_finished_spans()  # the read task, then the write task
    assert write_span.name == f"{copy} publish" and write_span.kind is SpanKind.PRODUCER
    assert write_span.attributes["messaging.batch.message_count"] == 6
    assert {ids(link.context) for link in write_span.links} == contexts
    assert_context_survived(bootstrap, source, copy, sends)

    # Spark stops reading early (a limit): the span ends without an error.
    TASK_EXPORTER.clear()
    reader = read(False)
    next(reader)
    reader.close()
    (stopped,) = TASK_EXPORTER.get_finished_spans()
    assert stopped.status.status_code is StatusCode.UNSET


def test_spark_copy_keeps_trace_context_and_workers_export_task_spans(spark: Any, kafka_broker: Any,
                                                                      topic_factory: Any,
                                                                      spark_span_dir: Path) -> None:
    from kafkalite.testing.spans import read_spans

    bootstrap = kafka_broker.bootstrap
    source, copy = topic_factory(partitions=1), topic_factory(partitions=1)
    sends = produce_traced(bootstrap, source)
    options = {"kafka.bootstrap.servers": bootstrap,
               "kafka.otel.tracer.provider": "kafkalite.testing.spans:tracer_provider"}
    df = (spark.read.format("kafkalite").options(**options).option("subscribe", source)
          .option("includeHeaders", "true").load())
    (df.select("key", "value", "headers").write.format("kafkalite").options(**options)
     .option("topic", copy).mode("append").save())
    # Each task flushed its provider before it ended: no waiting for a batch processor.
    spans = read_spans(spark_span_dir)
    reads = [s for s in spans if s["attributes"].get("messaging.destination.name") == source]
    writes = [s for s in spans if s["attributes"].get("messaging.destination.name") == copy]
    assert [(s["name"], s["kind"]) for s in reads] == [(f"{source} receive", "CONSUMER")]
    assert [(s["name"], s["kind"]) for s in writes] == [(f"{copy} publish", "PRODUCER")]
    contexts = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in sends}
    for task in (reads[0], writes[0]):
        assert task["attributes"]["messaging.batch.message_count"] == 6
        assert {(link["trace_id"], link["span_id"]) for link in task["links"]} == contexts
        assert isinstance(task["attributes"]["kafkalite.spark.task_attempt_id"], int)
        assert task["pid"] != os.getpid()  # recorded in a Python worker
    assert_context_survived(bootstrap, source, copy, sends)
