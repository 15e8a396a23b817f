"""Consumer metrics with the Java client's names and groups.

``consumer-fetch-manager-metrics``: fetch-latency-avg/max, fetch-rate, fetch-total,
fetch-size-avg/max, bytes-consumed-rate/total, records-consumed-rate/total,
records-per-request-avg, records-lag-max, and per partition (tags topic, partition)
records-lag. kafkalite adds the lag in time (not in Java): per partition
``records-time-lag``, milliseconds between now and the timestamp of the last record
poll() returned while records are waiting (0 when caught up; NaN before the first
record), and ``records-time-lag-max`` over the assigned partitions.

``consumer-coordinator-metrics``: commit-latency-avg/max, commit-rate, commit-total,
assigned-partitions, join-time-avg/max, join-rate, join-total, sync-time-avg/max,
sync-rate, heartbeat-rate, heartbeat-total, heartbeat-response-time-max,
rebalance-total, failed-rebalance-total, last-heartbeat-seconds-ago,
last-rebalance-seconds-ago.

``consumer-metrics``: last-poll-seconds-ago, time-between-poll-avg/max.

``consumer-node-metrics`` (tag ``node-id`` = ``node-<id>``, as Java's per-node group):
fetch-total, fetch-rate, fetch-latency-avg/max and bytes-fetched-total of the Fetch
requests sent to that broker (kafkalite counts fetches only: with KIP-392 they show
which replica serves the reads).

Recording happens per fetch response, per poll() and per group request, never per record.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from kafkalite.clients_common.metrics import GroupConsumerMetrics, MetricGroups
from kafkalite.metrics import Metrics, Sensor
from kafkalite.types import TopicPartition

if TYPE_CHECKING:
    from kafkalite.consumer.subscription import SubscriptionState

FETCH = "consumer-fetch-manager-metrics"
COORDINATOR = "consumer-coordinator-metrics"
CONSUMER = "consumer-metrics"
NODE = "consumer-node-metrics"


class ConsumerMetrics(GroupConsumerMetrics):
    """The sensors of one consumer; ``registry`` is what ``Consumer.metrics()`` reads."""

    def __init__(self, registry: Metrics, subs: SubscriptionState, read_committed: bool, client_id: str = "") -> None:
        tags = {"client-id": client_id} if client_id else None
        super().__init__(registry, MetricGroups(FETCH, COORDINATOR, CONSUMER), tags, sensor_prefix="",
                         fetch_request="Fetch request", rebalances="Completed rebalances")
        self.subs = subs
        self.read_committed = read_committed
        s = registry.sensor("fetch-size")
        s.add_avg("fetch-size-avg", FETCH, "Average bytes per fetch response", tags)
        s.add_max("fetch-size-max", FETCH, "Largest fetch response (bytes)", tags)
        self.fetch_size = s
        s = registry.sensor("bytes-consumed")
        s.add_meter("bytes-consumed-rate", "bytes-consumed-total", FETCH, "Bytes consumed", tags)
        self.bytes_consumed = s
        s = registry.sensor("records-consumed")
        s.add_meter("records-consumed-rate", "records-consumed-total", FETCH, "Records returned by poll()", tags)
        self.records_consumed = s
        s = registry.sensor("records-per-request")
        s.add_avg("records-per-request-avg", FETCH, "Average records per poll() that returned records", tags)
        self.records_per_request = s
        s = registry.sensor("records-lag")
        s.add_max("records-lag-max", FETCH, "Largest lag in records of any partition in the window", tags)
        self.records_lag = s
        self._lag_gauges: set[TopicPartition] = set()
        # Timestamp (ms) of the last record poll() returned, per partition: one store per
        # fetch taken, never per record.
        self.last_timestamp: dict[TopicPartition, int] = {}
        registry.gauge("records-time-lag-max", FETCH, self._time_lag_max,
                       "Largest lag in time (ms) of any assigned partition: now minus the timestamp of the "
                       "last record returned, while records are waiting", tags)
        # Per broker: its fetch sensor and its fetch-bytes sensor, made at its first fetch.
        self._node_sensors: dict[int, tuple[Sensor, Sensor]] = {}
        s = registry.sensor("commit-latency")
        s.add_avg("commit-latency-avg", COORDINATOR, "Average time of a commit request (ms)", tags)
        s.add_max("commit-latency-max", COORDINATOR, "Longest commit request (ms)", tags)
        s.add_meter("commit-rate", "commit-total", COORDINATOR, "Commits", tags, count=True)
        self.commit_latency = s
        s = registry.sensor("join-latency")
        s.add_avg("join-time-avg", COORDINATOR, "Average JoinGroup time (ms)", tags)
        s.add_max("join-time-max", COORDINATOR, "Longest JoinGroup time (ms)", tags)
        s.add_meter("join-rate", "join-total", COORDINATOR, "Joins", tags, count=True)
        self.join_latency = s
        s = registry.sensor("sync-latency")
        s.add_avg("sync-time-avg", COORDINATOR, "Average SyncGroup time (ms)", tags)
        s.add_max("sync-time-max", COORDINATOR, "Longest SyncGroup time (ms)", tags)
        s.add_count_rate("sync-rate", COORDINATOR, "Syncs per second", tags)
        self.sync_latency = s
        s = registry.sensor("failed-rebalance")
        s.add_count("failed-rebalance-total", COORDINATOR, "Failed rebalances", tags)
        self.failed_rebalance = s
        self.last_rebalance = math.nan
        registry.gauge("assigned-partitions", COORDINATOR, lambda: float(len(subs.assignment)),
                       "Partitions currently assigned to this consumer", tags)
        registry.gauge("last-rebalance-seconds-ago", COORDINATOR,
                       lambda: time.monotonic() - self.last_rebalance, "Seconds since the last rebalance", tags)

    # ------------------------------------------------------------ recording

    def record_fetch(self, node: int, latency_ms: float, size: int) -> None:
        now = time.monotonic()
        self.fetch_latency.record(latency_ms, now)
        self.fetch_size.record(size, now)
        sensors = self._node_sensors.get(node)
        if sensors is None:
            per_node = self.registry.sensor(f"node-{node}.fetch")
            tags = dict(self._tags or {})
            tags["node-id"] = f"node-{node}"
            per_node.add_count("fetch-total", NODE, "Fetch requests sent to this broker", tags)
            per_node.add_count_rate("fetch-rate", NODE, "Fetch requests per second to this broker", tags)
            per_node.add_avg("fetch-latency-avg", NODE, "Average fetch time from this broker (ms)", tags)
            per_node.add_max("fetch-latency-max", NODE, "Longest fetch from this broker (ms)", tags)
            bytes_sensor = self.registry.sensor(f"node-{node}.fetch-bytes")
            bytes_sensor.add_total("bytes-fetched-total", NODE, "Bytes of records fetched from this broker", tags)
            sensors = self._node_sensors[node] = (per_node, bytes_sensor)
        sensors[0].record(latency_ms, now)
        sensors[1].record(size, now)

    def fetches_by_node(self) -> dict[int, int]:
        """Fetch requests per broker id so far (from ``consumer-node-metrics``)."""
        out = {}
        for name, value in self.registry.snapshot().items():
            if name.group == NODE and name.name == "fetch-total":
                node = dict(name.tags)["node-id"]
                out[int(node.removeprefix("node-"))] = int(value)
        return out

    def record_consumed(self, records: int, nbytes: int) -> None:
        now = time.monotonic()
        if records:
            self.records_consumed.record(records, now)
            self.records_per_request.record(records, now)
        if nbytes:
            self.bytes_consumed.record(nbytes, now)

    def record_lag(self, tp: TopicPartition) -> None:
        lag = self.subs.lag(tp, self.read_committed)
        if lag is None:
            return
        self.records_lag.record(lag)
        if tp not in self._lag_gauges:
            self._lag_gauges.add(tp)
            tags = dict(self._tags or {})
            tags.update({"topic": tp.topic, "partition": str(tp.partition)})
            subs, rc = self.subs, self.read_committed
            self.registry.gauge("records-lag", FETCH, lambda: float(_nan_if_none(subs.lag(tp, rc))),
                                "Lag of the partition in records", tags)
            self.registry.gauge("records-time-lag", FETCH, lambda: self.time_lag(tp),
                                "Lag of the partition in time (ms): now minus the timestamp of the last record "
                                "returned while records are waiting, 0 when caught up", tags)

    def time_lag(self, tp: TopicPartition) -> float:
        """Milliseconds the consumer is behind on ``tp`` (0 caught up, NaN unknown)."""
        lag = self.subs.lag(tp, self.read_committed)
        if lag is None:
            return math.nan
        if lag <= 0:
            return 0.0
        last = self.last_timestamp.get(tp)
        if last is None or last < 0:
            return math.nan
        return max(0.0, time.time() * 1000.0 - last)

    def _time_lag_max(self) -> float:
        values = [v for v in (self.time_lag(tp) for tp in list(self.subs.assignment)) if not math.isnan(v)]
        return max(values) if values else math.nan

    def forget_partitions(self, partitions: set[TopicPartition]) -> None:
        for tp in partitions:
            self.last_timestamp.pop(tp, None)
        for tp in partitions & self._lag_gauges:
            tags = dict(self._tags or {})
            tags.update({"topic": tp.topic, "partition": str(tp.partition)})
            self.registry.remove(FETCH, tags)
            self._lag_gauges.discard(tp)


def _nan_if_none(value: int | None) -> float:
    return math.nan if value is None else float(value)
