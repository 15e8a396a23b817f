"""Helpers for the admin client's real-broker tests: test data and Kafka's own tools.

Records are written with raw Produce requests (kafkalite's batch builder over a
NetworkClient), so the admin tests do not depend on the producer.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

from kafkalite.errors import KafkaError, error_for_code
from kafkalite.net.client import NetworkClient
from kafkalite.protocol.messages.produce import (
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
)
from kafkalite.protocol.record_builder import RecordBatchBuilder
from tests.helpers.settings import resolve


async def _produce(bootstrap: str, topic: str, partition: int, records: Sequence[tuple[bytes | None, bytes, int]],
                   settings: dict[str, Any] | None = None) -> int:
    client = NetworkClient(resolve("producer", {"bootstrap.servers": bootstrap, **(settings or {})}))
    try:
        meta = await client.refresh_metadata({topic}, timeout_s=30)
        leader = meta.leader_for(topic, partition)
        assert leader is not None, f"no leader for {topic}-{partition}"
        builder = RecordBatchBuilder(batch_size=1 << 30)
        for key, value, ts in records:
            builder.append(ts, key, value, None)
        request = ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[ProduceRequestTopicProduceData(
            name=topic, partition_data=[ProduceRequestPartitionProduceData(index=partition, records=builder.build())])])
        conn = await client.connection(leader)
        response = await conn.request(request, api_version=min(conn.api_version(ProduceRequest), 12))
        p = response.responses[0].partition_responses[0]
        if p.error_code:
            raise error_for_code(p.error_code, "test produce failed", topic=topic, partition=partition)
        return int(p.base_offset)
    finally:
        await client.close()


def produce(bootstrap: str, topic: str, partition: int, values: Sequence[bytes],
            timestamps: Sequence[int] | None = None, keys: Sequence[bytes | None] | None = None,
            settings: dict[str, Any] | None = None) -> int:
    """Append one batch to ``topic``/``partition``; returns its base offset."""
    now = int(time.time() * 1000)
    ts = list(timestamps) if timestamps is not None else [now] * len(values)
    ks = list(keys) if keys is not None else [None] * len(values)
    records = list(zip(ks, values, ts))
    deadline = time.monotonic() + 30
    while True:  # a new topic's leader may answer NOT_LEADER_OR_FOLLOWER for a moment
        try:
            return asyncio.run(_produce(bootstrap, topic, partition, records, settings))
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def tool(broker: Any, name: str, *args: str, bootstrap: str | None = None, check: bool = True,
         input: str | None = None) -> str:
    """Run a Kafka Java tool against ``broker``; returns stdout (stderr appended on failure)."""
    argv = ["--bootstrap-server", bootstrap or broker.bootstrap, *args]
    done = broker.run_tool(name, argv, input=input, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"{name} {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return str(done.stdout)


def wait_until(condition: Any, timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``condition()`` until it returns something truthy (generous deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)


def parse_json(text: str) -> Any:
    return json.loads(text)


KAFKALITE = str(__import__("pathlib").Path(__import__("sys").executable).parent / "kafkalite")


def kafkalite(*args: str, input: str | None = None, timeout: float = 90.0) -> Any:
    """Run the installed ``kafkalite`` console script (the venv's bin/kafkalite)."""
    import subprocess

    return subprocess.run([KAFKALITE, *args], input=input, capture_output=True, text=True, timeout=timeout,
                          check=False)
