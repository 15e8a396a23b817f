"""How the sender maps Produce answers to actions, with scripted responses.

A real broker seldom answers OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE_SEQUENCE_NUMBER or
a KIP-951 leader hint on demand, so these cases are driven here with response objects
of the generated protocol classes; the integration tests cover the live paths.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

import kafkalite.producer  # noqa: F401
from kafkalite.errors import (
    InvalidRecordError,
    KafkaError,
    KafkaTimeoutError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
)
from kafkalite.producer.core import ProducerCore
from kafkalite.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkalite.protocol.messages.produce import (
    ProduceResponse,
    ProduceResponseLeaderIdAndEpoch,
    ProduceResponsePartitionProduceResponse,
    ProduceResponseTopicProduceResponse,
)
from kafkalite.protocol.records import RecordBatch
from tests.helpers.settings import resolve

TOPIC = "orders"


def make_core(**settings) -> ProducerCore:
    cfg = resolve("producer", {"bootstrap.servers": "127.0.0.1:9", "retry.backoff.ms": 10,
                               "retry.backoff.max.ms": 10, **settings})
    core = ProducerCore(cfg, blocking=False)
    core.client.metadata.update(MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9) for n in (1, 2)],
        topics=[MetadataResponseTopic(name=TOPIC, topic_id=uuid.uuid4(), partitions=[
            MetadataResponsePartition(partition_index=p, leader_id=1, leader_epoch=5, replica_nodes=[1, 2],
                                      isr_nodes=[1, 2]) for p in range(2)])],
    ), {TOPIC}, time.monotonic())
    core.acc.update_topic(TOPIC, 2, [0, 1])
    if core.idem is not None:
        core.idem.set_producer_id(1000, 0)
    return core


def send(core: ProducerCore, partition: int, value: bytes = b"v"):
    state = core.acc.topics[TOPIC]
    return core.append(state, TOPIC, partition, None, None, value, value, None, None, None)


def drain(core: ProducerCore, partition: int):
    state = core.acc.topics[TOPIC]
    batches = core.acc.drain(1, [state.queues[partition]], 1 << 20, time.monotonic(), core.sender._allowed)
    for b in batches:
        if core.idem is not None and b.base_sequence < 0:
            core.idem.assign(b)
        b.wire_bytes()
        b.sent_once = True
        core.sender.in_flight.add(b)
    return batches


def answer(core: ProducerCore, batches, **per_partition) -> None:
    parts = []
    for b in batches:
        fields = per_partition.get(f"p{b.partition}", {})
        parts.append(ProduceResponsePartitionProduceResponse(index=b.partition, **fields))
    response = ProduceResponse(responses=[ProduceResponseTopicProduceResponse(name=TOPIC, partition_responses=parts)])
    core.sender._handle_response(response, batches, 12, time.monotonic())


def run(coro_fn) -> None:
    async def main() -> None:
        try:
            await coro_fn()
        finally:
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

    asyncio.run(main())


def test_success_and_failure_in_one_response_touch_only_their_batches() -> None:
    async def body() -> None:
        core = make_core()
        f0 = [send(core, 0, b"a%d" % i) for i in range(3)]
        f1 = send(core, 1, b"b")
        batches = drain(core, 0) + drain(core, 1)
        answer(core, batches, p0={"base_offset": 40}, p1={"error_code": InvalidRecordError.code,
                                                          "error_message": "bad record"})
        assert [f.result().offset for f in f0] == [40, 41, 42]
        with pytest.raises(InvalidRecordError, match="bad record") as info:
            f1.result()
        assert info.value.topic == TOPIC and info.value.partition == 1
        assert core.metrics.snapshot()["record-error-total"] == 1
        assert core.pool.available == core.pool.total

    run(body)


def test_not_leader_with_a_leader_hint_retries_on_the_new_leader() -> None:
    async def body() -> None:
        core = make_core()
        f = send(core, 0)
        batches = drain(core, 0)
        answer(core, batches, p0={"error_code": NotLeaderOrFollowerError.code,
                                  "current_leader": ProduceResponseLeaderIdAndEpoch(leader_id=2, leader_epoch=6)})
        assert not f.done()
        assert core.client.metadata.leader_for(TOPIC, 0) == 2  # KIP-951 hint applied
        queue = core.acc.topics[TOPIC].queues[0]
        assert list(queue.batches) == batches and batches[0].attempts == 1
        assert isinstance(batches[0].last_error, NotLeaderOrFollowerError)
        # The retry keeps its sequence and goes first.
        deadline = time.monotonic() + 10
        while not (again := drain(core, 0)) and time.monotonic() < deadline:  # after the retry backoff
            await asyncio.sleep(0.01)
        assert again == batches and again[0].base_sequence == 0
        answer(core, again, p0={"base_offset": 7})
        assert f.result().offset == 7

    run(body)


def test_duplicate_sequence_counts_as_success() -> None:
    async def body() -> None:
        core = make_core()
        f = send(core, 0)
        batches = drain(core, 0)
        answer(core, batches, p0={"error_code": 46, "base_offset": 3})
        assert f.result().offset == 3

    run(body)


def test_out_of_order_for_the_next_batch_bumps_the_epoch_and_resends_rewritten() -> None:
    async def body() -> None:
        core = make_core()
        first = send(core, 0, b"first")
        b1 = drain(core, 0)
        answer(core, b1, p0={"base_offset": 0})
        assert first.result().offset == 0
        f2 = send(core, 0, b"second")
        b2 = drain(core, 0)
        assert b2[0].base_sequence == 1
        answer(core, b2, p0={"error_code": 45})  # OUT_OF_ORDER_SEQUENCE_NUMBER for the next sequence
        assert not f2.done() and core.idem.epoch_bump_required
        core.sender.run_once(time.monotonic())  # applies the bump (and would resend)
        assert core.idem.epoch == 1
        assert (b2[0].producer_epoch, b2[0].base_sequence) == (1, 0)
        wire = RecordBatch(b2[0].wire_bytes())
        assert (wire.producer_id, wire.producer_epoch, wire.base_sequence) == (1000, 1, 0)
        assert wire.is_valid()

    run(body)


def test_message_too_large_splits_the_batch_and_keeps_every_future() -> None:
    async def body() -> None:
        core = make_core(**{"batch.size": 100_000})
        futures = [send(core, 0, b"%04d" % i + b"." * 200) for i in range(100)]
        batches = drain(core, 0)
        assert len(batches) == 1 and batches[0].record_count == 100
        answer(core, batches, p0={"error_code": 10})  # MESSAGE_TOO_LARGE
        queue = core.acc.topics[TOPIC].queues[0]
        pieces = list(queue.batches)
        assert len(pieces) >= 2 and sum(p.record_count for p in pieces) == 100
        assert pieces[0].base_sequence == 0
        offset = 0
        while queue.batches:
            got = drain(core, 0)
            answer(core, got, p0={"base_offset": offset})
            offset += got[0].record_count
        assert [f.result().offset for f in futures] == list(range(100))
        assert core.metrics.snapshot()["batch-split-total"] == 1

    run(body)


def test_retries_stop_at_the_delivery_timeout_with_the_last_broker_error() -> None:
    async def body() -> None:
        core = make_core(**{"delivery.timeout.ms": 30100, "request.timeout.ms": 30000, "linger.ms": 0})
        f = send(core, 0)
        batches = drain(core, 0)
        answer(core, batches, p0={"error_code": NotEnoughReplicasError.code})
        assert not f.done()
        batches[0].delivery_deadline = time.monotonic() - 1  # pretend the time passed
        core.sender._expire(time.monotonic())
        with pytest.raises(NotEnoughReplicasError):
            f.result()
        g = send(core, 1)
        g._batch.delivery_deadline = time.monotonic() - 1
        core.sender._expire(time.monotonic())
        with pytest.raises(KafkaTimeoutError, match="delivery.timeout.ms"):
            g.result()

    run(body)


def test_acks_zero_never_retries_and_reports_offset_minus_one() -> None:
    core = make_core(acks="0")
    assert core.idem is None and core.sender.settings.retries == 0
    assert not core.sender._can_retry(send(core, 0)._batch, NotLeaderOrFollowerError("x"), time.monotonic())


def test_transactional_produce_caps_the_version_for_transactions_v1() -> None:
    async def body() -> None:
        core = make_core(**{"transactional.id": "tx"})
        sent = []

        class Conn:
            def api_version(self, cls):
                return 13

            def send(self, request, api_version=None, expect_response=True):
                sent.append(api_version)
                return asyncio.get_running_loop().create_future()

        core.txn.start_init()
        core.txn.init_done()
        core.txn.begin()
        send(core, 0)
        core.txn.partitions_added([(TOPIC, 0)])
        batches = core.acc.drain(1, [core.acc.topics[TOPIC].queues[0]], 1 << 20, time.monotonic())
        core.sender._send(1, Conn(), batches, time.monotonic())
        core.txn.tv2 = True
        send(core, 1)
        core.txn.partitions_added([(TOPIC, 1)])
        batches = core.acc.drain(1, [core.acc.topics[TOPIC].queues[1]], 1 << 20, time.monotonic())
        core.sender._send(1, Conn(), batches, time.monotonic())
        assert sent == [11, 13]
        assert RecordBatch(batches[0].wire).is_transactional

    run(body)


class _FakeTxnClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    async def end(self, commit: bool, deadline: float) -> None:
        self.calls.append(("end", commit))

    async def init_producer_id(self, deadline: float, bump: bool = False) -> None:
        self.calls.append(("init_producer_id", bump))


def _txn_core(tv2: bool) -> tuple[ProducerCore, _FakeTxnClient]:
    core = make_core(**{"transactional.id": "tx", "delivery.timeout.ms": 30100, "request.timeout.ms": 30000,
                        "linger.ms": 0})
    fake = _FakeTxnClient()
    # The coordinator's requests are scripted; the commit / abort flow around them is the real one.
    core.txn_client.end = fake.end  # type: ignore[method-assign]
    core.txn_client.init_producer_id = fake.init_producer_id  # type: ignore[method-assign]
    core.txn.start_init()
    core.txn.init_done()
    core.txn.tv2 = tv2
    core.txn.begin()
    return core, fake


@pytest.mark.parametrize("tv2", [False, True])
def test_a_record_that_timed_out_fails_the_commit_and_abort_fences_it(tv2: bool) -> None:
    async def body() -> None:
        core, fake = _txn_core(tv2)
        f = send(core, 0)
        core.txn.partitions_added([(TOPIC, 0)])
        batches = drain(core, 0)  # sent, then the request timed out: outcome unknown
        core.sender._handle_error(batches[0], KafkaTimeoutError("request timed out"), time.monotonic(), None)
        batches[0].delivery_deadline = time.monotonic() - 1
        core.sender._expire(time.monotonic())
        assert isinstance(f.exception(), KafkaTimeoutError)
        assert core.txn.state.name == "ABORTABLE_ERROR" and core.txn.epoch_bump_required
        with pytest.raises(KafkaError, match=r"the transaction must be aborted \(abort_transaction\(\)\)") as info:
            await core.commit_transaction(5)
        assert info.value.abortable
        assert fake.calls == []  # never committed
        await core.abort_transaction(5)
        # v1: EndTxn(abort), then a new epoch so a late Produce of the aborted transaction
        # is fenced (KIP-360). v2: EndTxn bumps the epoch itself.
        expected = [("end", False)] + ([] if tv2 else [("init_producer_id", True)])
        assert fake.calls == expected
        assert core.txn.state.name == "READY" and not core.txn.epoch_bump_required

    run(body)


def test_commit_without_broker_side_transaction_skips_end_txn() -> None:
    async def body() -> None:
        core, fake = _txn_core(False)
        await core.commit_transaction(5)
        assert fake.calls == [] and core.txn.state.name == "READY"

    run(body)


# ---------------------------------------------------------------- how long the sender sleeps (issue 27)


def test_an_idle_sender_sleeps_until_its_next_deadline_not_every_second() -> None:
    core = make_core(**{"delivery.timeout.ms": 600_000, "metadata.max.age.ms": 40_000,
                        "metadata.max.idle.ms": 90_000})
    now = time.monotonic()
    # nothing queued: the soonest thing due is the metadata refresh (metadata.max.age.ms)
    assert 39.0 < core.sender.run_once(now) <= 40.0
    core = make_core(**{"delivery.timeout.ms": 600_000, "metadata.max.age.ms": 300_000,
                        "metadata.max.idle.ms": 90_000})
    assert 89.0 < core.sender.run_once(time.monotonic()) <= 90.0  # then forgetting the idle topic


def test_a_lingering_batch_sets_the_delay_and_its_delivery_deadline_the_expiry_check() -> None:
    core = make_core(**{"linger.ms": 200, "delivery.timeout.ms": 60_000})
    send(core, 0)
    (batch,) = core.acc.topics[TOPIC].queues[0].batches
    now = time.monotonic()
    assert 0.0 < core.sender.run_once(now) <= 0.2  # wakes for the linger, not before
    assert core.sender._next_expiry_check == pytest.approx(batch.delivery_deadline)


def test_a_retried_batch_brings_the_expiry_check_forward() -> None:
    core = make_core(**{"delivery.timeout.ms": 60_000})
    core.sender.run_once(time.monotonic())
    planned = core.sender._next_expiry_check
    send(core, 0)
    batches = drain(core, 0)
    batches[0].delivery_deadline = planned - 10.0  # as an old batch's deadline would be
    answer(core, batches, p0={"error_code": NotEnoughReplicasError.code})
    assert core.sender._next_expiry_check == pytest.approx(planned - 10.0)


def test_metadata_idle_check_comes_when_the_least_used_topic_could_be_forgotten() -> None:
    core = make_core()
    acc = core.acc
    state = acc.topics[TOPIC]
    state.last_used = 1000.0
    assert acc.next_idle(1010.0, 300.0, 1.0) == 1300.0
    assert acc.next_idle(1400.0, 300.0, 1.0) == 1401.0  # idle long enough but kept (in flight): look again soon
    state.expired = True
    assert acc.next_idle(1400.0, 300.0, 1.0) == 1700.0  # forgotten topics do not count
