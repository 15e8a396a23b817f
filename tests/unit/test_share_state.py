"""Share consumer building blocks with no broker: acknowledgement batches, share sessions,
the share group member, in-flight records, acquired-range filtering, settings."""

from __future__ import annotations

import pickle
import struct
import uuid

import pytest

from kafkalite.clients_common.membership import HeartbeatAnswer
from kafkalite.clients_common.membership import MembershipState as State
from kafkalite.errors import (
    ConfigError,
    CorruptRecordsError,
    IllegalStateError,
    InvalidArgumentError,
    InvalidGroupIdError,
)
from kafkalite.protocol.record_builder import RecordBatchBuilder, build_end_txn_marker
from kafkalite.share.acks import AckBatch, Acknowledgements
from kafkalite.share.completed_fetch import ShareCompletedFetch
from kafkalite.share.in_flight import InFlight, merge_acks
from kafkalite.share.member import Next, ShareMemberState, java_uuid
from kafkalite.share.session import FINAL_EPOCH, ShareSession, next_epoch
from kafkalite.share.settings import resolve_settings, topics_arg
from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord
from kafkalite.types import TopicPartition
from tests.helpers.settings import resolve

A, R, J, G = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT, AcknowledgeType.GAP
TP = TopicPartition("jobs", 0)


# ---------------------------------------------------------------- acknowledgement batches


def acks_of(pairs: dict[int, AcknowledgeType]) -> Acknowledgements:
    acks = Acknowledgements()
    for offset, kind in pairs.items():
        acks.add(offset, kind)
    return acks


def test_uniform_consecutive_offsets_make_one_batch_with_one_type() -> None:
    assert acks_of({o: A for o in range(5, 105)}).batches() == [AckBatch(5, 104, [1])]


def test_gaps_in_offsets_split_batches_and_mixed_runs_list_every_type() -> None:
    acks = acks_of({10: A, 11: A, 12: R, 20: J, 21: G})
    assert acks.batches() == [AckBatch(10, 12, [1, 1, 2]), AckBatch(20, 21, [3, 0])]


def test_long_uniform_stretch_inside_a_mixed_run_gets_its_own_batch() -> None:
    types = {0: R, **{o: A for o in range(1, 31)}, 31: J}
    batches = acks_of(types).batches()
    assert batches == [AckBatch(0, 0, [2]), AckBatch(1, 30, [1]), AckBatch(31, 31, [3])]
    # Every offset is covered exactly once with its own type.
    expanded = {}
    for b in batches:
        for i, off in enumerate(range(b.first_offset, b.last_offset + 1)):
            expanded[off] = b.types[0] if len(b.types) == 1 else b.types[i]
    assert expanded == {o: int(t) for o, t in types.items()}


def test_later_acknowledgement_of_an_offset_wins_on_merge() -> None:
    merged = acks_of({1: A, 2: A}).merge(acks_of({2: R}))
    assert merged.types == {1: A, 2: R} and len(merged) == 2 and merged.count(R) == 1


# ---------------------------------------------------------------- share sessions


def test_session_opens_with_every_partition_then_sends_only_changes() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    a, b, c = TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("b", 1)
    s = ShareSession(1)
    plan = s.build_fetch({a: t1, b: t2})
    assert plan.epoch == 0 and sorted(plan.added) == sorted([(a, t1), (b, t2)]) and plan.forgotten == []
    assert s.on_response(0) and s.epoch == 1
    plan = s.build_fetch({a: t1, b: t2})
    assert plan.epoch == 1 and plan.added == [] and plan.forgotten == []
    s.on_response(0)
    plan = s.build_fetch({a: t1, c: t2})
    assert plan.epoch == 2 and plan.added == [(c, t2)] and plan.forgotten == [(b, t2)]


def test_recreated_topic_is_forgotten_and_added_with_its_new_id() -> None:
    old, new = uuid.uuid4(), uuid.uuid4()
    s = ShareSession(1)
    s.build_fetch({TP: old})
    s.on_response(0)
    plan = s.build_fetch({TP: new})
    assert plan.added == [(TP, new)] and plan.forgotten == [(TP, old)]


@pytest.mark.parametrize("code", [122, 123, 133])
def test_session_errors_start_over_at_epoch_zero(code: int) -> None:
    s = ShareSession(1)
    s.build_fetch({TP: uuid.uuid4()})
    s.on_response(0)
    assert not s.is_new
    assert s.on_response(code) is False
    assert s.is_new and s.partitions == {}


def test_other_errors_still_advance_the_epoch_and_epochs_wrap_to_one() -> None:
    s = ShareSession(1)
    s.on_response(0)
    assert s.on_response(29) is False and s.epoch == 2
    assert next_epoch(2**31 - 1) == 1
    assert s.close_epoch() == FINAL_EPOCH
    s.on_response(0)
    assert s.is_new


# ---------------------------------------------------------------- the member


