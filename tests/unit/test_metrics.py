"""Metrics: windowed stats with Java names, and the snapshot every client's metrics() returns."""

from __future__ import annotations

import math

import pytest

from kafkalite.metrics import MetricName, Metrics


def test_rate_avg_max_total() -> None:
    m = Metrics(window_ms=1000, samples=2)
    s = m.sensor("record-send")
    s.add_rate("record-send-rate", "producer-metrics").add_total("record-send-total", "producer-metrics")
    s.add_avg("batch-avg", "producer-metrics").add_max("batch-max", "producer-metrics")
    for v in (10, 20, 30):
        s.record(v, now=100.0)
    snap = m.snapshot("producer-metrics")
    assert snap["record-send-total"] == 60
    assert snap["batch-avg"] == 20 and snap["batch-max"] == 30
    assert snap["record-send-rate"] > 0


def test_snapshot_is_keyed_by_metric_name_and_readable_by_java_name() -> None:
    m = Metrics()
    m.gauge("records-lag", "consumer-fetch-manager-metrics", lambda: 5.0, tags={"topic": "t", "partition": "0"})
    m.gauge("records-lag-max", "consumer-fetch-manager-metrics", lambda: 9.0, tags={"client-id": "c"})
    m.gauge("fetch-total", "consumer-node-metrics", lambda: 1.0, tags={"node-id": "node-1"})
    m.gauge("fetch-total", "consumer-fetch-manager-metrics", lambda: 3.0, tags={"client-id": "c"})
    snap = m.snapshot()
    assert all(isinstance(k, MetricName) for k in snap)
    assert snap["records-lag-max"] == 9.0
    assert snap["fetch-total"] == 3.0  # the client-wide one, not the per-node one
    assert "records-lag" in snap and "nope" not in snap
    assert snap.by_name()["fetch-total"] == 3.0 and "records-lag" not in snap.by_name()
    with pytest.raises(KeyError, match="nope"):
        snap["nope"]


def test_failing_gauge_reads_nan() -> None:
    m = Metrics()
    m.gauge("broken", "g", lambda: 1 / 0)
    m.sensor("empty").add_max("empty-max", "g")
    snap = m.snapshot()
    assert math.isnan(snap["broken"]) and math.isnan(snap["empty-max"])
