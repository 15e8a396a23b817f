"""metrics() out of the process: an OpenTelemetry SDK reader, a Prometheus scrape through
the OTel Prometheus exporter, and plain metric.reporters callbacks; values match metrics()."""

from __future__ import annotations

import threading
import time
import urllib.request
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.parser import text_string_to_metric_families

from kafkalite import AdminClient, Consumer, Producer, TopicPartition
from kafkalite.errors import ConfigError
from kafkalite.otel import process_span
from kafkalite.producer.append_kernel import SendFunction
from kafkalite.testing.ports import free_port

pytestmark = pytest.mark.broker


def collected(reader: InMemoryMetricReader) -> dict[str, list[tuple[dict[str, Any], float]]]:
    out: dict[str, list[tuple[dict[str, Any], float]]] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if not metric.name.endswith(".duration"):  # the histograms: histogram_points()
                    out[metric.name] = [(dict(p.attributes), p.value) for p in metric.data.data_points]
    return out


def test_sdk_reader_sees_every_client_metric_with_the_values_of_metrics(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    cfg = {"bootstrap.servers": kafka_broker.bootstrap, "otel.meter.provider": provider, "client.id": "otel-m"}
    with Producer(cfg) as producer:
        for i in range(10):
            producer.send(topic, b"v%d" % i)
        producer.flush()
        snapshot = producer.metrics()
        data = collected(reader)
    assert data["kafka.producer.record_send_total"] == [({"client-id": "otel-m"}, 10.0)]
    assert data["kafka.producer.buffer_total_bytes"] == [({"client-id": "otel-m"}, snapshot["buffer-total-bytes"])]
    assert data["messaging.publish.messages"] == [({"messaging.system": "kafka"}, 10.0)]  # v1.24 name
    exported = {name for name in data if name.startswith("kafka.producer.")}
    expected = {"kafka.producer." + m.name.replace("-", "_") for m, v in snapshot.items() if v == v}  # not NaN
    assert expected <= exported

    tp = TopicPartition(topic, 0)
    with Consumer({**cfg, "group.id": "otel-m-g"}) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            got += consumer.poll(0.5)
        assert len(got) == 10
        # The partition's lag appeared after the client was built: the client's own refresh
        # (every 5 s) gives it an instrument; wait for it through the reader.
        deadline = time.monotonic() + 30
        data = collected(reader)
        while "kafka.consumer.records_lag" not in data and time.monotonic() < deadline:
            consumer.poll(0.2)
            data = collected(reader)
        # The engine keeps fetching (long polls) while the reader collects: a counter that
        # moves on its own is bracketed by metrics() taken just before and just after.
        snapshot = consumer.metrics()
        data = collected(reader)
        after = consumer.metrics()
    assert data["kafka.consumer.records_consumed_total"] == [({"client-id": "otel-m"}, 10.0)]
    lag = dict((tuple(sorted(a.items())), v) for a, v in data["kafka.consumer.records_lag"])
    assert lag == {(("client-id", "otel-m"), ("partition", "0"), ("topic", topic)): 0.0}
    assert data["messaging.receive.messages"] == [
        ({"messaging.system": "kafka", "messaging.kafka.consumer.group": "otel-m-g"}, 10.0)]
    # fetch-total exists per client and per node: only the finest (per node) is exported.
    assert all("node-id" in attrs for attrs, _ in data["kafka.consumer.fetch_total"])
    exported_fetches = sum(v for _, v in data["kafka.consumer.fetch_total"])
    assert snapshot["fetch-total"] <= exported_fetches <= after["fetch-total"]


def histogram_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()  # None when nothing was measured
    return {m.name: list(m.data.data_points) for rm in (data.resource_metrics if data else ())
            for sm in rm.scope_metrics for m in sm.metrics if m.name.endswith(".duration")}


def test_duration_histograms_of_send_send_many_poll_and_process(kafka_broker, topic_factory,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The conventions' duration histograms: a traced producer records send / send_many
    durations; a meter-only producer keeps the plain C send and records none; a meter-only
    consumer records poll and process durations, without spans or trace context."""
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)  # the v1.24 names
    topic = topic_factory(partitions=1)
    reader = InMemoryMetricReader()
    cfg = {"bootstrap.servers": kafka_broker.bootstrap, "otel.meter.provider": MeterProvider(metric_readers=[reader]),
           "client.id": "dur"}

    def publish_count() -> int:
        points = histogram_points(reader).get("messaging.publish.duration", [])
        return sum(p.count for p in points if p.attributes.get("messaging.destination.name") == topic)

    with Producer(cfg) as plain:  # a meter provider alone: no per-record cost, no send histogram
        if SendFunction is not None:
            assert type(plain.send) is SendFunction
        assert "send_many" not in vars(plain)
        plain.send(topic, b"plain").result(10)
    assert publish_count() == 0

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    with Producer({**cfg, "otel.tracer.provider": tracer_provider}) as producer:
        for i in range(5):
            producer.send(topic, b"d%d" % i).result(10)
        producer.send_many(topic, [b"m1", b"m2", b"m3"])  # one operation
        producer.flush()
        deadline = time.monotonic() + 20  # the completion callbacks run on the engine
        while publish_count() < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert publish_count() == 6 and len(spans.get_finished_spans()) == 6
    (publish,) = [p for p in histogram_points(reader)["messaging.publish.duration"]
                  if p.attributes.get("messaging.destination.name") == topic]
    assert dict(publish.attributes) == {"messaging.system": "kafka", "messaging.destination.name": topic,
                                        "messaging.operation": "publish"}
    assert publish.min > 0 and publish.max < 20

    tp = TopicPartition(topic, 0)
    with Consumer({**cfg, "group.id": "dur-g"}) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < 9 and time.monotonic() < deadline:
            got += consumer.poll(0.5)
        for record in got:
            with process_span(record, consumer) as span:
                assert span is None  # no tracer: no span, only the duration
        data = histogram_points(reader)
    assert len(got) == 9
    receive = [p for p in data["messaging.receive.duration"] if p.attributes.get("messaging.destination.name") == topic]
    assert receive and sum(p.count for p in receive) >= 1
    assert receive[0].attributes["messaging.kafka.consumer.group"] == "dur-g"
    (process,) = [p for p in data["messaging.process.duration"]
                  if p.attributes.get("messaging.destination.name") == topic]
    assert process.count == 9


def test_prometheus_scrape_through_the_otel_exporter(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    registry = CollectorRegistry()
    reader = PrometheusMetricReader(registry=registry)  # the exporter's own registry= (not the global one)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        provider = MeterProvider(metric_readers=[reader])
        with Producer({"bootstrap.servers": kafka_broker.bootstrap, "otel.meter.provider": provider,
                       "client.id": "prom"}) as producer:
            for i in range(7):
                producer.send(topic, b"p%d" % i)
            producer.flush()
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            expected_bytes = producer.metrics()["buffer-total-bytes"]
        families = {f.name: f for f in text_string_to_metric_families(text)}
        sent = families["kafka_producer_record_send"]  # counters lose their _total suffix as a family
        assert [(s.name, s.labels.get("client_id"), s.value) for s in sent.samples
                if s.name.endswith("_total")] == [("kafka_producer_record_send_total", "prom", 7.0)]
        buffer = families["kafka_producer_buffer_total_bytes"]
        assert buffer.samples[0].value == expected_bytes
    finally:
        server.shutdown()
        thread.join(10)


def test_metric_reporters_are_called_periodically_and_at_close(kafka_broker) -> None:
    reports: list[Any] = []
    seen = threading.Event()

    class Reporter:
        configured: Any = None
        closed = False

        def configure(self, config: Any) -> None:
            Reporter.configured = config

        def report(self, snapshot: Any) -> None:
            reports.append(snapshot)
            if len(reports) >= 2:
                seen.set()

        def close(self) -> None:
            Reporter.closed = True

    with AdminClient({"bootstrap.servers": kafka_broker.bootstrap, "metric.reporters": [Reporter],
                      "metrics.report.interval.ms": 200}) as admin:
        admin.list_topics()
        assert seen.wait(20)
    assert Reporter.closed and Reporter.configured["metrics.report.interval.ms"] == 200
    last = reports[-1]
    assert last["connection-creation-total"] >= 1  # the snapshot metrics() returns

    calls: list[float] = []
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "metrics.report.interval.ms": 100,
                   "metric.reporters": [lambda snapshot: calls.append(snapshot["record-send-total"])]}):
        deadline = time.monotonic() + 20
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(calls) >= 3 and calls[-1] == 0.0  # periodic ones, then the one at close


def test_bad_reporters_and_providers_are_config_errors(kafka_broker) -> None:
    base = {"bootstrap.servers": kafka_broker.bootstrap}
    with pytest.raises(ConfigError, match="metric.reporters.*JmxReporter cannot be loaded"):
        Producer(base, metric_reporters=["org.apache.kafka.common.metrics.JmxReporter"])
    with pytest.raises(ConfigError, match="otel.meter.provider.*MeterProvider"):
        Producer(base, otel_meter_provider=object())
    with pytest.raises(ConfigError, match="otel.tracer.provider' must be a TracerProvider, 'global' or 'module:attr' naming one, got 'globl'"):
        Consumer(base, otel_tracer_provider="globl")
