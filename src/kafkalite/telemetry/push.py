"""KIP-714 metrics push on the client's engine: GetTelemetrySubscriptions / PushTelemetry.

:class:`TelemetryPusher` runs one task per client while ``enable.metrics.push`` is true
(the default for producers and consumers, off for admin clients, as in Java). Every
decision is :class:`~kafkalite.telemetry.state.TelemetryState`'s; this module only sends
the requests to the least loaded broker, encodes the payload
(:mod:`kafkalite.telemetry.otlp`, compressed with the broker's preferred codec) and keeps
it under the subscription's ``telemetry_max_bytes`` by leaving out the metrics that do not
fit. A broker that does not offer the APIs (Kafka before 3.7, or one without a
``ClientTelemetry`` metrics reporter) turns the push off for that client, with a debug
log. ``close()`` sends the terminating push (bounded by the close timeout).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite._version import __version__
from kafkalite.errors import KafkaError
from kafkalite.metrics import Metrics
from kafkalite.protocol import compression
from kafkalite.protocol.messages.get_telemetry_subscriptions import GetTelemetrySubscriptionsRequest
from kafkalite.protocol.messages.push_telemetry import PushTelemetryRequest
from kafkalite.telemetry.otlp import encode_metric, encode_metrics_data
from kafkalite.telemetry.state import MetricCollector, State, TelemetryState, resource_attributes

log = logging.getLogger("kafkalite.telemetry")

__all__ = ["TelemetryPusher"]


class TelemetryPusher:
    """Pushes one client's metrics to the cluster when a subscription asks for them.

    Args:
        client: the client's ``NetworkClient``.
        registry: the client's metrics.
        labels: resource attributes, read at each push (``group_member_id`` changes).
        request_timeout_s: ``request.timeout.ms``.
    """

    def __init__(self, client: Any, registry: Metrics, labels: Callable[[], Mapping[str, str | None]],
                 request_timeout_s: float) -> None:
        self.client = client
        self.state = TelemetryState()
        self.collector = MetricCollector(registry)
        self.labels = labels
        self.request_timeout_s = request_timeout_s
        self._wake = asyncio.Event()
        self.pushes = 0
        self._node: int | None = None

    async def run(self) -> None:
        while True:
            delay = self.state.seconds_to_next(self.request_timeout_s)
            if delay is None or delay > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), delay)
                except asyncio.TimeoutError:
                    pass
                self._wake.clear()
                if delay is None or self.state.seconds_to_next(self.request_timeout_s) != 0.0:
                    continue
            if self.state.state is State.SUBSCRIPTION_NEEDED:
                await self._subscribe()
            elif self.state.state in (State.PUSH_NEEDED, State.TERMINATING_PUSH_NEEDED):
                await self._push()
            else:
                await asyncio.sleep(0.01)

    async def _connection(self, api: Any) -> Any | None:
        # One broker for as long as its connection holds (KIP-714; Java's TelemetrySender
        # keeps a sticky node): the least loaded one is a random pick among idle brokers.
        node = self._node
        if node is None or not self.client.is_ready(node):
            node = self._node = self.client.least_loaded_node()
        conn = await self.client.connection(node)
        versions = conn.versions
        if versions is not None and not versions.supports(api):
            self.state.disable("the broker does not offer KIP-714 client metrics")
            log.debug("client metrics push is off: broker %s does not offer %s (Kafka < 3.7, or no "
                      "ClientTelemetry metrics reporter on the broker)", conn.node_id, api.__name__)
            return None
        return conn

    async def _subscribe(self) -> None:
        instance = self.state.begin_subscription()
        if instance is None:
            return
        try:
            conn = await self._connection(GetTelemetrySubscriptionsRequest)
            if conn is None:
                return
            response = await conn.request(GetTelemetrySubscriptionsRequest(client_instance_id=instance),
                                          timeout_ms=self.request_timeout_s * 1000)
        except (KafkaError, asyncio.TimeoutError, OSError) as exc:
            log.debug("GetTelemetrySubscriptions failed: %s", exc)
            self.state.on_request_failed(fatal=False)
            return
        if self.state.on_subscription(response.error_code, response.client_instance_id, response.subscription_id,
                                      list(response.accepted_compression_types or ()), response.push_interval_ms,
                                      response.telemetry_max_bytes, response.delta_temporality,
                                      list(response.requested_metrics or ())):
            log.info("client metrics: delta temporality changed; counting afresh")
            self.collector.reset()
        if not self.state.enabled:
            log.info("client metrics push is off: %s", self.state.disabled_reason)
        elif self.state.subscription is not None:
            log.debug("client metrics subscription %d: %s every %.1fs", self.state.subscription.subscription_id,
                      list(self.state.subscription.requested_metrics), self.state.subscription.push_interval_s)

    def payload(self, subscription: Any) -> bytes:
        """The (uncompressed) MetricsData of one push, within ``telemetry_max_bytes``."""
        now_ns = time.time_ns()
        points, temporality = self.collector.collect(subscription, now_ns)
        encoded = [encode_metric(p, temporality, now_ns) for p in points]
        budget = subscription.max_bytes - 512 if subscription.max_bytes > 0 else None
        if budget is not None and sum(len(m) for m in encoded) > budget:
            kept, used = [], 0
            for metric in encoded:
                if used + len(metric) > budget:
                    continue
                kept.append(metric)
                used += len(metric)
            log.debug("client metrics: %d of %d metrics fit telemetry_max_bytes=%d", len(kept), len(encoded),
                      subscription.max_bytes)
            encoded = kept
        return encode_metrics_data(encoded, resource_attributes(self.labels()), "kafkalite", __version__)

    async def _push(self) -> None:
        began = self.state.begin_push()
        if began is None:
            return
        subscription, terminating = began
        data = self.payload(subscription)
        codec = subscription.compression
        if codec:
            data = compression.compress(codec, data)
        request = PushTelemetryRequest(client_instance_id=subscription.client_instance_id,
                                       subscription_id=subscription.subscription_id, terminating=terminating,
                                       compression_type=codec, metrics=data)
        try:
            conn = await self._connection(PushTelemetryRequest)
            if conn is None:
                return
            response = await conn.request(request, timeout_ms=self.request_timeout_s * 1000)
        except (KafkaError, asyncio.TimeoutError, OSError) as exc:
            log.debug("PushTelemetry failed: %s", exc)
            self.state.on_request_failed(fatal=False)
            return
        self.pushes += 1
        self.state.on_push(response.error_code)
        if response.error_code:
            log.debug("PushTelemetry answered error code %d", response.error_code)
        if not self.state.enabled:
            log.info("client metrics push is off: %s", self.state.disabled_reason)

    async def close(self, timeout_s: float) -> None:
        """Send the terminating push if a subscription is active (at most ``timeout_s``)."""
        if not self.state.initiate_close():
            return
        self._wake.set()
        deadline = time.monotonic() + timeout_s
        while self.state.state is not State.TERMINATED and self.state.enabled and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
