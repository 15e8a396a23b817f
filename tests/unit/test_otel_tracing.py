"""The tracing wrappers and helpers without a broker: header carriers, the span of a
send (ended at the acknowledgement), of a send_many batch, of a poll, of processing.

The wrapped ``send`` / ``poll`` here are stand-ins that record what the wrapper hands
them and let the test play the engine's acknowledgement callbacks; the same wrappers
against a real broker and the Java agent are in
tests/integration/test_observability_tracing.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from kafkalite.errors import (
    InvalidArgumentError,
    KafkaError,
    RecordTooLargeError,
    UnknownTopicOrPartitionError,
)
from kafkalite.otel.tracing import (
    GETTER,
    MAX_LINKS,
    SETTER,
    Tracing,
    install_consumer_tracing,
    install_producer_tracing,
    process_span,
)
from kafkalite.producer.futures import SendManyResult
from kafkalite.types import ConsumerRecord, RecordMetadata


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def traceparent_of(span: Any) -> bytes:
    ctx = span.context
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}".encode()


def metadata(topic: str, partition: int, offset: int) -> RecordMetadata:
    return RecordMetadata(topic, partition, offset, 0)


class Future:
    def __init__(self, index: int) -> None:
        self._batch = "batch"
        self._index = index


class StandInProducer:
    """Records each send; the test calls the callbacks as the engine would."""

    def __init__(self) -> None:
        self.sends: list[dict[str, Any]] = []
        self.current: list[Any] = []

    def send(self, topic: str, value: Any = None, key: Any = None, partition: Any = None, timestamp: Any = None,
             headers: Any = None, callback: Any = None) -> Future:
        if topic == "missing":
            raise UnknownTopicOrPartitionError(f"topic {topic} not in metadata")
        self.current.append(trace.get_current_span())
        self.sends.append({"topic": topic, "value": value, "headers": headers, "callback": callback,
                           "timestamp": timestamp})
        return Future(len(self.sends) - 1)


def test_header_carriers_replace_and_read() -> None:
    carrier: list[tuple[str, bytes | None]] = [("app", b"1"), ("traceparent", b"stale"), ("traceparent", b"x")]
    SETTER.set(carrier, "traceparent", "00-new")
    assert carrier == [("app", b"1"), ("traceparent", b"00-new")]
    assert GETTER.get(carrier, "traceparent") == ["00-new"]
    assert GETTER.get([("tracestate", None)], "tracestate") is None  # a null header value is no value
    assert GETTER.get(None, "traceparent") is None and GETTER.keys(None) == []
    assert GETTER.keys(carrier) == ["app", "traceparent"]


def test_inject_and_extract_round_trip(spans: Any) -> None:
    provider, _ = spans
    tracing = Tracing(provider, "c1")
    span = tracing.tracer.start_span("s")
    for given in (None, [("app", b"1")], {"app": b"1"}):
        carrier = tracing.inject(span, given)
        assert carrier[-1][0] == "traceparent" and (given is None or carrier[0] == ("app", b"1"))
        context = tracing.span_context_of(carrier)
        assert (context.trace_id, context.span_id) == (span.get_span_context().trace_id,
                                                       span.get_span_context().span_id)
    assert tracing.span_context_of([]) is None
    assert tracing.span_context_of([("traceparent", b"00-not-a-context")]) is None
    span.end()


def test_send_span_ends_at_the_acknowledgement(spans: Any) -> None:
    provider, exporter = spans
    producer = StandInProducer()
    install_producer_tracing(producer, Tracing(provider, "p1"))
    acks: list[Any] = []
    producer.send("orders", b"v", headers={"app": b"1"}, callback=lambda m, e: acks.append((m, e)))
    assert exporter.get_finished_spans() == ()  # in flight: the span is open
    sent = producer.sends[0]
    assert producer.current[0].is_recording()  # the send span is current while appending
    meta = metadata("orders", 2, 41)
    sent["callback"](meta, None)
    (span,) = exporter.get_finished_spans()
    assert acks == [(meta, None)]  # the application's callback still runs
    assert span.name == "orders publish" and span.kind is SpanKind.PRODUCER
    assert span.attributes["messaging.destination.partition.id"] == "2"
    assert span.attributes["messaging.kafka.message.offset"] == 41
    assert sent["headers"] == [("app", b"1"), ("traceparent", traceparent_of(span))]


def test_send_span_records_failures(spans: Any) -> None:
    provider, exporter = spans
    producer = StandInProducer()
    install_producer_tracing(producer, Tracing(provider))
    with pytest.raises(UnknownTopicOrPartitionError):
        producer.send("missing", b"v")
    producer.send("orders", None)  # a tombstone, failed by the broker later
    producer.sends[0]["callback"](None, RecordTooLargeError("too large"))
    failed_append, failed_ack = exporter.get_finished_spans()
    assert failed_append.status.status_code is StatusCode.ERROR
    assert failed_append.attributes["error.type"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert failed_ack.attributes["error.type"] == "MESSAGE_TOO_LARGE"
    assert failed_ack.attributes["messaging.kafka.message.tombstone"] is True


def test_send_many_is_one_span_ended_by_the_last_acknowledgement(spans: Any) -> None:
    provider, exporter = spans
    producer = StandInProducer()
    install_producer_tracing(producer, Tracing(provider))
    with pytest.raises(InvalidArgumentError, match=r"send_many\(\): 2 keys for 3 values"):
        producer.send_many("t", [b"a", b"b", b"c"], [b"k", b"l"])
    result = producer.send_many("t", (v for v in [b"a", b"b", b"c"]), timestamp=1234)
    assert isinstance(result, SendManyResult) and result.count == 3
    assert len({repr(s["headers"]) for s in producer.sends}) == 1  # one context for the batch
    assert {s["timestamp"] for s in producer.sends} == {1234}
    producer.sends[0]["callback"](metadata("t", 0, 0), None)
    producer.sends[1]["callback"](None, RecordTooLargeError("b"))
    assert exporter.get_finished_spans() == ()
    producer.sends[2]["callback"](metadata("t", 0, 1), None)
    (span,) = exporter.get_finished_spans()
    assert span.attributes["messaging.batch.message_count"] == 3
    assert span.attributes["error.type"] == "MESSAGE_TOO_LARGE"
    assert producer.sends[0]["headers"] == [("traceparent", traceparent_of(span))]
    producer.send_many("t", [])
    assert exporter.get_finished_spans()[-1].attributes["messaging.batch.message_count"] == 0


def record(offset: int, headers: Any = None, topic: str = "t", partition: int = 0) -> ConsumerRecord:
    return ConsumerRecord(topic, partition, offset, 0, 0, None, b"v", headers or [])


class StandInConsumer:
    def __init__(self, results: list[Any]) -> None:
        self.results = results

    def poll(self, timeout: float | None = None, max_records: int | None = None) -> Any:
        result = self.results.pop(0)
        if isinstance(result, BaseException):
            raise result
        return result


def test_receive_span_per_poll_with_links(spans: Any) -> None:
    provider, exporter = spans
    tracing = Tracing(provider, "c1", "billing")
    producer_spans = [tracing.tracer.start_span(f"p{i}") for i in range(MAX_LINKS + 2)]
    many = [record(i, tracing.inject(s, None)) for i, s in enumerate(producer_spans)]
    consumer = StandInConsumer([[], many, [record(0), record(1, partition=1)], KafkaError("fetch failed")])
    install_consumer_tracing(consumer, tracing)
    assert consumer.poll(0.1) == [] and exporter.get_finished_spans() == ()  # nothing returned: no span
    assert consumer.poll(0.1) == many
    (span,) = exporter.get_finished_spans()
    assert span.name == "t receive" and span.kind is SpanKind.CONSUMER
    assert len(span.links) == MAX_LINKS
    assert span.attributes["messaging.batch.message_count"] == MAX_LINKS + 2
    assert span.attributes["messaging.destination.partition.id"] == "0"
    assert span.attributes["messaging.kafka.consumer.group"] == "billing"
    consumer.poll(0.1)
    mixed = exporter.get_finished_spans()[-1]
    assert "messaging.destination.partition.id" not in mixed.attributes and mixed.links == ()
    with pytest.raises(KafkaError):
        consumer.poll(0.1)
    failed = exporter.get_finished_spans()[-1]
    assert failed.status.status_code is StatusCode.ERROR and failed.name == "receive"
    for s in producer_spans:
        s.end()


def test_process_span_parent_link_and_errors(spans: Any) -> None:
    provider, exporter = spans
    tracing = Tracing(provider, "c1", "billing")
    producer_span = tracing.tracer.start_span("send")
    producer_span.end()
    traced = record(7, tracing.inject(producer_span, [("app", b"1")]))
    consumer = StandInConsumer([])
    consumer._tracing = tracing  # what install_consumer_tracing leaves on the consumer
    with process_span(traced, consumer) as span:
        assert trace.get_current_span() is span
    with process_span(traced, consumer, link_only=True):
        pass
    with pytest.raises(RuntimeError), process_span(record(8), tracer_provider=provider):
        raise RuntimeError("handler failed")
    with process_span(traced) as nothing:  # no tracing at all: a no-op
        assert nothing is None
    child, linked, failed = exporter.get_finished_spans()[1:]
    assert child.parent.span_id == producer_span.context.span_id
    assert child.context.trace_id == producer_span.context.trace_id
    assert child.attributes["messaging.kafka.message.offset"] == 7
    assert linked.parent is None and [lnk.context.span_id for lnk in linked.links] == [producer_span.context.span_id]
    assert failed.status.status_code is StatusCode.ERROR and failed.attributes["error.type"] == "RuntimeError"
    assert failed.parent is None and failed.links == ()


def test_durations_with_an_always_off_sampler_and_without_a_tracer() -> None:
    """A traced producer records send durations even when its sampler drops every span (the
    send histogram without span export); a consumer with only a meter records poll durations
    through a no-op tracer, and puts nothing in headers."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    from kafkalite.otel.durations import OperationDurations
    from kafkalite.otel.semconv import OLD, Conventions

    reader = InMemoryMetricReader()
    durations = OperationDurations(MeterProvider(metric_readers=[reader]), "g", Conventions(OLD))
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    producer = StandInProducer()
    install_producer_tracing(producer, Tracing(provider, "p1", durations=durations))
    producer.send("orders", b"v")
    flags = producer.sends[0]["headers"][-1][1].rsplit(b"-", 1)[1]
    assert int(flags, 16) & 1 == 0  # propagated, with the sampled flag clear
    producer.sends[0]["callback"](metadata("orders", 0, 1), None)
    assert exporter.get_finished_spans() == ()

    metered = Tracing(None, "c1", "g", durations)
    assert not metered.traced
    assert metered.inject(trace.INVALID_SPAN, None) == []  # a no-op span context injects nothing
    data = reader.get_metrics_data()
    names = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    (point,) = names["messaging.publish.duration"].data.data_points
    assert point.count == 1 and dict(point.attributes)["messaging.destination.name"] == "orders"
