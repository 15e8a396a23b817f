"""A metric registry as OpenTelemetry instruments, read by the SDK's in-memory reader (no
broker): names, counters versus gauges, the finest granularity only, NaN left out,
metrics that appear later, the conventions' message counters, and close()."""

from __future__ import annotations

import math
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import Gauge, InMemoryMetricReader, Sum

from kafkalite.config import ADMIN, CONSUMER, PRODUCER, SHARE_CONSUMER
from kafkalite.metrics import Metrics
from kafkalite.otel.metrics import MetricsBridge, instrument_name


def collect(reader: InMemoryMetricReader) -> dict[str, Any]:
    """{instrument name: its data (Sum or Gauge)} of one collection."""
    data = reader.get_metrics_data()
    if data is None:
        return {}
    return {m.name: m.data for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}


def points(data: Any) -> dict[tuple[tuple[str, Any], ...], float]:
    return {tuple(sorted(p.attributes.items())): p.value for p in data.data_points}


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


def producer_registry() -> tuple[Metrics, Any]:
    registry = Metrics()
    sends = registry.sensor("record-send")
    sends.add_rate("record-send-rate", "producer-metrics", "Records sent per second", {"client-id": "p1"})
    sends.add_total("record-send-total", "producer-metrics", "Records sent", {"client-id": "p1"})
    # The same name per client and per node: only the per-node series is exported.
    registry.sensor("requests").add_count("request-total", "producer-metrics", "", {"client-id": "p1"})
    registry.sensor("requests-1").add_count("request-total", "producer-node-metrics", "",
                                            {"client-id": "p1", "node-id": "node-1"})
    registry.gauge("batch-size-avg", "producer-metrics", lambda: math.nan, tags={"client-id": "p1"})
    return registry, sends


def test_instrument_names_follow_the_java_bridge() -> None:
    assert instrument_name(PRODUCER, "record-send-rate") == "kafka.producer.record_send_rate"
    assert instrument_name(CONSUMER, "records-lag") == "kafka.consumer.records_lag"
    assert instrument_name(SHARE_CONSUMER, "records-lag") == "kafka.consumer.records_lag"
    assert instrument_name(ADMIN, "connection-count") == "kafka.admin.connection_count"


def test_counters_gauges_granularity_and_nan(reader: InMemoryMetricReader, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    registry, sends = producer_registry()
    MetricsBridge(MeterProvider(metric_readers=[reader]), registry, PRODUCER)
    sends.record(5)
    registry.sensor("requests").record()
    registry.sensor("requests-1").record()
    registry.sensor("requests-1").record()
    data = collect(reader)
    total = data["kafka.producer.record_send_total"]
    assert isinstance(total, Sum) and total.is_monotonic
    assert points(total) == {(("client-id", "p1"),): 5.0}
    assert isinstance(data["kafka.producer.record_send_rate"], Gauge)
    assert points(data["kafka.producer.request_total"]) == {(("client-id", "p1"), ("node-id", "node-1")): 2.0}
    assert "kafka.producer.batch_size_avg" not in data  # NaN (no batch yet): no data point at all
    # The conventions' sent-messages counter (v1.24 name by default) mirrors record-send-total.
    published = data["messaging.publish.messages"]
    assert isinstance(published, Sum) and points(published) == {(("messaging.system", "kafka"),): 5.0}
    assert "messaging.client.sent.messages" not in data


def test_metrics_that_appear_later_and_close(reader: InMemoryMetricReader) -> None:
    registry = Metrics()
    bridge = MetricsBridge(MeterProvider(metric_readers=[reader]), registry, CONSUMER, group_id="billing")
    registry.gauge("records-lag", "consumer-fetch-manager-metrics", lambda: 7.0,
                   tags={"topic": "t", "partition": "0"})
    assert "kafka.consumer.records_lag" not in collect(reader)
    bridge.refresh()  # the client runs this every few seconds
    assert points(collect(reader)["kafka.consumer.records_lag"]) == {(("partition", "0"), ("topic", "t")): 7.0}
    bridge.close()
    assert not collect(reader).get("kafka.consumer.records_lag", Gauge([])).data_points


def test_consumed_messages_counter_per_opt_in(reader: InMemoryMetricReader, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "messaging/dup")
    registry = Metrics()
    consumed = registry.sensor("records-consumed")
    consumed.add_total("records-consumed-total", "consumer-fetch-manager-metrics", "", {"client-id": "c1"})
    MetricsBridge(MeterProvider(metric_readers=[reader]), registry, CONSUMER, group_id="billing")
    consumed.record(3)
    data = collect(reader)
    assert points(data["messaging.client.consumed.messages"]) == {
        (("messaging.consumer.group.name", "billing"), ("messaging.kafka.consumer.group", "billing"),
         ("messaging.operation.name", "poll"), ("messaging.system", "kafka")): 3.0}
    assert points(data["messaging.receive.messages"]) == points(data["messaging.client.consumed.messages"])


def test_one_registry_snapshot_per_collection(reader: InMemoryMetricReader) -> None:
    """Many partitions, many instruments: each collection snapshots the registry once."""
    registry = Metrics()
    lags = {p: float(p) for p in range(200)}
    for p in lags:
        tags = {"client-id": "c1", "topic": "t", "partition": str(p)}
        registry.gauge("records-lag", "consumer-fetch-manager-metrics", lambda p=p: lags[p], tags=tags)
        registry.gauge("records-lead", "consumer-fetch-manager-metrics", lambda p=p: -lags[p], tags=tags)
    registry.sensor("records-consumed").add_total("records-consumed-total", "consumer-fetch-manager-metrics", "",
                                                  {"client-id": "c1"})
    calls = 0
    take = registry.snapshot

    def counting(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return take(*args)

    registry.snapshot = counting  # type: ignore[method-assign]
    bridge = MetricsBridge(MeterProvider(metric_readers=[reader]), registry, CONSUMER, group_id="g")
    assert len(bridge._instruments) >= 4  # lag, lead, consumed total, the conventions' counter
    first = collect(reader)
    assert calls == 1
    assert len(first["kafka.consumer.records_lag"].data_points) == 200
    lags[7] = 70.0  # the next collection sees new values: a new snapshot
    second = collect(reader)
    assert calls == 2
    assert points(second["kafka.consumer.records_lag"])[
        (("client-id", "c1"), ("partition", "7"), ("topic", "t"))] == 70.0
