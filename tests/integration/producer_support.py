"""Helpers for the producer's real-broker tests: reading topics back, injecting faults.

Records are read back with raw ListOffsets + Fetch requests through a NetworkClient and
kafkalite's record batch decoder, so these tests do not depend on the consumer.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import error_for_code
from kafkalite.net.client import NetworkClient
from kafkalite.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestFetchPartition,
    FetchRequestFetchTopic,
)
from kafkalite.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestListOffsetsPartition,
    ListOffsetsRequestListOffsetsTopic,
)
from kafkalite.protocol.records import RecordBatch, iter_batches
from tests.helpers.settings import resolve


@dataclass
class ReadRecord:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    producer_id: int
    producer_epoch: int
    transactional: bool
    leader_epoch: int = -1  # of the leader that appended the batch


async def _read(bootstrap: str, topic: str, isolation_level: int) -> dict[int, list[ReadRecord]]:
    client = NetworkClient(resolve("consumer", {"bootstrap.servers": bootstrap}))
    try:
        meta = await client.refresh_metadata({topic}, timeout_s=30)
        out: dict[int, list[ReadRecord]] = {}
        for partition in sorted(meta.topics[topic].partitions):
            leader = meta.leader_for(topic, partition)
            assert leader is not None, f"{topic}-{partition} has no leader"
            conn = await client.connection(leader)
            lo = await conn.request(ListOffsetsRequest(
                replica_id=-1, isolation_level=isolation_level,
                topics=[ListOffsetsRequestListOffsetsTopic(name=topic, partitions=[
                    ListOffsetsRequestListOffsetsPartition(partition_index=partition, timestamp=-1)])]))
            p = lo.topics[0].partitions[0]
            if p.error_code:
                raise error_for_code(p.error_code, "ListOffsets failed", topic=topic, partition=partition)
            end = p.offset
            if isolation_level == 1:
                end = await _stable_end(conn, topic, partition, end)
            records: list[ReadRecord] = []
            aborted: list[tuple[int, int]] = []
            active: set[int] = set()  # producers inside an aborted transaction (read_committed)
            offset = 0
            version = min(conn.api_version(FetchRequest), 12)  # v13+ address topics by id
            while offset < end:
                resp = await conn.request(FetchRequest(
                    max_wait_ms=100, min_bytes=1, max_bytes=8 << 20, isolation_level=isolation_level,
                    topics=[FetchRequestFetchTopic(topic=topic, partitions=[FetchRequestFetchPartition(
                        partition=partition, fetch_offset=offset, partition_max_bytes=8 << 20)])]),
                    api_version=version)
                data = resp.responses[0].partitions[0]
                if data.error_code:
                    raise error_for_code(data.error_code, "Fetch failed", topic=topic, partition=partition)
                aborted.extend((a.first_offset, a.producer_id) for a in data.aborted_transactions or ())
                aborted.sort()
                progressed = False
                for batch in iter_batches(data.records or b""):
                    assert isinstance(batch, RecordBatch)
                    progressed = True
                    offset = batch.next_offset
                    # The consumer's read_committed rule: a transactional batch of a
                    # producer whose aborted transaction started at or before it is skipped
                    # until that producer's ABORT marker.
                    while aborted and aborted[0][0] <= batch.last_offset:
                        active.add(aborted.pop(0)[1])
                    if batch.is_control:
                        if batch.records()[0].control_type == 0:
                            active.discard(batch.producer_id)
                        continue
                    if isolation_level == 1 and batch.is_transactional and batch.producer_id in active:
                        continue
                    for rec in batch.records():
                        if rec.offset < end:
                            records.append(ReadRecord(partition, rec.offset, rec.timestamp, rec.key, rec.value,
                                                      rec.headers, batch.producer_id, batch.producer_epoch,
                                                      batch.is_transactional, batch.partition_leader_epoch))
                if not progressed:
                    await asyncio.sleep(0.05)
            out[partition] = records
        return out
    finally:
        await client.close()


async def _stable_end(conn: Any, topic: str, partition: int, lso: int, timeout: float = 15.0) -> int:
    """Wait until the last stable offset reaches the high watermark: transaction markers
    are written by the coordinator just after commit/abort returns."""
    deadline = time.monotonic() + timeout
    while True:
        offsets = []
        for level in (0, 1):
            lo = await conn.request(ListOffsetsRequest(
                replica_id=-1, isolation_level=level,
                topics=[ListOffsetsRequestListOffsetsTopic(name=topic, partitions=[
                    ListOffsetsRequestListOffsetsPartition(partition_index=partition, timestamp=-1)])]))
            offsets.append(lo.topics[0].partitions[0].offset)
        if offsets[0] == offsets[1] or time.monotonic() > deadline:
            return int(offsets[1])
        await asyncio.sleep(0.05)


def read_back(bootstrap: str, topic: str, *, read_committed: bool = False) -> dict[int, list[ReadRecord]]:
    """Every data record of ``topic`` per partition, in offset order."""
    return asyncio.run(_read(bootstrap, topic, 1 if read_committed else 0))


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class ConnectionCutter:
    """Aborts every broker connection of a blocking producer now and then (fault injection).

    Runs ``transport.abort()`` on the producer's engine thread, so requests in flight
    fail mid-stream exactly as when a network link drops; bytes already written may or
    may not have reached the broker.
    """

    def __init__(self, producer: Any, every_s: float = 0.15) -> None:
        self.producer = producer
        self.every_s = every_s
        self.cuts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="connection-cutter", daemon=True)

    def _cut(self) -> None:
        client = self.producer._core.client
        for state in list(client._nodes.values()):
            conn = state.connection
            protocol = getattr(conn, "_protocol", None)
            transport = getattr(protocol, "transport", None)
            if conn is not None and transport is not None and conn.in_flight:
                transport.abort()
                self.cuts += 1

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.producer._engine.call_soon(self._cut)

    def __enter__(self) -> ConnectionCutter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def throttled_client_id(bootstrap: str, bytes_per_second: int = 512) -> str:
    """A fresh client.id with a tiny producer_byte_rate quota.

    After its first produce request such a producer's connection is muted by the broker
    for a long throttle time, so later records stay unacknowledged: the one-broker way
    to hold records back (full buffer, blocked flush, close timeout).
    """
    import secrets

    from kafkalite import AdminClient
    from kafkalite.admin.security_types import (
        ClientQuotaAlteration,
        ClientQuotaEntity,
        ClientQuotaFilterComponent,
    )

    client_id = "throttled-" + secrets.token_hex(4)
    barrier = "barrier-" + secrets.token_hex(4)
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def set_quota(client: str, rate: float | None) -> None:
        entity = ClientQuotaEntity({"client-id": client})
        admin.alter_client_quotas([ClientQuotaAlteration(entity, {"producer_byte_rate": rate})]).raise_on_error()

    def visible(client: str) -> bool:
        return bool(admin.describe_client_quotas([ClientQuotaFilterComponent("client-id", client)], strict=True))

    try:
        set_quota(client_id, float(bytes_per_second))
        wait_until(lambda: visible(client_id), 30, "the quota")
        # The broker answers DescribeClientQuotas from its metadata image, which it
        # installs just before it updates its quota managers from the same change. A later
        # change becoming visible means the earlier one was published completely.
        set_quota(barrier, 1e9)
        wait_until(lambda: visible(barrier), 30, "a later metadata change")
        set_quota(barrier, None)
    finally:
        admin.close()
    return client_id


async def read_back_async(bootstrap: str, topic: str, *, read_committed: bool = False) -> dict[int, list[ReadRecord]]:
    """:func:`read_back` for async tests."""
    return await _read(bootstrap, topic, 1 if read_committed else 0)

