"""Client metrics with the Java client's names (``record-send-rate``, ``records-lag-max``, ...).

A :class:`Metrics` registry holds sensors; a sensor records values and feeds one or more
statistics (rate, average, max, total, count) computed over a sliding window of
``metrics.num.samples`` samples of ``metrics.sample.window.ms`` each, as Java's
``org.apache.kafka.common.metrics`` does. Recording is cheap (no allocation per value),
so the hot paths record per batch or per request, not per record.

Example::

    metrics = Metrics(window_ms=30000, samples=2)
    send = metrics.sensor("record-send")
    send.add_rate("record-send-rate", "producer-metrics", "Records sent per second")
    send.add_total("record-send-total", "producer-metrics", "Records sent")
    send.record(500)            # a batch of 500 records
    metrics.snapshot()          # {MetricName('record-send-rate', 'producer-metrics', ...): 16.6, ...}
"""

from __future__ import annotations

import enum
import math
import threading
import time
from collections.abc import Callable
from typing import NamedTuple


class MetricKind(enum.Enum):
    """What a metric is, for exporters (OpenTelemetry, KIP-714): a cumulative, monotonic
    ``SUM`` (the ``*-total`` metrics: Java's CumulativeSum / CumulativeCount) or a
    ``GAUGE`` (rates, averages, maxima, current values)."""

    SUM = "sum"
    GAUGE = "gauge"


SUM = MetricKind.SUM
GAUGE = MetricKind.GAUGE


class RecordingLevel(enum.IntEnum):
    """How fine a sensor is (``metrics.recording.level``), as Java's ``Sensor.RecordingLevel``.

    A registry at level L records the sensors at L and below: INFO records INFO sensors,
    DEBUG adds DEBUG ones, TRACE adds TRACE ones. Every sensor of the Java producer,
    consumer and admin client is INFO (kafka-clients 3.9 and 4.3 create none at DEBUG or
    TRACE; only Kafka Streams has finer ones), and so is every kafkalite client sensor.
    """

    INFO = 0
    DEBUG = 1
    TRACE = 2

    @classmethod
    def named(cls, name: str) -> RecordingLevel:
        """``"DEBUG"`` -> DEBUG; a name that is no level is a :class:`~kafkalite.errors.ConfigError`."""
        try:
            return cls[name.strip().upper()]
        except (KeyError, AttributeError):
            from kafkalite.errors import ConfigError

            raise ConfigError(f"setting 'metrics.recording.level' must be INFO, DEBUG or TRACE, got {name!r}") from None


class MetricName(NamedTuple):
    name: str
    group: str
    tags: tuple[tuple[str, str], ...] = ()
    description: str = ""

    def key(self) -> str:
        tags = ",".join(f"{k}={v}" for k, v in self.tags)
        return f"{self.group}:{self.name}" + (f"{{{tags}}}" if tags else "")


class _Windowed:
    """Per-sample accumulators in a ring of ``samples`` windows."""

    __slots__ = ("_counts", "_index", "_maxes", "_starts", "_sums", "samples", "window_s")

    def __init__(self, window_ms: int, samples: int) -> None:
        self.window_s = window_ms / 1000.0
        self.samples = samples
        now = time.monotonic()
        self._starts = [now] * samples
        self._sums = [0.0] * samples
        self._counts = [0] * samples
        self._maxes = [-math.inf] * samples
        self._index = 0

    def _advance(self, now: float) -> None:
        i = self._index
        if now - self._starts[i] >= self.window_s:
            i = (i + 1) % self.samples
            self._index = i
            self._starts[i] = now
            self._sums[i] = 0.0
            self._counts[i] = 0
            self._maxes[i] = -math.inf

    def record(self, value: float, now: float) -> None:
        self._advance(now)
        i = self._index
        self._sums[i] += value
        self._counts[i] += 1
        if value > self._maxes[i]:
            self._maxes[i] = value

    def _live(self, now: float) -> list[int]:
        horizon = self.window_s * self.samples
        return [i for i in range(self.samples) if now - self._starts[i] < horizon]

    def total(self, now: float) -> float:
        return sum(self._sums[i] for i in self._live(now))

    def count(self, now: float) -> int:
        return sum(self._counts[i] for i in self._live(now))

    def max(self, now: float) -> float:
        live = [self._maxes[i] for i in self._live(now) if self._counts[i]]
        return max(live) if live else math.nan

    def elapsed(self, now: float) -> float:
        live = self._live(now)
        if not live:
            return self.window_s
        oldest = min(self._starts[i] for i in live)
        # Java's Rate: elapsed covers at least (samples - 1) full windows, so a fresh
        # sensor does not report an inflated rate from a tiny denominator.
        return max(now - oldest, self.window_s * (self.samples - 1), 1e-3)


