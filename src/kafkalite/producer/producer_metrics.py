"""The producer's metrics, with the Java client's names (group ``producer-metrics``).

Recorded per batch and per request, never per record, so they cost nothing on the
send path. ``Producer.metrics()`` returns ``{name: value}``, e.g.::

    m = producer.metrics()
    m["record-send-rate"], m["request-latency-avg"], m["batch-size-avg"],
    m["compression-rate-avg"], m["buffer-available-bytes"], m["records-per-request-avg"]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkalite.metrics import Metrics, MetricsSnapshot

if TYPE_CHECKING:
    from kafkalite.producer.accumulator import BufferPool, ProducerBatch, RecordAccumulator

__all__ = ["ProducerMetrics"]

GROUP = "producer-metrics"


class ProducerMetrics:
    """Sensors of one producer."""

    def __init__(self, client_id: str, window_ms: int, samples: int, pool: BufferPool,
                 acc: RecordAccumulator, in_flight: Callable[[], float] | None = None,
                 record_level: str = "INFO") -> None:
        self.registry = Metrics(window_ms, samples, record_level)
        tags = {"client-id": client_id}
        r = self.registry
        g = GROUP
        self.records_sent = (r.sensor("records-sent")
                             .add_meter("record-send-rate", "record-send-total", g, "Records sent", tags))
        self.records_error = (r.sensor("record-errors")
                              .add_meter("record-error-rate", "record-error-total", g, "Records failed", tags))
        self.records_retry = (r.sensor("record-retries")
                              .add_meter("record-retry-rate", "record-retry-total", g, "Records retried", tags))
        self.latency = (r.sensor("request-latency")
                        .add_avg("request-latency-avg", g, "Produce request latency (ms)", tags)
                        .add_max("request-latency-max", g, "Longest produce request latency (ms)", tags))
        # One recording per request feeds the request count/rate and records per request,
        # one per batch the batch size and the bytes sent (fewer recordings per batch
        # on the I/O thread; the same values as separate sensors would give).
        self.records_per_request = (r.sensor("records-per-request")
                                    .add_avg("records-per-request-avg", g, "Records per produce request", tags)
                                    .add_meter("request-rate", "request-total", g, "Produce requests", tags, count=True))
        self.batch_size = (r.sensor("batch-size")
                           .add_avg("batch-size-avg", g, "Bytes per batch", tags)
                           .add_max("batch-size-max", g, "Largest batch in bytes", tags)
                           .add_meter("byte-rate", "byte-total", g, "Record batch bytes sent", tags))
        self.compression = (r.sensor("compression-rate")
                            .add_avg("compression-rate-avg", g, "Compressed / uncompressed batch size", tags))
        self.queue_time = (r.sensor("queue-time")
                           .add_avg("record-queue-time-avg", g, "Time batches wait in the accumulator (ms)", tags)
                           .add_max("record-queue-time-max", g, "Longest accumulator wait (ms)", tags))
        self.throttle = (r.sensor("produce-throttle-time")
                         .add_avg("produce-throttle-time-avg", g, "Broker throttle time (ms)", tags)
                         .add_max("produce-throttle-time-max", g, "Longest broker throttle (ms)", tags))
        self.splits = (r.sensor("batch-split")
                       .add_meter("batch-split-rate", "batch-split-total", g, "Batches split", tags))
        r.gauge("buffer-available-bytes", g, lambda: float(pool.available), "Unreserved buffer.memory", tags)
        r.gauge("buffer-total-bytes", g, lambda: float(pool.total), "buffer.memory", tags)
        r.gauge("bufferpool-wait-time-total", g, lambda: pool.wait_time_total * 1e9,
                "Nanoseconds send() waited for buffer memory", tags)
        r.gauge("waiting-threads", g, lambda: float(pool.waiters), "Callers blocked for buffer memory", tags)
        r.gauge("incomplete-batches", g, lambda: float(len(acc.incomplete)), "Batches not yet acknowledged", tags)
        if in_flight is not None:
            r.gauge("requests-in-flight", g, in_flight, "Produce requests awaiting a response", tags)

    def record_batch(self, batch: ProducerBatch, now: float) -> None:
        size = len(batch.wire or b"")
        self.batch_size.record(size, now)
        uncompressed = batch.builder.uncompressed_size_in_bytes
        self.compression.record(size / uncompressed if uncompressed else 1.0, now)
        self.queue_time.record((now - batch.created) * 1000.0, now)

    def record_request(self, batches: int, records: int, latency_s: float, throttle_ms: int = 0) -> None:
        now = time.monotonic()
        self.records_per_request.record(records, now)
        if latency_s:
            self.latency.record(latency_s * 1000.0, now)
        if throttle_ms:
            self.throttle.record(throttle_ms, now)

    def record_success(self, batch: ProducerBatch) -> None:
        self.records_sent.record(batch.record_count)

    def record_error(self, records: int) -> None:
        self.records_error.record(records)

    def record_retry(self, records: int) -> None:
        self.records_retry.record(records)

    def record_split(self) -> None:
        self.splits.record(1)

    def snapshot(self) -> MetricsSnapshot:
        """Every producer metric; ``snapshot["record-send-rate"]`` reads producer-metrics."""
        return self.registry.snapshot(primary_group=GROUP)
