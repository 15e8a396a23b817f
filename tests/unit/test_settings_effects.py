"""Settings that used to be accepted and ignored, without a broker: each now has Java's
effect (metadata.max.idle.ms, socket.connection.setup.timeout.max.ms,
connections.max.idle.ms, allow.auto.create.topics, the consumer's interceptor.classes,
metrics.recording.level) or
is refused with the reason (transaction.two.phase.commit.enable, the consumer's
max.in.flight.requests.per.connection). The real-broker side is in
tests/integration/test_settings_effects.py."""

from __future__ import annotations

import asyncio
import time

import pytest

import kafkalite.errors
import kafkalite.producer  # registers the producer's cross-setting checks
from kafkalite import Consumer, Producer
from kafkalite.consumer.interceptors import load_consumer_interceptors
from kafkalite.errors import ConfigError
from kafkalite.metrics import Metrics, RecordingLevel
from kafkalite.net import client as client_module
from kafkalite.net.client import NetworkClient
from kafkalite.producer.accumulator import BufferPool, RecordAccumulator
from kafkalite.producer.futures import DoneSignal, RecordFuture
from tests.helpers.settings import resolve

BOOT = {"bootstrap.servers": "127.0.0.1:9"}


# ---------------------------------------------------------------- metadata.max.idle.ms


def _acc() -> RecordAccumulator:
    acc = RecordAccumulator(batch_size=200, linger_ms=10, compression=0, compression_level=None,
                            delivery_timeout_ms=1000, pool=BufferPool(10_000), signal=DoneSignal(),
                            wakeup=lambda: None)
    acc.update_topic("idle", 2, [0, 1])
    acc.update_topic("busy", 1, [0])
    return acc


def _append(acc: RecordAccumulator, topic: str) -> RecordFuture:
    future = acc.append(acc.topics[topic], 0, 1000, None, b"v", None, -1, 1, RecordFuture, None, None, 40)
    assert future is not None
    return future


def test_idle_topics_are_forgotten_and_a_later_send_revives_them() -> None:
    acc = _acc()
    _append(acc, "busy")  # a queued batch: not forgettable, however old
    later = time.monotonic() + 10
    assert acc.forget_idle_topics(later, 5.0) == ["idle"]
    assert acc.topics["idle"].expired and not acc.topics["busy"].expired
    assert acc.forget_idle_topics(later, 5.0) == []  # once
    # A send that still holds the state (raced with the expiry) brings the topic back.
    _append(acc, "idle")
    assert not acc.topics["idle"].expired and acc.revived == {"idle"}
    # New metadata for it (the send path fetched it) clears the mark too.
    acc.topics["idle"].expired = True
    acc.update_topic("idle", 2, [0, 1])
    assert not acc.topics["idle"].expired


def test_recently_used_topics_are_kept() -> None:
    acc = _acc()
    assert acc.forget_idle_topics(time.monotonic() + 1, 5.0) == []


# ---------------------------------------------------------------- connection setup timeouts


def test_setup_timeout_doubles_per_failed_attempt_up_to_the_max() -> None:
    client = NetworkClient(resolve("admin", {**BOOT, "socket.connection.setup.timeout.ms": 1000,
                                             "socket.connection.setup.timeout.max.ms": 8000}))
    for attempt, nominal in enumerate([1.0, 2.0, 4.0, 8.0, 8.0, 8.0]):
        values = [client.setup_timeout_s(attempt) for _ in range(50)]
        assert all(0.8 * nominal - 1e-9 <= v <= 1.2 * nominal + 1e-9 for v in values), (attempt, values)


async def test_each_failed_connection_attempt_waits_longer(monkeypatch) -> None:
    """A listener that accepts and never answers: each attempt times out, and the next
    one gets twice the time (the handshake is bounded by 3x the setup timeout)."""
    # The accepted connections stay referenced: from 3.13 asyncio closes a stream whose
    # writer is garbage-collected, which would reset the connection instead of leaving
    # the client waiting (a "lost during the handshake", not the timeout under test).
    accepted: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda r, w: accepted.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    seen: list[float] = []
    real_connect = client_module.BrokerConnection.connect

    async def spy(self, timeout_s=None):
        seen.append(timeout_s)
        return await real_connect(self, timeout_s)

    monkeypatch.setattr(client_module.BrokerConnection, "connect", spy)
    client = NetworkClient(resolve("admin", {"bootstrap.servers": f"127.0.0.1:{port}",
                                             "socket.connection.setup.timeout.ms": 100,
                                             "socket.connection.setup.timeout.max.ms": 400,
                                             "reconnect.backoff.ms": 0, "reconnect.backoff.max.ms": 0}))
    durations = []
    try:
        for _ in range(4):
            started = time.monotonic()
            with pytest.raises(kafkalite.errors.KafkaConnectionError, match="timed out"):
                await client.connection(-1)
            durations.append(time.monotonic() - started)
    finally:
        await client.close()
        server.close()
        for writer in accepted:
            writer.close()
    assert len(accepted) == 4  # each attempt reached the listener and was left unanswered
    assert [round(t / n, 1) for t, n in zip(seen, [0.1, 0.2, 0.4, 0.4])] == [pytest.approx(1.0, abs=0.25)] * 4
    # Each attempt lasted its own (growing) timeout: at least that long (a busy machine only
    # adds), and not the 10 s default; the upper bound is generous.
    assert all(timeout - 0.01 <= took < timeout + 5 for took, timeout in zip(durations, seen)), (durations, seen)