class Sensor:
    """Records values; the metrics added to it read the windowed statistics."""

    def __init__(self, registry: Metrics, name: str, level: RecordingLevel = RecordingLevel.INFO) -> None:
        self.name = name
        self.level = level
        self._registry = registry
        self._window = _Windowed(registry.window_ms, registry.samples)
        self._cumulative_total = 0.0
        self._cumulative_count = 0
        self._lock = threading.Lock()
        if not self.should_record():
            # Finer than the registry's level: recording does nothing (Java's shouldRecord()),
            # decided once here so that recorded sensors pay no check per value.
            self.record = self._ignore  # type: ignore[method-assign]

    def should_record(self) -> bool:
        """True if the registry's ``metrics.recording.level`` includes this sensor's level."""
        return self.level <= self._registry.record_level

    def _ignore(self, value: float = 1.0, now: float | None = None) -> None:
        return None

    def record(self, value: float = 1.0, now: float | None = None) -> None:
        if now is None:
            now = time.monotonic()
        with self._lock:
            self._window.record(value, now)
            self._cumulative_total += value
            self._cumulative_count += 1

    def _add(self, name: str, group: str, description: str, tags: dict[str, str] | None,
             fn: Callable[[float], float], kind: MetricKind = GAUGE) -> Sensor:
        metric = MetricName(name, group, tuple(sorted((tags or {}).items())), description)
        self._registry._metrics[metric] = fn
        if kind is not GAUGE:
            self._registry._kinds[metric] = kind
        return self

    def add_rate(self, name: str, group: str, description: str = "", tags: dict[str, str] | None = None) -> Sensor:
        """Sum of recorded values per second over the window (e.g. records/s, bytes/s)."""
        return self._add(name, group, description, tags, lambda now: self._window.total(now) / self._window.elapsed(now))

    def add_count_rate(self, name: str, group: str, description: str = "", tags: dict[str, str] | None = None) -> Sensor:
        """Number of recordings per second over the window (e.g. requests/s)."""
        return self._add(name, group, description, tags, lambda now: self._window.count(now) / self._window.elapsed(now))

    def add_meter(self, rate_name: str, total_name: str, group: str, what: str,
                  tags: dict[str, str] | None = None, *, count: bool = False) -> Sensor:
        """A rate and its cumulative total, as Java's ``Meter``: ``rate_name`` ("``what`` per
        second") and ``total_name`` ("``what``"), of the recorded values (or, with
        ``count``, of the recordings)."""
        if count:
            self.add_count_rate(rate_name, group, f"{what} per second", tags)
            return self.add_count(total_name, group, what, tags)
        self.add_rate(rate_name, group, f"{what} per second", tags)
        return self.add_total(total_name, group, what, tags)

    def add_avg(self, name: str, group: str, description: str = "", tags: dict[str, str] | None = None) -> Sensor:
        def avg(now: float) -> float:
            count = self._window.count(now)
            return self._window.total(now) / count if count else math.nan
        return self._add(name, group, description, tags, avg)

    def add_max(self, name: str, group: str, description: str = "", tags: dict[str, str] | None = None) -> Sensor:
        return self._add(name, group, description, tags, self._window.max)

    def add_total(self, name: str, group: str, description: str = "", tags: dict[str, str] | None = None) -> Sensor:
        """Cumulative sum since the client started."""
        return self._add(name, group, description, tags, lambda now: self._cumulative_total, SUM)

    def add_count(self, name: str, group: str, description: str = "", tags: dict[str, str] | None = None) -> Sensor:
        """Cumulative number of recordings since the client started."""
        return self._add(name, group, description, tags, lambda now: float(self._cumulative_count), SUM)


