"""OpenTelemetry tracing against a real broker, and across to Kafka's Java clients.

The Java side is Kafka's own console producer and consumer running with the
OpenTelemetry Java agent (pinned and checksummed, ``kafkalite.testing.otel_agent``),
whose spans are read from its OTLP JSON log: a record produced by kafkalite is processed
in the Java consumer's trace as a child of kafkalite's send span, and a record produced
by Java is processed by kafkalite as a child of the Java agent's publish span.
"""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.aio import Consumer as AsyncConsumer
from kafkalite.aio import Producer as AsyncProducer
from kafkalite.errors import KafkaError
from kafkalite.otel import process_span
from kafkalite.producer.append_kernel import SendFunction
from kafkalite.testing import KafkaDistribution, find_java
from kafkalite.testing.otel_agent import agent_options, ensure_java_agent, spans_in
from kafkalite.testing.processes import tied_popen_kwargs
from kafkalite.testing.tools import JavaTools

pytestmark = pytest.mark.broker


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def traceparent(headers: Any) -> tuple[str, str]:
    value = dict(headers)["traceparent"].decode()
    _, trace_id, span_id, _ = value.split("-")
    return trace_id, span_id


def consume(cfg: dict[str, Any], topic: str, n: int, timeout: float = 30.0) -> tuple[Consumer, list[Any]]:
    consumer = Consumer(cfg)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek(TopicPartition(topic, 0), 0)
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += consumer.poll(0.5)
    assert len(got) == n
    return consumer, got


def test_send_poll_and_process_spans_join_through_record_headers(kafka_broker, topic_factory, spans) -> None:
    provider, exporter = spans
    topic = topic_factory(partitions=1)
    cfg = {"bootstrap.servers": kafka_broker.bootstrap, "otel.tracer.provider": provider, "client.id": "traced"}
    with Producer(cfg) as producer:
        producer.send(topic, b"one", headers=[("app", b"x"), ("traceparent", b"00-stale")]).result(10)
        producer.send(topic, None, key=b"k").result(10)  # a tombstone
        batch = producer.send_many(topic, [b"a", b"b", b"c"])
        producer.flush()
        assert batch.result() == 3
    sent = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.PRODUCER]
    assert [s.name for s in sent] == [f"{topic} publish"] * 3
    one, tomb, many = sent
    assert one.attributes["messaging.system"] == "kafka"
    assert one.attributes["messaging.destination.name"] == topic
    assert one.attributes["messaging.operation"] == "publish"
    assert one.attributes["messaging.client_id"] == "traced"
    assert one.attributes["messaging.destination.partition.id"] == "0"
    assert one.attributes["messaging.kafka.message.offset"] == 0
    assert tomb.attributes["messaging.kafka.message.tombstone"] is True
    assert many.attributes["messaging.batch.message_count"] == 3
    assert one.instrumentation_scope.schema_url.endswith("/1.24.0")
    exporter.clear()

    consumer, records = consume({**cfg, "group.id": f"{topic}-g"}, topic, 5)
    with consumer:
        # The app header stays, the stale traceparent was replaced, and the batch shares one.
        assert [h[0] for h in records[0].headers] == ["app", "traceparent"]
        assert traceparent(records[0].headers) == (f"{one.context.trace_id:032x}", f"{one.context.span_id:016x}")
        assert {traceparent(r.headers) for r in records[2:]} == {
            (f"{many.context.trace_id:032x}", f"{many.context.span_id:016x}")}
        for record in records:
            with process_span(record, consumer):
                pass
    finished = exporter.get_finished_spans()
    receive = [s for s in finished if s.name == f"{topic} receive"]
    assert receive and all(s.kind is SpanKind.CONSUMER for s in receive)
    assert sum(s.attributes["messaging.batch.message_count"] for s in receive) == 5
    linked = {link.context.span_id for s in receive for link in s.links}
    assert {one.context.span_id, tomb.context.span_id, many.context.span_id} <= linked
    process = [s for s in finished if s.name == f"{topic} process"]
    assert [s.parent.span_id for s in process] == [one.context.span_id, tomb.context.span_id] + \
        [many.context.span_id] * 3
    assert all(s.context.trace_id == s.parent.trace_id for s in process)
    assert process[1].attributes["messaging.kafka.message.offset"] == 1
    assert process[0].attributes["messaging.kafka.consumer.group"] == f"{topic}-g"


