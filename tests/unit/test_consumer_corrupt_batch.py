"""A record batch that fails its CRC, served by a scripted broker (no real broker sends one).

The consumer must return the records before the bad batch, then raise
CorruptRecordsError naming topic, partition and offset, keep raising it until the
application seeks past the batch, and never hand out a record from it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kafkalite import Consumer, TopicPartition, aio
from kafkalite.errors import CorruptRecordsError
from kafkalite.protocol.messages.fetch import (
    FetchResponse,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
)
from kafkalite.protocol.messages.list_offsets import (
    ListOffsetsResponse,
    ListOffsetsResponseListOffsetsPartitionResponse,
    ListOffsetsResponseListOffsetsTopicResponse,
)
from kafkalite.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkalite.protocol.record_builder import RecordBatchBuilder
from tests.helpers.fake_broker import FakeBroker

TOPIC = "corrupt-topic"
TP = TopicPartition(TOPIC, 0)
# Fetch v4..12 name topics (no topic ids to script); ListOffsets v1+ answers one offset.
VERSIONS = {1: (4, 12), 2: (1, 8), 3: (1, 12)}


def _batch(base_offset: int, values: list[bytes]) -> bytes:
    builder = RecordBatchBuilder(batch_size=1 << 20, base_offset=base_offset, partition_leader_epoch=0)
    for v in values:
        builder.append(1_700_000_000_000, b"k", v, None)
    return bytes(builder.build())


GOOD = _batch(0, [b"v0", b"v1", b"v2"])
BAD = bytearray(_batch(3, [b"v3", b"v4", b"v5"]))
BAD[BAD.index(b"v4")] = ord("x")  # a well-formed record, but the stored CRC no longer matches
TAIL = _batch(6, [b"v6"])


class Script:
    """The topic's log: [0, 3) good, [3, 6) corrupt, [6, 7) good."""

    def __init__(self) -> None:
        self.broker: FakeBroker | None = None
        self.fetch_offsets: list[int] = []

    def metadata(self, request: Any, version: int) -> MetadataResponse:
        assert self.broker is not None
        return MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=self.broker.port)],
            cluster_id="fake", controller_id=1,
            topics=[MetadataResponseTopic(error_code=0, name=TOPIC, partitions=[MetadataResponsePartition(
                error_code=0, partition_index=0, leader_id=1, leader_epoch=0, replica_nodes=[1], isr_nodes=[1])])])

    def list_offsets(self, request: Any, version: int) -> ListOffsetsResponse:
        parts = []
        for p in request.topics[0].partitions:
            offset = 0 if p.timestamp == -2 else 7
            parts.append(ListOffsetsResponseListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=0, timestamp=-1, offset=offset, leader_epoch=0))
        return ListOffsetsResponse(topics=[ListOffsetsResponseListOffsetsTopicResponse(name=TOPIC, partitions=parts)])

    async def fetch(self, request: Any, version: int) -> FetchResponse:
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                offset = p.fetch_offset
                self.fetch_offsets.append(offset)
                data = b""
                if offset < 3:
                    data = GOOD + bytes(BAD)  # the good batch and the corrupt one in one response
                elif offset < 6:
                    data = bytes(BAD)
                elif offset < 7:
                    data = TAIL
                parts.append(FetchResponsePartitionData(
                    partition_index=p.partition, error_code=0, high_watermark=7, last_stable_offset=7,
                    log_start_offset=0, records=data))
            topics.append(FetchResponseFetchableTopicResponse(topic=t.topic, partitions=parts))
        if not any(p.records for t in topics for p in t.partitions):
            await asyncio.sleep(0.05)  # nothing new: wait a little, as for fetch.max.wait.ms
        return FetchResponse(error_code=0, session_id=0, responses=topics)

    def handlers(self) -> dict[int, Any]:
        return {3: self.metadata, 2: self.list_offsets, 1: self.fetch}


@contextmanager
def broker_in_thread(script: Script) -> Iterator[FakeBroker]:
    """The scripted broker on its own event loop thread (for the blocking Consumer)."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop = asyncio.Event()
    holder: list[FakeBroker] = []

    async def main() -> None:
        async with FakeBroker(script.handlers(), versions=VERSIONS) as broker:
            script.broker = broker
            holder.append(broker)
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield holder[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def _config(bootstrap: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", "fetch.max.wait.ms": 100,
            "reconnect.backoff.ms": 20, "retry.backoff.ms": 20}


def _poll_until_error(consumer: Consumer, timeout_s: float = 20.0) -> tuple[list[Any], CorruptRecordsError]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            got.extend(consumer.poll(0.5))
        except CorruptRecordsError as exc:
            return got, exc
    raise AssertionError(f"no CorruptRecordsError within {timeout_s}s; got {got}")


@pytest.mark.timeout(60)
def test_poll_returns_good_records_then_raises_naming_topic_partition_offset() -> None:
    script = Script()
    with broker_in_thread(script) as broker, Consumer(_config(broker.bootstrap)) as consumer:
        consumer.assign([TP])
        got, err = _poll_until_error(consumer)
        assert [(r.offset, r.value) for r in got] == [(0, b"v0"), (1, b"v1"), (2, b"v2")]
        assert err.topic == TOPIC and err.partition == 0 and err.context["offset"] == 3
        assert TOPIC in str(err) and "offset 3" in str(err)
        assert consumer.position(TP) == 3
        # It keeps failing (never skipping or returning garbage) until the application seeks.
        for _ in range(2):
            with pytest.raises(CorruptRecordsError):
                consumer.poll(5.0)
        assert consumer.position(TP) == 3
        consumer.seek(TP, 6)
        after: list[Any] = []
        while not after:
            after.extend(consumer.poll(0.5))
        assert [(r.offset, r.value) for r in after] == [(6, b"v6")]
    # Fetched from the start, from the corrupt batch, then from the sought offset: never
    # from inside the corrupt batch (nothing skipped) before the application sought past it.
    assert script.fetch_offsets[0] == 0 and 6 in script.fetch_offsets
    assert set(script.fetch_offsets) <= {0, 3, 6, 7}, script.fetch_offsets


@pytest.mark.timeout(60)
def test_poll_batches_raises_too() -> None:
    script = Script()
    with broker_in_thread(script) as broker, Consumer(_config(broker.bootstrap)) as consumer:
        consumer.assign([TP])
        seen: list[int] = []
        deadline = time.monotonic() + 20
        with pytest.raises(CorruptRecordsError) as info:
            while time.monotonic() < deadline:
                for _tp, batches in consumer.poll_batches(0.5):
                    seen.extend(b.base_offset for b in batches)
        assert seen == [0]  # the good batch only; the corrupt one never comes out
        assert info.value.context["offset"] == 3 and info.value.partition == 0


@pytest.mark.timeout(60)
def test_async_consumer_raises_the_same() -> None:
    async def main() -> None:
        script = Script()
        async with FakeBroker(script.handlers(), versions=VERSIONS) as broker:
            script.broker = broker
            consumer = aio.Consumer(_config(broker.bootstrap))
            try:
                consumer.assign([TP])
                got: list[Any] = []
                with pytest.raises(CorruptRecordsError) as info:
                    for _ in range(100):
                        got.extend(await consumer.poll(0.2))
                assert [r.offset for r in got] == [0, 1, 2]
                assert info.value.context["offset"] == 3 and info.value.topic == TOPIC
            finally:
                await consumer.close()

    asyncio.run(main())
