"""Stalled consumers announce themselves: one warning naming the partitions and the reason.

Against real brokers: the application stops calling poll(); a partition stays paused
with records waiting; every fetch is refused by a topic ACL (the secured broker); every
fetch succeeds but its batch fails the CRC check (through the fault proxies).
"""

from __future__ import annotations

import logging
import time

import pytest

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.errors import CorruptRecordsError, TopicAuthorizationError
from kafkalite.testing.properties import SECURE_PRESET
from kafkalite.testing.topics import unique_topic_name
from tests.integration.security_support import grant, round_trip, wait_until

pytestmark = pytest.mark.broker

STALL_LOGGER = "kafkalite.consumer.stall"


def stall_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == STALL_LOGGER and r.levelno == logging.WARNING]


def fill(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as producer:
        for p in range(partitions):
            for i in range(per_partition):
                producer.send(topic, b"v%d" % i, partition=p)
        producer.flush()


def poll_until_records(consumer: Consumer, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = consumer.poll(0.5)
        if records:
            return len(records)
    raise AssertionError("no records within the timeout")


def test_application_that_stops_polling_gets_one_warning(kafka_broker, topic_factory, caplog) -> None:
    caplog.set_level(logging.WARNING, logger=STALL_LOGGER)
    topic = topic_factory(partitions=2)
    fill(kafka_broker.bootstrap, topic, 2, 5)
    with Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"{topic}-g",
                   "auto.offset.reset": "earliest", "max.poll.records": 1,
                   "max.poll.interval.ms": 3000}) as consumer:
        consumer.subscribe([topic])
        poll_until_records(consumer)
        # The application now "processes" for longer than max.poll.interval.ms.
        warnings = wait_until(lambda: stall_warnings(caplog), 20, "the stall warning")
        text = warnings[0]
        assert "slow application" in text and "max.poll.interval.ms (3000 ms)" in text
        assert f"{topic}-0" in text and f"{topic}-1" in text
        # The engine checks again every max.poll.interval.ms once it reported: three more
        # checks, still one warning.
        detector = consumer._core.observe.stall
        checks = detector.checks
        wait_until(lambda: detector.checks >= checks + 3, 30, "three more stall checks")
        assert stall_warnings(caplog) == warnings and detector.warnings == 1


def test_paused_partition_with_records_waiting_is_named(kafka_broker, topic_factory, caplog) -> None:
    caplog.set_level(logging.WARNING, logger=STALL_LOGGER)
    topic = topic_factory(partitions=2)
    fill(kafka_broker.bootstrap, topic, 2, 20)
    paused, flowing = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with Consumer({"bootstrap.servers": kafka_broker.bootstrap, "auto.offset.reset": "earliest",
                   "max.poll.records": 1, "stall.warning.ms": 1500}) as consumer:
        consumer.assign([paused, flowing])
        wait_until(lambda: consumer.poll(0.2) and consumer.lag(paused), 30, "a known lag on partition 0")
        consumer.pause([paused])
        # The application keeps polling; partition 1 still delivers, partition 0 cannot.
        deadline = time.monotonic() + 20
        while not stall_warnings(caplog) and time.monotonic() < deadline:
            consumer.poll(0.1)
        warnings = stall_warnings(caplog)
        assert len(warnings) == 1, warnings
        assert f"{topic}-0: paused" in warnings[0] and f"{topic}-1" not in warnings[0]
        assert consumer.metrics()["records-time-lag-max"] > 0


def test_fetches_refused_by_an_acl_are_the_reason(kafka_broker_sasl, caplog) -> None:
    caplog.set_level(logging.WARNING, logger=STALL_LOGGER)
    broker = kafka_broker_sasl
    topic = broker.create_topic(unique_topic_name("stall-acl"), 1)
    round_trip(broker.client_config(), topic, 3)
    grant(broker, "User:bob", "topic", topic, "describe")  # metadata yes, Fetch no
    cfg = broker.client_config("SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512", sasl_username="bob",
                               sasl_password=SECURE_PRESET.users["bob"], stall_warning_ms=2000)
    tp = TopicPartition(topic, 0)
    with Consumer(cfg) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        denials = 0
        deadline = time.monotonic() + 30
        while not stall_warnings(caplog) and time.monotonic() < deadline:
            try:
                consumer.poll(0.2)
            except TopicAuthorizationError:
                denials += 1  # the application logs and goes on polling
        warnings = stall_warnings(caplog)
        assert denials and len(warnings) == 1, (denials, warnings)
        assert f"{topic}-0: fetch errors (TopicAuthorizationError" in warnings[0]
        for _ in range(15):  # three more seconds of refused polls: no second warning
            try:
                consumer.poll(0.2)
            except TopicAuthorizationError:
                pass
        assert len(stall_warnings(caplog)) == 1


def test_a_batch_corrupt_on_every_read_is_the_reason(kafka_cluster, network_faults, caplog) -> None:
    # Each fetch succeeds and poll() raises CorruptRecordsError every time (an application
    # that logs it and polls on, never seeking past): the warning names that error.
    caplog.set_level(logging.WARNING, logger=STALL_LOGGER)
    topic = kafka_cluster.create_topic(unique_topic_name("stall-crc"), 1, 3)
    fill(kafka_cluster.bootstrap, topic, 1, 5)
    tp = TopicPartition(topic, 0)
    cfg = {"bootstrap.servers": network_faults.bootstrap, "stall.warning.ms": 2000}
    with network_faults.corrupt(1.0, records_only=True), Consumer(cfg) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        raised = 0
        deadline = time.monotonic() + 30
        while not stall_warnings(caplog) and time.monotonic() < deadline:
            try:
                consumer.poll(0.2)
            except CorruptRecordsError:
                raised += 1
        warnings = stall_warnings(caplog)
        assert raised and len(warnings) == 1, (raised, warnings)
        assert f"{topic}-0: poll() raised (CorruptRecordsError: corrupt data in {topic}-0" in warnings[0]
