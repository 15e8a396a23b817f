"""Subscription state, fetch sessions (KIP-227) and consumer settings, with no broker."""

from __future__ import annotations

import re
import uuid

import pytest

from kafkalite.consumer import _frontend as fe
from kafkalite.consumer.fetch_session import (
    FetchSessionHandler,
    PartitionFetchData,
    next_epoch,
)
from kafkalite.consumer.records import ConsumerRecords, add_range
from kafkalite.consumer.subscription import SubscriptionState
from kafkalite.errors import (
    ConfigError,
    IllegalStateError,
    InvalidGroupIdError,
    InvalidRegularExpressionError,
)
from kafkalite.types import ConsumerRecord, OffsetAndMetadata, TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


# ------------------------------------------------------------------ subscription state


def test_subscribe_and_assign_are_mutually_exclusive() -> None:
    subs = SubscriptionState()
    subs.subscribe(["a"])
    with pytest.raises(IllegalStateError, match="mutually exclusive"):
        subs.assign_from_user([A0])
    subs.unsubscribe()
    subs.assign_from_user([A0])
    with pytest.raises(IllegalStateError, match="mutually exclusive"):
        subs.subscribe(["a"])
    with pytest.raises(IllegalStateError, match="mutually exclusive"):
        subs.subscribe_pattern("a.*")


def test_invalid_regex_is_a_typed_error_naming_it() -> None:
    subs = SubscriptionState()
    with pytest.raises(InvalidRegularExpressionError, match=r"invalid subscription pattern 'orders\[': unterminated character set"):
        subs.subscribe_pattern("orders[")


def test_pattern_matches_whole_names_and_skips_internal_topics() -> None:
    subs = SubscriptionState()
    subs.subscribe_pattern(re.compile("ord.*"))
    assert subs.matches("orders") and not subs.matches("xorders")
    assert not subs.matches("ord_internal", internal=True)
    assert subs.update_pattern_topics(["orders"]) and subs.subscription() == {"orders"}
    assert not subs.update_pattern_topics(["orders"])


def test_seek_requires_an_assigned_partition() -> None:
    subs = SubscriptionState()
    subs.assign_from_user([A0])
    with pytest.raises(IllegalStateError, match="b-0|'b' partition 0"):
        subs.seek(B0, 5)
    with pytest.raises(IllegalStateError):
        subs.seek(A0, -1)


def test_positions_resets_and_tokens() -> None:
    subs = SubscriptionState("earliest")
    subs.assign_from_user([A0, A1])
    assert subs.partitions_needing_position() == [A0, A1]
    assert subs.fetchable_partitions() == []
    subs.seek(A0, 10)
    token = subs.state(A0).token
    assert subs.fetchable_partitions() == [A0]
    assert subs.advance(A0, token, 15, 3) and subs.position(A0) == 15
    subs.request_reset([A0])
    assert subs.partitions_needing_reset() == {A0: "earliest"} and subs.position(A0) is None
    assert not subs.advance(A0, token, 20, None)  # a fetch from before the reset is stale
    assert not subs.set_position_if_unset(A0, 1, token=token)
    assert subs.set_position_if_unset(A0, 0, token=subs.state(A0).token)
    assert subs.all_consumed() == {A0: OffsetAndMetadata(0, "", None)}


def test_pause_resume_and_callbacks_gate_fetching() -> None:
    subs = SubscriptionState()
    subs.subscribe(["a"])
    subs.assign_from_subscribed([A0, A1], awaiting_callback=[A1])
    subs.seek(A0, 0)
    subs.seek(A1, 0)
    assert subs.fetchable_partitions() == [A0]  # A1 waits for on_partitions_assigned
    subs.callback_done([A1])
    subs.pause([A0])
    assert subs.fetchable_partitions() == [A1] and subs.paused_partitions() == {A0}
    subs.resume([A0])
    subs.mark_pending_revocation([A1])
    assert subs.fetchable_partitions() == [A0]
    assert A1 not in subs.all_consumed()


def test_assignment_keeps_positions_of_retained_partitions() -> None:
    subs = SubscriptionState()
    subs.subscribe(["a"])
    subs.assign_from_subscribed([A0, A1])
    subs.seek(A0, 42)
    subs.assign_from_subscribed([A0])
    assert subs.position(A0) == 42 and subs.assigned_partitions() == {A0}


