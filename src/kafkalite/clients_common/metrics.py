"""The metrics the consumer and the share consumer both keep, each under its own groups.

Java's consumer and share consumer register the same names for their fetch requests,
heartbeats, rebalances and polls (``consumer-fetch-manager-metrics`` /
``consumer-share-fetch-manager-metrics`` ...); :class:`GroupConsumerMetrics` registers
them once for either, and each client's metrics class adds its own:

* fetch group: fetch-latency-avg/max, fetch-rate, fetch-total (one recording per
  Fetch / ShareFetch answer);
* coordinator group: heartbeat-response-time-max, heartbeat-rate, heartbeat-total,
  last-heartbeat-seconds-ago, rebalance-total, rebalance-rate-per-hour;
* consumer group: time-between-poll-avg/max, last-poll-seconds-ago.

Example::

    registry = Metrics()
    metrics = GroupConsumerMetrics(registry, MetricGroups("f", "c", "m"), {"client-id": "c-1"},
                                   sensor_prefix="", fetch_request="Fetch request",
                                   rebalances="Completed rebalances")
    metrics.record_poll(time.monotonic())
    metrics.fetch_latency.record(12.5)
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

from kafkalite.metrics import Metrics

__all__ = ["GroupConsumerMetrics", "MetricGroups"]


class MetricGroups(NamedTuple):
    """A consumer kind's metric group names."""

    fetch: str
    coordinator: str
    consumer: str


class GroupConsumerMetrics:
    """Fetch latency, heartbeat, rebalance and poll metrics; ``registry`` is what the
    client's ``metrics()`` reads."""

    def __init__(self, registry: Metrics, groups: MetricGroups, tags: dict[str, str] | None, *,
                 sensor_prefix: str, fetch_request: str, rebalances: str) -> None:
        """``fetch_request`` and ``rebalances`` name what is counted in the descriptions
        (``"ShareFetch request"``, ``"Assignment changes"``)."""
        self.registry = registry
        self._tags = tags
        fetch, coordinator, consumer = groups
        s = registry.sensor(f"{sensor_prefix}fetch-latency")
        s.add_avg("fetch-latency-avg", fetch, f"Average time a {fetch_request} takes (ms)", tags)
        s.add_max("fetch-latency-max", fetch, f"Longest {fetch_request} (ms)", tags)
        s.add_meter("fetch-rate", "fetch-total", fetch, f"{fetch_request}s", tags, count=True)
        self.fetch_latency = s
        s = registry.sensor(f"{sensor_prefix}heartbeat-latency")
        s.add_max("heartbeat-response-time-max", coordinator, "Longest heartbeat response time (ms)", tags)
        s.add_meter("heartbeat-rate", "heartbeat-total", coordinator, "Heartbeats", tags, count=True)
        self.heartbeat_latency = s
        self.last_heartbeat = math.nan
        registry.gauge("last-heartbeat-seconds-ago", coordinator, lambda: time.monotonic() - self.last_heartbeat,
                       "Seconds since the last heartbeat", tags)
        s = registry.sensor(f"{sensor_prefix}rebalance")
        s.add_count("rebalance-total", coordinator, rebalances, tags)
        s.add_count_rate("rebalance-rate-per-hour", coordinator, f"{rebalances} (per second in the window)", tags)
        self.rebalance = s
        self.last_poll = math.nan
        s = registry.sensor(f"{sensor_prefix}time-between-poll")
        s.add_avg("time-between-poll-avg", consumer, "Average time between poll() calls (ms)", tags)
        s.add_max("time-between-poll-max", consumer, "Longest time between poll() calls (ms)", tags)
        self.time_between_poll = s
        registry.gauge("last-poll-seconds-ago", consumer, lambda: time.monotonic() - self.last_poll,
                       "Seconds since the last poll()", tags)

    def record_poll(self, now: float) -> None:
        """poll() was called at ``now`` (``time.monotonic()``)."""
        if not math.isnan(self.last_poll):
            self.time_between_poll.record((now - self.last_poll) * 1000.0, now)
        self.last_poll = now
