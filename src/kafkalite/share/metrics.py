"""Share consumer metrics with the Java client's names and groups.

``consumer-share-fetch-manager-metrics``: fetch-size-avg/max, bytes-consumed-rate/total,
records-per-request-avg/max, records-fetched-rate/total (records acquired by this member),
acknowledgements-send-rate/total, acknowledgements-error-rate/total,
fetch-latency-avg/max, fetch-rate, fetch-total, fetch-throttle-time-avg/max.

``consumer-share-coordinator-metrics``: heartbeat-response-time-max, heartbeat-rate,
heartbeat-total, last-heartbeat-seconds-ago, rebalance-total (assignment changes),
rebalance-rate-per-hour.

``consumer-share-metrics``: last-poll-seconds-ago, time-between-poll-avg/max.

Recorded per request, per poll() and per acknowledgement batch, never per record.
"""

from __future__ import annotations

import time

from kafkalite.clients_common.metrics import GroupConsumerMetrics, MetricGroups
from kafkalite.metrics import Metrics

FETCH = "consumer-share-fetch-manager-metrics"
COORDINATOR = "consumer-share-coordinator-metrics"
CONSUMER = "consumer-share-metrics"


class ShareConsumerMetrics(GroupConsumerMetrics):
    """The sensors of one share consumer; ``registry`` is what ``metrics()`` reads."""

    def __init__(self, registry: Metrics, client_id: str = "") -> None:
        tags = {"client-id": client_id} if client_id else None
        super().__init__(registry, MetricGroups(FETCH, COORDINATOR, CONSUMER), tags, sensor_prefix="share-",
                         fetch_request="ShareFetch request", rebalances="Assignment changes")
        s = registry.sensor("share-fetch-size")
        s.add_avg("fetch-size-avg", FETCH, "Average bytes per ShareFetch answer", tags)
        s.add_max("fetch-size-max", FETCH, "Largest ShareFetch answer (bytes)", tags)
        s.add_meter("bytes-consumed-rate", "bytes-consumed-total", FETCH, "Bytes fetched", tags)
        self.fetch_size = s
        s = registry.sensor("share-records")
        s.add_avg("records-per-request-avg", FETCH, "Average records acquired per ShareFetch", tags)
        s.add_max("records-per-request-max", FETCH, "Most records acquired by one ShareFetch", tags)
        self.records_per_request = s
        s = registry.sensor("share-records-fetched")
        s.add_meter("records-fetched-rate", "records-fetched-total", FETCH, "Records acquired", tags)
        self.records_fetched = s
        s = registry.sensor("share-acks-sent")
        s.add_meter("acknowledgements-send-rate", "acknowledgements-send-total", FETCH, "Record acknowledgements sent", tags)
        self.acks_sent = s
        s = registry.sensor("share-acks-failed")
        s.add_rate("acknowledgements-error-rate", FETCH, "Record acknowledgements failed per second", tags)
        s.add_total("acknowledgements-error-total", FETCH, "Record acknowledgements that failed", tags)
        self.acks_failed = s
        s = registry.sensor("share-fetch-throttle")
        s.add_avg("fetch-throttle-time-avg", FETCH, "Average throttle time (ms)", tags)
        s.add_max("fetch-throttle-time-max", FETCH, "Longest throttle time (ms)", tags)
        self.throttle = s

    def record_fetch(self, latency_ms: float, size: int, acquired: int, throttle_ms: int) -> None:
        now = time.monotonic()
        self.fetch_latency.record(latency_ms, now)
        self.fetch_size.record(size, now)
        self.records_per_request.record(acquired, now)
        if acquired:
            self.records_fetched.record(acquired, now)
        self.throttle.record(throttle_ms, now)

    def record_acks(self, sent: int, failed: int) -> None:
        now = time.monotonic()
        if sent:
            self.acks_sent.record(sent, now)
        if failed:
            self.acks_failed.record(failed, now)