def test_stability_opt_in_switches_to_the_current_conventions(kafka_broker, topic_factory, spans,
                                                              monkeypatch) -> None:
    provider, exporter = spans
    topic = topic_factory(partitions=1)
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http,messaging/dup")
    cfg = {"bootstrap.servers": kafka_broker.bootstrap, "otel.tracer.provider": provider, "client.id": "dup"}
    with Producer(cfg) as producer:
        producer.send(topic, b"v").result(10)
    consumer, records = consume({**cfg, "group.id": "dup-group"}, topic, 1)
    with consumer, process_span(records[0], consumer):
        pass
    by_name = {s.name: s for s in exporter.get_finished_spans()}
    send, poll, process = by_name[f"send {topic}"], by_name[f"poll {topic}"], by_name[f"process {topic}"]
    assert poll.kind is SpanKind.CLIENT
    assert send.attributes["messaging.operation.name"] == "send"
    assert send.attributes["messaging.operation.type"] == "send"
    assert send.attributes["messaging.operation"] == "publish"  # dup: the old ones too
    assert send.attributes["messaging.client.id"] == send.attributes["messaging.client_id"] == "dup"
    assert process.attributes["messaging.kafka.offset"] == process.attributes["messaging.kafka.message.offset"] == 0
    assert process.attributes["messaging.consumer.group.name"] == "dup-group"
    assert poll.attributes["messaging.operation.type"] == "receive"
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "messaging")
    exporter.clear()
    with Producer(cfg) as producer:
        producer.send(topic, b"v").result(10)
    (send,) = exporter.get_finished_spans()
    assert send.name == f"send {topic}" and "messaging.operation" not in send.attributes
    assert send.instrumentation_scope.schema_url.endswith("/1.44.0")


def test_failed_send_ends_its_span_with_the_error(kafka_broker, topic_factory, spans) -> None:
    provider, exporter = spans
    topic = topic_factory(partitions=1)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "otel.tracer.provider": provider,
                   "max.block.ms": 3000}) as producer, pytest.raises(KafkaError) as info:
        producer.send(topic, b"v", partition=7)
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == getattr(type(info.value), "name", type(info.value).__qualname__)


