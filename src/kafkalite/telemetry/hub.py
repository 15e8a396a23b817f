"""What a client runs to get its metrics out: reporters, OpenTelemetry, KIP-714 push.

:class:`ClientTelemetry` is built by every client next to its metric registry and
``NetworkClient`` (producer and consumer front ends or cores, share consumer, admin). It
holds, each only when its setting asks for it:

* ``metric.reporters`` (:mod:`kafkalite.telemetry.reporters`), called every
  ``metrics.report.interval.ms`` and once at close;
* the OpenTelemetry metrics bridge for ``otel.meter.provider``
  (:mod:`kafkalite.otel.metrics`), whose instrument list it refreshes every few seconds;
* the KIP-714 pusher for ``enable.metrics.push`` (:mod:`kafkalite.telemetry.push`).

``start(loop)`` runs their tasks on the client's engine loop; ``close(timeout)`` sends
the terminating push, makes the last report and stops them, before the client's
connections close. Settings errors (a reporter that cannot be loaded, a provider that is
not one) are ``ConfigError`` s at construction.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.metrics import Metrics, MetricsSnapshot
from kafkalite.telemetry.reporters import call_reporters, close_reporters, load_reporters

__all__ = ["ClientTelemetry"]

_BRIDGE_REFRESH_S = 5.0


class ClientTelemetry:
    """The metrics outlets of one client (see the module doc).

    Args:
        cfg: the client's resolved settings.
        kind: ``producer``, ``consumer``, ``share_consumer`` or ``admin``.
        client: its ``NetworkClient``.
        registry: its metrics.
        snapshot: what ``metrics()`` returns (reporters get exactly that).
        labels: KIP-714 resource attributes (``group_id``, ``transactional_id`` ...).
    """

    def __init__(self, cfg: Any, kind: str, client: Any, registry: Metrics,
                 snapshot: Callable[[], MetricsSnapshot] | None = None,
                 labels: Callable[[], Mapping[str, str | None]] | None = None) -> None:
        self.cfg = cfg
        self.registry = registry
        self.snapshot = snapshot or registry.snapshot
        self.reporters = load_reporters(cfg["metric.reporters"], cfg)
        self.report_interval_s = cfg["metrics.report.interval.ms"] / 1000.0
        self.bridge: Any = None
        if cfg["otel.meter.provider"] is not None:
            from kafkalite.otel.metrics import MetricsBridge

            group = cfg.get("group.id")
            self.bridge = MetricsBridge(cfg["otel.meter.provider"], registry, kind, group)
        self.pusher: Any = None
        if cfg["enable.metrics.push"]:
            from kafkalite.telemetry.push import TelemetryPusher

            self.pusher = TelemetryPusher(client, registry, labels or dict, cfg["request.timeout.ms"] / 1000.0)
        self._tasks: list[asyncio.Task[Any]] = []
        self._closed = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the periodic work on the engine loop (idempotent)."""
        if self._tasks or self._closed:
            return
        if self.reporters:
            self._tasks.append(loop.create_task(self._report_loop(), name="kafkalite-metric-reporters"))
        if self.bridge is not None:
            self._tasks.append(loop.create_task(self._refresh_loop(), name="kafkalite-otel-metrics"))
        if self.pusher is not None:
            self._tasks.append(loop.create_task(self.pusher.run(), name="kafkalite-metrics-push"))

    async def _report_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.report_interval_s)
            await loop.run_in_executor(None, call_reporters, self.reporters, self.snapshot())

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(_BRIDGE_REFRESH_S)
            self.bridge.refresh()

    async def close(self, timeout_s: float) -> None:
        """Terminating push, last report, stop (bounded by ``timeout_s``)."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.pusher is not None and self._tasks:
                await self.pusher.close(max(0.0, timeout_s))
        finally:
            for task in self._tasks:
                task.cancel()
            for task in self._tasks:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(task, 1.0)
            self._tasks.clear()
            if self.bridge is not None:
                self.bridge.close()
            if self.reporters:
                loop = asyncio.get_running_loop()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        loop.run_in_executor(None, call_reporters, self.reporters, self.snapshot()),
                        max(0.1, timeout_s))
                close_reporters(self.reporters)
