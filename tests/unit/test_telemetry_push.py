"""KIP-714 pieces without a broker: the state machine, the names, the OTLP bytes."""

from __future__ import annotations

import uuid

from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

from kafkalite.metrics import SUM, Metrics
from kafkalite.telemetry.otlp import CUMULATIVE, DELTA, Point, encode_metric, encode_metrics_data
from kafkalite.telemetry.state import (
    DEFAULT_PUSH_INTERVAL_S,
    UNKNOWN_SUBSCRIPTION_ID,
    MetricCollector,
    State,
    TelemetryState,
    telemetry_name,
)

ID = uuid.UUID(int=42)


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def subscribed(state: TelemetryState, requested=("org.apache.kafka.producer.",), delta=False, interval_ms=1000):
    assert state.begin_subscription() == (state.subscription.client_instance_id if state.subscription
                                          else uuid.UUID(int=0))
    return state.on_subscription(0, ID, 7, [4, 1], interval_ms, 1 << 20, delta, list(requested))


def test_java_metric_names() -> None:
    assert telemetry_name("producer-metrics", "record-send-total") == "org.apache.kafka.producer.record.send.total"
    assert telemetry_name("consumer-fetch-manager-metrics", "records-lag") == \
        "org.apache.kafka.consumer.fetch.manager.records.lag"


def test_subscription_push_cycle_with_first_push_jitter_and_terminating_push() -> None:
    clock = Clock()
    state = TelemetryState(clock=clock, rand=lambda: 0.0)
    subscribed(state)
    assert state.state is State.PUSH_NEEDED and state.subscription.compression == 4
    assert state.seconds_to_next(30) == 0.5  # 0.5 x the interval: the jitter's low end
    clock.now += 0.5
    assert state.begin_push() == (state.subscription, False)
    state.on_push(0)
    assert state.seconds_to_next(30) == 1.0
    assert state.initiate_close()
    assert state.begin_push() == (state.subscription, True)
    state.on_push(0)
    assert state.state is State.TERMINATED and state.seconds_to_next(30) is None


def test_no_metrics_requested_means_ask_again_later_and_no_terminating_push() -> None:
    state = TelemetryState(clock=Clock())
    subscribed(state, requested=())
    assert state.state is State.SUBSCRIPTION_NEEDED and state.interval_s == 1.0
    assert not state.initiate_close()


def test_errors() -> None:
    clock = Clock()
    state = TelemetryState(clock=clock, rand=lambda: 0.5)
    subscribed(state)
    state.begin_push()
    state.on_push(UNKNOWN_SUBSCRIPTION_ID)  # re-subscribe at once, keeping the instance id
    assert state.state is State.SUBSCRIPTION_NEEDED and state.seconds_to_next(30) == 0
    assert state.begin_subscription() == ID
    state.on_request_failed(fatal=False)
    assert state.interval_s == DEFAULT_PUSH_INTERVAL_S
    state.state = State.SUBSCRIPTION_NEEDED
    state.begin_subscription()
    state.on_subscription(42, ID, 0, [], 0, 0, False, [])  # INVALID_REQUEST: off for good
    assert not state.enabled and state.seconds_to_next(30) is None


def test_delta_change_resets_and_deltas_are_differences() -> None:
    registry = Metrics()
    sensor = registry.sensor("s").add_total("record-send-total", "producer-metrics", "sent", {"client-id": "c"})
    collector = MetricCollector(registry)
    state = TelemetryState(clock=Clock())
    subscribed(state, delta=True)
    sensor.record(5)
    (point,), temporality = collector.collect(state.subscription, 1000)
    assert temporality == DELTA and point.value == 5 and point.attributes == {}  # client_id left out
    sensor.record(2)
    (point,), _ = collector.collect(state.subscription, 2000)
    assert point.value == 2 and point.start_ns == 1000
    state.state = State.SUBSCRIPTION_NEEDED
    assert subscribed(state, delta=False)  # temporality changed: the caller resets the ledger


def test_otlp_bytes_decode_with_opentelemetry_proto() -> None:
    metrics = [encode_metric(Point("a.sum", 3.0, {"topic": "t"}, SUM, "d", 10), CUMULATIVE, 20),
               encode_metric(Point("a.gauge", 1.5), DELTA, 20)]
    data = MetricsData()
    data.ParseFromString(encode_metrics_data(metrics, {"client_rack": "r1"}, "kafkalite", "1.0"))
    (rm,) = data.resource_metrics
    assert [(a.key, a.value.string_value) for a in rm.resource.attributes] == [("client_rack", "r1")]
    (sm,) = rm.scope_metrics
    assert sm.scope.name == "kafkalite" and sm.scope.version == "1.0"
    total, gauge = sm.metrics
    assert total.name == "a.sum" and total.description == "d"
    assert total.sum.is_monotonic and total.sum.aggregation_temporality == CUMULATIVE
    point = total.sum.data_points[0]
    assert (point.as_double, point.start_time_unix_nano, point.time_unix_nano) == (3.0, 10, 20)
    assert [(a.key, a.value.string_value) for a in point.attributes] == [("topic", "t")]
    assert gauge.gauge.data_points[0].as_double == 1.5
