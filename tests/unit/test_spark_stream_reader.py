"""The stream reader driven through the call sequences of PySpark 4.0/4.1 and 4.2+
(recorded by tools/spark_matrix/trace_calls.py), over a scripted log instead of a broker:
every micro-batch starts where the one before ended and stays within maxOffsetsPerTrigger."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import pytest
from pyspark_kafkalite.options import ReadOptions
from pyspark_kafkalite.partitions import KafkaInputPartition
from pyspark_kafkalite.planning import TP, Planner
from pyspark_kafkalite.stream import ADMISSION_CONTROL, KafkaLiteStreamReader, ReadMaxRows

from kafkalite.errors import ConfigError, OffsetOutOfRangeError

PARTS = [("t", 0), ("t", 1)]


class ScriptedLog(Planner):
    """Partitions and their offsets as the test sets them (no admin client)."""

    def __init__(self, opts: ReadOptions) -> None:  # no super(): nothing to connect to
        self.opts = opts
        self.earliest_offsets = {tp: 0 for tp in PARTS}
        self.latest_offsets = {tp: 0 for tp in PARTS}
        self.topic_ids: dict[str, uuid.UUID] = {}

    def grow(self, by: int) -> None:
        self.latest_offsets = {tp: off + by for tp, off in self.latest_offsets.items()}

    def partitions(self) -> list[TP]:
        return list(PARTS)

    def earliest(self, parts: Iterable[TP], *, skip_unknown: bool = False) -> dict[TP, int]:
        return {tp: self.earliest_offsets[tp] for tp in parts}

    def latest(self, parts: Iterable[TP], *, skip_unknown: bool = False) -> dict[TP, int]:
        return {tp: self.latest_offsets[tp] for tp in parts}

    def close(self) -> None:
        pass


def reader_for(starting: str, limit: int = 100) -> tuple[KafkaLiteStreamReader, ScriptedLog]:
    opts = ReadOptions.parse({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t",
                              "startingOffsets": starting, "maxOffsetsPerTrigger": str(limit)}, streaming=True)
    reader = KafkaLiteStreamReader(opts)
    log = ScriptedLog(opts)
    reader._planner = log
    return reader, log


def total(start: Mapping[str, Any], end: Mapping[str, Any]) -> int:
    return sum(end["t"][p] - start["t"].get(p, 0) for p in end["t"])


def ranges(parts: list[Any]) -> list[tuple[int, int, int]]:
    return sorted((p.partition, p.start, p.end) for p in parts if isinstance(p, KafkaInputPartition))


def test_pyspark_40_new_query_second_batch_starts_at_the_first_batch_end() -> None:
    reader, log = reader_for("earliest")
    log.grow(300)
    e0 = reader.latestOffset()  # 4.0/4.1: before initialOffset()
    start0 = reader.initialOffset()
    assert start0 == {"t": {"0": 0, "1": 0}}
    assert total(start0, e0) == 100
    assert sum(e - s for _, s, e in ranges(reader.partitions(start0, e0))) == 100
    log.grow(50)
    e1 = reader.latestOffset()
    reader.commit(e0)
    # The old reader started this batch from the initial offsets: end < start, "went back".
    assert ranges(reader.partitions(e0, e1)) == [(0, 50, 100), (1, 50, 100)]
    assert total(e0, e1) == 100


def test_pyspark_40_restart_rerunning_batch_0_with_starting_offsets_latest() -> None:
    reader, log = reader_for("latest")
    log.grow(1000)
    e0 = {"t": {"0": 900, "1": 900}}  # batch 0 planned by the run before the restart
    assert reader.partitions(e0, e0) == []  # setLatestSeenOffset: the checkpoint's offsets
    start0 = reader.initialOffset()  # "latest" is 1000 now: capped at the planned end
    assert start0 == e0
    assert reader.partitions(start0, e0) == []
    log.grow(30)
    e1 = reader.latestOffset()
    assert total(e0, e1) == 100
    assert ranges(reader.partitions(e0, e1)) == [(0, 900, 950), (1, 900, 950)]


def test_pyspark_40_restart_after_a_committed_batch_is_bounded_from_the_checkpoint() -> None:
    reader, log = reader_for("earliest")
    log.grow(1000)
    checkpoint = {"t": {"0": 200, "1": 300}}
    reader.partitions(checkpoint, checkpoint)
    e = reader.latestOffset()
    assert total(checkpoint, e) == 100 and all(e["t"][p] >= checkpoint["t"][p] for p in ("0", "1"))


def test_latest_offset_with_nothing_new_plans_no_batch_and_moves_nothing() -> None:
    reader, log = reader_for("earliest")
    log.grow(10)
    e0 = reader.latestOffset()
    reader.partitions(reader.initialOffset(), e0)
    assert reader.latestOffset() == e0  # nothing new: Spark plans no batch
    log.grow(5)
    e1 = reader.latestOffset()
    assert ranges(reader.partitions(e0, e1)) == [(0, 10, 15), (1, 10, 15)]


def test_pyspark_42_new_query_asks_initial_offset_twice_and_gets_one_answer() -> None:
    assert ADMISSION_CONTROL  # the project's own PySpark is the newest (the matrix runs the others)
    reader, log = reader_for("latest")
    log.grow(500)
    first = reader.initialOffset()
    log.grow(40)  # a producer writes in between
    e0 = reader.latestOffset(first, ReadMaxRows(100))
    log.grow(40)
    second = reader.initialOffset()
    assert second == first == {"t": {"0": 500, "1": 500}}
    assert ranges(reader.partitions(second, e0)) == [(0, 500, 540), (1, 500, 540)]


def test_available_now_with_starting_offsets_latest_resolved_after_the_target() -> None:
    # 4.2+: prepareForTriggerAvailableNow() -> initialOffset() ("latest" moved on) -> latestOffset(start)
    reader, log = reader_for("latest")
    log.grow(100)
    reader.prepareForTriggerAvailableNow()
    log.grow(20)
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadMaxRows(100))
    assert end == start  # nothing to read: never an end before the start ("went back")
    assert reader.partitions(start, end) == []


def test_checkpoint_with_another_topic_set_fails_naming_the_cause_and_the_fix() -> None:
    reader, _ = reader_for("earliest")
    checkpoint = {"old": {"0": 5}, "t": {"0": 3}}
    with pytest.raises(ConfigError, match=r"checkpoint holds offsets for old-0, which option 'subscribe' \('t'\) "
                                          r"no longer reads.*new checkpointLocation"):
        reader.partitions(checkpoint, checkpoint)  # 4.0 / 4.1: the checkpoint's offsets, first
    reader, _ = reader_for("earliest")
    with pytest.raises(ConfigError, match="the query was restarted with a different topic set"):
        reader.latestOffset(checkpoint, ReadMaxRows(100))  # 4.2+: the start Spark names


def test_a_recreated_topic_is_read_from_its_start_and_reported_as_data_loss() -> None:
    reader, log = reader_for("earliest", limit=1000)
    reader.opts = replace(reader.opts, fail_on_data_loss=False)
    log.topic_ids = {"t": uuid.uuid4()}
    log.grow(60)
    e0 = reader.latestOffset(reader.initialOffset(), ReadMaxRows(1000))
    reader.partitions(reader.initialOffset(), e0)
    # deleted and re-created with fewer records than the query had read
    log.topic_ids = {"t": uuid.uuid4()}
    log.latest_offsets = {tp: 20 for tp in PARTS}
    e1 = reader.latestOffset(e0, ReadMaxRows(1000))
    assert e1 == {"t": {"0": 20, "1": 20}}
    assert ranges(reader.partitions(e0, e1)) == [(0, 0, 20), (1, 0, 20)]
    assert reader.data_loss_events == 2
    # and with more records than before: still from the start, never from the old offset
    reader2, log2 = reader_for("earliest", limit=1000)
    log2.topic_ids = {"t": uuid.uuid4()}
    log2.grow(10)
    e0 = reader2.latestOffset(reader2.initialOffset(), ReadMaxRows(1000))
    reader2.partitions(reader2.initialOffset(), e0)
    log2.topic_ids = {"t": uuid.uuid4()}
    log2.latest_offsets = {tp: 30 for tp in PARTS}
    e1 = reader2.latestOffset(e0, ReadMaxRows(1000))
    with pytest.raises(OffsetOutOfRangeError, match="topic 't' was deleted and re-created.*failOnDataLoss=true"):
        reader2.partitions(e0, e1)


def test_a_partition_that_went_back_ends_the_batch_at_its_new_end_under_a_rate_limit() -> None:
    reader, log = reader_for("earliest", limit=10)
    log.grow(5)
    checkpoint = {"t": {"0": 500, "1": 3}}  # t-0 went back from 500 to 5 (truncated)
    end = reader.latestOffset(checkpoint, ReadMaxRows(10))
    assert end == {"t": {"0": 5, "1": 5}}  # not stuck at 500 until the log grows past it
    with pytest.raises(OffsetOutOfRangeError, match="t-0 went back from offset 500 to 5"):
        reader.partitions(checkpoint, end)


LOG_SIZES = {PARTS[0]: 100_000, PARTS[1]: 50_000}  # 100 and 50 bytes per offset at 1000 offsets


def test_max_bytes_per_trigger_bounds_batches_on_both_call_sequences() -> None:
    for admission in (False, True):
        opts = ReadOptions.parse({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t",
                                  "startingOffsets": "earliest", "maxBytesPerTrigger": "5000"}, streaming=True)
        reader = KafkaLiteStreamReader(opts)
        log = ScriptedLog(opts)
        reader._planner = log
        log.grow(1000)
        log.log_sizes = lambda parts: {tp: LOG_SIZES[tp] for tp in parts}  # type: ignore[method-assign]
        if admission:  # 4.2+: initialOffset, then latestOffset(start, limit)
            start = reader.initialOffset()
            assert reader.getDefaultReadLimit() is not None
            end = reader.latestOffset(start, reader.getDefaultReadLimit())
        else:  # 4.0 / 4.1: latestOffset() before initialOffset()
            end = reader.latestOffset()
            start = reader.initialOffset()
        took = {p: end["t"][p] - start["t"][p] for p in ("0", "1")}
        assert took == {"0": 33, "1": 33}  # the same share of each backlog: 33*100 + 33*50 <= 5000
        reader.partitions(start, end)
        nxt = reader.latestOffset(end, reader.getDefaultReadLimit()) if admission else reader.latestOffset()
        assert {p: nxt["t"][p] - end["t"][p] for p in ("0", "1")} == {"0": 33, "1": 33}
