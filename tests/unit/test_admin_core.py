"""The admin batch driver (routing, per-item outcomes, retries, deadlines) without a broker."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from kafkalite.admin.core import AdminCore, Fail, Retry, outcome_for
from kafkalite.admin.results import AdminBatchError, AdminResult, ItemResult
from kafkalite.errors import (
    ClientClosedError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NotControllerError,
    NotLeaderOrFollowerError,
    ThrottlingQuotaExceededError,
    TopicAuthorizationError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from tests.helpers.settings import resolve


def make_core(**settings: Any) -> AdminCore:
    cfg = resolve("admin", {"bootstrap.servers": "127.0.0.1:1", "retry.backoff.ms": 1,
                            "retry.backoff.max.ms": 5, **settings})
    return AdminCore(cfg)


async def one_node(keys: list[Any], deadline: float) -> tuple[dict[int, list[Any]], dict[Any, Any]]:
    return {1: keys}, {}


async def test_each_item_settles_on_its_own() -> None:
    core = make_core()

    async def send(node: int, keys: list[str], deadline: float) -> dict[str, Any]:
        return {"a": {"ok": 1}, "b": Fail(TopicExistsError("exists", topic="b"))}

    result = await core.run_batch("create_topics", ["a", "b"], one_node, send, 5)
    assert result["a"].result() == {"ok": 1}
    assert isinstance(result["b"].error, TopicExistsError)
    assert result.errors.keys() == {"b"}
    assert result.succeeded == {"a": {"ok": 1}}
    with pytest.raises(AdminBatchError) as info:
        result.all()
    assert "1 of 2 failed" in str(info.value) and "'b'" in str(info.value)
    assert info.value.errors["b"] is result["b"].error


async def test_retriable_items_are_retried_until_they_succeed() -> None:
    core = make_core()
    calls: list[list[str]] = []

    async def send(node: int, keys: list[str], deadline: float) -> dict[str, Any]:
        calls.append(sorted(keys))
        out: dict[str, Any] = {"a": None}
        if "b" in keys:
            out["b"] = Retry(NotLeaderOrFollowerError("moved")) if len(calls) < 3 else 7
        return out

    result = await core.run_batch("x", ["a", "b"], one_node, send, 5)
    assert result.all() == {"a": None, "b": 7}
    # Only the retriable item is sent again.
    assert calls == [["a", "b"], ["b"], ["b"]]


async def test_retries_stop_at_the_deadline_with_the_last_error() -> None:
    core = make_core()

    async def send(node: int, keys: list[str], deadline: float) -> dict[str, Any]:
        return {k: Retry(NotControllerError("not the controller")) for k in keys}

    start = time.monotonic()
    result = await core.run_batch("create_topics", ["t"], one_node, send, 0.3)
    elapsed = time.monotonic() - start
    err = result["t"].error
    assert isinstance(err, KafkaTimeoutError)
    assert "NOT_CONTROLLER" in str(err) and "did not complete in time" in str(err)
    assert elapsed < 5


async def test_retries_setting_bounds_attempts() -> None:
    core = make_core(retries=2)
    attempts = 0

    async def send(node: int, keys: list[str], deadline: float) -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        return {k: Retry(ThrottlingQuotaExceededError("slow down")) for k in keys}

    result = await core.run_batch("x", ["k"], one_node, send, 30)
    assert isinstance(result["k"].error, KafkaTimeoutError)
    assert "THROTTLING_QUOTA_EXCEEDED" in str(result["k"].error)
    assert attempts == 3


async def test_connection_failure_retries_the_node_items() -> None:
    core = make_core()
    attempts = 0

    async def send(node: int, keys: list[str], deadline: float) -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise KafkaConnectionError("connection refused")
        return {k: k.upper() for k in keys}

    result = await core.run_batch("x", ["a", "b"], one_node, send, 5)
    assert result.all() == {"a": "A", "b": "B"}
    assert attempts == 2


async def test_non_retriable_response_error_fails_only_that_nodes_items() -> None:
    core = make_core()

    async def two_nodes(keys: list[str], deadline: float) -> tuple[dict[int, list[str]], dict[str, Any]]:
        return {1: ["a"], 2: ["b"]}, {}

    async def send(node: int, keys: list[str], deadline: float) -> dict[str, Any]:
        if node == 1:
            raise TopicAuthorizationError("denied")
        return {"b": 2}

    result = await core.run_batch("x", ["a", "b"], two_nodes, send, 5)
    assert isinstance(result["a"].error, TopicAuthorizationError)
    assert result["b"].result() == 2


async def test_routing_failures_and_missing_answers_name_the_item() -> None:
    core = make_core()

    async def route(keys: list[str], deadline: float) -> tuple[dict[int, list[str]], dict[str, Any]]:
        return {1: ["a", "c"]}, {"b": UnknownTopicOrPartitionError("no such topic")}

    async def send(node: int, keys: list[str], deadline: float) -> dict[str, Any]:
        return {"a": 1}

    result = await core.run_batch("describe", ["a", "b", "c"], route, send, 5,
                                  resource_of=lambda k: {"topic": k})
    assert result["b"].error is not None and result["b"].error.topic == "b"
    assert "did not mention c" in str(result["c"].error) and "topic 'c'" in str(result["c"].error)
    assert list(result) == ["a", "b", "c"]  # the caller's order


async def test_run_single_raises_its_error() -> None:
    core = make_core()

    async def send(node: int, deadline: float) -> Any:
        raise TopicAuthorizationError("denied")

    with pytest.raises(TopicAuthorizationError):
        await core.run_single("list", one_node, send, 5)


async def test_closed_client_raises() -> None:
    core = make_core()
    await core.close()
    with pytest.raises(ClientClosedError):
        await core.run_batch("x", ["a"], one_node, lambda *a: asyncio.sleep(0), 1)


def test_outcome_for_classifies_codes() -> None:
    assert outcome_for(0, None) is None
    o = outcome_for(NotControllerError.code, "moved", topic="t")
    assert isinstance(o, Retry) and o.refresh_metadata
    o = outcome_for(ThrottlingQuotaExceededError.code, None)
    assert isinstance(o, Retry) and not o.refresh_metadata
    # A missing topic is reported, not waited for.
    o = outcome_for(UnknownTopicOrPartitionError.code, None, topic="t")
    assert isinstance(o, Fail) and o.error.topic == "t"
    o = outcome_for(TopicExistsError.code, "exists", topic="t")
    assert isinstance(o, Fail) and "topic 't'" in str(o.error)


def test_admin_result_single_item_raises_its_own_error() -> None:
    err = TopicExistsError("exists", topic="t")
    result: AdminResult[str, None] = AdminResult("create_topics", {"t": ItemResult(error=err)})
    with pytest.raises(TopicExistsError):
        result.all()
    ok: AdminResult[str, int] = AdminResult("x", {"t": ItemResult(1)})
    assert ok.raise_on_error() is ok and ok.ok and ok["t"].exception() is None


async def test_route_leaders_refreshes_metadata_once_for_a_partition_it_does_not_know() -> None:
    # Partitions added since the cached metadata: Java's admin fetches metadata per call,
    # so ListOffsets of a new partition must not fail on the stale partition count.
    import uuid

    from kafkalite import TopicPartition
    from kafkalite.net.cluster import ClusterMetadata, PartitionMetadata, TopicMetadata

    core = make_core()

    def metadata(partitions: int) -> ClusterMetadata:
        meta = ClusterMetadata()
        meta.topics["t"] = TopicMetadata("t", uuid.uuid4(), False, {
            p: PartitionMetadata("t", p, 1, 0, [1], [1], []) for p in range(partitions)})
        return meta

    forced: list[bool] = []

    async def ensure_metadata(deadline: float, topics: Any = (), *, force: bool = False) -> ClusterMetadata:
        forced.append(force)
        return metadata(3 if force else 1)

    core.ensure_metadata = ensure_metadata  # type: ignore[method-assign]
    routed, failed = await core.route_leaders([TopicPartition("t", 0), TopicPartition("t", 2)], time.monotonic() + 5)
    assert routed == {1: [TopicPartition("t", 0), TopicPartition("t", 2)]} and failed == {}
    assert forced == [False, True]
    forced.clear()
    routed, failed = await core.route_leaders([TopicPartition("t", 5)], time.monotonic() + 5)
    assert routed == {} and isinstance(failed[TopicPartition("t", 5)], UnknownTopicOrPartitionError)
    assert forced == [False, True]  # one refresh, then the partition really does not exist
