"""The stream reader's new pure parts: maxBytesPerTrigger's estimate and limit, the
options of startingOffsets=group, and the checkpoint's topic set (no Spark, no broker)."""

from __future__ import annotations

import itertools
import random

import pytest
from pyspark_kafkalite.admission import byte_limit, bytes_per_offset, lowest
from pyspark_kafkalite.options import ReadOptions
from pyspark_kafkalite.progress import lag_summary, source_lag

from kafkalite.errors import ConfigError

B = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_bytes_per_offset_is_the_log_size_over_its_offsets_and_unknown_when_empty() -> None:
    earliest = {("t", 0): 0, ("t", 1): 50, ("t", 2): 7}
    latest = {("t", 0): 100, ("t", 1): 150, ("t", 2): 7}
    rate = bytes_per_offset({("t", 0): 10_000, ("t", 1): 5_000, ("t", 2): 300}, earliest, latest)
    assert rate == {("t", 0): 100.0, ("t", 1): 50.0}  # t-2 holds no offsets: unknown


def test_byte_limit_never_exceeds_the_estimate_and_moves_every_backlog() -> None:
    rng = random.Random(7)
    for _ in range(300):
        parts = [("t", p) for p in range(rng.randint(1, 6))]
        start = {tp: rng.randint(0, 1000) for tp in parts}
        latest = {tp: start[tp] + rng.choice([0, 1, 5, 300, 10_000]) for tp in parts}
        rate = {tp: rng.choice([1.0, 37.5, 1000.0]) for tp in parts}
        limit = rng.choice([1, 100, 5_000, 1_000_000])
        end = byte_limit(start, latest, rate, limit)
        took = {tp: end[tp] - start[tp] for tp in parts}
        assert all(0 <= took[tp] <= latest[tp] - start[tp] for tp in parts)
        backlog = sum(latest[tp] - start[tp] for tp in parts)
        if backlog:
            assert sum(took.values()) >= 1  # a record larger than the limit still moves the query
        if sum(took.values()) > 1:
            assert sum(took[tp] * rate[tp] for tp in parts) <= limit


def test_byte_limit_shares_by_backlog_bytes_and_reads_all_when_it_fits() -> None:
    start = {("t", 0): 0, ("t", 1): 0}
    latest = {("t", 0): 1000, ("t", 1): 1000}
    rate = {("t", 0): 10.0, ("t", 1): 30.0}
    assert byte_limit(start, latest, rate, 40_000) == latest
    end = byte_limit(start, latest, rate, 4_000)
    assert end == {("t", 0): 100, ("t", 1): 100}  # 100 * 10 + 100 * 30 = 4000 bytes
    # A record larger than the limit: one record, from the largest backlog.
    assert byte_limit(start, {("t", 0): 3, ("t", 1): 5}, {("t", 0): 1e6, ("t", 1): 1e6}, 10) == {
        ("t", 0): 0, ("t", 1): 1}


def test_byte_limit_with_unknown_sizes() -> None:
    start = {("t", 0): 0, ("t", 1): 0}
    latest = {("t", 0): 100, ("t", 1): 100}
    # t-1 unknown counts at the largest known rate
    assert byte_limit(start, latest, {("t", 0): 10.0}, 1000) == {("t", 0): 50, ("t", 1): 50}
    # nothing known: one record per backlogged partition
    assert byte_limit(start, latest, {}, 1000) == {("t", 0): 1, ("t", 1): 1}


def test_lowest_of_several_limits() -> None:
    assert lowest({("t", 0): 5, ("t", 1): 9}, {("t", 0): 7, ("t", 1): 3}) == {("t", 0): 5, ("t", 1): 3}