def test_lag_uses_hw_or_lso() -> None:
    subs = SubscriptionState()
    subs.assign_from_user([A0])
    assert subs.lag(A0, False) is None
    subs.seek(A0, 10)
    subs.update_marks(A0, 25, 20, 0)
    assert subs.lag(A0, False) == 15 and subs.lag(A0, True) == 10


# ------------------------------------------------------------------ fetch sessions


ID1 = uuid.UUID(int=1)


def _d(offset: int, tid: uuid.UUID = ID1) -> PartitionFetchData:
    return PartitionFetchData(tid, offset, 1024, 0)


def test_fetch_session_full_then_incremental() -> None:
    h = FetchSessionHandler(1)
    plan = h.build({A0: _d(0), A1: _d(0)})
    assert plan.full and plan.epoch == 0 and plan.session_id == 0 and set(plan.to_send) == {A0, A1}
    assert h.handle_response(0, 77)
    assert (h.session_id, h.epoch) == (77, 1)
    plan = h.build({A0: _d(5), A1: _d(0)})  # A0 got data (new offset), A1 unchanged
    assert not plan.full and plan.session_id == 77 and plan.epoch == 1
    assert set(plan.to_send) == {A0} and plan.forgotten == []
    assert h.handle_response(0, 77) and h.epoch == 2
    plan = h.build({A1: _d(0)})  # A0 paused: forget it or the broker keeps returning it
    assert plan.to_send == {} and plan.forgotten == [(A0, uuid.UUID(int=1))]


def test_fetch_session_recreated_topic_is_forgotten_and_readded() -> None:
    h = FetchSessionHandler(1)
    h.build({A0: _d(0)})
    h.handle_response(0, 5)
    plan = h.build({A0: _d(0, uuid.UUID(int=2))})
    assert set(plan.to_send) == {A0} and plan.forgotten == [(A0, uuid.UUID(int=1))]


def test_fetch_session_errors_restart_the_session() -> None:
    h = FetchSessionHandler(1)
    h.build({A0: _d(0)})
    h.handle_response(0, 5)
    h.build({A0: _d(1)})
    assert not h.handle_response(71, 0)  # INVALID_FETCH_SESSION_EPOCH: close it, open a new one
    assert h.is_full and h.session_id == 5 and h.epoch == 0
    h.build({A0: _d(1)})
    assert not h.handle_response(70, 0)  # FETCH_SESSION_ID_NOT_FOUND
    assert h.session_id == 0 and h.epoch == 0
    h.build({A0: _d(1)})
    assert h.handle_response(0, 0)  # the broker declined to create a session: stay sessionless
    assert h.is_full and h.session_id == 0
    h.build({A0: _d(1)})
    h.handle_error()
    assert h.is_full


def test_a_damaged_negative_session_id_is_not_adopted() -> None:
    # A corrupted Fetch response once handed the consumer session id -828244700: the
    # full request closing it after the next error named it again, and Kafka failed every
    # Fetch of ours with UNKNOWN_SERVER_ERROR from then on (its session cache indexes its
    # shards with the id), so the consumer never fetched again.
    h = FetchSessionHandler(1)
    h.build({A0: _d(0)})
    assert h.handle_response(0, -828244700)  # the data is fine
    assert h.is_full and h.session_id == 0
    plan = h.build({A0: _d(3)})
    assert plan.full and plan.session_id == 0 and plan.epoch == 0
    assert h.handle_response(0, 42)
    assert (h.session_id, h.epoch) == (42, 1)


def test_epochs_wrap_to_one() -> None:
    assert next_epoch(1) == 2 and next_epoch(2**31 - 1) == 1 and next_epoch(-1) == -1


# ------------------------------------------------------------------ settings and arguments


