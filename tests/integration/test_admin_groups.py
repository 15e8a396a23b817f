"""Consumer group calls against the real broker, cross-checked with kafka-consumer-groups.

Live members come from Kafka's own console consumer (classic protocol with a static
member, and the KIP-848 consumer protocol), so these tests do not depend on
kafkalite's consumer.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from kafkalite import AdminClient
from kafkalite.admin.group_types import GroupState, GroupType, MemberToRemove
from kafkalite.errors import (
    GroupIdNotFoundError,
    GroupNotEmptyError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from kafkalite.testing.topics import unique_topic_name
from kafkalite.types import OffsetAndMetadata, TopicPartition
from tests.integration.admin_support import produce, tool, wait_until

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def admin(kafka_broker):
    with AdminClient({"bootstrap.servers": kafka_broker.bootstrap}) as client:
        yield client


@pytest.fixture(scope="module")
def data_topic(kafka_broker) -> str:
    topic = kafka_broker.create_topic(unique_topic_name("grp-data"), partitions=2)
    produce(kafka_broker.bootstrap, topic, 0, [b"a", b"b", b"c", b"d", b"e"])
    produce(kafka_broker.bootstrap, topic, 1, [b"x", b"y", b"z"])
    return topic


@pytest.fixture(scope="module")
def live_groups(kafka_broker, data_topic) -> Iterator[dict[str, str]]:
    """Two running console consumers: a classic static member and a KIP-848 member."""
    groups = {"classic": unique_topic_name("grp-classic"), "consumer": unique_topic_name("grp-848")}
    common = ["--bootstrap-server", kafka_broker.bootstrap, "--topic", data_topic, "--from-beginning"]
    procs = [
        subprocess.Popen(kafka_broker.java_tool_command("kafka-console-consumer", [
            *common, "--group", groups["classic"], "--consumer-property", "group.instance.id=static-1"]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen(kafka_broker.java_tool_command("kafka-console-consumer", [
            *common, "--group", groups["consumer"], "--consumer-property", "group.protocol=consumer"]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    try:
        yield groups
    finally:
        for p in procs:
            p.kill()
            p.wait(30)


def _stable_with_assignment(admin, group: str):
    def check():
        item = admin.describe_consumer_groups([group])[group]
        if not item.ok:
            return None
        d = item.value
        if d.state == GroupState.STABLE and d.members and all(m.assignment for m in d.members):
            return d
        return None

    return wait_until(check, timeout=90, what=f"group {group} to be stable with an assignment")


def test_offsets_lifecycle_of_an_empty_group(admin, kafka_broker, data_topic) -> None:
    group = unique_topic_name("grp-offsets")
    tp0, tp1 = TopicPartition(data_topic, 0), TopicPartition(data_topic, 1)
    missing = TopicPartition(unique_topic_name("grp-missing"), 0)
    result = admin.alter_consumer_group_offsets(group, {tp0: 2, tp1: OffsetAndMetadata(1, "checkpoint"), missing: 0})
    assert result[tp0].ok and result[tp1].ok
    assert isinstance(result[missing].error, UnknownTopicOrPartitionError)
    assert result[missing].error.group_id == group

    offsets = admin.list_consumer_group_offsets([group])[group].result()
    assert offsets == {tp0: OffsetAndMetadata(2, ""), tp1: OffsetAndMetadata(1, "checkpoint")}
    only = admin.list_consumer_group_offsets({group: [tp1]})[group].result()
    assert list(only) == [tp1]

    # Kafka's own tool sees the same positions and lag (5 and 3 records written).
    out = tool(kafka_broker, "kafka-consumer-groups", "--describe", "--group", group)
    rows = {(c[1], c[2]): c for c in (line.split() for line in out.splitlines()) if len(c) >= 6 and c[0] == group}
    assert rows[(data_topic, "0")][3:6] == ["2", "5", "3"]
    assert rows[(data_topic, "1")][3:6] == ["1", "3", "2"]

    listed = {g.group_id: g for g in admin.list_groups()}
    assert listed[group].state == GroupState.EMPTY and listed[group].is_consumer_group
    assert group not in {g.group_id for g in admin.list_groups(states=["Stable"])}
    described = admin.describe_consumer_groups([group])[group].result()
    assert described.state == GroupState.EMPTY and described.members == [] and described.is_simple_consumer_group

    assert admin.delete_consumer_group_offsets(group, [tp0])[tp0].ok
    assert list(admin.list_consumer_group_offsets([group])[group].result()) == [tp1]

    gone = unique_topic_name("grp-never")
    deleted = admin.delete_groups([group, gone])
    assert deleted[group].ok
    assert isinstance(deleted[gone].error, GroupIdNotFoundError) and deleted[gone].error.group_id == gone
    assert group not in tool(kafka_broker, "kafka-consumer-groups", "--list").split()
    assert isinstance(admin.describe_consumer_groups([group])[group].error, GroupIdNotFoundError)


@pytest.mark.timeout(240)
def test_live_classic_group(admin, kafka_broker, data_topic, live_groups) -> None:
    group = live_groups["classic"]
    d = _stable_with_assignment(admin, group)
    assert d.type == GroupType.CLASSIC and d.partition_assignor and not d.is_simple_consumer_group
    (member,) = d.members
    assert member.group_instance_id == "static-1"
    assert member.assignment == {TopicPartition(data_topic, 0), TopicPartition(data_topic, 1)}
    assert member.subscribed_topics == [data_topic]
    assert d.coordinator is not None and d.coordinator.id == 1

    deleted = admin.delete_groups([group])
    assert isinstance(deleted[group].error, GroupNotEmptyError) and deleted[group].error.group_id == group
    altered = admin.alter_consumer_group_offsets(group, {TopicPartition(data_topic, 0): 0})
    assert isinstance(altered[TopicPartition(data_topic, 0)].error, UnknownMemberIdError)

    listed = {g.group_id: g for g in admin.list_groups(types=["classic"], states=["Stable"])}
    assert group in listed

    removed = admin.remove_members_from_consumer_group(group, [MemberToRemove(group_instance_id="static-1"),
                                                              MemberToRemove(group_instance_id="nobody")])
    assert removed[MemberToRemove(group_instance_id="static-1")].ok
    assert isinstance(removed[MemberToRemove(group_instance_id="nobody")].error, UnknownMemberIdError)


@pytest.mark.timeout(240)
def test_live_consumer_protocol_group(admin, data_topic, live_groups) -> None:
    group = live_groups["consumer"]
    d = _stable_with_assignment(admin, group)
    assert d.type == GroupType.CONSUMER and d.group_epoch and d.partition_assignor
    (member,) = d.members
    assert member.assignment == {TopicPartition(data_topic, 0), TopicPartition(data_topic, 1)}
    assert member.target_assignment == member.assignment
    assert member.subscribed_topics == [data_topic] and member.member_epoch
    assert group in {g.group_id for g in admin.list_groups(types=[GroupType.CONSUMER])}
    assert group not in {g.group_id for g in admin.list_groups(types=["classic"])}
    assert isinstance(admin.delete_groups([group])[group].error, GroupNotEmptyError)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("broker_fixture, id_version", [("kafka_broker", 10), ("kafka_broker_39", None)])
def test_committed_offsets_go_by_topic_id_where_the_broker_offers_it(request, broker_fixture, id_version) -> None:
    """OffsetCommit / OffsetFetch v10 (Kafka 4.1+) name topics by id; Kafka 3.9 stops at v9
    and gets names. Same answers either way, cross-checked with kafka-consumer-groups."""
    broker = request.getfixturevalue(broker_fixture)
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        sent: list[tuple[str, int]] = []
        core = admin._core
        send = core.send

        async def spy(node, req, deadline, **kwargs):
            response, version = await send(node, req, deadline, **kwargs)
            sent.append((type(req).__name__, version))
            return response, version

        core.send = spy
        admin.list_topics()  # metadata now, so the topic below is new to this client
        topic = broker.create_topic(unique_topic_name("grp-ids"), partitions=2)
        produce(broker.bootstrap, topic, 0, [b"a", b"b", b"c"])
        group = unique_topic_name("grp-ids")
        tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
        missing = TopicPartition(unique_topic_name("grp-ids-missing"), 0)

        # Committed by a second client: the first one learns the topic id from the answer.
        with AdminClient({"bootstrap.servers": broker.bootstrap}) as other:
            assert other.alter_consumer_group_offsets(group, {tp0: OffsetAndMetadata(2, "m"), tp1: 0}).all()
        offsets = admin.list_consumer_group_offsets([group])[group].result()
        assert offsets == {tp0: OffsetAndMetadata(2, "m"), tp1: OffsetAndMetadata(0, "")}

        altered = admin.alter_consumer_group_offsets(group, {tp0: 3, tp1: OffsetAndMetadata(0, "again")})
        assert altered.ok, altered
        assert admin.list_consumer_group_offsets({group: [tp0]})[group].result() == {tp0: OffsetAndMetadata(3, "")}
        with_missing = admin.alter_consumer_group_offsets(group, {tp1: 0, missing: 1})
        assert with_missing[tp1].ok
        error = with_missing[missing].error
        assert isinstance(error, UnknownTopicOrPartitionError) and error.topic == missing.topic
        assert admin.list_consumer_group_offsets({group: [tp1, missing]})[group].result() == {
            tp1: OffsetAndMetadata(0, "")}

        versions = {name: {v for n, v in sent if n == name} for name in ("OffsetCommitRequest", "OffsetFetchRequest")}
        if id_version:  # by id, except the requests that named the missing topic (by name, v9)
            assert versions == {"OffsetCommitRequest": {10, 9}, "OffsetFetchRequest": {10, 9}}
        else:
            assert versions == {"OffsetCommitRequest": {9}, "OffsetFetchRequest": {9}}

    out = tool(broker, "kafka-consumer-groups", "--describe", "--group", group)
    rows = {(c[1], c[2]): c for c in (line.split() for line in out.splitlines()) if len(c) >= 6 and c[0] == group}
    assert rows[(topic, "0")][3:6] == ["3", "3", "0"]
    assert rows[(topic, "1")][3:6] == ["0", "0", "0"]
