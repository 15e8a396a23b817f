"""The transaction client looks its coordinator up again after a disconnect.

A scripted fake network client (no sockets): FindCoordinator answers from a script, and
each node either refuses connections (SIGKILLed), drops the request in flight, or answers.
The real ``NetworkClient.find_coordinator`` keeps returning a cached coordinator while the
node is in the metadata, so unless the transaction client forgets it after a disconnect it
waits on the dead node until that node is back (and then only learns NOT_COORDINATOR):
what made ``init_transactions(timeout=120)`` time out in the coordinator-kill fault test.
Java's ``TransactionManager`` calls ``lookupCoordinator`` when a response
``wasDisconnected()`` and the Sender does when the coordinator node is not ready.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafkalite.backoff import ExponentialBackoff
from kafkalite.errors import KafkaConnectionError, KafkaTimeoutError
from kafkalite.net.client import COORDINATOR_TRANSACTION
from kafkalite.producer.idempotence import IdempotenceState
from kafkalite.producer.transactions import TransactionManager
from kafkalite.producer.txn_requests import TransactionClient
from kafkalite.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from kafkalite.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)

TXN_ID = "tx-rediscover"


class FakeConnection:
    versions = None

    def __init__(self, node: int, net: FakeNetwork) -> None:
        self.node = node
        self.net = net

    def api_version(self, cls: Any) -> int:
        return 4

    async def request(self, request: Any, api_version: int, timeout_ms: float) -> Any:
        self.net.sent.append((self.node, type(request).__name__))
        if self.node in self.net.drop_in_flight:
            self.net.drop_in_flight.discard(self.node)
            self.net.dead.add(self.node)  # SIGKILLed with the request in flight
            raise KafkaConnectionError(f"connection to node {self.node} lost")
        if isinstance(request, InitProducerIdRequest):
            return InitProducerIdResponse(error_code=0, producer_id=9000, producer_epoch=1)
        assert isinstance(request, EndTxnRequest)
        return EndTxnResponse(error_code=0, producer_id=-1, producer_epoch=-1)


class FakeNetwork:
    """Like ``NetworkClient``: the coordinator is cached until invalidated."""

    def __init__(self, answers: list[int], dead: set[int]) -> None:
        self.answers = answers
        self.dead = dead
        self.drop_in_flight: set[int] = set()
        self.cached: dict[tuple[int, str], int] = {}
        self.lookups = 0
        self.refused: list[int] = []
        self.sent: list[tuple[int, str]] = []

    async def find_coordinator(self, key: str, key_type: int, timeout_s: float | None = None) -> int:
        cached = self.cached.get((key_type, key))
        if cached is not None:
            return cached
        self.lookups += 1
        node = self.answers[min(self.lookups - 1, len(self.answers) - 1)]
        self.cached[(key_type, key)] = node
        return node

    def invalidate_coordinator(self, key: str, key_type: int) -> None:
        self.cached.pop((key_type, key), None)

    async def connection(self, node: int) -> FakeConnection:
        await asyncio.sleep(0)
        if node in self.dead:
            self.refused.append(node)
            raise KafkaConnectionError(f"connection to node {node} refused")
        return FakeConnection(node, self)


class NoBatches:
    async def flush(self, timeout_s: float | None) -> None:
        return None

    def fail_queued(self, make_error: Any) -> None:
        return None


def make(net: FakeNetwork) -> tuple[TransactionClient, TransactionManager]:
    txn = TransactionManager(TXN_ID, 60000)
    client = TransactionClient(client=net, txn=txn, idem=IdempotenceState(transactional=True),  # type: ignore[arg-type]
                               batches=NoBatches(), wake=lambda: None, backoff=ExponentialBackoff(5, 20),
                               request_timeout_ms=1000, max_block_s=3.0)
    return client, txn


async def test_init_looks_the_coordinator_up_again_when_it_is_down() -> None:
    # FindCoordinator first names node 2, which was just SIGKILLed (still in the metadata);
    # asked again it names node 1, the newly elected coordinator.
    net = FakeNetwork(answers=[2, 1], dead={2})
    client, _ = make(net)
    await client.initialize(3.0)
    assert client.idem.producer_id == 9000 and client.idem.epoch == 1
    assert net.refused == [2], "the dead coordinator was asked more than once without a new lookup"
    assert net.lookups == 2
    assert net.sent == [(1, "InitProducerIdRequest")]
    assert net.cached == {(COORDINATOR_TRANSACTION, TXN_ID): 1}


async def test_end_txn_looks_the_coordinator_up_again_after_a_disconnect() -> None:
    # The coordinator dies with EndTxn in flight; the retry goes to the new coordinator.
    net = FakeNetwork(answers=[2, 1], dead=set())
    client, txn = make(net)
    await client.initialize(3.0)  # on node 2
    net.drop_in_flight.add(2)
    txn.begin()
    txn.started_on_broker = True
    await client.commit(3.0)
    assert net.sent == [(2, "InitProducerIdRequest"), (2, "EndTxnRequest"), (1, "EndTxnRequest")]
    assert net.refused == []


async def test_a_coordinator_down_for_good_still_times_out() -> None:
    net = FakeNetwork(answers=[2], dead={2})
    client, _ = make(net)
    with pytest.raises(KafkaTimeoutError):
        await client.initialize(0.3)
    assert net.lookups > 1  # looked up again each time, never stuck on a cached answer