def test_untraced_clients_keep_the_plain_send_and_poll(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as producer:
        if SendFunction is not None:
            assert type(producer.send) is SendFunction  # the one C call, no wrapper
        assert "send_many" not in vars(producer)
        producer.send(topic, b"plain").result(10)
    consumer, records = consume({"bootstrap.servers": kafka_broker.bootstrap}, topic, 1)
    with consumer:
        assert "poll" not in vars(consumer) and records[0].headers == []
        with process_span(records[0], consumer) as span:
            assert span is None


async def test_asyncio_clients_trace_too(kafka_broker, topic_factory, spans) -> None:
    provider, exporter = spans
    topic = topic_factory(partitions=1)
    cfg = {"bootstrap.servers": kafka_broker.bootstrap, "otel.tracer.provider": provider}
    async with AsyncProducer(cfg) as producer:
        metadata = await producer.send_and_wait(topic, b"async")
        (send,) = exporter.get_finished_spans()
        outcome = await producer.send_many(topic, [b"m1", b"m2"])  # one span for the call, as blocking
        assert await outcome.wait(30) == 2
    assert send.attributes["messaging.kafka.message.offset"] == metadata.offset
    many = [s for s in exporter.get_finished_spans() if s is not send]
    assert len(many) == 1 and many[0].attributes["messaging.batch.message_count"] == 2
    assert many[0].status.status_code is not StatusCode.ERROR
    async with AsyncConsumer({**cfg, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        records: list[Any] = []
        deadline = time.monotonic() + 30
        while not records and time.monotonic() < deadline:
            records = list(await consumer.poll(0.5))
        with process_span(records[0], consumer) as span:
            assert span.parent.span_id == send.context.span_id


# ---------------------------------------------------------------- Java agent interop


class JavaRun:
    """A Kafka Java tool run with the OpenTelemetry Java agent; its spans as they come."""

    def __init__(self, broker: Any, tool: str, args: list[str], service: str) -> None:
        tools = JavaTools(KafkaDistribution(broker.version).ensure(), find_java())
        argv = tools.command(tool, args, jvm_options=agent_options(ensure_java_agent(), service))
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, **tied_popen_kwargs())
        self.lines: queue.Queue[str] = queue.Queue()
        self.stdout: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.lines), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stdout, None), daemon=True).start()
        self.seen: list[str] = []

    def _pump(self, stream: Any, into: queue.Queue[str] | None) -> None:
        for line in stream:
            if into is not None:
                into.put(line)
            else:
                self.stdout.append(line)

    def wait_for_span(self, name: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            for span in spans_in([line]):
                if span["name"] == name:
                    return span
        raise AssertionError(f"no span {name!r} from the Java tool; its log:\n{''.join(self.seen)[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


@pytest.mark.timeout(180)
def test_kafkalite_producer_to_java_consumer_with_the_agent(kafka_broker, topic_factory, spans) -> None:
    provider, exporter = spans
    topic = topic_factory(partitions=1)
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "otel.tracer.provider": provider}) as producer:
        producer.send(topic, b"from-python").result(10)
    (send,) = exporter.get_finished_spans()
    java = JavaRun(kafka_broker, "kafka-console-consumer",
                   ["--bootstrap-server", kafka_broker.bootstrap, "--topic", topic, "--from-beginning",
                    "--group", f"{topic}-java"], "java-consumer")
    try:
        span = java.wait_for_span(f"{topic} process")
    finally:
        java.stop()
    assert span["traceId"] == f"{send.context.trace_id:032x}"
    assert span["parentSpanId"] == f"{send.context.span_id:016x}"
    assert span["kind"] == 5  # CONSUMER
    assert span["attributes"]["messaging.destination.name"] == topic
    assert "from-python\n" in java.stdout


@pytest.mark.timeout(180)
def test_java_producer_with_the_agent_to_kafkalite_consumer(kafka_broker, topic_factory, spans) -> None:
    provider, exporter = spans
    topic = topic_factory(partitions=1)
    java = JavaRun(kafka_broker, "kafka-console-producer",
                   ["--bootstrap-server", kafka_broker.bootstrap, "--topic", topic,
                    "--producer-property", "linger.ms=0"], "java-producer")
    try:
        assert java.proc.stdin is not None
        java.proc.stdin.write("from-java\n")
        java.proc.stdin.flush()
        publish = java.wait_for_span(f"{topic} publish")
        java.proc.stdin.close()
    finally:
        java.stop()
    consumer, records = consume({"bootstrap.servers": kafka_broker.bootstrap, "otel.tracer.provider": provider,
                                 "group.id": f"{topic}-py"}, topic, 1)
    with consumer:
        assert records[0].value == b"from-java"
        with process_span(records[0], consumer):
            pass
    process = next(s for s in exporter.get_finished_spans() if s.name == f"{topic} process")
    receive = next(s for s in exporter.get_finished_spans() if s.name == f"{topic} receive")
    assert f"{process.context.trace_id:032x}" == publish["traceId"]
    assert f"{process.parent.span_id:016x}" == publish["spanId"]
    assert [f"{link.context.span_id:016x}" for link in receive.links] == [publish["spanId"]]
