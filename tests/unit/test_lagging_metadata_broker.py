"""A cluster where one broker's metadata lags: it names a leader epoch the leader has left.

A real broker cannot be held behind on demand, so three scripted brokers play the
cluster: node 1 answers Metadata with leader epoch 3 for the partition, nodes 2 and 3
with epoch 5; node 2 leads at epoch 5 and fences a ListOffsets naming an older epoch
(FENCED_LEADER_EPOCH), as Kafka's ``Partition.localLogWithEpochOrThrow`` does.

* The admin client's ``list_offsets`` sends no leader epoch (Java's ``ListOffsetsHandler``
  leaves it -1), so it completes whichever broker's metadata it holds. It used to send
  the cached epoch and, with node 1 answering every refresh, timed out after a minute of
  FENCED_LEADER_EPOCH (seen in the group-churn fault scenario on Kafka 4.4).
* An idle client's metadata refreshes go to a random one of its idle connections (Java's
  ``leastLoadedNode`` starts at a random offset), not always to the same broker.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

from kafkalite import TopicPartition, aio
from kafkalite.admin.types import OffsetSpec
from kafkalite.net.client import NetworkClient
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
from tests.helpers.fake_broker import FakeBroker
from tests.helpers.settings import resolve

TOPIC = "lagging-meta"
LEADER, LEADER_EPOCH, LAGGING_NODE, LAGGING_EPOCH = 2, 5, 1, 3
FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER = 74, 76, 6
METADATA, LIST_OFFSETS = 3, 2


class Cluster:
    """Three scripted brokers; ``brokers[i]`` is node ``i + 1``."""

    def __init__(self) -> None:
        self.brokers = [FakeBroker({METADATA: self._metadata_of(n), LIST_OFFSETS: self._list_offsets_of(n)},
                                   node_id=n) for n in (1, 2, 3)]
        self.epochs_sent: list[int] = []

    def _metadata_of(self, node: int) -> Any:
        epoch = LAGGING_EPOCH if node == LAGGING_NODE else LEADER_EPOCH

        def metadata(request: Any, version: int) -> MetadataResponse:
            return MetadataResponse(
                brokers=[MetadataResponseBroker(node_id=b.node_id, host="127.0.0.1", port=b.port)
                         for b in self.brokers],
                cluster_id="fake", controller_id=LEADER,
                topics=[MetadataResponseTopic(error_code=0, name=TOPIC, partitions=[MetadataResponsePartition(
                    error_code=0, partition_index=0, leader_id=LEADER, leader_epoch=epoch,
                    replica_nodes=[1, 2, 3], isr_nodes=[1, 2, 3])])])
        return metadata

    def _list_offsets_of(self, node: int) -> Any:
        def list_offsets(request: Any, version: int) -> ListOffsetsResponse:
            part = request.topics[0].partitions[0]
            self.epochs_sent.append(part.current_leader_epoch)
            if node != LEADER:
                code = NOT_LEADER_OR_FOLLOWER
            elif 0 <= part.current_leader_epoch < LEADER_EPOCH:
                code = FENCED_LEADER_EPOCH
            elif part.current_leader_epoch > LEADER_EPOCH:
                code = UNKNOWN_LEADER_EPOCH
            else:
                code = 0
            return ListOffsetsResponse(topics=[ListOffsetsResponseListOffsetsTopicResponse(name=TOPIC, partitions=[
                ListOffsetsResponseListOffsetsPartitionResponse(
                    partition_index=0, error_code=code, timestamp=-1, offset=42 if not code else -1,
                    leader_epoch=LEADER_EPOCH if not code else -1)])])
        return list_offsets

    async def __aenter__(self) -> Cluster:
        self._stack = AsyncExitStack()
        for broker in self.brokers:
            await self._stack.enter_async_context(broker)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    def metadata_requests(self, node: int) -> int:
        return sum(1 for key, _, _ in self.brokers[node - 1].requests if key == METADATA)


def test_list_offsets_completes_while_the_metadata_broker_lags() -> None:
    async def main() -> None:
        async with Cluster() as cluster:
            lagging = cluster.brokers[LAGGING_NODE - 1]
            async with aio.AdminClient({"bootstrap.servers": lagging.bootstrap,
                                        "default.api.timeout.ms": 20_000}) as admin:
                tp = TopicPartition(TOPIC, 0)
                for _ in range(5):  # whichever broker the refreshes reach
                    info = (await admin.list_offsets({tp: OffsetSpec.latest()}))[tp].result()
                    assert (info.offset, info.leader_epoch) == (42, LEADER_EPOCH)
            assert cluster.epochs_sent and set(cluster.epochs_sent) == {-1}

    asyncio.run(main())


def test_idle_metadata_refreshes_are_spread_over_the_connected_brokers() -> None:
    async def main() -> None:
        async with Cluster() as cluster:
            client = NetworkClient(resolve("consumer", {"bootstrap.servers": cluster.brokers[0].bootstrap}))
            try:
                await client.bootstrap(timeout_s=10)
                for node in (1, 2, 3):
                    await client.connection(node)
                before = {n: cluster.metadata_requests(n) for n in (1, 2, 3)}
                for _ in range(60):
                    await client.refresh_metadata({TOPIC}, timeout_s=10)
                asked = {n: cluster.metadata_requests(n) - before[n] for n in (1, 2, 3)}
                assert sum(asked.values()) == 60
                # Uniform over three: each gets 20 on average; none at all has odds 3 * (2/3)**60.
                assert all(count > 0 for count in asked.values()), asked
            finally:
                await client.close()

    asyncio.run(main())