# ---------------------------------------------------------------- allow.auto.create.topics


def test_metadata_requests_may_create_topics_as_java_clients_ask() -> None:
    assert NetworkClient(resolve("producer", BOOT)).allow_auto_create is True  # ProducerMetadata
    assert NetworkClient(resolve("consumer", BOOT)).allow_auto_create is True  # Java's default
    assert NetworkClient(resolve("consumer", {**BOOT, "allow.auto.create.topics": False})).allow_auto_create is False
    assert NetworkClient(resolve("admin", BOOT)).allow_auto_create is False


# ---------------------------------------------------------------- refused settings


def test_two_phase_commit_is_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="KIP-939 two-phase commit"):
        resolve("producer", {**BOOT, "transactional.id": "t", "transaction.two.phase.commit.enable": True})
    assert resolve("producer", {**BOOT, "transaction.two.phase.commit.enable": False})


def test_consumer_refuses_max_in_flight_saying_why() -> None:
    with pytest.raises(ConfigError, match="producer setting; the consumer keeps one fetch in flight per broker"):
        resolve("consumer", {**BOOT, "max.in.flight.requests.per.connection": 1})


# ---------------------------------------------------------------- consumer interceptors


class Recorder:
    def __init__(self) -> None:
        self.consumed: list[int] = []
        self.commits: list[dict] = []

    def on_consume(self, records):
        self.consumed.append(len(records))
        return [r for r in records if r != "drop"]

    def on_commit(self, offsets):
        self.commits.append(offsets)


class Broken:
    def on_consume(self, records):
        raise RuntimeError("interceptor bug")


def test_interceptor_chain_passes_records_along_and_survives_a_failing_one(caplog) -> None:
    recorder = Recorder()
    chain = load_consumer_interceptors([Broken(), recorder], {})
    assert chain is not None
    assert chain.on_consume(["a", "drop", "b"]) == ["a", "b"]
    assert recorder.consumed == [3]
    assert "interceptor bug" in caplog.text
    chain.on_commit({"tp": 5})
    assert recorder.commits == [{"tp": 5}]


def test_a_missing_interceptor_class_is_refused_by_consumer_and_producer_alike() -> None:
    for client in (Consumer, Producer):
        with pytest.raises(ConfigError, match="interceptor.classes.*cannot load 'no.such.module:Nope'"):
            client({**BOOT, "group.id": "g"} if client is Consumer else BOOT,
                   interceptor_classes=["no.such.module:Nope"])
    with pytest.raises(ConfigError, match="neither on_consume nor on_commit"):
        Consumer({**BOOT, "interceptor.classes": [object()]})


# ---------------------------------------------------------------- metrics.recording.level


@pytest.mark.parametrize(("level", "recorded"), [("INFO", {"info"}), ("DEBUG", {"info", "debug"}),
                                                 ("TRACE", {"info", "debug", "trace"})])
def test_metrics_recording_level_records_the_sensors_up_to_it(level: str, recorded: set[str]) -> None:
    """Java's Sensor.shouldRecord(): INFO records INFO sensors, DEBUG adds DEBUG, TRACE adds TRACE;
    the metrics of a finer sensor exist but stay at zero."""
    registry = Metrics(record_level=level)
    for name in ("info", "debug", "trace"):
        registry.sensor(name, RecordingLevel[name.upper()]).add_total(f"{name}-total", "g")
        registry.sensor(name).record(3)
    snapshot = registry.snapshot()
    assert {m.name for m in snapshot} == {"info-total", "debug-total", "trace-total"}
    assert {m.name.removesuffix("-total") for m, v in snapshot.items() if v == 3} == recorded
    with pytest.raises(ConfigError, match="metrics.recording.level"):
        Metrics(record_level="FINE")


@pytest.mark.parametrize("level", ["INFO", "DEBUG", "TRACE"])
def test_every_client_records_at_its_metrics_recording_level(level: str) -> None:
    """Each client's registry takes the setting; every client sensor is INFO, as every sensor of
    Java's producer, consumer and admin client (kafka-clients 3.9 / 4.3 create none finer), so
    DEBUG and TRACE add no metric and all of them record at every level."""
    producer = Producer({**BOOT, "metrics.recording.level": level})
    consumer = Consumer({**BOOT, "metrics.recording.level": level})
    admin = kafkalite.AdminClient({**BOOT, "metrics.recording.level": level})
    try:
        registries = [producer._core.metrics.registry, consumer._core.registry, admin._core.registry]
        for registry in registries:
            assert registry.record_level is RecordingLevel[level]
            assert registry._sensors and all(s.level is RecordingLevel.INFO and s.should_record()
                                             for s in registry._sensors.values())
    finally:
        producer.close(0)
        consumer.close()
        admin.close()
