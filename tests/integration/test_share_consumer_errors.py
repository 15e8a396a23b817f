"""Share consumer failures a person can act on: a broker without share groups, a group
id that belongs to a consumer group."""

from __future__ import annotations

import time

import pytest

from kafkalite import Consumer, ShareConsumer
from kafkalite.errors import GroupIdNotFoundError, UnsupportedVersionForClientError
from tests.integration.share_support import new_group, produce_values, settings

pytestmark = pytest.mark.broker


def poll_error(consumer: ShareConsumer, timeout: float = 30.0) -> BaseException:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            consumer.poll(0.5)
        except Exception as exc:
            return exc
    raise AssertionError("poll() kept returning without the expected error")


@pytest.mark.timeout(90)
def test_a_broker_without_share_groups_is_a_clear_error(kafka_broker_39, topic_factory) -> None:
    topic = topic_factory(on=kafka_broker_39)
    with ShareConsumer(settings(kafka_broker_39.bootstrap, new_group())) as consumer:
        consumer.subscribe([topic])
        err = poll_error(consumer)
    assert isinstance(err, UnsupportedVersionForClientError)
    assert "share groups" in str(err) and "ShareGroupHeartbeat" in str(err)


@pytest.mark.timeout(60)
def test_a_consumer_group_id_cannot_be_used_by_a_share_consumer(kafka_broker, topic_factory) -> None:
    bs = kafka_broker.bootstrap
    topic, group = topic_factory(), new_group("classic")
    produce_values(bs, topic, [b"x"])
    with Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                   "auto.offset.reset": "earliest"}) as member:
        member.subscribe([topic])
        deadline = time.monotonic() + 30
        while not member.poll(0.5):
            assert time.monotonic() < deadline
        with ShareConsumer(settings(bs, group)) as consumer:
            consumer.subscribe([topic])
            err = poll_error(consumer)
    assert isinstance(err, GroupIdNotFoundError) and err.group_id == group
    assert "is not a share group" in str(err)