class MetricsSnapshot(dict[MetricName, float]):
    """What every client's ``metrics()`` returns: ``{MetricName: value}``.

    Keys are full :class:`MetricName` s (name, group, tags), as Java's ``metrics()`` map,
    so per-topic and per-node metrics stay apart. A plain string looks a metric up by its
    Java name in the client's main group (``snapshot["record-send-rate"]``).
    """

    def __init__(self, values: dict[MetricName, float], primary_group: str | None = None) -> None:
        super().__init__(values)
        self.primary_group = primary_group

    def _find(self, name: str) -> MetricName | None:
        # Prefer the main group, then client-wide metrics (tagged with client-id at most)
        # over per-topic / per-partition / per-node ones.
        def rank(m: MetricName) -> tuple[bool, bool]:
            per_resource = any(k != "client-id" for k, _ in m.tags)
            return (self.primary_group is not None and m.group != self.primary_group, per_resource)

        candidates = [m for m in self if m.name == name]
        return min(candidates, key=rank) if candidates else None

    def __getitem__(self, key: MetricName | str) -> float:
        if isinstance(key, str) and not isinstance(key, MetricName):
            metric = self._find(key)
            if metric is None:
                # The mapping protocol (`in`, .get()) expects KeyError from __getitem__.
                raise KeyError(f"no metric named {key!r}")
            return super().__getitem__(metric)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str) and not isinstance(key, MetricName):
            return self._find(key) is not None
        return super().__contains__(key)

    # Mapping.get's overloads take MetricName keys only; this also takes a metric's name.
    def get(self, key: MetricName | str, default: float | None = None) -> float | None:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default

    def by_name(self) -> dict[str, float]:
        """Client-wide metrics as ``{java name: value}`` (main group first)."""
        out: dict[str, float] = {}
        for m in {m.name for m in self}:
            metric = self._find(m)
            if metric is not None and not any(k != "client-id" for k, _ in metric.tags):
                out[m] = super().__getitem__(metric)
        return out


class Metrics:
    """A client's metric registry: sensors plus gauges, read with :meth:`snapshot`."""

    def __init__(self, window_ms: int = 30000, samples: int = 2,
                 record_level: RecordingLevel | str = RecordingLevel.INFO) -> None:
        self.window_ms = window_ms
        self.samples = samples
        self.record_level = (record_level if isinstance(record_level, RecordingLevel)
                             else RecordingLevel.named(record_level))
        self._sensors: dict[str, Sensor] = {}
        self._metrics: dict[MetricName, Callable[[float], float]] = {}
        self._kinds: dict[MetricName, MetricKind] = {}

    def sensor(self, name: str, level: RecordingLevel = RecordingLevel.INFO) -> Sensor:
        """Get or create the sensor called ``name``; at a ``level`` finer than the
        registry's ``record_level`` its metrics exist but it records nothing (as Java)."""
        sensor = self._sensors.get(name)
        if sensor is None:
            sensor = self._sensors[name] = Sensor(self, name, level)
        return sensor

    def gauge(self, name: str, group: str, fn: Callable[[], float], description: str = "",
              tags: dict[str, str] | None = None) -> None:
        """A metric read from ``fn()`` when asked (e.g. buffer-available-bytes)."""
        self._metrics[MetricName(name, group, tuple(sorted((tags or {}).items())), description)] = lambda now: fn()

    def remove(self, group: str, tags: dict[str, str]) -> None:
        """Drop the metrics of one group with these tags (e.g. a revoked partition)."""
        wanted = tuple(sorted(tags.items()))
        for metric in [m for m in self._metrics if m.group == group and m.tags == wanted]:
            del self._metrics[metric]
            self._kinds.pop(metric, None)

    def kind(self, metric: MetricName) -> MetricKind:
        """:data:`SUM` for cumulative totals and counts, :data:`GAUGE` for everything else."""
        return self._kinds.get(metric, GAUGE)

    def snapshot(self, primary_group: str | None = None) -> MetricsSnapshot:
        """Every metric's current value (NaN when there is nothing to report yet)."""
        now = time.monotonic()
        out: dict[MetricName, float] = {}
        for metric, fn in list(self._metrics.items()):
            try:
                value = float(fn(now))
            except Exception:  # a gauge must never break metrics() for the others
                value = math.nan
            out[metric] = math.nan if math.isinf(value) else value
        return MetricsSnapshot(out, primary_group)

