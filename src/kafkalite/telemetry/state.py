"""KIP-714 client metrics push: the subscription state machine and the collector (no I/O).

The broker decides what a client pushes: ``GetTelemetrySubscriptions`` answers with a
client instance id (assigned on the first call), a subscription id, the metric name
prefixes wanted (none: nothing to push; ``*`` or an empty prefix: everything), the push
interval, the compression types it accepts (in order of preference), the largest
payload it takes and whether sums are deltas. :class:`TelemetryState` follows Java's
``ClientTelemetryReporter.DefaultClientTelemetrySender``:

* states SUBSCRIPTION_NEEDED -> SUBSCRIPTION_IN_PROGRESS -> PUSH_NEEDED ->
  PUSH_IN_PROGRESS -> PUSH_NEEDED ...; on close TERMINATING_PUSH_NEEDED ->
  TERMINATING_PUSH_IN_PROGRESS -> TERMINATED (one last push with ``terminating``);
* the first push after a new subscription waits 0.5-1.5 push intervals (so clients
  started together do not push together), later pushes one interval;
* no metrics subscribed: ask again after the push interval;
* errors: UNKNOWN_SUBSCRIPTION_ID and UNSUPPORTED_COMPRESSION_TYPE -> a new
  subscription at once; TELEMETRY_TOO_LARGE and THROTTLING_QUOTA_EXCEEDED -> again after
  the interval; INVALID_REQUEST, INVALID_RECORD, UNSUPPORTED_VERSION and anything else ->
  telemetry off for this client; a failed request (connection) -> retry after 5 minutes;
* a change of delta temporality resets the delta ledger.

:class:`MetricCollector` turns a client's metric registry into OTLP points with KIP-714's
names: ``org.apache.kafka.`` + group (``-metrics`` dropped, ``-`` -> ``.``) + name
(``-`` -> ``.``), tag keys in snake_case without ``client_id`` (the broker knows it), sums
for the cumulative ``*-total`` metrics (deltas since the last push when the subscription
asks for delta temporality), gauges otherwise.
"""

from __future__ import annotations

import enum
import math
import random
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kafkalite.metrics import GAUGE, SUM, Metrics
from kafkalite.telemetry.otlp import CUMULATIVE, DELTA, Point

__all__ = ["MetricCollector", "Subscription", "TelemetryState", "telemetry_name"]

DEFAULT_PUSH_INTERVAL_S = 300.0
JITTER = (0.5, 1.5)

# Kafka error codes of the telemetry APIs (Errors.java).
INVALID_REQUEST = 42
INVALID_RECORD = 87
UNSUPPORTED_VERSION = 35
UNKNOWN_SUBSCRIPTION_ID = 117
UNSUPPORTED_COMPRESSION_TYPE = 76
TELEMETRY_TOO_LARGE = 118
THROTTLING_QUOTA_EXCEEDED = 89


class State(enum.Enum):
    SUBSCRIPTION_NEEDED = "subscription_needed"
    SUBSCRIPTION_IN_PROGRESS = "subscription_in_progress"
    PUSH_NEEDED = "push_needed"
    PUSH_IN_PROGRESS = "push_in_progress"
    TERMINATING_PUSH_NEEDED = "terminating_push_needed"
    TERMINATING_PUSH_IN_PROGRESS = "terminating_push_in_progress"
    TERMINATED = "terminated"


_TERMINATING = (State.TERMINATING_PUSH_NEEDED, State.TERMINATING_PUSH_IN_PROGRESS, State.TERMINATED)


@dataclass(frozen=True)
class Subscription:
    """What the broker asked for (GetTelemetrySubscriptions)."""

    client_instance_id: uuid.UUID
    subscription_id: int
    push_interval_s: float
    accepted_compression: tuple[int, ...]
    delta_temporality: bool
    requested_metrics: tuple[str, ...]
    max_bytes: int

    def wants(self, name: str) -> bool:
        if not self.requested_metrics:
            return False
        if self.requested_metrics == ("*",):
            return True
        return any(name.startswith(prefix) for prefix in self.requested_metrics)

    @property
    def wants_anything(self) -> bool:
        return bool(self.requested_metrics)

    @property
    def compression(self) -> int:
        """The broker's preferred codec (0, none, when it lists none)."""
        return self.accepted_compression[0] if self.accepted_compression else 0


