"""A client's ``metrics()`` as OpenTelemetry observable instruments (``otel.meter.provider``).

Every metric of the client's registry becomes an observable instrument read when the
application's metric reader collects (nothing is recorded twice, and the OTel SDK does
not run on kafkalite's hot paths):

* names follow the OpenTelemetry Java instrumentation's Kafka metrics bridge, so the
  same dashboards serve Java and Python clients: ``kafka.<client>.<java name>`` with
  ``-`` turned into ``_`` (``record-send-rate`` -> ``kafka.producer.record_send_rate``,
  ``records-lag`` -> ``kafka.consumer.records_lag``); ``<client>`` is ``producer``,
  ``consumer`` (also the share consumer) or ``admin``;
* cumulative ``*-total`` metrics are observable counters, everything else observable
  gauges; the metric's Java tags are the attributes (``client-id``, ``topic``,
  ``partition``, ``node-id``);
* a name reported at several granularities (``fetch-total`` per client and per node)
  is exported only at the finest one, as the Java bridge does, so sums do not count
  twice;
* where the messaging conventions define an instrument it is exported too:
  ``messaging.client.sent.messages`` (from ``record-send-total``) and
  ``messaging.client.consumed.messages`` (from ``records-consumed-total``), or their
  v1.24 names ``messaging.publish.messages`` / ``messaging.receive.messages``, as
  ``OTEL_SEMCONV_STABILITY_OPT_IN`` chooses (:mod:`kafkalite.otel.semconv`);
* NaN values (nothing measured yet) are left out;
* a collection snapshots the registry once, whatever the number of instruments
  (:class:`CycleSnapshot`).

Metrics that appear later (a partition's lag once it is assigned) get their instrument
at the next :meth:`MetricsBridge.refresh`, which the client runs every few seconds.

Example::

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.exporter.prometheus import PrometheusMetricReader

    provider = MeterProvider(metric_readers=[PrometheusMetricReader()])
    consumer = Consumer({..., "otel.meter.provider": provider})
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kafkalite._version import __version__
from kafkalite.config import ADMIN, CONSUMER, PRODUCER, SHARE_CONSUMER
from kafkalite.errors import ConfigError
from kafkalite.metrics import SUM, MetricName, Metrics
from kafkalite.otel.providers import resolve_provider
from kafkalite.otel.semconv import Conventions

__all__ = ["CycleSnapshot", "MetricsBridge", "instrument_name"]

_PREFIX = {PRODUCER: "kafka.producer", CONSUMER: "kafka.consumer", SHARE_CONSUMER: "kafka.consumer",
           ADMIN: "kafka.admin"}


def instrument_name(client_kind: str, java_name: str) -> str:
    """``kafka.<client>.<name>`` with ``-`` -> ``_`` (the Java bridge's naming)."""
    return f"{_PREFIX.get(client_kind, 'kafka')}.{java_name.replace('-', '_').replace('.', '_')}"


def resolve_meter_provider(setting: Any) -> Any:
    """``otel.meter.provider``: a MeterProvider, ``"global"`` or ``"module:attr"``."""
    try:
        from opentelemetry import metrics
    except ImportError:  # pragma: no cover - exercised without the extra installed
        raise ConfigError("setting 'otel.meter.provider' needs the OpenTelemetry API: "
                          "pip install 'kafkalite[otel]'") from None
    return resolve_provider("otel.meter.provider", setting, "get_meter", metrics.get_meter_provider)


class CycleSnapshot:
    """One registry snapshot per collection cycle, indexed by Java name.

    A reader's collection calls every observable instrument's callback once; each would
    otherwise snapshot the whole registry (every partition's lag ...) for its one name,
    which is quadratic in the number of metrics. Here the first callback of a cycle takes
    the snapshot and the others read it: a callback that finds its instrument already
    served from the current snapshot has started the next cycle (the SDK gives callbacks
    no cycle id). Several readers collecting one after the other each get their own.

    >>> cycle = CycleSnapshot(Metrics())
    >>> cycle.values("kafka.producer.record_send_total", "record-send-total")
    []
    """

    def __init__(self, registry: Metrics) -> None:
        self._registry = registry
        self._lock = threading.Lock()  # readers may collect from their own threads
        self._by_name: dict[str, list[tuple[MetricName, float]]] | None = None
        self._served: set[str] = set()
        self.snapshots = 0  # how many were taken (for tests)

    def values(self, instrument: str, java_name: str) -> list[tuple[MetricName, float]]:
        """The (metric, value) pairs named ``java_name`` for ``instrument``'s callback."""
        with self._lock:
            if self._by_name is None or instrument in self._served:
                by_name: dict[str, list[tuple[MetricName, float]]] = {}
                for metric, value in self._registry.snapshot().items():
                    by_name.setdefault(metric.name, []).append((metric, value))
                self._by_name, self._served = by_name, set()
                self.snapshots += 1
            self._served.add(instrument)
            return self._by_name.get(java_name, [])


class MetricsBridge:
    """Observable instruments over one client's :class:`~kafkalite.metrics.Metrics`.

    Args:
        provider: a ``MeterProvider`` or ``"global"``.
        registry: the client's metric registry.
        client_kind: ``producer``, ``consumer``, ``share_consumer`` or ``admin``.
        group_id: the consumer group (for the conventions' instrument attributes).
    """

    def __init__(self, provider: Any, registry: Metrics, client_kind: str, group_id: str | None = None) -> None:
        from opentelemetry.metrics import Observation

        self._observation = Observation
        self.registry = registry
        self.kind = client_kind
        self.meter = resolve_meter_provider(provider).get_meter("kafkalite", __version__)
        self.conventions = Conventions()
        self.group_id = group_id
        self.closed = False
        self._instruments: dict[str, Any] = {}
        self._finest: dict[str, tuple[str, ...]] = {}  # instrument -> the tag keys exported
        self._sources: dict[str, str] = {}  # instrument -> java name
        self._cycle = CycleSnapshot(registry)
        self.refresh()
        self._conventions_instruments()

    def refresh(self) -> None:
        """Create instruments for metrics that appeared since the last call."""
        if self.closed:
            return
        for metric in list(self.registry._metrics):
            name = instrument_name(self.kind, metric.name)
            keys = tuple(k for k, _ in metric.tags)
            known = self._finest.get(name)
            if known is None or len(keys) > len(known):
                self._finest[name] = keys
            if name in self._instruments:
                continue
            self._sources[name] = metric.name
            callback = self._callback(name)
            description = metric.description or metric.name
            if self.registry.kind(metric) is SUM:
                self._instruments[name] = self.meter.create_observable_counter(name, [callback],
                                                                               description=description)
            else:
                self._instruments[name] = self.meter.create_observable_gauge(name, [callback],
                                                                             description=description)

    def _callback(self, name: str) -> Callable[[Any], Iterable[Any]]:
        def observe(_options: Any) -> Iterable[Any]:
            if self.closed:
                return []
            java = self._sources[name]
            keys = self._finest.get(name, ())
            out = []
            for metric, value in self._values(name, java):
                if tuple(k for k, _ in metric.tags) != keys or math.isnan(value):
                    continue
                out.append(self._observation(value, dict(metric.tags)))
            return out
        return observe

    def _values(self, instrument: str, java_name: str) -> list[tuple[MetricName, float]]:
        return self._cycle.values(instrument, java_name)

    def _conventions_instruments(self) -> None:
        counters = self.conventions.message_counters()
        if self.kind == PRODUCER:
            names, source, attrs = counters["sent"], "record-send-total", {"messaging.system": "kafka"}
            if self.conventions.new:
                attrs["messaging.operation.name"] = "send"
        elif self.kind in (CONSUMER, SHARE_CONSUMER):
            names, source, attrs = counters["consumed"], "records-consumed-total", {"messaging.system": "kafka"}
            if self.conventions.new:
                attrs["messaging.operation.name"] = "poll"
            if self.group_id:
                if self.conventions.new:
                    attrs["messaging.consumer.group.name"] = self.group_id
                if self.conventions.old:
                    attrs["messaging.kafka.consumer.group"] = self.group_id
        else:
            return

        def observer(name: str) -> Callable[[Any], Iterable[Any]]:
            def observe(_options: Any) -> Iterable[Any]:
                if self.closed:
                    return []
                values = [v for m, v in self._values(name, source) if all(k == "client-id" for k, _ in m.tags)]
                return [self._observation(values[0], attrs)] if values and not math.isnan(values[0]) else []
            return observe

        for name in names:
            self._instruments[name] = self.meter.create_observable_counter(
                name, [observer(name)], unit="{message}", description=f"Messages ({source} of the Kafka client)")

    def close(self) -> None:
        """Stop reporting (OpenTelemetry has no way to remove an instrument)."""
        self.closed = True
