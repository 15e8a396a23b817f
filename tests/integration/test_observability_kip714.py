"""KIP-714 client metrics push against a Kafka 4.x broker that records what it receives.

The broker runs ``TelemetryRecorder`` (a ``ClientTelemetry`` metrics reporter compiled
from ``java/TelemetryRecorder.java`` at test time); client-metrics resources are created
with kafkalite's admin client (IncrementalAlterConfigs on CLIENT_METRICS), as
``kafka-client-metrics.sh`` does, and read back with that tool.

The first test needs the module's broker before any client-metrics resource exists:
it runs first (pytest keeps the file's order) and checks that with ``--list``.
"""

from __future__ import annotations

import time

import pytest

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.testing import DEFAULT_KAFKA_VERSION, LocalBroker
from kafkalite.testing.topics import create_topic
from tests.integration.telemetry_support import (
    client_metrics_tool,
    compile_recorder,
    described_client_metrics,
    read_pushes,
    subscribe_client_metrics,
    wait_for,
)

pytestmark = pytest.mark.broker

DELTA, CUMULATIVE = 1, 2


@pytest.fixture(scope="module")
def recording_broker(tmp_path_factory: pytest.TempPathFactory):
    classes = compile_recorder(tmp_path_factory.mktemp("plugin"), DEFAULT_KAFKA_VERSION)
    record = tmp_path_factory.mktemp("pushes") / "pushes.tsv"
    broker = LocalBroker(extra_properties={"metric.reporters": "TelemetryRecorder",
                                           "kafkalite.telemetry.file": str(record)},
                         extra_classpath=[classes]).start()
    broker.record = record  # type: ignore[attr-defined]
    try:
        yield broker
    finally:
        broker.close()


def pushes_of(broker: LocalBroker, client_id: str) -> list:
    return [p for p in read_pushes(broker.record) if p.client_id == client_id]  # type: ignore[attr-defined]


def test_nothing_is_asked_nor_pushed_without_any_client_metrics_resource(recording_broker) -> None:
    broker = recording_broker
    listed = client_metrics_tool(broker, "--list")
    assert not listed.strip(), f"this test needs a broker without client-metrics resources, found: {listed!r}"
    create_topic(broker.bootstrap, "kip714-none", 1, 1, None)
    with Producer({"bootstrap.servers": broker.bootstrap, "client.id": "kip714-none-1", "linger.ms": 0}) as producer:
        pusher = producer._telemetry.pusher
        for i in range(5):
            producer.send("kip714-none", b"v%d" % i)
        producer.flush()
        # GetTelemetrySubscriptions answered: the broker offers telemetry (the push stays
        # on) but subscribes no metrics, so the client has nothing to push.
        wait_for(lambda: pusher.state.subscription is not None or not pusher.state.enabled, 30,
                 "the subscription answer")
        subscription = pusher.state.subscription
        assert pusher.state.enabled, pusher.state.disabled_reason
        assert subscription is not None and not subscription.requested_metrics and not subscription.wants_anything
        assert pusher.pushes == 0
    assert pusher.pushes == 0  # no terminating push either
    assert not pushes_of(broker, "kip714-none-1")
    assert not read_pushes(broker.record)  # type: ignore[attr-defined]  # nobody pushed anything


