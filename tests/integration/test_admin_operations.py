"""Offsets, records, elections, reassignments, log dirs, producers and transactions
against the real broker."""

from __future__ import annotations

import time

import pytest

from kafkalite import AdminClient
from kafkalite.admin.ops_types import ElectionType
from kafkalite.admin.types import OffsetSpec
from kafkalite.errors import (
    ElectionNotNeededError,
    InvalidReplicaAssignmentError,
    NoReassignmentInProgressError,
    OffsetOutOfRangeError,
    TransactionalIdNotFoundError,
    UnknownTopicOrPartitionError,
)
from kafkalite.testing.topics import unique_topic_name
from kafkalite.types import TopicPartition
from tests.integration.admin_support import produce, tool

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def admin(kafka_broker):
    with AdminClient({"bootstrap.servers": kafka_broker.bootstrap}) as client:
        yield client


def test_list_offsets_and_delete_records(admin, kafka_broker, topic_factory) -> None:
    topic = topic_factory()
    tp = TopicPartition(topic, 0)
    base = int(time.time() * 1000) - 60_000
    produce(kafka_broker.bootstrap, topic, 0, [b"a", b"b", b"c"], timestamps=[base, base + 1000, base + 500])
    nowhere = TopicPartition(topic, 7)
    specs = {tp: OffsetSpec.earliest(), nowhere: OffsetSpec.latest()}
    result = admin.list_offsets(specs)
    assert result[tp].result().offset == 0
    assert isinstance(result[nowhere].error, UnknownTopicOrPartitionError) and result[nowhere].error.partition == 7
    assert admin.list_offsets({tp: "latest"})[tp].result().offset == 3
    by_time = admin.list_offsets({tp: OffsetSpec.for_timestamp(base + 400)})[tp].result()
    assert (by_time.offset, by_time.timestamp) == (1, base + 1000)
    newest = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result()
    assert (newest.offset, newest.timestamp) == (1, base + 1000)
    assert admin.list_offsets({tp: base + 5000})[tp].result().offset == -1
    assert tool(kafka_broker, "kafka-get-offsets", "--topic", topic, "--time", "-1").strip() == f"{topic}:0:3"

    deleted = admin.delete_records({tp: 2, TopicPartition(topic, 3): 1})
    assert deleted[tp].result().low_watermark == 2
    assert isinstance(deleted[TopicPartition(topic, 3)].error, UnknownTopicOrPartitionError)
    assert admin.list_offsets({tp: "earliest"})[tp].result().offset == 2
    beyond = admin.delete_records({tp: 10})[tp].error
    assert isinstance(beyond, OffsetOutOfRangeError) and beyond.topic == topic
    assert tool(kafka_broker, "kafka-get-offsets", "--topic", topic, "--time", "-2").strip() == f"{topic}:0:2"


def test_elections_reassignments_and_log_dirs(admin, topic_factory) -> None:
    topic = topic_factory(partitions=2)
    tp = TopicPartition(topic, 0)
    elected = admin.elect_leaders(ElectionType.PREFERRED, [tp, TopicPartition(topic, 1)])
    assert isinstance(elected[tp].error, ElectionNotNeededError)
    assert admin.list_partition_reassignments() == {}
    moved = admin.alter_partition_reassignments({tp: [2], TopicPartition(topic, 1): None})
    assert isinstance(moved[tp].error, InvalidReplicaAssignmentError) and "broker 2" in str(moved[tp].error)
    assert isinstance(moved[TopicPartition(topic, 1)].error, NoReassignmentInProgressError)
    dirs = admin.describe_log_dirs()[1].result()
    (log_dir,) = dirs.values()
    assert log_dir.error is None and tp in log_dir.replicas and log_dir.total_bytes


@pytest.mark.timeout(180)
def test_producers_and_transactions(admin, kafka_broker, topic_factory) -> None:
    topic = topic_factory()
    txn_id = unique_topic_name("adm-txn")
    done = kafka_broker.run_tool("kafka-producer-perf-test", [
        "--topic", topic, "--num-records", "20", "--record-size", "10", "--throughput", "-1",
        "--transactional-id", txn_id, "--transaction-duration-ms", "50",
        "--producer-props", f"bootstrap.servers={kafka_broker.bootstrap}"], timeout=120)
    assert done.returncode == 0, done.stderr
    tp = TopicPartition(topic, 0)
    (state,) = admin.describe_producers([tp])[tp].result()
    assert state.producer_id >= 0 and state.current_transaction_start_offset is None

    listed = {t.transactional_id: t for t in admin.list_transactions()}
    assert listed[txn_id].producer_id == state.producer_id
    assert txn_id in {t.transactional_id for t in admin.list_transactions(states=[listed[txn_id].state])}
    missing = unique_topic_name("adm-notxn")
    described = admin.describe_transactions([txn_id, missing])
    d = described[txn_id].result()
    assert d.producer_id == state.producer_id and d.state in ("CompleteCommit", "Empty")
    assert isinstance(described[missing].error, TransactionalIdNotFoundError)
    assert described[missing].error.transactional_id == missing

    fenced = admin.fence_producers([txn_id])[txn_id].result()
    assert fenced.producer_epoch > d.producer_epoch or fenced.producer_id != d.producer_id


@pytest.mark.timeout(120)
def test_abort_a_hanging_transaction(admin, kafka_broker, topic_factory) -> None:
    from kafkalite import Producer
    from kafkalite.admin.ops_types import AbortTransactionSpec

    topic = topic_factory()
    tp = TopicPartition(topic, 0)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": f"{topic}-tx",
                         "transaction.timeout.ms": 600000})
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"stuck").result(30)
        (state,) = admin.describe_producers([tp])[tp].result()
        assert state.current_transaction_start_offset == 0
        # read_committed readers are held at the open transaction's first offset.
        assert admin.list_offsets({tp: "latest"}, isolation_level="read_committed")[tp].result().offset == 0
        admin.abort_transaction(AbortTransactionSpec(tp, state.producer_id, state.producer_epoch,
                                                     state.coordinator_epoch or 0))
        (after,) = admin.describe_producers([tp])[tp].result()
        assert after.current_transaction_start_offset is None
        # The abort marker follows the record: the last stable offset moved past both.
        assert admin.list_offsets({tp: "latest"}, isolation_level="read_committed")[tp].result().offset == 2
    finally:
        producer.close(1)
