"""Every feature of kafkalite.net.features against the session's broker: it works on a
release that has it (or through Java's fallback), and on one that lacks it it fails at
once with UnsupportedFeatureError naming the feature and the release it needs. Which
releases have what comes from the same table the client uses."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from kafkalite import (
    AdminClient,
    ConfigResource,
    Consumer,
    NewTopic,
    Producer,
    ShareConsumer,
    TopicPartition,
)
from kafkalite.admin.types import AlterConfigOp
from kafkalite.errors import UnsupportedFeatureError
from kafkalite.net import features as f
from kafkalite.testing.topics import unique_topic_name
from tests.matrix.support import has, settings, wait_until

pytestmark = pytest.mark.broker


def first_poll_error(consumer: Any, seconds: float = 30.0) -> BaseException | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            consumer.poll(0.5)
        except Exception as exc:
            return exc
    return None


def check(broker: Any, feature: f.BrokerFeature, use: Callable[[], object]) -> None:
    """``use()`` works where the release has ``feature``; elsewhere it raises at once."""
    started = time.monotonic()
    if has(broker, feature):
        use()
        return
    with pytest.raises(UnsupportedFeatureError) as caught:
        use()
    assert time.monotonic() - started < 30, "a missing feature must fail at once, not after a wait"
    err = caught.value
    assert (err.feature, err.minimum_release) == (feature.name, feature.since)
    assert f"needs Apache Kafka {feature.since} or later" in str(err)


@pytest.fixture(scope="module")
def admin(kafka_broker):
    with AdminClient(settings(kafka_broker)) as client:
        yield client


@pytest.fixture(scope="module")
def topic(kafka_broker) -> str:
    return kafka_broker.create_topic(unique_topic_name("features"), partitions=1)


@pytest.mark.timeout(90)
def test_kip848_consumer_groups(kafka_broker, topic) -> None:
    feature = f.KIP848_GROUPS
    with Consumer(settings(kafka_broker, **{"group.id": unique_topic_name("kip848"), "group.protocol": "consumer",
                                            "auto.offset.reset": "earliest"})) as consumer:
        consumer.subscribe([topic])
        if has(kafka_broker, feature):
            wait_until(lambda: consumer.poll(0.5) or consumer.assignment(), 60, "a KIP-848 assignment")
            return
        err = first_poll_error(consumer)
    # 3.7-3.9 serve the API with the protocol off: the broker's own UNSUPPORTED_VERSION
    assert err is not None, "poll() kept returning nothing on a broker without KIP-848"
    assert "group.protocol" in str(err) and ("4.0" in str(err) or "rebalance.protocols" in str(err))


@pytest.mark.timeout(90)
def test_share_groups(kafka_broker, topic) -> None:
    with ShareConsumer(settings(kafka_broker, **{"group.id": unique_topic_name("share")})) as consumer:
        consumer.subscribe([topic])
        if has(kafka_broker, f.SHARE_GROUPS):
            wait_until(lambda: consumer.poll(0.5) is not None and consumer.assignment(), 60, "a share assignment")
            return
        err = first_poll_error(consumer)
    assert err is not None and "share groups" in str(err), err


@pytest.mark.timeout(90)
def test_static_membership(kafka_broker, topic) -> None:
    def join() -> None:
        with Consumer(settings(kafka_broker, **{"group.id": unique_topic_name("static"),
                                                "group.instance.id": "member-1"})) as consumer:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 60
            while not consumer.assignment():
                consumer.poll(0.2)
                assert time.monotonic() < deadline, "no assignment for the static member"

    check(kafka_broker, f.STATIC_MEMBERSHIP, join)


@pytest.mark.timeout(60)
def test_incremental_alter_configs(kafka_broker, admin, topic) -> None:
    resource = ConfigResource("topic", topic)
    check(kafka_broker, f.INCREMENTAL_ALTER_CONFIGS,
          lambda: admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", "600000")]})[resource]
          .result())


@pytest.mark.timeout(60)
def test_create_topics_with_the_brokers_defaults(kafka_broker, admin) -> None:
    name = unique_topic_name("defaults")
    check(kafka_broker, f.CREATE_TOPIC_DEFAULTS, lambda: admin.create_topics([NewTopic(name)])[name].result())


@pytest.mark.timeout(60)
def test_describe_cluster_falls_back_to_metadata(kafka_broker, admin) -> None:
    cluster = admin.describe_cluster()
    assert [n.port for n in cluster.nodes] == [kafka_broker.port]


@pytest.mark.timeout(60)
def test_describe_topics_and_eligible_leaders(kafka_broker, admin, topic) -> None:
    plain = admin.describe_topics([topic])[topic].result()
    assert [p.partition for p in plain.partitions] == [0]
    if has(kafka_broker, f.DESCRIBE_TOPIC_PARTITIONS):
        paged = admin.describe_topics([topic], use_describe_topic_partitions=True)[topic].result()
        assert [p.partition for p in paged.partitions] == [0]


@pytest.mark.timeout(60)
def test_offset_delete(kafka_broker, admin, topic) -> None:
    group = unique_topic_name("offset-delete")
    tp = TopicPartition(topic, 0)
    assert admin.alter_consumer_group_offsets(group, {tp: 0}).ok
    check(kafka_broker, f.OFFSET_DELETE, lambda: admin.delete_consumer_group_offsets(group, [tp])[tp].result())


@pytest.mark.timeout(60)
def test_partition_reassignments(kafka_broker, admin) -> None:
    check(kafka_broker, f.PARTITION_REASSIGNMENTS, admin.list_partition_reassignments)


@pytest.mark.timeout(60)
def test_client_quotas(kafka_broker, admin) -> None:
    check(kafka_broker, f.CLIENT_QUOTAS, admin.describe_client_quotas)


@pytest.mark.timeout(60)
def test_scram_credentials(kafka_broker, admin) -> None:
    check(kafka_broker, f.SCRAM_CREDENTIALS, lambda: admin.describe_user_scram_credentials())


@pytest.mark.timeout(90)
def test_producer_and_transaction_admin(kafka_broker, admin, topic) -> None:
    tp = TopicPartition(topic, 0)
    with Producer(settings(kafka_broker, **{"enable.idempotence": True})) as producer:
        producer.send(topic, b"x", partition=0).result(30)
    check(kafka_broker, f.PRODUCER_STATE, lambda: admin.describe_producers([tp])[tp].result())

    def describe() -> None:
        error = admin.describe_transactions(["none"])["none"].error
        if isinstance(error, UnsupportedFeatureError):  # otherwise: no such transactional id
            raise error

    check(kafka_broker, f.TRANSACTION_ADMIN, describe)

    def listing() -> None:
        result = admin.list_transactions()
        for error in result.errors.values():
            raise error

    check(kafka_broker, f.LIST_TRANSACTIONS, listing)


@pytest.mark.timeout(90)
def test_transactions_v2_follow_the_cluster(kafka_broker, topic) -> None:
    """The producer uses the transaction version the cluster finalized (v1 before 4.0)."""
    value = unique_topic_name("tv").encode()
    with Producer(settings(kafka_broker, **{"transactional.id": unique_topic_name("tv")})) as producer:
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.send(topic, value, partition=0)
        producer.commit_transaction(60)
    tp = TopicPartition(topic, 0)
    seen: list = []
    with Consumer(settings(kafka_broker, **{"isolation.level": "read_committed"})) as reader:
        reader.assign([tp])
        reader.seek_to_beginning([tp])
        wait_until(lambda: seen.extend(r.value for r in reader.poll(0.5)) or value in seen, 60,
                   "the committed record, read_committed")
    assert seen.count(value) == 1


@pytest.mark.timeout(60)
def test_finalizing_transactions_v2(kafka_broker, admin) -> None:
    """``update_features({"transaction.version": 2})`` (KIP-890) works from 4.0; older
    releases refuse it at once, naming the release it needs (before 2.7: the API)."""
    feature = f.UPDATE_FEATURES if not has(kafka_broker, f.UPDATE_FEATURES) else f.feature_level("transaction.version", 2)
    check(kafka_broker, feature,
          lambda: admin.update_features({"transaction.version": 2}, validate_only=True)["transaction.version"].result())


@pytest.mark.timeout(120)
def test_offsets_in_a_transaction_with_the_groups_metadata(kafka_broker, topic) -> None:
    """KIP-447: TxnOffsetCommit with the group's generation needs Kafka 2.5; the group id
    alone works on every release."""
    group = unique_topic_name("txn-offsets")
    tp = TopicPartition(topic, 0)
    with Producer(settings(kafka_broker, **{"transactional.id": unique_topic_name("txn-offsets")})) as producer, \
            Consumer(settings(kafka_broker, **{"group.id": group, "auto.offset.reset": "earliest",
                                               "enable.auto.commit": False})) as consumer:
        producer.init_transactions(60)
        consumer.subscribe([topic])
        wait_until(lambda: consumer.poll(0.5) or consumer.assignment(), 60, "the consumer's assignment")
        metadata = consumer.group_metadata()
        assert metadata.generation_id >= 0

        def with_generation() -> None:
            producer.begin_transaction()
            try:
                producer.send_offsets_to_transaction({tp: 0}, metadata, 30)
            except UnsupportedFeatureError:
                producer.abort_transaction(30)
                raise
            producer.commit_transaction(60)

        check(kafka_broker, f.GROUP_METADATA_COMMIT, with_generation)
        producer.begin_transaction()
        producer.send_offsets_to_transaction({tp: 1}, group, 30)
        producer.commit_transaction(60)
    with AdminClient(settings(kafka_broker)) as admin:
        assert admin.list_consumer_group_offsets([group])[group].result()[tp].offset == 1