def test_subscribed_producer_pushes_what_the_subscription_asks(recording_broker) -> None:
    broker = recording_broker
    create_topic(broker.bootstrap, "kip714-orders", 1, 1, None)
    subscribe_client_metrics(broker.bootstrap, "kafkalite-producers", "org.apache.kafka.producer.", 500,
                             "client_id=kip714-prod.*", "kip714-prod-probe")
    # What kafkalite's admin client created, as Kafka's own tool reads it back.
    assert described_client_metrics(broker, "kafkalite-producers") == {
        "metrics": "org.apache.kafka.producer.", "interval.ms": "500", "match": "client_id=kip714-prod.*"}
    assert "kafkalite-producers" in client_metrics_tool(broker, "--list").split()
    with Producer({"bootstrap.servers": broker.bootstrap, "client.id": "kip714-prod-1", "linger.ms": 0}) as producer:
        for i in range(25):
            producer.send("kip714-orders", b"v%d" % i)
        producer.flush()
        sent = producer.metrics()["record-send-total"]
        assert sent == 25
        pusher = producer._telemetry.pusher
        wait_for(lambda: pusher.pushes >= 2, 30, "two pushes")
        subscription = pusher.state.subscription
    pushes = pushes_of(broker, "kip714-prod-1")
    assert len(pushes) >= 3 and pushes[-1].terminating and not any(p.terminating for p in pushes[:-1])
    assert len({p.instance_id for p in pushes}) == 1
    assert pushes[0].instance_id.replace("-", "") and pushes[0].content_type.upper() == "OTLP"
    for push in pushes:
        names = push.metrics()
        assert names and all(n.startswith("org.apache.kafka.producer.") for n in names)  # prefix honoured
    last = pushes[-1].metrics()
    total = last["org.apache.kafka.producer.record.send.total"]
    assert total.WhichOneof("data") == "sum" and total.sum.is_monotonic
    if subscription.delta_temporality:
        assert total.sum.aggregation_temporality == DELTA
        pushed = sum(p.metrics()["org.apache.kafka.producer.record.send.total"].sum.data_points[0].as_double
                     for p in pushes)
    else:
        assert total.sum.aggregation_temporality == CUMULATIVE
        pushed = total.sum.data_points[0].as_double
    assert pushed == sent
    gauge = last["org.apache.kafka.producer.buffer.total.bytes"]
    assert gauge.WhichOneof("data") == "gauge" and gauge.gauge.data_points[0].as_double == 32 * 1024 * 1024
    assert all(a.key != "client_id" for a in total.sum.data_points[0].attributes)


def test_consumer_pushes_with_its_group_as_resource(recording_broker) -> None:
    broker = recording_broker
    create_topic(broker.bootstrap, "kip714-events", 1, 1, None)
    subscribe_client_metrics(broker.bootstrap, "kafkalite-consumers", "org.apache.kafka.consumer.fetch.manager.",
                             500, "client_id=kip714-cons.*", "kip714-cons-probe")
    tp = TopicPartition("kip714-events", 0)
    with Consumer({"bootstrap.servers": broker.bootstrap, "client.id": "kip714-cons-1",
                   "group.id": "kip714-group", "enable.auto.commit": False}) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        consumer.poll(0.2)
        wait_for(lambda: pushes_of(broker, "kip714-cons-1"), 30, "a consumer push")
    push = pushes_of(broker, "kip714-cons-1")[0]
    assert push.resource()["group_id"] == "kip714-group"
    assert all(n.startswith("org.apache.kafka.consumer.fetch.manager.") for n in push.metrics())


def test_nothing_is_pushed_without_a_matching_resource_or_when_turned_off(recording_broker) -> None:
    broker = recording_broker
    subscribe_client_metrics(broker.bootstrap, "kafkalite-off", "org.apache.kafka.", 500, "client_id=kip714-off.*",
                             "kip714-off-probe")
    unmatched = {"bootstrap.servers": broker.bootstrap, "client.id": "kip714-nobody"}
    off = {"bootstrap.servers": broker.bootstrap, "client.id": "kip714-off-1", "enable.metrics.push": False}
    witness = {"bootstrap.servers": broker.bootstrap, "client.id": "kip714-off-2"}
    with Producer(unmatched) as p1, Producer(off) as p2, Producer(witness) as p3:
        assert p2._telemetry.pusher is None
        # The subscription of the unmatched client asks for nothing: it never pushes.
        wait_for(lambda: p1._telemetry.pusher.state.subscription is not None, 30, "the unmatched subscription")
        assert not p1._telemetry.pusher.state.subscription.requested_metrics
        # A client matching the same resource pushes meanwhile, several times.
        wait_for(lambda: p3._telemetry.pusher.pushes >= 3, 30, "the witness's pushes")
    assert pushes_of(broker, "kip714-off-2")
    assert not pushes_of(broker, "kip714-nobody") and not pushes_of(broker, "kip714-off-1")


def test_broker_without_a_telemetry_receiver_turns_the_push_off(kafka_broker) -> None:
    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "client.id": "kip714-plain"}) as producer:
        pusher = producer._telemetry.pusher
        wait_for(lambda: not pusher.state.enabled or pusher.state.subscription is not None, 30,
                 "the push decision")
        assert pusher.pushes == 0
        assert not pusher.state.enabled and "does not offer" in pusher.state.disabled_reason
        started = time.monotonic()
    assert time.monotonic() - started < 10  # closing has no terminating push to wait for (generous)

