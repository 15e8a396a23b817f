"""Helpers for the consumer's real-broker tests: writing test data, waiting.

Test data is written with raw Produce requests (kafkalite's record batch builder over a
NetworkClient) so the consumer tests do not depend on the producer; transactional data
comes from Kafka's own Java tools (see test_consumer_transactions.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from kafkalite.errors import error_for_code
from kafkalite.net.client import NetworkClient
from kafkalite.protocol import compression
from kafkalite.protocol.messages.produce import (
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
)
from kafkalite.protocol.record_builder import RecordBatchBuilder
from tests.helpers.settings import resolve

Record = tuple[Any, Any]  # (key, value) or (key, value, headers)


async def _produce(bootstrap: str, topic: str, batches: dict[int, list[bytes]], acks: int = -1
                   ) -> dict[int, list[int]]:
    client = NetworkClient(resolve("producer", {"bootstrap.servers": bootstrap}))
    try:
        meta = await client.refresh_metadata({topic}, timeout_s=30)
        out: dict[int, list[int]] = {}
        for partition, payloads in batches.items():
            for payload in payloads:
                request = ProduceRequest(acks=acks, timeout_ms=30000, topic_data=[ProduceRequestTopicProduceData(
                    name=topic, partition_data=[ProduceRequestPartitionProduceData(index=partition, records=payload)])])
                for attempt in range(50):
                    leader = meta.leader_for(topic, partition)
                    if leader is None:
                        await asyncio.sleep(0.1)
                        meta = await client.refresh_metadata({topic}, timeout_s=30)
                        continue
                    conn = await client.connection(leader)
                    version = min(conn.api_version(ProduceRequest), 12)  # v13 needs topic ids
                    response = await conn.request(request, api_version=version)
                    p = response.responses[0].partition_responses[0]
                    if not p.error_code:
                        break
                    err = error_for_code(p.error_code, "test produce failed", topic=topic, partition=partition)
                    if not err.retriable or attempt == 49:
                        raise err
                    await asyncio.sleep(0.1)
                    meta = await client.refresh_metadata({topic}, timeout_s=30)
                out.setdefault(partition, []).append(p.base_offset)
        return out
    finally:
        await client.close()


def build_batch(records: Sequence[Record], *, codec: int = compression.NONE, timestamp: int | None = None) -> bytes:
    builder = RecordBatchBuilder(compression=codec, batch_size=1 << 30)
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    for r in records:
        key, value = r[0], r[1]
        headers = r[2] if len(r) > 2 else None
        builder.append(ts, key, value, headers)
    return builder.build()


def produce(bootstrap: str, topic: str, records: Sequence[Record] | None = None, *, partition: int = 0,
            count: int = 0, value_size: int = 10, batch_size: int = 100, codec: int = compression.NONE,
            timestamp: int | None = None, acks: int = -1) -> list[int]:
    """Write records to one partition in batches of ``batch_size``; returns base offsets."""
    if records is None:
        records = [(f"k{i}".encode(), f"v{i}".encode().ljust(value_size, b".")) for i in range(count)]
    payloads = [build_batch(records[i:i + batch_size], codec=codec, timestamp=timestamp)
                for i in range(0, len(records), batch_size)]
    return asyncio.run(_produce(bootstrap, topic, {partition: payloads}, acks))[partition]


def produce_spread(bootstrap: str, topic: str, partitions: int, per_partition: int, value_size: int = 10) -> None:
    """``per_partition`` records into each partition; values say 'p<partition>-<i>'."""
    batches = {}
    for p in range(partitions):
        recs = [(f"k{i}".encode(), f"p{p}-{i}".encode().ljust(value_size, b".")) for i in range(per_partition)]
        batches[p] = [build_batch(recs[i:i + 500]) for i in range(0, len(recs), 500)]
    asyncio.run(_produce(bootstrap, topic, batches))


def wait_until(cond: Callable[[], Any], timeout: float = 60.0, interval: float = 0.05, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def consume_n(consumer: Any, n: int, timeout: float = 60.0) -> list[Any]:
    """Poll until ``n`` records arrived (fails on timeout)."""
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"got {len(out)} of {n} records within {timeout}s")
        out.extend(consumer.poll(0.5))
    return out