def test_member_id_is_a_java_uuid_string() -> None:
    ids = {java_uuid() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert len(text) == 22 and not text.startswith("-")
        assert len(__import__("base64").urlsafe_b64decode(text + "==")) == 16


def test_member_joins_takes_the_assignment_and_interval() -> None:
    m = ShareMemberState()
    m.start_joining()
    assert m.state is State.JOINING and m.fields(("t",)) == (True, True)
    tid = uuid.uuid4()
    m.sent(0, ("t",))
    assert m.on_response(HeartbeatAnswer(0, m.member_id, 3, 1500, {tid: [0, 1]})) is Next.ASSIGNMENT
    assert m.active and m.member_epoch == 3 and m.interval_s == 1.5 and m.assignment == {tid: [0, 1]}
    assert m.fields(("t",)) == (False, False)             # incremental heartbeat
    assert m.fields(("t", "u")) == (False, True)          # subscription changed
    assert m.on_response(HeartbeatAnswer(0, m.member_id, 3, 1500, None)) is Next.OK


def test_fenced_member_drops_its_assignment_and_rejoins_with_the_same_id() -> None:
    m = ShareMemberState()
    m.start_joining()
    m.on_response(HeartbeatAnswer(0, m.member_id, 2, 1000, {uuid.uuid4(): [0]}))
    member_id = m.member_id
    assert m.on_response(HeartbeatAnswer(110)) is Next.FENCED
    assert m.member_epoch == 0 and m.assignment == {} and m.member_id == member_id
    assert m.fields(()) == (True, True)


@pytest.mark.parametrize(("code", "outcome"), [(16, Next.COORDINATOR), (30, Next.FATAL), (23, Next.FATAL),
                                               (7, Next.RETRY)])
def test_member_error_codes(code: int, outcome: Next) -> None:
    m = ShareMemberState()
    m.start_joining()
    assert m.on_response(HeartbeatAnswer(code)) is outcome
    assert (m.fatal_code == code) == (outcome is Next.FATAL)
    assert m.should_heartbeat(True) == (outcome is not Next.FATAL)


# ---------------------------------------------------------------- in-flight records


def rec(offset: int, partition: int = 0) -> ShareConsumerRecord:
    return ShareConsumerRecord("jobs", partition, offset, 0, 0, None, b"v", delivery_count=1)


def test_in_flight_acknowledge_once_then_take_by_node() -> None:
    flight = InFlight()
    flight.add(1, [rec(0), rec(1)])
    flight.add(2, [rec(5, partition=1)])
    flight.acknowledge("jobs", 0, 1, R)
    with pytest.raises(IllegalStateError, match="offset 1 of jobs-0"):
        flight.acknowledge("jobs", 0, 1, A)  # twice
    with pytest.raises(IllegalStateError, match="offset 9"):
        flight.acknowledge("jobs", 0, 9, A)  # never delivered
    assert len(flight) == 2
    flight.acknowledge_all(A)
    assert len(flight) == 0
    taken = flight.take_acknowledged()
    assert taken[1][TP].types == {0: A, 1: R}
    assert taken[2][TopicPartition("jobs", 1)].types == {5: A}
    assert flight.take_acknowledged() == {}
    merged = merge_acks({1: {TP: acks_of({0: R})}}, taken)
    assert merged[1][TP].types == {0: A, 1: R}


def test_share_record_keeps_delivery_count_through_pickle() -> None:
    r = ShareConsumerRecord("jobs", 0, 7, 1, 0, b"k", b"v", [("h", b"1")], 4, 1, 1, delivery_count=3)
    assert (r.topic, r.partition, r.offset, r.key, r.value, r.delivery_count) == ("jobs", 0, 7, b"k", b"v", 3)
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is ShareConsumerRecord and back == r and back.delivery_count == 3
    assert "delivery_count=3" in repr(r)
    assert AcknowledgeType.parse("release") is R and AcknowledgeType.parse(3) is J
    with pytest.raises(InvalidArgumentError, match="unknown acknowledge type"):
        AcknowledgeType.parse("maybe")


# ---------------------------------------------------------------- acquired-range filtering


def batch(base: int, n: int, prefix: bytes = b"v") -> bytes:
    b = RecordBatchBuilder(base_offset=base, batch_size=1 << 20)
    for i in range(n):
        b.append(1_700_000_000_000 + i, None, prefix + str(base + i).encode(), None)
    return b.build()


def drain(fetch: ShareCompletedFetch, n: int = 1000) -> tuple[list[ShareConsumerRecord], dict[int, AcknowledgeType]]:
    out: list[ShareConsumerRecord] = []
    acks: dict[int, AcknowledgeType] = {}
    fetch.take(n, out, acks.__setitem__)
    return out, acks


def test_only_acquired_records_are_returned_with_their_delivery_counts() -> None:
    data = batch(0, 10) + batch(10, 10)
    fetch = ShareCompletedFetch(TP, 1, data, [(3, 5, 1), (12, 13, 2)])
    out, acks = drain(fetch)
    assert [(r.offset, r.delivery_count, r.value) for r in out] == [
        (3, 1, b"v3"), (4, 1, b"v4"), (5, 1, b"v5"), (12, 2, b"v12"), (13, 2, b"v13")]
    assert acks == {} and fetch.exhausted
    assert out[0].serialized_value_size == 2 and out[0].serialized_key_size == -1


def test_take_is_resumable_in_slices() -> None:
    fetch = ShareCompletedFetch(TP, 1, batch(0, 10), [(0, 9, 1)])
    first, _ = drain(fetch, 4)
    second, _ = drain(fetch, 4)
    third, _ = drain(fetch, 4)
    assert [r.offset for r in first + second + third] == list(range(10)) and len(third) == 2
    assert fetch.exhausted


def test_acquired_offsets_without_records_are_gaps() -> None:
    marker = build_end_txn_marker(True, producer_id=7, producer_epoch=0, timestamp_ms=1, base_offset=3)
    data = batch(0, 3) + marker + batch(4, 2)
    # offset 3 is a transaction marker, 6-7 were compacted away / beyond the data
    out, acks = drain(ShareCompletedFetch(TP, 1, data, [(0, 7, 1)]))
    assert [r.offset for r in out] == [0, 1, 2, 4, 5]
    assert acks == {3: G, 6: G, 7: G}


def test_corrupt_batch_is_rejected_after_the_records_before_it() -> None:
    good, bad = batch(0, 3), bytearray(batch(3, 3))
    bad[-1] ^= 0xFF  # breaks the CRC
    fetch = ShareCompletedFetch(TP, 1, good + bytes(bad) + batch(6, 2), [(0, 7, 1)])
    out: list[ShareConsumerRecord] = []
    acks: dict[int, AcknowledgeType] = {}
    assert fetch.take(100, out, acks.__setitem__) == 3
    with pytest.raises(CorruptRecordsError, match="offset 3 in jobs-0"):
        fetch.take(100, out, acks.__setitem__)
    assert acks == {3: J, 4: J, 5: J}
    assert fetch.take(100, out, acks.__setitem__) == 2 and [r.offset for r in out] == [0, 1, 2, 6, 7]


def test_crc_checks_can_be_turned_off() -> None:
    bad = bytearray(batch(0, 2))
    bad[17] ^= 0x01  # the stored CRC itself
    out, acks = drain(ShareCompletedFetch(TP, 1, bytes(bad), [(0, 1, 1)], check_crcs=False))
    assert len(out) == 2 and acks == {}


def test_broken_batch_header_rejects_every_acquired_record_left() -> None:
    data = batch(0, 2) + struct.pack(">qi", 2, 3) + b"xyz"   # length below any batch's minimum
    fetch = ShareCompletedFetch(TP, 1, data, [(0, 4, 1)])
    out: list[ShareConsumerRecord] = []
    acks: dict[int, AcknowledgeType] = {}
    assert fetch.take(10, out, acks.__setitem__) == 2
    with pytest.raises(CorruptRecordsError):
        fetch.take(10, out, acks.__setitem__)
    assert acks == {2: J, 3: J, 4: J}


# ---------------------------------------------------------------- settings


def test_share_consumer_settings() -> None:
    cfg = resolve_settings({"bootstrap.servers": "h:1", "group.id": "g"}, {"share_acknowledgement_mode": "explicit"})
    assert cfg["share.acknowledgement.mode"] == "explicit" and cfg["share.acquire.mode"] == "batch_optimized"
    assert cfg["max.poll.records"] == 500 and cfg["fetch.max.wait.ms"] == 500
    with pytest.raises(InvalidGroupIdError, match="group.id"):
        resolve_settings({"bootstrap.servers": "h:1"}, {})
    with pytest.raises(ConfigError, match="share.auto.offset.reset"):
        resolve_settings({"bootstrap.servers": "h:1", "group.id": "g", "auto.offset.reset": "earliest"}, {})
    with pytest.raises(ConfigError, match=r"'enable.auto.commit' does not apply to a share_consumer \(share groups assign partitions on the broker"):
        resolve_settings({"bootstrap.servers": "h:1", "group.id": "g"}, {"enable_auto_commit": False})
    with pytest.raises(ConfigError, match="must be one of implicit, explicit"):
        resolve_settings({"bootstrap.servers": "h:1", "group.id": "g", "share.acknowledgement.mode": "auto"}, {})
    with pytest.raises(ConfigError, match="does not apply to a consumer"):
        resolve("consumer", {"bootstrap.servers": "h:1", "share.acquire.mode": "record_limit"})
    assert topics_arg("jobs") == frozenset({"jobs"})
    with pytest.raises(IllegalStateError, match="not patterns"):
        topics_arg(["^jobs.*"])