def test_settings_cross_checks() -> None:
    base = {"bootstrap.servers": "127.0.0.1:9092"}
    with pytest.raises(ConfigError, match="'group.instance.id' needs 'group.id'"):
        fe.resolve_settings({**base, "group.instance.id": "x"}, {})
    with pytest.raises(ConfigError, match="'partition.assignment.strategy' is not used with group.protocol=consumer"):
        fe.resolve_settings({**base, "group.id": "g", "group.protocol": "consumer",
                             "partition.assignment.strategy": "range"}, {})
    with pytest.raises(ConfigError, match=r"'group.remote.assignor' needs group.protocol=consumer \(KIP-848\)"):
        fe.resolve_settings({**base, "group.id": "g", "group.remote.assignor": "uniform"}, {})
    with pytest.raises(ConfigError, match=r"'heartbeat.interval.ms' \(50000\) must be lower than 'session.timeout.ms'"):
        fe.resolve_settings({**base, "group.id": "g", "heartbeat.interval.ms": 50000}, {})
    with pytest.raises(ConfigError, match="unknown assignor"):
        fe.resolve_settings({**base, "group.id": "g", "partition.assignment.strategy": "nope"}, {})
    cfg = fe.resolve_settings(base, {"group_id": "g", "max_poll_records": 7})
    assert cfg["max.poll.records"] == 7
    with pytest.raises(InvalidGroupIdError, match="group.id"):
        fe.require_group(fe.resolve_settings(base, {}), "subscribe()")


def test_parse_subscription_forms() -> None:
    assert fe.parse_subscription(["a", "b"], None) == (["a", "b"], None)
    assert fe.parse_subscription("a", None) == (["a"], None)
    assert fe.parse_subscription("^a.*", None) == (None, "^a.*")
    assert fe.parse_subscription(None, "a.*") == (None, "a.*")
    pat = re.compile("x")
    assert fe.parse_subscription(pat, None) == (None, pat)
    with pytest.raises(IllegalStateError):
        fe.parse_subscription(["a"], "b")
    with pytest.raises(IllegalStateError):
        fe.parse_subscription(None, None)
    with pytest.raises(IllegalStateError):
        fe.partitions_arg([("a", "0")])
    assert fe.offsets_arg({("a", 0): 5}) == {A0: OffsetAndMetadata(5)}


def test_consumer_records_grouping() -> None:
    recs = ConsumerRecords()
    recs.extend([ConsumerRecord("a", 0, i, 0, 0, None, b"x") for i in range(3)])
    add_range(recs, A0, 0, 3)
    recs.append(ConsumerRecord("b", 0, 9, 0, 0, None, b"y"))
    add_range(recs, B0, 3, 4)
    assert recs.partitions() == {A0, B0}
    assert [r.offset for r in recs.records(A0)] == [0, 1, 2]
    assert len(recs) == 4 and recs.by_partition()[B0][0].value == b"y"


# ------------------------------------------------------------------ KIP-320 validation


def _positioned(reset: str = "earliest", epoch: int | None = 3) -> SubscriptionState:
    subs = SubscriptionState(reset)
    subs.assign_from_user([A0])
    with subs.lock:
        subs.state(A0)._set_position(100, epoch, validate=False)
        assert not subs.maybe_validate_for_leader(A0, 5)  # the first epoch seen is adopted
    return subs


def test_a_new_leader_epoch_holds_the_partition_until_validated() -> None:
    subs = _positioned()
    token = subs.state(A0).token
    assert subs.fetchable_partitions() == [A0]
    with subs.lock:
        assert subs.maybe_validate_for_leader(A0, 6)
    assert subs.fetchable_partitions() == [] and subs.valid_position(A0) is None
    assert subs.state(A0).token != token  # buffered fetches from the old leader are stale
    due = subs.partitions_needing_validation(0.0)
    assert due == {A0: (100, 3, subs.state(A0).token)}
    assert subs.validation_started(A0, due[A0][2], 6) and subs.state(A0).leader_epoch == 6
    # The epoch ends at or after the position: validated, fetching resumes at 100.
    assert subs.complete_validation(A0, 100, due[A0][2], 150, 3) is None
    assert subs.fetchable_partitions() == [A0] and subs.valid_position(A0) == 100


def test_a_position_without_record_epoch_is_not_validated() -> None:
    subs = _positioned(epoch=None)
    with subs.lock:
        assert not subs.maybe_validate_for_leader(A0, 6)
    assert subs.fetchable_partitions() == [A0] and subs.state(A0).leader_epoch == 6


def test_truncation_with_a_reset_policy_seeks_to_the_divergent_offset() -> None:
    subs = _positioned("latest")
    with subs.lock:
        subs.maybe_validate_for_leader(A0, 6)
    token = subs.state(A0).token
    assert subs.complete_validation(A0, 100, token, 60, 2) is None
    state = subs.state(A0)
    assert (state.position, state.position_epoch, state.awaiting_validation) == (60, 2, False)
    assert state.token != token and state.leader_epoch == 6 and subs.fetchable_partitions() == [A0]