@pytest.mark.parametrize(("options", "message"), [
    ({"startingoffsets": "group"}, "option 'startingOffsets' is 'group': set 'kafka.group.id'"),
    ({"startingoffsets": "group", "groupidprefix": "p"}, "'groupIdPrefix' makes a new group"),
    ({"startingoffsetsfallback": "earliest"}, "option 'startingOffsetsFallback' applies only with "
                                              "startingOffsets=group"),
    ({"startingoffsets": "group", "kafka.group.id": "g", "startingoffsetsfallback": "none"},
     "option 'startingOffsetsFallback' must be 'earliest', 'latest' or 'error'"),
    ({"endingoffsets": "group"}, "option 'endingOffsets' is not valid JSON"),
    ({"maxbytespertrigger": "0"}, "option 'maxBytesPerTrigger' must be >= 1"),
])
def test_bad_new_stream_options_name_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ReadOptions.parse({**B, "subscribe": "t", **options}, streaming=True)


def test_group_start_and_byte_limit_options_parse() -> None:
    opts = ReadOptions.parse({**B, "subscribe": "t", "startingoffsets": "GROUP", "kafka.group.id": "g",
                              "startingoffsetsfallback": "Error", "maxbytespertrigger": "1048576"},
                             streaming=True)
    assert (opts.starting.kind, opts.group_id, opts.starting_fallback) == ("group", "g", "error")
    assert opts.max_bytes_per_trigger == 1048576
    batch = ReadOptions.parse({**B, "subscribe": "t", "startingoffsets": "group", "kafka.group.id": "g"})
    assert batch.starting.kind == "group" and batch.starting_fallback == "latest"
    with pytest.raises(ConfigError, match="option 'maxBytesPerTrigger' is for streaming queries only"):
        ReadOptions.parse({**B, "subscribe": "t", "maxbytespertrigger": "10"})


@pytest.mark.parametrize(("options", "reads", "not_reads"), [
    ({"subscribe": "a,b"}, [("a", 0), ("b", 7)], [("c", 0)]),
    ({"subscribepattern": "ev-.*"}, [("ev-1", 0)], [("xev-1", 0), ("ev", 0)]),
    ({"assign": '{"a": [0, 2]}'}, [("a", 2)], [("a", 1), ("b", 0)]),
])
def test_reads_names_the_partitions_of_the_options(options: dict[str, str], reads: list[tuple[str, int]],
                                                     not_reads: list[tuple[str, int]]) -> None:
    opts = ReadOptions.parse({**B, **options}, streaming=True)
    assert all(opts.reads(tp) for tp in reads)
    assert not any(opts.reads(tp) for tp in not_reads)


def test_byte_limit_rounding_is_stable_for_all_orders() -> None:
    start = {("t", p): 0 for p in range(3)}
    latest = {("t", 0): 10, ("t", 1): 20, ("t", 2): 30}
    rate = {tp: 7.0 for tp in latest}
    results = set()
    for order in itertools.permutations(latest):
        results.add(tuple(sorted(byte_limit(start, {tp: latest[tp] for tp in order}, rate, 200).items())))
    assert len(results) == 1


def test_source_lag_from_a_progress_dict_or_object() -> None:
    progress = {"sources": [{"endOffset": '{"t": {"0": 10, "1": 4}}',
                             "latestOffset": {"t": {"0": 25, "1": 4, "2": 3}}}]}
    lag = source_lag(progress)
    assert lag == {"t": {0: 15, 1: 0, 2: 3}}  # t-2: a partition no batch read yet
    assert lag_summary(lag) == {"minOffsetsBehindLatest": 0, "maxOffsetsBehindLatest": 15,
                                "avgOffsetsBehindLatest": 6.0}

    class Source:
        endOffset = "{'t': {'0': 1}}"  # PySpark 4.0.2 / 4.0.3 show a dict's repr
        latestOffset = '{"t": {"0": 3}}'

    class Progress:
        sources = [Source()]

    assert source_lag(Progress()) == {"t": {0: 2}}
    assert source_lag({"sources": [{"endOffset": '{"t": {"0": 1}}', "latestOffset": None}]}) == {}
    assert lag_summary({}) == {}
