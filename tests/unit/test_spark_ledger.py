"""The stream reader's record of Spark's micro-batch positions (pyspark_kafkalite.ledger),
driven by the call sequences PySpark 4.0 and 4.3 make (as recorded by
tools/spark_matrix/trace_calls.py), without Spark or a broker."""

from __future__ import annotations

from pyspark_kafkalite.ledger import MicroBatchLedger

T0, T1 = ("t", 0), ("t", 1)


def test_pyspark_40_new_query_latest_offset_before_initial_offset() -> None:
    # 4.0: latestOffset() -> initialOffset() -> partitions(initial, e0) -> latestOffset() -> commit(e0) -> ...
    ledger = MicroBatchLedger()
    resolved = iter([{T0: 0, T1: 0}, {T0: 999, T1: 999}])  # a second resolution would differ
    assert ledger.next_start(None) is None  # a new query: the initial offsets
    begin = ledger.initial(lambda: next(resolved))
    assert begin == {T0: 0, T1: 0}
    e0 = {T0: 50, T1: 50}
    ledger.returned(e0)
    assert ledger.initial(lambda: next(resolved)) == {T0: 0, T1: 0}  # Spark's initialOffset(): the same
    ledger.planned({T0: 0, T1: 0}, e0)
    assert ledger.batch_start({T0: 0, T1: 0}, e0) == {T0: 0, T1: 0}
    # The bug this ledger fixes: the next batch starts at e0, not at the initial offsets.
    assert ledger.next_start(None) == e0
    e1 = {T0: 100, T1: 100}
    ledger.returned(e1)
    ledger.committed(e0)  # arrives after the next latestOffset: moves nothing back
    assert ledger.next_start(None) == e1
    ledger.planned(e0, e1)
    assert ledger.next_start(None) == e1


def test_pyspark_40_restart_names_the_checkpoint_then_reruns_the_uncommitted_batch() -> None:
    # 4.0 restart: partitions(c, c) (setLatestSeenOffset) -> partitions(prev, c) -> latestOffset()
    ledger = MicroBatchLedger()
    c = {T0: 70, T1: 80}
    ledger.planned(c, c)
    ledger.planned({T0: 40, T1: 40}, c)
    assert ledger.next_start(None) == c
    ledger.committed(c)
    assert ledger.next_start(None) == c


def test_latest_offset_without_a_planned_batch_keeps_the_position() -> None:
    # Nothing new (or minOffsetsPerTrigger waiting): latestOffset() returns its start.
    ledger = MicroBatchLedger()
    c = {T0: 10}
    ledger.planned(c, c)
    ledger.returned(c)
    ledger.returned(c)
    assert ledger.next_start(None) == c


def test_spark_start_wins_when_spark_names_one() -> None:
    # PySpark >= 4.2 passes the start to latestOffset(start, limit).
    ledger = MicroBatchLedger()
    ledger.returned({T0: 500})
    assert ledger.next_start({T0: 300}) == {T0: 300}


def test_pyspark_43_new_query_calls_initial_offset_twice_and_gets_the_same_offsets() -> None:
    ledger = MicroBatchLedger()
    resolved = iter([{T0: 10}, {T0: 20}])  # "latest" moved on between the two calls
    first = ledger.initial(lambda: next(resolved))
    ledger.returned({T0: 15})  # latestOffset(first, limit)
    second = ledger.initial(lambda: next(resolved))
    assert first == second == {T0: 10}
    assert ledger.batch_start(second, {T0: 15}) == {T0: 10}


def test_restart_rerunning_batch_0_caps_initial_offsets_resolved_anew() -> None:
    # 4.0: partitions(e0, e0) -> initialOffset() (resolved now: latest moved past e0)
    ledger = MicroBatchLedger()
    e0 = {T0: 100, T1: 100}
    ledger.planned(e0, e0)
    initial = ledger.initial(lambda: {T0: 130, T1: 90})
    assert initial == {T0: 100, T1: 90}
    ledger.planned(initial, e0)
    assert ledger.batch_start(initial, e0) == {T0: 100, T1: 90}


def test_pyspark_43_restart_rerunning_batch_0_reads_nothing_past_its_end() -> None:
    # 4.3: nothing names the checkpoint; runBatch asks initialOffset() and plans (initial, e0).
    ledger = MicroBatchLedger()
    initial = ledger.initial(lambda: {T0: 130, T1: 90})
    e0 = {T0: 100, T1: 100}
    assert ledger.batch_start(initial, e0) == {T0: 100, T1: 90}


def test_a_start_past_the_end_in_a_batch_this_reader_planned_stays_as_it_is() -> None:
    # startingOffsets past a partition's end: partitions() reports that as data loss.
    ledger = MicroBatchLedger()
    initial = ledger.initial(lambda: {T0: 500})
    ledger.returned({T0: 100})
    assert ledger.batch_start(initial, {T0: 100}) == {T0: 500}