def test_unknown_epoch_with_a_reset_policy_resets() -> None:
    subs = _positioned("earliest")
    with subs.lock:
        subs.maybe_validate_for_leader(A0, 6)
    assert subs.complete_validation(A0, 100, subs.state(A0).token, -1, -1) is None
    assert subs.partitions_needing_reset() == {A0: "earliest"} and subs.position(A0) is None


def test_truncation_without_a_reset_policy_is_reported_and_keeps_the_partition_held() -> None:
    subs = _positioned("none")
    with subs.lock:
        subs.maybe_validate_for_leader(A0, 6)
    token = subs.state(A0).token
    truncation = subs.complete_validation(A0, 100, token, 60, 2, retry_at=50.0)
    assert truncation is not None and truncation.tp == A0
    assert truncation.fetch_offset == 100 and truncation.divergent == (60, 2)
    assert subs.position(A0) == 100 and subs.fetchable_partitions() == []
    assert subs.partitions_needing_validation(10.0) == {}  # retried after the backoff
    assert A0 in subs.partitions_needing_validation(60.0)
    unknown = subs.complete_validation(A0, 100, token, -1, -1)
    assert unknown is not None and unknown.divergent is None
    subs.seek(A0, 60)  # the application moves on: fetchable again, no validation
    assert subs.fetchable_partitions() == [A0]


def test_stale_validation_answers_are_ignored() -> None:
    subs = _positioned("none")
    with subs.lock:
        subs.maybe_validate_for_leader(A0, 6)
    token = subs.state(A0).token
    assert subs.complete_validation(A0, 99, token, 60, 2) is None  # another position
    assert subs.complete_validation(A0, 100, token - 1, 60, 2) is None  # another token
    assert subs.state(A0).awaiting_validation


def test_committed_offset_or_seek_with_epoch_is_validated_first() -> None:
    subs = SubscriptionState("earliest")
    subs.assign_from_user([A0, A1])
    assert subs.set_position_if_unset(A0, 10, 4, validate=True)
    assert subs.set_position_if_unset(A1, 10, None, validate=True)  # no epoch: nothing to check
    assert subs.fetchable_partitions() == [A1]
    subs.seek(A1, 5, leader_epoch=2)
    assert subs.fetchable_partitions() == []
    token = subs.state(A1).token
    subs.skip_validation(A1, token)  # e.g. the broker has no OffsetsForLeaderEpoch v3
    assert subs.fetchable_partitions() == [A1]


def test_diverging_epoch_in_a_fetch_response() -> None:
    subs = _positioned("earliest")
    token = subs.state(A0).token
    # Diverges past the position: the position stands, buffered data is dropped.
    assert subs.diverged(A0, token, 120, 3) is None
    state = subs.state(A0)
    assert state.position == 100 and state.token != token and not state.awaiting_validation
    # Diverges below it: seek to the divergent offset with its epoch.
    assert subs.diverged(A0, state.token, 80, 3) is None
    assert (subs.position(A0), subs.state(A0).position_epoch) == (80, 3)
    assert subs.diverged(A0, token, 10, 1) is None and subs.position(A0) == 80  # stale fetch: ignored
    strict = _positioned("none")
    truncation = strict.diverged(A0, strict.state(A0).token, 80, 3)
    assert truncation is not None and truncation.divergent == (80, 3)
    assert strict.fetchable_partitions() == [] and strict.position(A0) == 100


def test_truncation_error_names_partition_and_offsets() -> None:
    from kafkalite.consumer.subscription import LogTruncation
    from kafkalite.consumer.validation import truncation_error
    from kafkalite.errors import LogTruncationError, OffsetOutOfRangeError

    err = truncation_error(LogTruncation(A0, 100, (60, 2)), 3)
    assert isinstance(err, LogTruncationError) and isinstance(err, OffsetOutOfRangeError)
    assert err.topic == "a" and err.partition == 0
    assert err.divergent_offsets == {A0: OffsetAndMetadata(60, "", 2)} and err.context["offsets"] == {A0: 100}
    assert "a-0" in str(err) and "offset 100" in str(err) and "offset 60" in str(err)
    assert truncation_error(LogTruncation(A0, 100, None), None).divergent_offsets == {}


