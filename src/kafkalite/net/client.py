"""The network client: connections by node, cluster metadata, coordinators (asyncio).

Every kafkalite client (producer, consumer, admin) owns one :class:`NetworkClient` on its
engine's event loop. It bootstraps from ``bootstrap.servers``, keeps one connection per
(node, channel) — the consumer talks to its group coordinator on a channel of its own so
that a long JoinGroup never waits behind a fetch, as the Java client does — reconnects
with exponential backoff and jitter, refreshes metadata on demand and at least every
``metadata.max.age.ms``, and caches group / transaction coordinators.

Example (inside a coroutine)::

    client = NetworkClient(ADMIN_RULES.resolve({"bootstrap.servers": "127.0.0.1:9092"}))
    await client.bootstrap()
    meta = await client.refresh_metadata({"orders"})
    leader = meta.leader_for("orders", 0)
    response = await client.send(leader, some_request)
    await client.close()
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Iterable

from kafkalite.backoff import ExponentialBackoff
from kafkalite.config import Config, parse_host_port
from kafkalite.errors import (
    ApiError,
    AuthenticationError,
    ClientClosedError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kafkalite.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkalite.net.transport import BrokerConnection, ConnectionStats
from kafkalite.protocol.message import Request, ResponseT
from kafkalite.protocol.messages.find_coordinator import FindCoordinatorRequest
from kafkalite.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

log = logging.getLogger("kafkalite.net")


COORDINATOR_GROUP, COORDINATOR_TRANSACTION, COORDINATOR_SHARE = 0, 1, 2
DEFAULT_CHANNEL = "default"
COORDINATOR_CHANNEL = "coordinator"


class _NodeState:
    """Reconnect bookkeeping for one (node, channel)."""

    __slots__ = ("attempts", "auth_error", "connecting", "connection", "next_attempt_at")

    def __init__(self) -> None:
        self.connection: BrokerConnection | None = None
        self.connecting: asyncio.Future[BrokerConnection] | None = None
        self.attempts = 0
        self.next_attempt_at = 0.0
        self.auth_error: AuthenticationError | None = None


class NetworkClient:
    """Connections, metadata and coordinators for one kafkalite client."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.metadata = ClusterMetadata()
        self.bootstrap_nodes = [
            BrokerNode(-1 - i, *parse_host_port(addr)) for i, addr in enumerate(cfg["bootstrap.servers"])
        ]
        self._nodes: dict[tuple[int, str], _NodeState] = {}
        self._reconnect_backoff = ExponentialBackoff(cfg["reconnect.backoff.ms"], cfg["reconnect.backoff.max.ms"])
        self._retry_backoff = ExponentialBackoff(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"])
        # Each failed attempt to a node doubles the next attempt's setup timeout, up to
        # socket.connection.setup.timeout.max.ms (Java's ClusterConnectionStates, KIP-601).
        self._setup_timeout = ExponentialBackoff(cfg["socket.connection.setup.timeout.ms"],
                                                 cfg["socket.connection.setup.timeout.max.ms"])
        self._max_idle_s = cfg["connections.max.idle.ms"] / 1000.0
        self._reaper: asyncio.Task[None] | None = None
        # Whether Metadata requests for named topics may create them on a broker with
        # auto.create.topics.enable: Java's producer always lets them (ProducerMetadata),
        # its consumer as allow.auto.create.topics says (ConsumerMetadata), admin never.
        self.allow_auto_create: bool = cfg.client == "producer" or bool(cfg.get("allow.auto.create.topics", False))
        self._tracked_topics: set[str] = set()
        self._track_all_topics = False
        self._metadata_refresh: asyncio.Future[ClusterMetadata] | None = None
        self._metadata_refresh_topics: set[str] | None = set()
        self._coordinators: dict[tuple[int, str], int] = {}
        self._closed = False
        self._metadata_failures = 0
        self.metadata_waiters: list[asyncio.Future[None]] = []
        self.stats = ConnectionStats()

    # ------------------------------------------------------------ connections

    def _node_address(self, node_id: int) -> BrokerNode | None:
        if node_id < 0:
            idx = -1 - node_id
            return self.bootstrap_nodes[idx] if idx < len(self.bootstrap_nodes) else None
        return self.metadata.broker(node_id)

    def is_ready(self, node_id: int, channel: str = DEFAULT_CHANNEL) -> bool:
        state = self._nodes.get((node_id, channel))
        return bool(state and state.connection and state.connection.connected)

    def connection_if_ready(self, node_id: int, channel: str = DEFAULT_CHANNEL) -> BrokerConnection | None:
        state = self._nodes.get((node_id, channel))
        if state and state.connection and state.connection.connected:
            return state.connection
        return None

    def reconnect_delay(self, node_id: int, channel: str = DEFAULT_CHANNEL) -> float:
        """Seconds until a new connection attempt to ``node_id`` is allowed (0 if now)."""
        state = self._nodes.get((node_id, channel))
        if state is None:
            return 0.0
        return max(0.0, state.next_attempt_at - time.monotonic())

    async def connection(self, node_id: int, channel: str = DEFAULT_CHANNEL) -> BrokerConnection:
        """A connected, negotiated connection to ``node_id`` (connecting if needed).

        Honours the reconnect backoff of the node; concurrent callers share one attempt.
        Raises :class:`KafkaConnectionError` if the attempt fails.
        """
        if self._closed:
            raise ClientClosedError("the client is closed")
        key = (node_id, channel)
        state = self._nodes.get(key)
        if state is None:
            state = self._nodes[key] = _NodeState()
        if state.connection is not None and state.connection.connected:
            # Handed out to be used: not idle (the reaper must not close it meanwhile).
            state.connection.last_used = time.monotonic()
            return state.connection
        if state.connecting is not None:
            return await asyncio.shield(state.connecting)
        if state.auth_error is not None and state.next_attempt_at > time.monotonic():
            # Like Java's NetworkClient: while the reconnect backoff after a refused
            # login runs, callers get that error at once (no waiting, no new attempt).
            raise state.auth_error
        loop = asyncio.get_running_loop()
        state.connecting = loop.create_future()
        try:
            delay = state.next_attempt_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            node = self._node_address(node_id)
            if node is None:
                raise KafkaConnectionError(f"node {node_id} is not in the cluster metadata")
            conn = BrokerConnection(node.host, node.port, self.cfg, node_id=node_id, on_close=self._on_close,
                                    stats=self.stats)
            await conn.connect(self.setup_timeout_s(state.attempts))
        except BaseException as exc:
            state.auth_error = exc if isinstance(exc, AuthenticationError) else None
            state.attempts += 1
            state.next_attempt_at = time.monotonic() + self._reconnect_backoff.delay_s(state.attempts - 1)
            if not state.connecting.done():
                shared: BaseException = exc
                if not isinstance(exc, Exception):
                    # The caller that started the attempt was cancelled (e.g. its own
                    # deadline ran out): the callers sharing the attempt get a retriable
                    # connection error, never a cancellation that is not theirs (a
                    # fetcher that took it for its own shutdown left the node marked busy
                    # forever and stopped fetching its partitions).
                    shared = KafkaConnectionError(f"connecting to node {node_id} was abandoned by the caller "
                                                  "that started it; try again")
                state.connecting.set_exception(shared)
                state.connecting.exception()  # retrieved: no "never retrieved" warnings
            state.connecting = None
            raise
        state.attempts = 0
        state.auth_error = None
        state.connection = conn
        state.connecting.set_result(conn)
        state.connecting = None
        if (self._reaper is None or self._reaper.done()) and self._max_idle_s >= 0 and not self._closed:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_idle(), name="kafkalite-idle-reaper")
        return conn

    def setup_timeout_s(self, failed_attempts: int) -> float:
        """Timeout of the next connection attempt after ``failed_attempts`` failures in a
        row: socket.connection.setup.timeout.ms doubling per failure (+-20 % jitter) up to
        socket.connection.setup.timeout.max.ms, as Java's ClusterConnectionStates."""
        return self._setup_timeout.delay_s(failed_attempts)

    async def _reap_idle(self) -> None:
        """Close connections with nothing in flight and no traffic for
        connections.max.idle.ms (Java's Selector does this in every poll); the next
        request to that node connects again. Brokers close idle connections too (their
        own connections.max.idle.ms, 10 minutes): closing first avoids writing into a
        connection the broker is tearing down."""
        idle = self._max_idle_s
        while not self._closed:
            now = time.monotonic()
            wait = idle
            for state in list(self._nodes.values()):
                conn = state.connection
                if conn is None or not conn.connected:
                    continue
                quiet = now - conn.last_used
                if conn.in_flight == 0 and not conn.reauthenticating and quiet >= idle:
                    log.debug("closing %r: idle for %.0f ms (connections.max.idle.ms)", conn, quiet * 1000)
                    conn.close()
                else:
                    wait = min(wait, max(0.0, idle - quiet))
            await asyncio.sleep(max(wait, 0.01))

    def _on_close(self, conn: BrokerConnection, reason: BaseException | None) -> None:
        for state in self._nodes.values():
            if state.connection is conn:
                state.connection = None
                if isinstance(reason, AuthenticationError):  # a failed re-authentication
                    state.auth_error = reason
                if reason is not None and not self._closed:
                    # A dropped connection is retried after the backoff, not at once.
                    state.attempts += 1
                    state.next_attempt_at = time.monotonic() + self._reconnect_backoff.delay_s(state.attempts - 1)

    async def send(self, node_id: int, request: Request[ResponseT], *, channel: str = DEFAULT_CHANNEL,
                   api_version: int | None = None, timeout_ms: float | None = None) -> ResponseT:
        """Send ``request`` to ``node_id`` and await the response (of the class the
        request names: a ``MetadataRequest`` is answered by a ``MetadataResponse``)."""
        conn = await self.connection(node_id, channel)
        return await conn.request(request, api_version=api_version, timeout_ms=timeout_ms)

    def least_loaded_node(self) -> int:
        """A node to send cluster-wide requests to: connected with fewest in flight, else any.

        Ties go to a random one of them, as Java's ``NetworkClient.leastLoadedNode`` starts
        its scan at a random offset: metadata requests spread over the brokers, so one
        whose metadata lags (it still names a leader epoch the leader has left) does not
        answer every refresh of an idle client.
        """
        best: list[int] = []
        best_load = -1
        for (node_id, channel), state in self._nodes.items():
            if channel != DEFAULT_CHANNEL or (node_id < 0 and self.metadata.brokers):
                continue
            conn = state.connection
            if conn is not None and conn.connected:
                load = conn.in_flight
                if not best or load < best_load:
                    best, best_load = [node_id], load
                elif load == best_load:
                    best.append(node_id)
        if best:
            return best[0] if len(best) == 1 else random.choice(best)
        candidates = [n for n in self.metadata.brokers if self.reconnect_delay(n) == 0]
        if not candidates:
            candidates = list(self.metadata.brokers) or [n.node_id for n in self.bootstrap_nodes]
        return random.choice(candidates)

    # ------------------------------------------------------------ metadata

    async def bootstrap(self, timeout_s: float | None = None) -> ClusterMetadata:
        """Fetch the broker list from any bootstrap address."""
        return await self.refresh_metadata(set(), timeout_s=timeout_s)

    def track_topics(self, topics: Iterable[str]) -> None:
        """Topics whose metadata periodic refreshes keep current."""
        self._tracked_topics.update(topics)

    def untrack_topics(self, topics: Iterable[str]) -> None:
        self._tracked_topics.difference_update(topics)

    def track_all_topics(self, enabled: bool = True) -> None:
        """Refresh metadata for every topic (pattern subscriptions need that)."""
        self._track_all_topics = enabled

    @property
    def tracked_topics(self) -> set[str]:
        return set(self._tracked_topics)

    def metadata_is_stale(self) -> bool:
        age = time.monotonic() - self.metadata.last_update
        return age * 1000 >= self.cfg["metadata.max.age.ms"]

    def metadata_due(self) -> float:
        """When the metadata becomes stale (``metadata.max.age.ms`` after its last update; monotonic)."""
        return self.metadata.last_update + self.cfg["metadata.max.age.ms"] / 1000.0

    async def refresh_metadata(self, topics: Iterable[str] | None = None, *, all_topics: bool = False,
                               allow_auto_create: bool | None = None, timeout_s: float | None = None
                               ) -> ClusterMetadata:
        """Refresh metadata for the tracked topics plus ``topics`` (or all topics).

        Concurrent calls share one request when their topic sets are covered by it.
        Retries across nodes until ``timeout_s`` (default: default.api.timeout.ms or
        max.block.ms) and raises :class:`KafkaTimeoutError` naming the last error.
        ``allow_auto_create`` (default: :attr:`allow_auto_create`) lets a broker with
        ``auto.create.topics.enable`` create the named topics.
        """
        if allow_auto_create is None:
            allow_auto_create = self.allow_auto_create
        wanted: set[str] | None
        if all_topics or self._track_all_topics:
            wanted = None
        else:
            wanted = set(self._tracked_topics) | set(topics or ())
        running = self._metadata_refresh
        if running is not None and not running.done():
            covered = self._metadata_refresh_topics is None or (
                wanted is not None and wanted <= self._metadata_refresh_topics
            )
            if covered:
                return await asyncio.shield(running)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ClusterMetadata] = loop.create_future()
        self._metadata_refresh = future
        self._metadata_refresh_topics = wanted
        try:
            result = await self._refresh(wanted, allow_auto_create, timeout_s)
        except BaseException as exc:
            if not future.done():
                if isinstance(exc, Exception):
                    future.set_exception(exc)
                    future.exception()
                else:
                    future.cancel()
            raise
        future.set_result(result)
        return result

    async def partitions_of(self, topic: str, *, timeout_s: float) -> list[PartitionMetadata]:
        """The partitions of ``topic`` as Java's ``KafkaConsumer.partitionsFor`` finds them
        (``TopicMetadataFetcher``), asking with :attr:`allow_auto_create`.

        A topic the broker does not have (and does not create) has none, at once; an
        unauthorized or invalid topic raises its typed error; retriable answers
        (``LEADER_NOT_AVAILABLE`` while an auto-created topic gets its leaders) are asked
        again with backoff until ``timeout_s``, then :class:`KafkaTimeoutError`.
        """
        deadline = time.monotonic() + timeout_s
        attempt = 0
        while True:
            meta = await self.refresh_metadata({topic}, timeout_s=max(deadline - time.monotonic(), 0.001))
            code = meta.topic_errors.get(topic)
            if code is None:
                return meta.partitions_for(topic)
            if code == UnknownTopicOrPartitionError.code:
                return []
            error = error_for_code(code, "cannot get the partitions of this topic", topic=topic)
            if not error.retriable:
                raise error
            delay = self._retry_backoff.delay_s(attempt)
            attempt += 1
            if time.monotonic() + delay >= deadline:
                raise KafkaTimeoutError(f"the partitions of topic '{topic}' were not known within "
                                        f"{timeout_s * 1000:.0f} ms: {error}", topic=topic)
            await asyncio.sleep(delay)

    async def _refresh(self, wanted: set[str] | None, allow_auto_create: bool,
                       timeout_s: float | None) -> ClusterMetadata:
        if timeout_s is None:
            timeout_s = self.cfg.get("default.api.timeout.ms", self.cfg.get("max.block.ms", 60000)) / 1000.0
        deadline = time.monotonic() + timeout_s
        attempt = 0
        last_error: Exception | None = None
        while True:
            if self._closed:
                raise ClientClosedError("the client is closed")
            node = self._metadata_node(attempt)
            remaining = deadline - time.monotonic()
            try:
                conn = await asyncio.wait_for(self.connection(node), max(remaining, 0.001))
                version = conn.api_version(MetadataRequest)
                request = MetadataRequest(
                    topics=None if wanted is None else [MetadataRequestTopic(name=t) for t in sorted(wanted)],
                    allow_auto_topic_creation=allow_auto_create and wanted is not None,
                )
                response = await asyncio.wait_for(conn.request(request, api_version=version),
                                                  max(deadline - time.monotonic(), 0.001))
                if response.error_code:  # top-level error (v10+; 0 in older versions)
                    raise error_for_code(response.error_code, "metadata request failed")
                self.metadata.update(response, wanted, time.monotonic())
                self._metadata_failures = 0
                self._wake_metadata_waiters()
                return self.metadata
            except (KafkaConnectionError, KafkaTimeoutError, asyncio.TimeoutError, ApiError) as exc:
                # A connection that failed earlier says more than the timeout that follows it.
                last_error = exc if isinstance(exc, KafkaError) else (
                    last_error or KafkaTimeoutError("metadata request timed out"))
                if isinstance(exc, ApiError) and not exc.retriable:
                    raise
                attempt += 1
                self._metadata_failures += 1
                delay = self._retry_backoff.delay_s(attempt - 1)
                if time.monotonic() + delay >= deadline:
                    raise KafkaTimeoutError(
                        f"could not fetch metadata within {timeout_s * 1000:.0f} ms"
                        f" (bootstrap.servers={','.join(self.cfg['bootstrap.servers'])}): {last_error}"
                    ) from None
                await asyncio.sleep(delay)

    def _metadata_node(self, attempt: int) -> int:
        # KIP-899: when no known broker answers for a while, start over from bootstrap.servers.
        if not self.metadata.brokers or (
            self._metadata_failures >= 2 * max(1, len(self.metadata.brokers))
            and self.cfg["metadata.recovery.strategy"] == "rebootstrap"
        ):
            return self.bootstrap_nodes[attempt % len(self.bootstrap_nodes)].node_id
        if attempt == 0:
            return self.least_loaded_node()
        nodes = sorted(self.metadata.brokers)
        return nodes[attempt % len(nodes)]

    def _wake_metadata_waiters(self) -> None:
        waiters, self.metadata_waiters = self.metadata_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def wait_for_metadata_update(self, timeout_s: float) -> None:
        """Wait until the next metadata update (or the timeout)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.metadata_waiters.append(future)
        try:
            await asyncio.wait_for(future, timeout_s)
        except asyncio.TimeoutError:
            pass

    # ------------------------------------------------------------ coordinators

    async def find_coordinator(self, key: str, key_type: int = COORDINATOR_GROUP,
                               timeout_s: float | None = None) -> int:
        """Node id of the group / transaction / share coordinator for ``key`` (cached)."""
        cached = self._coordinators.get((key_type, key))
        if cached is not None and cached in self.metadata.brokers:
            return cached
        timeout_s = timeout_s if timeout_s is not None else self.cfg.get("default.api.timeout.ms", 60000) / 1000
        deadline = time.monotonic() + timeout_s
        attempt = 0
        while True:
            node = self.least_loaded_node()
            try:
                conn = await asyncio.wait_for(self.connection(node), max(deadline - time.monotonic(), 0.001))
                version = conn.api_version(FindCoordinatorRequest)
                if version >= 4:
                    req = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
                else:
                    req = FindCoordinatorRequest(key=key, key_type=key_type)
                resp = await asyncio.wait_for(conn.request(req, api_version=version),
                                              max(deadline - time.monotonic(), 0.001))
                if version >= 4:
                    c = resp.coordinators[0]
                    code, msg, node_id, host, port = c.error_code, c.error_message, c.node_id, c.host, c.port
                else:
                    code, msg, node_id, host, port = resp.error_code, resp.error_message, resp.node_id, resp.host, resp.port
                if code:
                    raise error_for_code(code, msg or f"FindCoordinator for {key!r} failed")
                self.metadata.add_broker(BrokerNode(node_id, host, port))
                self._coordinators[(key_type, key)] = node_id
                return node_id
            except (KafkaConnectionError, KafkaTimeoutError, asyncio.TimeoutError, ApiError) as exc:
                if isinstance(exc, ApiError) and not exc.retriable:
                    raise
                attempt += 1
                delay = self._retry_backoff.delay_s(attempt - 1)
                if time.monotonic() + delay >= deadline:
                    what = {0: "group", 1: "transaction", 2: "share"}.get(key_type, "")
                    raise KafkaTimeoutError(
                        f"could not find the {what} coordinator for {key!r} within {timeout_s:.1f}s: {exc}"
                    ) from None
                await asyncio.sleep(delay)

    def invalidate_coordinator(self, key: str, key_type: int = COORDINATOR_GROUP) -> None:
        """Forget a coordinator after NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE."""
        self._coordinators.pop((key_type, key), None)

    # ------------------------------------------------------------ shutdown

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
        for state in self._nodes.values():
            if state.connection is not None:
                state.connection.close(ClientClosedError("the client is closed"))
            if state.connecting is not None and not state.connecting.done():
                state.connecting.cancel()
        self._nodes.clear()
        self._wake_metadata_waiters()
        await asyncio.sleep(0)
