"""The conventions' duration histograms per OTEL_SEMCONV_STABILITY_OPT_IN (no broker): names,
unit, buckets and attributes of send / poll / process measurements."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from kafkalite.errors import UnknownTopicOrPartitionError
from kafkalite.otel.durations import BUCKETS, OperationDurations
from kafkalite.otel.semconv import BOTH, NEW, OLD, Conventions


def histograms(reader: InMemoryMetricReader) -> dict[str, list[HistogramDataPoint]]:
    data = reader.get_metrics_data()
    out: dict[str, Any] = {}
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                assert metric.unit == "s"
                out[metric.name] = list(metric.data.data_points)
    return out


def record_all(durations: OperationDurations) -> None:
    durations.record("send", 0.02, "orders")
    durations.record("send", 0.3, "orders", UnknownTopicOrPartitionError("orders-0"))
    durations.polled([(0, 0, None, b"v", [], 0, "orders", 0)], 0.004)
    durations.record("process", 0.001, "orders")


def test_default_is_the_v1_24_set() -> None:
    reader = InMemoryMetricReader()
    record_all(OperationDurations(MeterProvider(metric_readers=[reader]), "billing", Conventions(OLD)))
    data = histograms(reader)
    assert set(data) == {"messaging.publish.duration", "messaging.receive.duration", "messaging.process.duration"}
    sends = {p.attributes.get("error.type"): p for p in data["messaging.publish.duration"]}
    assert sends[None].count == 1 and sends[None].sum == pytest.approx(0.02)
    assert dict(sends[None].attributes) == {"messaging.system": "kafka", "messaging.destination.name": "orders",
                                            "messaging.operation": "publish"}
    assert sends["UNKNOWN_TOPIC_OR_PARTITION"].count == 1
    assert tuple(sends[None].explicit_bounds) == BUCKETS
    (poll,) = data["messaging.receive.duration"]
    assert dict(poll.attributes) == {"messaging.system": "kafka", "messaging.destination.name": "orders",
                                     "messaging.operation": "receive", "messaging.kafka.consumer.group": "billing"}


def test_opt_in_messaging_uses_the_current_names() -> None:
    reader = InMemoryMetricReader()
    record_all(OperationDurations(MeterProvider(metric_readers=[reader]), "billing", Conventions(NEW)))
    data = histograms(reader)
    assert set(data) == {"messaging.client.operation.duration", "messaging.process.duration"}
    by_op = {(p.attributes["messaging.operation.name"], p.attributes.get("error.type")): p
             for p in data["messaging.client.operation.duration"]}
    assert set(by_op) == {("send", None), ("send", "UNKNOWN_TOPIC_OR_PARTITION"), ("poll", None)}
    assert by_op[("poll", None)].attributes["messaging.operation.type"] == "receive"
    assert by_op[("poll", None)].attributes["messaging.consumer.group.name"] == "billing"
    assert "messaging.consumer.group.name" not in by_op[("send", None)].attributes


def test_dup_records_both_and_process_once_with_both_attribute_sets() -> None:
    reader = InMemoryMetricReader()
    record_all(OperationDurations(MeterProvider(metric_readers=[reader]), "billing", Conventions(BOTH)))
    data = histograms(reader)
    assert set(data) == {"messaging.publish.duration", "messaging.receive.duration",
                         "messaging.client.operation.duration", "messaging.process.duration"}
    (process,) = data["messaging.process.duration"]
    assert process.count == 1
    assert process.attributes["messaging.operation"] == "process"
    assert process.attributes["messaging.operation.name"] == "process"