class TelemetryState:
    """The push state machine of one client (see the module doc).

    Args:
        clock: monotonic seconds; ``rand``: uniform in [0, 1) (tests pass their own).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 rand: Callable[[], float] = random.random) -> None:
        self.clock = clock
        self.rand = rand
        self.state = State.SUBSCRIPTION_NEEDED
        self.subscription: Subscription | None = None
        self.last_request = 0.0
        self.interval_s = 0.0
        self.enabled = True
        self.disabled_reason = ""

    # ------------------------------------------------------------ timing

    def seconds_to_next(self, request_timeout_s: float) -> float | None:
        """How long until the next request is due (None: never)."""
        if not self.enabled or self.state in (State.TERMINATED, State.TERMINATING_PUSH_IN_PROGRESS):
            return None
        if self.state in (State.SUBSCRIPTION_IN_PROGRESS, State.PUSH_IN_PROGRESS):
            return request_timeout_s
        if self.state is State.TERMINATING_PUSH_NEEDED:
            return 0.0
        return max(0.0, self.last_request + self.interval_s - self.clock())

    # ------------------------------------------------------------ subscription

    def begin_subscription(self) -> uuid.UUID | None:
        """The instance id to send (ZERO on the first call); None if not due."""
        if self.state is not State.SUBSCRIPTION_NEEDED or not self.enabled:
            return None
        self.state = State.SUBSCRIPTION_IN_PROGRESS
        return self.subscription.client_instance_id if self.subscription else uuid.UUID(int=0)

    def on_subscription(self, error_code: int, instance_id: uuid.UUID, subscription_id: int,
                        accepted_compression: Sequence[int], push_interval_ms: int, max_bytes: int,
                        delta: bool, requested: Sequence[str]) -> bool:
        """Apply a GetTelemetrySubscriptions answer; True if the delta ledger must reset."""
        now = self.clock()
        if self.state in _TERMINATING:
            return False
        if error_code:
            self.state = State.SUBSCRIPTION_NEEDED
            self._error(error_code, now)
            return False
        if instance_id.int == 0 and self.subscription is not None:
            instance_id = self.subscription.client_instance_id
        if instance_id.int == 0:
            self._disable("the broker assigned no client instance id")
            return False
        interval = push_interval_ms / 1000.0 if push_interval_ms > 0 else DEFAULT_PUSH_INTERVAL_S
        reset = self.subscription is not None and self.subscription.delta_temporality != delta
        self.subscription = Subscription(instance_id, subscription_id, interval,
                                         tuple(c for c in accepted_compression if 0 <= c <= 4),
                                         delta, tuple(requested or ()), max_bytes)
        self.last_request = now
        if self.subscription.wants_anything:
            self.state = State.PUSH_NEEDED
            low, high = JITTER
            self.interval_s = interval * (low + (high - low) * self.rand())
        else:
            self.state = State.SUBSCRIPTION_NEEDED  # nothing wanted: ask again later
            self.interval_s = interval
        return reset

    # ------------------------------------------------------------ push

    def begin_push(self) -> tuple[Subscription, bool] | None:
        """(subscription, terminating) for the push to send now; None if not due."""
        if not self.enabled or self.subscription is None:
            return None
        if self.state is State.PUSH_NEEDED:
            self.state = State.PUSH_IN_PROGRESS
            return self.subscription, False
        if self.state is State.TERMINATING_PUSH_NEEDED:
            self.state = State.TERMINATING_PUSH_IN_PROGRESS
            return self.subscription, True
        return None

    def on_push(self, error_code: int) -> None:
        """Apply a PushTelemetry answer."""
        now = self.clock()
        if self.state is State.TERMINATING_PUSH_IN_PROGRESS:
            self.state = State.TERMINATED
            return
        if self.state in _TERMINATING:
            return
        if error_code:
            self.state = State.SUBSCRIPTION_NEEDED
            self._error(error_code, now)
            return
        assert self.subscription is not None
        self.state = State.PUSH_NEEDED
        self.last_request = now
        self.interval_s = self.subscription.push_interval_s

    def on_request_failed(self, fatal: bool) -> None:
        """The request itself failed (no answer): retry after the default interval."""
        if self.state is State.TERMINATING_PUSH_IN_PROGRESS:
            self.state = State.TERMINATED
            return
        if self.state in _TERMINATING:
            return
        if fatal:
            self._disable("the broker refused client telemetry")
            return
        self.state = State.SUBSCRIPTION_NEEDED
        self.last_request = self.clock()
        self.interval_s = DEFAULT_PUSH_INTERVAL_S

    def disable(self, reason: str) -> None:
        self._disable(reason)

    def initiate_close(self) -> bool:
        """Ask for the terminating push; False when there is nothing to close out."""
        if self.subscription is None or self.state is State.SUBSCRIPTION_NEEDED or self.state in _TERMINATING \
                or not self.enabled or not self.subscription.wants_anything:
            self.state = State.TERMINATED
            return False
        self.state = State.TERMINATING_PUSH_NEEDED
        return True

    def _error(self, code: int, now: float) -> None:
        self.last_request = now
        if code in (UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE):
            self.interval_s = 0.0
        elif code in (TELEMETRY_TOO_LARGE, THROTTLING_QUOTA_EXCEEDED):
            self.interval_s = self.subscription.push_interval_s if self.subscription else DEFAULT_PUSH_INTERVAL_S
        else:  # INVALID_REQUEST, INVALID_RECORD, UNSUPPORTED_VERSION and anything unknown
            self._disable(f"the broker answered error code {code}")

    def _disable(self, reason: str) -> None:
        self.enabled = False
        self.disabled_reason = reason


# ---------------------------------------------------------------- names and points

_METRICS_WORD = re.compile(r"\.(metrics)")


def telemetry_name(group: str, name: str, prefix: str = "org.apache.kafka") -> str:
    """KIP-714's metric name (Java's ``TelemetryMetricNamingConvention``)."""
    clean_group = _METRICS_WORD.sub("", group.lower().replace("-", "."))
    return f"{prefix}.{clean_group}.{name.lower().replace('-', '.')}"


class MetricCollector:
    """Points to push from one client's registry (sums as cumulative or delta)."""

    def __init__(self, registry: Metrics, exclude_tags: frozenset[str] = frozenset({"client_id"})) -> None:
        self.registry = registry
        self.exclude = exclude_tags
        self.started_ns = time.time_ns()
        self._last: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, float]] = {}

    def reset(self) -> None:
        """Delta temporality changed: start counting afresh."""
        self._last.clear()

    def collect(self, subscription: Subscription, now_ns: int | None = None) -> tuple[list[Point], int]:
        """(points, temporality) for the metrics the subscription wants."""
        now_ns = time.time_ns() if now_ns is None else now_ns
        delta = subscription.delta_temporality
        points = []
        for metric, value in self.registry.snapshot().items():
            name = telemetry_name(metric.group, metric.name)
            if not subscription.wants(name) or math.isnan(value):
                continue
            attrs = {k.replace("-", "_"): v for k, v in metric.tags}
            attrs = {k: v for k, v in attrs.items() if k not in self.exclude}
            if self.registry.kind(metric) is SUM:
                start = self.started_ns
                if delta:
                    key = (name, tuple(sorted(attrs.items())))
                    last = self._last.get(key)
                    self._last[key] = (now_ns, value)
                    if last is not None:
                        start, value = last[0], value - last[1]
                points.append(Point(name, value, attrs, SUM, metric.description, start))
            else:
                points.append(Point(name, value, attrs, GAUGE, metric.description))
        return points, DELTA if delta else CUMULATIVE


def resource_attributes(labels: Mapping[str, str | None]) -> dict[str, str]:
    """Java's resource labels (client_rack, group_id, transactional_id, ...), set ones only."""
    return {k: v for k, v in labels.items() if v}
