"""Share group calls (KIP-932) with a live member from Kafka's console share consumer."""

from __future__ import annotations

import signal
import subprocess

import pytest

from kafkalite import AdminClient, ConfigResource
from kafkalite.admin.group_types import GroupState, GroupType, SharePartitionOffset
from kafkalite.admin.types import AlterConfigOp
from kafkalite.errors import GroupIdNotFoundError
from kafkalite.testing.topics import unique_topic_name
from kafkalite.types import TopicPartition
from tests.integration.admin_support import produce, wait_until

pytestmark = pytest.mark.broker
_NONE = SharePartitionOffset(-1)


@pytest.mark.timeout(240)
def test_share_group_describe_and_offsets(kafka_broker, topic_factory) -> None:
    topic = topic_factory()
    produce(kafka_broker.bootstrap, topic, 0, [b"a", b"b", b"c"])
    group = unique_topic_name("share")
    tp = TopicPartition(topic, 0)
    with AdminClient({"bootstrap.servers": kafka_broker.bootstrap}) as admin:
        # A group config: read from the beginning (share groups start at the end by default).
        admin.incremental_alter_configs({ConfigResource("group", group): [
            AlterConfigOp.set("share.auto.offset.reset", "earliest")]}).all()
        proc = subprocess.Popen(kafka_broker.java_tool_command("kafka-console-share-consumer", [
            "--bootstrap-server", kafka_broker.bootstrap, "--topic", topic, "--group", group]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def stable():
                item = admin.describe_share_groups([group])[group]
                return item.value if item.ok and item.value.members and item.value.members[0].assignment else None

            d = wait_until(stable, timeout=90, what="the share group to get a member")
            assert d.members[0].assignment == {tp} and d.members[0].subscribed_topics == [topic]
            assert d.state == GroupState.STABLE and d.coordinator is not None
            assert group in {g.group_id for g in admin.list_groups(types=[GroupType.SHARE])}
            # The three records are delivered and acknowledged: nothing is left to read (the
            # persisted start offset itself moves lazily, in share-state snapshots).
            def drained() -> bool:
                got = admin.list_share_group_offsets([group])[group].result().get(tp, _NONE)
                return got.start_offset >= 0 and got.lag == 0

            wait_until(drained, timeout=90, what="the share group to have read everything")
        finally:
            proc.send_signal(signal.SIGTERM)  # a graceful leave; a kill waits for the session timeout
            proc.wait(30)
        wait_until(lambda: not admin.describe_share_groups([group])[group].result().members, timeout=90,
                   what="the member to leave")
        assert admin.alter_share_group_offsets(group, {tp: 1})[tp].ok
        assert admin.list_share_group_offsets({group: [tp]})[group].result()[tp].start_offset == 1
        assert admin.delete_share_group_offsets(group, [topic])[topic].ok
        missing = unique_topic_name("share-none")
        assert isinstance(admin.describe_share_groups([missing])[missing].error, GroupIdNotFoundError)
