"""The Spark connector's task spans without Spark or a broker: the option, links from
Arrow and row headers (distinct, at most 128), the recorded span and the flush."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pyspark_kafkalite.arrow import HEADERS_TYPE
from pyspark_kafkalite.options import ReadOptions, WriteOptions
from pyspark_kafkalite.tracing import MAX_LINKS, TaskSpan

from kafkalite.errors import ConfigError, UnknownTopicOrPartitionError

B = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def traceparent(trace_id: int, span_id: int) -> bytes:
    return f"00-{trace_id:032x}-{span_id:016x}-01".encode()


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.mark.parametrize("value", ["prometheus", "module", ":attr", "module:", " "])
def test_bad_tracer_option_fails_at_analysis_naming_it(value: str) -> None:
    for parse in (lambda o: ReadOptions.parse({**o, "subscribe": "t"}), WriteOptions.parse):
        with pytest.raises(ConfigError, match="option 'kafka.otel.tracer.provider' must be 'global' or "
                                              "'module:attr' naming a TracerProvider"):
            parse({**B, "kafka.otel.tracer.provider": value})


def test_tracer_option_forms_are_accepted_and_reach_the_task_settings() -> None:
    for value in ("global", "GLOBAL", "myapp.telemetry:tracer_provider"):
        opts = ReadOptions.parse({**B, "subscribe": "t", "kafka.otel.tracer.provider": value})
        assert opts.consumer_settings()["otel.tracer.provider"] == value
        assert WriteOptions.parse({**B, "kafka.otel.tracer.provider": value}).producer_settings()[
            "otel.tracer.provider"] == value
    # The driver's admin client is not traced (the setting is for producers and consumers).
    assert "otel.tracer.provider" not in ReadOptions.parse(
        {**B, "subscribe": "t", "kafka.otel.tracer.provider": "global"}).admin_settings()


def test_take_removes_the_setting_so_the_task_client_stays_untraced(spans: Any) -> None:
    provider, _ = spans
    settings: dict[str, Any] = {"bootstrap.servers": "x", "client.id": "task-1"}
    assert TaskSpan.take(settings, "receive", "t") is None
    settings["otel.tracer.provider"] = provider
    span = TaskSpan.take(settings, "receive", "t", 0, (5, 9))
    assert span is not None and "otel.tracer.provider" not in settings
    assert span.tracing.provider is provider and span.tracing.client_id == "task-1"


def headers_column(rows: list[list[tuple[str, bytes | None]] | None]) -> pa.Array:
    data = [None if r is None else [{"key": k, "value": v} for k, v in r] for r in rows]
    return pa.array(data, type=HEADERS_TYPE)


def test_links_from_an_arrow_headers_column(spans: Any) -> None:
    provider, exporter = spans
    span = TaskSpan.take({"otel.tracer.provider": provider}, "receive", "orders", 2, (100, 106))
    assert span is not None
    column = headers_column([
        [("app", b"x"), ("traceparent", traceparent(1, 11)), ("tracestate", b"k=v")],
        None,                                              # no headers
        [],                                                # empty headers
        [("traceparent", traceparent(1, 11))],             # the same context again (send_many)
        [("traceparent", b"garbage")],                     # not a valid context
        [("Traceparent", traceparent(2, 22)), ("traceparent", traceparent(3, 33))],
    ])
    span.link_arrow(column.slice(0, 6))
    span.count = 6
    span.end()
    (recorded,) = exporter.get_finished_spans()
    assert {(link.context.trace_id, link.context.span_id) for link in recorded.links} == {(1, 11), (3, 33)}
    assert recorded.name == "orders receive" and recorded.kind is SpanKind.CONSUMER
    attrs = recorded.attributes
    assert attrs["messaging.batch.message_count"] == 6
    assert attrs["messaging.destination.partition.id"] == "2"
    assert (attrs["kafkalite.spark.offsets.start"], attrs["kafkalite.spark.offsets.end"]) == (100, 106)
    assert "kafkalite.spark.stage_id" not in attrs  # not run by Spark here


def test_links_stop_at_128_distinct_contexts(spans: Any) -> None:
    provider, exporter = spans
    span = TaskSpan.take({"otel.tracer.provider": provider}, "receive", "t")
    assert span is not None
    rows = [[("traceparent", traceparent(7, i + 1))] for i in range(MAX_LINKS + 20)]
    span.link_arrow(headers_column(rows[:100]))
    span.link_arrow(headers_column(rows[100:]))
    assert len(span.links) == MAX_LINKS
    span.link_rows(rows)  # no more once full
    span.end()
    assert [link.context.span_id for link in exporter.get_finished_spans()[0].links] == list(range(1, 129))


def test_write_span_with_row_links_topic_and_failure(spans: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    provider, exporter = spans
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "messaging")
    span = TaskSpan.take({"otel.tracer.provider": provider, "client.id": "w"}, "send", None)
    assert span is not None
    span.link_rows([None, [("a", b"1")], [("traceparent", traceparent(4, 44))], [("traceparent", None)]])
    span.topics.update(["sink", "sink"])
    span.count = 4
    span.end(UnknownTopicOrPartitionError("sink-9 does not exist"))
    (recorded,) = exporter.get_finished_spans()
    assert recorded.name == "send sink" and recorded.kind is SpanKind.PRODUCER
    assert [(link.context.trace_id, link.context.span_id) for link in recorded.links] == [(4, 44)]
    assert recorded.attributes["messaging.client.id"] == "w"
    assert recorded.attributes["messaging.batch.message_count"] == 4
    assert recorded.status.status_code is StatusCode.ERROR
    assert recorded.attributes["error.type"] == "UNKNOWN_TOPIC_OR_PARTITION"
    # Rows for several topics: no single destination.
    span = TaskSpan.take({"otel.tracer.provider": provider}, "send", None)
    assert span is not None
    span.topics.update(["a", "b"])
    span.end()
    assert exporter.get_finished_spans()[-1].name == "send"


def test_end_flushes_a_batching_provider() -> None:
    # A Python worker may be ended without exit handlers: the task flushes its spans.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=3_600_000))
    span = TaskSpan.take({"otel.tracer.provider": provider}, "receive", "t")
    assert span is not None
    span.end()
    assert [s.name for s in exporter.get_finished_spans()] == ["t receive"]
    provider.shutdown()


def test_global_provider_without_an_sdk_records_nothing() -> None:
    span = TaskSpan.take({"otel.tracer.provider": "global"}, "receive", "t")
    assert span is not None and span.tracing.provider is trace.get_tracer_provider()
    span.end()  # a no-op tracer: nothing to flush, nothing raised


def test_shared_contexts_are_extracted_once(spans: Any) -> None:
    provider, _ = spans
    span = TaskSpan.take({"otel.tracer.provider": provider}, "receive", "t")
    assert span is not None
    extracted: list[Any] = []
    extract = span.tracing.span_context_of
    span.tracing.span_context_of = lambda headers: extracted.append(headers) or extract(headers)
    batch = [("traceparent", traceparent(9, 99))]  # a send_many batch: one context for all
    span.link_arrow(headers_column([batch] * 1000))
    span.link_arrow(headers_column([batch] * 1000 + [[("traceparent", traceparent(9, 98))]]))
    span.link_rows([batch] * 1000)
    assert len(extracted) == 2 and sorted(sid for _, sid in span.links) == [98, 99]
