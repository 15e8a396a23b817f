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
    with pytest.raises(KeyError, match="no metric named 'nope'"):
        snap["nope"]


def test_failing_gauge_reads_nan() -> None:
    m = Metrics()
    m.gauge("broken", "g", lambda: 1 / 0)
    m.sensor("empty").add_max("empty-max", "g")
    snap = m.snapshot()
    assert math.isnan(snap["broken"]) and math.isnan(snap["empty-max"])


def test_connection_metrics_follow_the_connection_counters() -> None:
    from kafkalite.net.transport import ConnectionStats

    stats = ConnectionStats()
    registry = Metrics()
    stats.register(registry, "producer-metrics", {"client-id": "p-1"})
    for event in ("created", "created", "closed", "authentication_failures", "authentications"):
        stats.record(event)
    stats.record("reauthentications", latency_ms=12.0)
    stats.record("reauthentications", latency_ms=4.0)
    snap = registry.snapshot("producer-metrics")
    assert (stats.created, stats.closed, stats.active, stats.reauthentications) == (2, 1, 1, 2)
    assert snap["connection-count"] == 1
    assert snap["connection-creation-total"] == 2 and snap["connection-close-total"] == 1
    assert snap["connection-creation-rate"] > 0
    assert snap["failed-authentication-total"] == 1 and snap["successful-authentication-total"] == 1
    assert snap["successful-reauthentication-total"] == 2
    assert snap["reauthentication-latency-avg"] == 8.0 and snap["reauthentication-latency-max"] == 12.0
    assert stats.reauthentication_ms_total == 16.0
    assert all(dict(m.tags) == {"client-id": "p-1"} for m in snap)
