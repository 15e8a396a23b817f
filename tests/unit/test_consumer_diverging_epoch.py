"""KIP-320 through a Fetch response's DivergingEpoch, served by a scripted broker.

A real broker answers with DivergingEpoch only in a race (the consumer fetched from a
new leader before its metadata showed the new epoch); the scripted one does it on cue.
The fetcher sends the epoch of the last record fetched (``LastFetchedEpoch``); the
answer moves the position back to the divergent offset (a reset policy) or raises
LogTruncationError (``auto.offset.reset=none``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafkalite import OffsetAndMetadata, TopicPartition, aio
from kafkalite.errors import LogTruncationError
from kafkalite.protocol.messages.fetch import (
    FetchResponse,
    FetchResponseEpochEndOffset,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
)
from kafkalite.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkalite.protocol.record_builder import RecordBatchBuilder
from tests.helpers.fake_broker import FakeBroker

TOPIC = "diverging"
TP = TopicPartition(TOPIC, 0)
# No OffsetsForLeaderEpoch advertised: validation is skipped, the fetch path decides.
VERSIONS = {1: (12, 12), 3: (1, 12)}


def _records(base: int, n: int, epoch: int) -> bytes:
    builder = RecordBatchBuilder(batch_size=1 << 20, base_offset=base, partition_leader_epoch=epoch)
    for i in range(n):
        builder.append(1_700_000_000_000, b"k", b"new-%d" % (base + i), None)
    return bytes(builder.build())


class Script:
    """The new leader (epoch 1) kept offsets 0..2 of epoch 0; 3.. were written in epoch 1."""

    def __init__(self) -> None:
        self.port = 0
        self.fetches: list[tuple[int, int, int]] = []  # (offset, current epoch, last fetched epoch)

    def metadata(self, request: Any, version: int) -> MetadataResponse:
        return MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=self.port)], controller_id=1,
            topics=[MetadataResponseTopic(name=TOPIC, partitions=[MetadataResponsePartition(
                partition_index=0, leader_id=1, leader_epoch=1, replica_nodes=[1], isr_nodes=[1])])])

    async def fetch(self, request: Any, version: int) -> FetchResponse:
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                self.fetches.append((p.fetch_offset, p.current_leader_epoch, p.last_fetched_epoch))
                data = FetchResponsePartitionData(partition_index=p.partition, high_watermark=6,
                                                  last_stable_offset=6, log_start_offset=0)
                if p.last_fetched_epoch == 0 and p.fetch_offset > 3:
                    data.diverging_epoch = FetchResponseEpochEndOffset(epoch=0, end_offset=3)
                elif p.fetch_offset < 6:
                    data.records = _records(p.fetch_offset, 6 - p.fetch_offset, 1)
                else:
                    await asyncio.sleep(0.05)
                parts.append(data)
            topics.append(FetchResponseFetchableTopicResponse(topic=t.topic, partitions=parts))
        return FetchResponse(session_id=0, responses=topics)


async def _run(reset: str, check: Any) -> Script:
    script = Script()
    async with FakeBroker({3: script.metadata, 1: script.fetch}, versions=VERSIONS) as broker:
        script.port = broker.port
        consumer = aio.Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": reset,
                                 "fetch.max.wait.ms": 100, "retry.backoff.ms": 20})
        try:
            consumer.assign([TP])
            # The application had read up to offset 4 in epoch 0 on the old leader.
            consumer.seek(TP, OffsetAndMetadata(5, leader_epoch=0))
            await check(consumer)
        finally:
            await consumer.close()
    return script


@pytest.mark.timeout(60)
def test_diverging_epoch_moves_the_position_back_with_a_reset_policy() -> None:
    async def check(consumer: Any) -> None:
        got: list[Any] = []
        for _ in range(100):
            got.extend(await consumer.poll(0.2))
            if len(got) >= 3:
                break
        assert [(r.offset, r.value, r.leader_epoch) for r in got] == [
            (3, b"new-3", 1), (4, b"new-4", 1), (5, b"new-5", 1)]

    script = asyncio.run(_run("earliest", check))
    assert script.fetches[0] == (5, 1, 0)  # LastFetchedEpoch sent with the current leader epoch
    assert (3, 1, 0) in script.fetches  # then from the divergent offset, with its epoch


@pytest.mark.timeout(60)
def test_diverging_epoch_raises_log_truncation_without_a_reset_policy() -> None:
    async def check(consumer: Any) -> None:
        with pytest.raises(LogTruncationError) as info:
            for _ in range(100):
                await consumer.poll(0.2)
        err = info.value
        assert err.topic == TOPIC and err.partition == 0 and err.context["offsets"] == {TP: 5}
        assert err.divergent_offsets == {TP: OffsetAndMetadata(3, "", 0)}
        consumer.seek(TP, 3)
        got: list[Any] = []
        for _ in range(100):
            got.extend(await consumer.poll(0.2))
            if len(got) >= 3:
                break
        assert [r.offset for r in got] == [3, 4, 5]

    asyncio.run(_run("none", check))
