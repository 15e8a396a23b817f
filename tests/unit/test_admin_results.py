"""AdminResult / ItemResult / ListResult: short reprs, unchanged access, partial listings."""

from __future__ import annotations

import uuid

import pytest

from kafkalite.admin.group_types import GroupListing, GroupState, GroupType
from kafkalite.admin.results import AdminBatchError, AdminResult, ItemResult, ListResult
from kafkalite.admin.types import ConfigResource, CreateTopicResult
from kafkalite.errors import KafkaTimeoutError, TopicExistsError, UnknownTopicOrPartitionError
from kafkalite.types import TopicPartition


def created(name: str) -> CreateTopicResult:
    configs = {f"config.{i}": "x" * 40 for i in range(40)}  # a real answer lists every topic config
    return CreateTopicResult(name, uuid.uuid4(), 3, 1, configs)  # type: ignore[arg-type]  # strings stand in for ConfigEntry


def test_admin_result_repr_is_one_short_line() -> None:
    one = AdminResult("create_topics", {"orders": ItemResult(created("orders"))})
    assert repr(one) == "AdminResult(create_topics: 'orders' ok)"
    two = AdminResult("create_topics", {
        "orders": ItemResult(created("orders")),
        "audit": ItemResult(error=TopicExistsError("Topic 'audit' already exists.", topic="audit")),
    })
    assert repr(two) == "AdminResult(create_topics: 'orders' ok, 'audit' TopicExistsError)"
    assert repr(AdminResult("delete_groups", {})) == "AdminResult(delete_groups: no items)"
    # Keys as people write them: partitions as topic-partition, resources by their name.
    parts = AdminResult("delete_records", {TopicPartition("t", 0): ItemResult(None),
                                           ConfigResource("broker", "1"): ItemResult(None)})
    assert repr(parts) == "AdminResult(delete_records: t-0 ok, broker '1' ok)"


def test_many_items_are_counted_and_only_failures_named() -> None:
    items = {TopicPartition("t", i): ItemResult(None) for i in range(20)}
    for i in (3, 7):
        items[TopicPartition("t", i)] = ItemResult(error=UnknownTopicOrPartitionError("gone", topic="t", partition=i))
    text = repr(AdminResult("list_offsets", items))
    assert text == ("AdminResult(list_offsets: 18 ok, 2 failed: t-3 UnknownTopicOrPartitionError, "
                    "t-7 UnknownTopicOrPartitionError)")
    many_failed = {f"g{i}": ItemResult(error=KafkaTimeoutError("slow")) for i in range(9)}
    assert repr(AdminResult("delete_groups", many_failed)).endswith("'g4' KafkaTimeoutError, ...)")


def test_item_result_repr_is_short_and_access_is_unchanged() -> None:
    value = created("orders")
    ok = ItemResult(value)
    assert repr(ok) == "ItemResult(ok: CreateTopicResult(...))" and len(repr(value)) > 1000
    assert ok.result() is value and ok.value is value and ok.ok and ok.exception() is None
    assert repr(ItemResult(None)) == "ItemResult(ok)"
    assert repr(ItemResult(5)) == "ItemResult(ok: 5)"
    assert repr(ItemResult({i: i for i in range(100)})) == "ItemResult(ok: dict of 100)"
    error = TopicExistsError("Topic 'audit' already exists. " + "detail " * 30, topic="audit")
    failed = ItemResult(error=error)
    text = repr(failed)
    assert text.startswith("ItemResult(error: TopicExistsError: [TOPIC_ALREADY_EXISTS (36)] Topic 'audit'")
    assert len(text) < 130 and text.endswith("...)")
    with pytest.raises(TopicExistsError):
        failed.result()

    result = AdminResult("create_topics", {"orders": ok, "audit": failed})
    with pytest.raises(AdminBatchError) as raised:
        result.all()
    assert set(raised.value.errors) == {"audit"} and raised.value.results is result
    assert result.succeeded == {"orders": value} and result["orders"] is ok


def listing(group: str) -> GroupListing:
    return GroupListing(group, "consumer", GroupState.STABLE, GroupType.CLASSIC)


def test_list_result_keeps_what_answered_and_names_who_did_not() -> None:
    by_broker = AdminResult("list_groups", {
        1: ItemResult([listing("a")]),
        2: ItemResult(error=KafkaTimeoutError("list_groups did not complete in time", resource="broker 2")),
        3: ItemResult([listing("b")]),
    })
    groups = ListResult("list_groups", [listing("a"), listing("b")], by_broker)
    assert isinstance(groups, list) and [g.group_id for g in groups] == ["a", "b"]
    assert groups == [listing("a"), listing("b")]
    assert not groups.ok and list(groups.errors) == [2] and "broker 2" in str(groups.errors[2])
    assert repr(groups) == "ListResult(list_groups: 2 listed, incomplete: broker 2 KafkaTimeoutError)"
    with pytest.raises(AdminBatchError) as raised:
        groups.all()
    assert set(raised.value.errors) == {2} and "1 of 3 failed" in str(raised.value)

    complete = ListResult("list_groups", [listing("a")], AdminResult("list_groups", {1: ItemResult([listing("a")])}))
    assert complete.ok and complete.errors == {} and complete.all() == [listing("a")]
    assert type(complete.all()) is list and repr(complete) == repr([listing("a")])
