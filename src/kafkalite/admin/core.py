"""The admin client's engine: routing, batching and retries for every admin call.

Each admin call is a set of *items* (topics, partitions, groups, resources ...). The
driver :meth:`AdminCore.run_batch` repeats three steps until every item is settled or
the call's deadline passes:

1. **route** the pending items to nodes: any broker (KRaft brokers forward controller
   requests, so "controller" calls go to the metadata's controller id, refreshed after
   NOT_CONTROLLER), the partition leader (from metadata), the group / transaction
   coordinator (``NetworkClient.find_coordinator``), or a specific broker;
2. **send** one request per node, concurrently, and map each item's error code to a
   value, a final error, or :class:`Retry`;
3. **retry** the items that need it after :class:`~kafkalite.backoff.ExponentialBackoff`
   (``retry.backoff.ms`` .. ``retry.backoff.max.ms``), refreshing metadata or
   forgetting a coordinator first when the error says so.

A connection failure or request timeout retries that node's items; a non-retriable
error of a whole response fails that node's items only. Items still unsettled at the
deadline fail with :class:`KafkaTimeoutError` naming the last error they saw. This
mirrors the Java AdminClient (``KafkaAdminClient.Call`` with node providers).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

from kafkalite.admin.results import AdminResult, ItemResult
from kafkalite.backoff import ExponentialBackoff
from kafkalite.config import ADMIN, Config
from kafkalite.errors import (
    ApiError,
    ClientClosedError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidArgumentError,
    InvalidMetadataError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotControllerError,
    NotCoordinatorError,
    ThrottlingQuotaExceededError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kafkalite.metrics import Metrics
from kafkalite.net.client import COORDINATOR_GROUP, NetworkClient
from kafkalite.net.cluster import ClusterMetadata
from kafkalite.protocol.message import Request, ResponseT
from kafkalite.telemetry.hub import ClientTelemetry
from kafkalite.types import TopicPartition

log = logging.getLogger("kafkalite.admin")

K = TypeVar("K", bound=Hashable)  # an item's key (topic name, TopicPartition, group id ...)
V = TypeVar("V")  # an item's value

# Codes that mean "ask somebody else / later" for coordinator calls (KIP-848 brokers
# also answer NOT_COORDINATOR while a coordinator moves).
COORDINATOR_MOVED = (NotCoordinatorError.code, CoordinatorNotAvailableError.code)
COORDINATOR_LOADING = CoordinatorLoadInProgressError.code


class Retry:
    """An item outcome that asks the driver to try again later.

    ``refresh_metadata``: refresh cluster metadata before routing again (leader moved,
    controller moved). Coordinators are forgotten by the sender itself.
    """

    __slots__ = ("error", "refresh_metadata")

    def __init__(self, error: KafkaError, *, refresh_metadata: bool = False) -> None:
        self.error = error
        self.refresh_metadata = refresh_metadata


class Fail:
    """An item outcome that settles the item with an error."""

    __slots__ = ("error",)

    def __init__(self, error: KafkaError) -> None:
        self.error = error


#: What a sender says of one item: its value, Fail or Retry.
Outcome: TypeAlias = V | Fail | Retry
#: The items sent to each node, and those that failed to route.
Route = tuple[dict[int, list[K]], dict[K, KafkaError]]
#: Sends one node's items: ``(node, keys, deadline)`` -> each key's outcome.
Sender = Callable[[int, list[K], float], Awaitable[Mapping[K, Outcome[V]]]]
#: Routes the pending items: ``(keys, deadline)`` -> Route.
Router = Callable[[list[K], float], Awaitable[Route[K]]]


def outcome_for(code: int, message: str | None, **resource: Any) -> Fail | Retry | None:
    """Map an item's error code: None for success, Retry for retriable codes, else Fail.

    Retriable: the generated retriable classes (NOT_CONTROLLER, NOT_LEADER_OR_FOLLOWER,
    COORDINATOR_LOAD_IN_PROGRESS, THROTTLING_QUOTA_EXCEEDED, REQUEST_TIMED_OUT ...).
    Metadata errors (InvalidMetadataError) and NOT_CONTROLLER also refresh metadata.
    UNKNOWN_TOPIC_OR_PARTITION and UNKNOWN_TOPIC_ID are final here: admin calls report a
    missing topic rather than waiting for it to appear (Java's AdminClient does the same
    for describe/delete).
    """
    if not code:
        return None
    err = error_for_code(code, message or None, **resource)
    if isinstance(err, (UnknownTopicOrPartitionError, UnknownTopicIdError)):
        return Fail(err)
    if err.retriable:
        refresh = isinstance(err, (InvalidMetadataError, NotControllerError))
        return Retry(err, refresh_metadata=refresh)
    return Fail(err)


#: Java's admin client publishes its metrics in this group.
METRICS_GROUP = "admin-client-metrics"


class AdminCore:
    """The async engine shared by :class:`AdminClient` and :class:`AsyncAdminClient`."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.client = NetworkClient(cfg)
        self.registry = Metrics(cfg["metrics.sample.window.ms"], cfg["metrics.num.samples"],
                                cfg["metrics.recording.level"])
        self.client.stats.register(self.registry, METRICS_GROUP,
                                   {"client-id": cfg["client.id"]} if cfg["client.id"] else None)
        self.telemetry = ClientTelemetry(cfg, ADMIN, self.client, self.registry,
                                         lambda: self.registry.snapshot(METRICS_GROUP),
                                         labels=lambda: {"client_rack": cfg["client.rack"] or None})
        self._backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])
        self._metadata_stale = True
        self._bootstrapped = False

    # ------------------------------------------------------------ time

    def deadline(self, timeout: float | None) -> float:
        """Absolute monotonic deadline of a call (default: ``default.api.timeout.ms``)."""
        if timeout is None:
            timeout = self.cfg["default.api.timeout.ms"] / 1000.0
        if timeout < 0:
            raise InvalidArgumentError(f"timeout must be >= 0, got {timeout}")
        return time.monotonic() + timeout

    @staticmethod
    def remaining_ms(deadline: float) -> int:
        return max(1, int((deadline - time.monotonic()) * 1000))

    def request_timeout_s(self, deadline: float) -> float:
        return max(0.001, min(self.cfg["request.timeout.ms"] / 1000.0, deadline - time.monotonic()))

    # ------------------------------------------------------------ metadata

    @property
    def metadata(self) -> ClusterMetadata:
        return self.client.metadata

    async def ensure_metadata(self, deadline: float, topics: Iterable[str] = (), *,
                              force: bool = False) -> ClusterMetadata:
        """Metadata that knows the brokers and ``topics`` (refreshed when stale or forced)."""
        topics = set(topics)
        meta = self.client.metadata
        missing = any(t not in meta.topics for t in topics)
        if force or self._metadata_stale or not meta.brokers or missing or self.client.metadata_is_stale():
            await self.client.refresh_metadata(topics, timeout_s=max(0.001, deadline - time.monotonic()))
            self._metadata_stale = False
            self._bootstrapped = True
        return self.client.metadata

    def mark_metadata_stale(self) -> None:
        self._metadata_stale = True

    # ------------------------------------------------------------ routers

    async def route_any(self, keys: list[K], deadline: float) -> Route[K]:
        await self.ensure_metadata(deadline)
        return {self.client.least_loaded_node(): keys}, {}

    async def controller(self, deadline: float) -> int:
        """The node for controller requests.

        KRaft brokers forward admin requests to the active controller, and the metadata's
        controller id is any live broker there; NOT_CONTROLLER makes us refresh and retry.
        """
        meta = await self.ensure_metadata(deadline)
        if meta.controller_id in meta.brokers:
            return meta.controller_id
        return self.client.least_loaded_node()

    async def route_controller(self, keys: list[K], deadline: float) -> Route[K]:
        return {await self.controller(deadline): keys}, {}

    async def route_leaders(self, partitions: list[TopicPartition], deadline: float) -> Route[TopicPartition]:
        """Group partitions by leader; a missing topic or partition fails its items.

        A partition the cached metadata does not know (partitions added since it was
        fetched) refreshes it once before failing: Java's admin client fetches
        metadata for each such call (``MetadataOperationContext``), so it never fails
        on a stale count.
        """
        topics = {tp.topic for tp in partitions}
        meta = await self.ensure_metadata(deadline, topics)
        if any(tp.topic in meta.topics and tp.partition not in meta.topics[tp.topic].partitions
               for tp in partitions):
            meta = await self.ensure_metadata(deadline, topics, force=True)
        by_node: dict[int, list[TopicPartition]] = {}
        failed: dict[TopicPartition, KafkaError] = {}
        need_refresh = False
        for tp in partitions:
            topic = meta.topics.get(tp.topic)
            if topic is None:
                code = meta.topic_errors.get(tp.topic, UnknownTopicOrPartitionError.code)
                err = error_for_code(code, f"cannot find the leader of {tp.topic}-{tp.partition}",
                                     topic=tp.topic, partition=tp.partition)
                if err.retriable and not isinstance(err, UnknownTopicOrPartitionError):
                    need_refresh = True
                    continue  # not routed: tried again next round
                failed[tp] = err
                continue
            part = topic.partitions.get(tp.partition)
            if part is None:
                failed[tp] = UnknownTopicOrPartitionError(
                    f"topic has {topic.partition_count} partitions; partition {tp.partition} does not exist",
                    topic=tp.topic, partition=tp.partition)
                continue
            if part.leader < 0:
                need_refresh = True
                continue
            by_node.setdefault(part.leader, []).append(tp)
        if need_refresh:
            self.mark_metadata_stale()
        return by_node, failed

    def route_coordinators(self, key_of: Callable[[K], str], key_type: int = COORDINATOR_GROUP) -> Router[K]:
        """A router sending each item to the coordinator of ``key_of(item)``."""

        async def route(keys: list[K], deadline: float) -> Route[K]:
            await self.ensure_metadata(deadline)
            by_node: dict[int, list[K]] = {}
            failed: dict[K, KafkaError] = {}
            ids = sorted({key_of(k) for k in keys})
            found = await asyncio.gather(
                *(self.client.find_coordinator(i, key_type, timeout_s=max(0.001, deadline - time.monotonic()))
                  for i in ids),
                return_exceptions=True,
            )
            node_of: dict[str, int | BaseException] = dict(zip(ids, found))
            for k in keys:
                node = node_of[key_of(k)]
                if isinstance(node, BaseException):
                    if not isinstance(node, KafkaError):
                        raise node
                    resource = ({"group_id": key_of(k)} if key_type == COORDINATOR_GROUP
                                else {"transactional_id": key_of(k)})
                    failed[k] = node.with_context(**resource)
                else:
                    by_node.setdefault(node, []).append(k)
            return by_node, failed

        return route

    def route_to(self, node_of: Callable[[K], int]) -> Router[K]:
        """A router sending each item to a fixed broker (``node_of(item)``; -1: any)."""

        async def route(keys: list[K], deadline: float) -> Route[K]:
            await self.ensure_metadata(deadline)
            by_node: dict[int, list[K]] = {}
            for k in keys:
                node = node_of(k)
                by_node.setdefault(self.client.least_loaded_node() if node < 0 else node, []).append(k)
            return by_node, {}

        return route

    # ------------------------------------------------------------ sending

    async def send(self, node: int, request: Request[ResponseT], deadline: float, *, min_version: int = 0,
                   max_version: int | None = None) -> tuple[ResponseT, int]:
        """Send ``request`` to ``node``; returns (response, version used)."""
        timeout_s = self.request_timeout_s(deadline)
        try:
            conn = await asyncio.wait_for(self.client.connection(node), timeout_s)
        except asyncio.TimeoutError:
            raise KafkaTimeoutError(f"could not connect to node {node} in time") from None
        version = conn.api_version(type(request), min_version)
        if max_version is not None:
            version = min(version, max_version)
        response = await conn.request(request, api_version=version,
                                      timeout_ms=self.request_timeout_s(deadline) * 1000)
        return response, version

    async def run_batch(self, what: str, keys: Sequence[K], router: Router[K], sender: Sender[K, V],
                        timeout: float | None, *, deadline: float | None = None,
                        resource_of: Callable[[K], dict[str, Any]] | None = None) -> AdminResult[K, V]:
        """Settle every key (see the module doc); returns the per-key results."""
        self.telemetry.start(asyncio.get_running_loop())
        if self.client.closed:
            raise ClientClosedError("the admin client is closed")
        deadline = self.deadline(timeout) if deadline is None else deadline
        settled: dict[K, ItemResult[V]] = {}
        last_error: dict[K, KafkaError] = {}
        pending: list[K] = list(dict.fromkeys(keys))
        attempt = 0
        max_retries = self.cfg["retries"]
        while pending:
            retry: list[K] = []
            try:
                routed, failed = await router(pending, deadline)
            except (KafkaTimeoutError, KafkaConnectionError) as exc:
                routed, failed = {}, {}  # nothing routed: all retried
                for k in pending:
                    last_error[k] = exc
                retry = list(pending)
            except KafkaError as exc:
                if exc.retriable:
                    routed, failed, retry = {}, {}, list(pending)
                    for k in pending:
                        last_error[k] = exc
                else:
                    routed, failed = {}, {k: exc for k in pending}
            for k, err in failed.items():
                settled[k] = ItemResult(error=_with_resource(err, k, resource_of))
            routed_keys = {k for ks in routed.values() for k in ks}
            retry.extend(k for k in pending if k not in routed_keys and k not in failed and k not in retry)
            if routed:
                nodes = list(routed)
                answers = await asyncio.gather(
                    *(sender(n, routed[n], deadline) for n in nodes), return_exceptions=True
                )
                for node, answer in zip(nodes, answers):
                    node_keys = routed[node]
                    if isinstance(answer, BaseException):
                        if isinstance(answer, asyncio.CancelledError) or not isinstance(answer, Exception):
                            raise answer
                        err = answer if isinstance(answer, KafkaError) else KafkaError(
                            f"{what} failed on node {node}: {answer!r}")
                        if isinstance(err, (KafkaConnectionError, KafkaTimeoutError)) or err.retriable:
                            if isinstance(err, (KafkaConnectionError, NotControllerError, InvalidMetadataError)):
                                self.mark_metadata_stale()
                            for k in node_keys:
                                last_error[k] = err
                            retry.extend(node_keys)
                        else:
                            for k in node_keys:
                                settled[k] = ItemResult(error=_with_resource(err, k, resource_of))
                        continue
                    for k in node_keys:
                        if k not in answer:
                            settled[k] = ItemResult(error=_with_resource(KafkaError(
                                f"{what}: the broker's response did not mention {k}"), k, resource_of))
                            continue
                        outcome = answer[k]
                        if isinstance(outcome, Retry):
                            last_error[k] = outcome.error
                            if outcome.refresh_metadata:
                                self.mark_metadata_stale()
                            retry.append(k)
                        elif isinstance(outcome, Fail):
                            settled[k] = ItemResult(error=_with_resource(outcome.error, k, resource_of))
                        else:
                            settled[k] = ItemResult(outcome)
            pending = list(dict.fromkeys(retry))
            if not pending:
                break
            delay = self._backoff.delay_s(attempt)
            if _throttled(last_error, pending):
                delay = max(delay, self.cfg["retry.backoff.max.ms"] / 1000.0)
            attempt += 1
            if time.monotonic() + delay >= deadline or attempt > max_retries:
                for k in pending:
                    cause = last_error.get(k)
                    why = f"; last error: {cause}" if cause else ""
                    settled[k] = ItemResult(error=_with_resource(
                        KafkaTimeoutError(f"{what} did not complete in time after {attempt} attempt(s){why}"),
                        k, resource_of))
                break
            log.debug("%s: retrying %d item(s) in %.0f ms", what, len(pending), delay * 1000)
            await asyncio.sleep(delay)
        return AdminResult(what, {k: settled[k] for k in dict.fromkeys(keys)})

    async def run_single(self, what: str, router: Router[None], sender: Callable[[int, float], Awaitable[V]],
                         timeout: float | None) -> V:
        """A call with one result: retried like an item, raises its error."""

        async def send(node: int, keys: list[None], deadline: float) -> Mapping[None, Outcome[V]]:
            return {None: await sender(node, deadline)}

        result = await self.run_batch(what, [None], router, send, timeout)
        return result[None].result()

    async def close(self) -> None:
        try:
            await self.telemetry.close(1.0)
        finally:
            await self.client.close()


