"""Raw protocol I/O for tests of the foundation layers (no producer or consumer involved).

These helpers send hand-built Produce and Fetch requests through kafkalite's network
client, so that record batches and the wire layer can be checked against a real broker
and Kafka's own tools independently of the higher-level clients.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafkalite.errors import raise_for_code
from kafkalite.net.client import NetworkClient
from kafkalite.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestFetchPartition,
    FetchRequestFetchTopic,
)
from kafkalite.protocol.messages.produce import (
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
)
from kafkalite.protocol.records import iter_batches
from tests.helpers.settings import resolve


async def _with_client(bootstrap: str, fn: Any) -> Any:
    client = NetworkClient(resolve("admin", {"bootstrap.servers": bootstrap, "client.id": "raw-test"}))
    try:
        return await fn(client)
    finally:
        await client.close()


def produce_raw(bootstrap: str, topic: str, partition: int, batch: bytes, acks: int = -1) -> int:
    """Write one pre-built record batch; returns the base offset the broker assigned."""

    async def run(client: NetworkClient) -> int:
        meta = await client.refresh_metadata({topic})
        leader = meta.leader_for(topic, partition)
        assert leader is not None, f"no leader for {topic}-{partition}"
        request = ProduceRequest(acks=acks, timeout_ms=10000, topic_data=[ProduceRequestTopicProduceData(
            name=topic, topic_id=meta.topic_id(topic),
            partition_data=[ProduceRequestPartitionProduceData(index=partition, records=batch)])])
        response = await client.send(leader, request)
        result = response.responses[0].partition_responses[0]
        raise_for_code(result.error_code, result.error_message, topic=topic, partition=partition)
        return int(result.base_offset)

    return asyncio.run(_with_client(bootstrap, run))


def fetch_raw(bootstrap: str, topic: str, partition: int, offset: int = 0, *, min_records: int = 1,
              isolation_level: int = 0, timeout_s: float = 30.0) -> tuple[list[Any], Any]:
    """Fetch from ``offset`` until at least ``min_records`` records; returns (batches, partition data)."""

    async def run(client: NetworkClient) -> tuple[list[Any], Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        meta = await client.refresh_metadata({topic})
        leader = meta.leader_for(topic, partition)
        assert leader is not None
        batches: list[Any] = []
        position, count = offset, 0
        data = None
        while count < min_records and loop.time() < deadline:
            request = FetchRequest(max_wait_ms=500, min_bytes=1, max_bytes=50 << 20,
                                   isolation_level=isolation_level, topics=[FetchRequestFetchTopic(
                                       topic=topic, topic_id=meta.topic_id(topic), partitions=[
                                           FetchRequestFetchPartition(partition=partition, fetch_offset=position,
                                                                      partition_max_bytes=10 << 20)])])
            response = await client.send(leader, request)
            data = response.responses[0].partitions[0]
            raise_for_code(data.error_code, topic=topic, partition=partition)
            for batch in iter_batches(bytes(data.records or b"")):
                if batch.next_offset <= position:
                    continue
                batches.append(batch)
                position = batch.next_offset
                if not batch.is_control:
                    count += sum(1 for r in batch.records() if r.offset >= offset)
        return batches, data

    return asyncio.run(_with_client(bootstrap, run))