def test_close_outlasts_a_task_that_swallows_one_cancellation() -> None:
    """Python < 3.12's wait_for() may swallow a cancel that races with its result
    (gh-86296); close() must still stop such a task instead of hanging until its timeout."""
    import asyncio
    import time

    from kafkalite.consumer.core import ConsumerCore

    async def main() -> None:
        cfg = fe.resolve_settings({"bootstrap.servers": "127.0.0.1:9"}, {})
        core = ConsumerCore(cfg, asyncio.get_running_loop(), lambda: None, lambda fn, *a: fn(*a))
        swallowed = []

        async def stubborn() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                swallowed.append(1)  # as if wait_for() had returned a result instead
            await asyncio.sleep(3600)

        task = asyncio.get_running_loop().create_task(stubborn())
        core.tasks.tasks.append(task)
        await asyncio.sleep(0)
        started = time.monotonic()
        await core.close(30.0, commit=False)
        # Cancelled again until done: close returns in a few slices (0.1 s), not at its
        # 30 s timeout; generous for a busy machine.
        assert time.monotonic() - started < 10 and task.done() and swallowed == [1]

    asyncio.run(main())


def test_a_lookup_decides_only_for_partitions_not_sought_or_reset_since_it_started() -> None:
    # The committed-offset lookup of assign() (or a rebalance) reads the tokens first; a
    # partition sought, reset or reassigned before its answer is no longer its to reset.
    subs = SubscriptionState()
    tps = [TopicPartition("t", p) for p in range(4)]
    subs.assign_from_user(tps)
    with subs.lock:
        tokens = {tp: subs.assignment[tp].token for tp in tps}
    subs.seek(tps[0], 7)
    subs.request_reset([tps[1]], "earliest")
    subs.assign_from_user(tps[2:])  # tps[0], tps[1] no longer assigned either
    assert subs.still_without_position(tps, tokens) == tps[2:]
    subs.seek(tps[2], 1)
    assert subs.still_without_position(tps, tokens) == [tps[3]]


def test_a_waiting_poll_counts_as_polling_and_the_interval_runs_from_its_end() -> None:
    # poll() waits in one piece now (no 0.1 s look that refreshed the time): while it
    # waits, max.poll.interval.ms sees the application as polling (issue 27).
    import asyncio
    import time

    from kafkalite.consumer.core import ConsumerCore

    async def main() -> None:
        cfg = fe.resolve_settings({"bootstrap.servers": "127.0.0.1:9"}, {})
        core = ConsumerCore(cfg, asyncio.get_running_loop(), lambda: None, lambda fn, *a: fn(*a))
        try:
            core.poll_begin()
            began = time.monotonic()
            await asyncio.sleep(0.05)
            assert core.last_poll >= began + 0.05  # inside poll(): now
            core.poll_end()
            ended = time.monotonic()
            await asyncio.sleep(0.05)
            assert core.last_poll <= ended  # returned: the interval runs from here
        finally:
            await core.close(5.0, commit=False)

    asyncio.run(main())


def test_auto_commit_writes_unchanged_positions_once() -> None:
    import asyncio

    from kafkalite.consumer.core import ConsumerCore

    async def main() -> None:
        cfg = fe.resolve_settings({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "auto.commit.interval.ms": 0}, {})
        scheduled: list[object] = []
        core = ConsumerCore(cfg, asyncio.get_running_loop(), lambda: None,
                            lambda fn, *a: scheduled.append(a) if fn.__name__ == "_auto_commit" else None)
        try:
            tp = TopicPartition("t", 0)
            core.subs.assign_from_user([tp])
            with core.subs.lock:
                core.subs.assignment[tp].position = 5
            for _ in range(3):
                core.poll_begin()
                core.poll_end()
            assert scheduled == [({tp: OffsetAndMetadata(5)},)]  # once, not per interval
            core._auto_committed = None  # as after a failed auto-commit, or another commit
            core.poll_begin()
            core.poll_end()
            with core.subs.lock:
                core.subs.assignment[tp].position = 6
            core.poll_begin()
            core.poll_end()
            assert scheduled[1:] == [({tp: OffsetAndMetadata(5)},), ({tp: OffsetAndMetadata(6)},)]
        finally:
            await core.close(5.0, commit=False)

    asyncio.run(main())