def _throttled(errors: Mapping[K, KafkaError], keys: list[K]) -> bool:
    return any(isinstance(errors.get(k), ThrottlingQuotaExceededError) for k in keys)


def _with_resource(err: KafkaError, key: K, resource_of: Callable[[K], dict[str, Any]] | None) -> KafkaError:
    if isinstance(key, TopicPartition):
        return err.with_context(topic=key.topic, partition=key.partition)
    if resource_of is not None:
        return err.with_context(**resource_of(key))
    return err


def raise_response_error(code: int, message: str | None, what: str, **resource: Any) -> None:
    """Raise the error of a whole response (retried by the driver when retriable)."""
    if code:
        raise error_for_code(code, message or f"{what} failed", **resource)


def is_coordinator_error(code: int) -> bool:
    return code in COORDINATOR_MOVED or code == COORDINATOR_LOADING


def coordinator_outcome(client: NetworkClient, code: int, message: str | None, group: str,
                        key_type: int = COORDINATOR_GROUP, **resource: Any) -> Fail | Retry | None:
    """Outcome of a coordinator-routed item: forget a moved coordinator, retry loading."""
    if not code:
        return None
    if code in COORDINATOR_MOVED:
        client.invalidate_coordinator(group, key_type)
    res = dict(resource)
    if key_type == COORDINATOR_GROUP:
        res.setdefault("group_id", group)
    else:
        res.setdefault("transactional_id", group)
    return outcome_for(code, message, **res)


__all__ = ["AdminCore", "ApiError", "Fail", "Retry", "coordinator_outcome", "outcome_for"]
