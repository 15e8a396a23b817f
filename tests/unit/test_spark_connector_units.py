"""The Spark connector's pure parts (no Spark session, no broker): options, range
splitting, rate limits, filter folding and the Arrow builder."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from pyspark_kafkalite.arrow import ArrowBuilder, arrow_schema
from pyspark_kafkalite.options import ReadOptions, WriteOptions
from pyspark_kafkalite.planning import OffsetRange, PushedFilters, split_ranges
from pyspark_kafkalite.source import kafka_schema, push_filter
from pyspark_kafkalite.stream import rate_limit

from kafkalite.errors import ConfigError
from kafkalite.protocol import compression
from kafkalite.protocol.record_builder import RecordBatchBuilder
from kafkalite.protocol.records import iter_batches

B = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


@pytest.mark.parametrize(("options", "message"), [
    ({}, "exactly one of the options 'subscribe', 'subscribePattern' or 'assign'"),
    ({"subscribe": "a", "subscribepattern": "b.*"}, "got subscribe, subscribePattern"),
    ({"assign": "[1]"}, "option 'assign' must be a JSON object"),
    ({"assign": '{"t": [0, "x"]}'}, "topic 't' must map to a list of partition numbers"),
    ({"subscribe": "t", "startingoffsets": "{bad"}, "option 'startingOffsets' is not valid JSON"),
    ({"subscribe": "t", "startingoffsets": '{"t": {"0": -3}}'}, "offset -3 for t-0 is invalid"),
    ({"subscribe": "t", "endingoffsets": "earliest"}, "option 'endingOffsets' cannot be 'earliest'"),
    ({"subscribe": "t", "startingoffsets": "latest"}, "cannot be 'latest' for a batch query"),
    ({"subscribe": "t", "failondataloss": "maybe"}, "option 'failOnDataLoss' must be true or false"),
    ({"subscribe": "t", "minpartitions": "0"}, "option 'minPartitions' must be >= 1"),
    ({"subscribe": "t", "kafka.fetch.min.byte": "1"}, "did you mean .fetch.min.bytes."),
    ({"subscribe": "t", "kafka.value.deserializer": "x"}, "option 'kafka.value.deserializer' is not supported"),
    ({"subscribepattern": "("}, "option 'subscribePattern' is not a valid regular expression"),
])
def test_bad_read_options_name_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        ReadOptions.parse({**B, **options})


def test_read_options_parse_like_spark() -> None:
    opts = ReadOptions.parse({**B, "assign": '{"t": [1, 0]}', "startingoffsets": '{"t": {"0": 5, "1": -2}}',
                              "startingtimestamp": "1000", "kafka.fetch.min.bytes": "10",
                              "kafka.linger.ms": "5", "maxtriggerdelay": "30s"}, streaming=True)
    assert opts.assigned == (("t", 0), ("t", 1))
    assert opts.starting.kind == "timestamp" and opts.starting.timestamp == 1000  # it wins, as in Spark
    assert opts.max_trigger_delay_ms == 30_000
    settings = opts.consumer_settings()
    assert settings["fetch.min.bytes"] == "10" and "linger.ms" not in settings  # producer-only: left out
    assert settings["auto.offset.reset"] == "none" and settings["enable.auto.commit"] is False
    with pytest.raises(ConfigError, match="for batch queries only"):
        ReadOptions.parse({**B, "subscribe": "t", "endingoffsets": "latest"}, streaming=True)
    assert WriteOptions.parse({**B, "topic": " out "}).topic == "out"


def test_split_ranges_by_size_and_min_partitions() -> None:
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 10, 10), OffsetRange("t", 2, 5, 8)]
    by_size = split_ranges(ranges, None, 30)
    assert [(r.partition, r.start, r.end) for r in by_size] == [
        (0, 0, 30), (0, 30, 60), (0, 60, 90), (0, 90, 100), (2, 5, 8)]
    split = split_ranges(ranges, 10, None)
    assert len(split) >= 10
    for p, lo, hi in ((0, 0, 100), (2, 5, 8)):  # contiguous, covering, no overlap
        parts = sorted((r.start, r.end) for r in split if r.partition == p)
        assert parts[0][0] == lo and parts[-1][1] == hi
        assert all(a[1] == b[0] for a, b in itertools.pairwise(parts))


def test_rate_limit_never_exceeds_and_moves_every_backlog() -> None:
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(1, 8)
        start = {("t", p): rng.randint(0, 50) for p in range(n)}
        latest = {tp: off + rng.randint(0, 500) for tp, off in start.items()}
        limit = rng.randint(1, 400)
        end = rate_limit(start, latest, limit)
        total = sum(latest[tp] - start[tp] for tp in latest)
        taken = sum(end[tp] - start[tp] for tp in latest)
        assert taken == min(limit, total)
        assert all(start[tp] <= end[tp] <= latest[tp] for tp in latest)


class F:
    def __init__(self, attribute: tuple[str, ...], value: Any = None) -> None:
        self.attribute, self.value = attribute, value


def filt(name: str, column: str, value: Any) -> Any:
    return type(name, (F,), {})((column,), value)


def test_filters_fold_into_bounds() -> None:
    pushed = PushedFilters()
    assert push_filter(filt("EqualTo", "topic", "a"), pushed)
    assert push_filter(filt("In", "partition", [1, 2]), pushed)
    assert push_filter(filt("GreaterThanOrEqual", "offset", 10), pushed)
    assert push_filter(filt("LessThan", "offset", 20), pushed)
    assert not push_filter(filt("In", "offset", [12, 15]), pushed)  # a range; Spark keeps the rest
    assert not push_filter(filt("GreaterThan", "timestamp", 1_500_000), pushed)  # micros
    assert not push_filter(filt("StringStartsWith", "topic", "a"), pushed)
    assert (pushed.topics, pushed.partitions, pushed.offset_min, pushed.offset_max) == ({"a"}, {1, 2}, 12, 16)
    assert pushed.timestamp_min_ms == 1501
    assert pushed.allows("a", 1) and not pushed.allows("a", 0) and not pushed.allows("b", 1)


def test_arrow_builder_matches_the_decoded_records() -> None:
    rng = random.Random(3)
    data, expected, off = b"", [], 0
    for _ in range(25):
        b = RecordBatchBuilder(compression=rng.choice([0, compression.LZ4, compression.ZSTD]), base_offset=off)
        for _ in range(rng.randint(1, 40)):
            key = rng.choice([None, b"", b"k%d" % off, b"x" * rng.randint(0, 40)])
            value = rng.choice([None, b"", b"v" * rng.randint(0, 300)])
            headers = rng.choice([None, [("a", b"1")], [("b", None), ("c" * 20, b"z" * 30)]])
            b.append(1_000 + off, key, value, headers)
            expected.append({"key": key, "value": value, "offset": off, "headers": headers})
            off += 1
        data += b.build()
    rb = ArrowBuilder(True).build("t", 3, list(iter_batches(memoryview(data))), 7, off - 5)
    assert rb is not None and rb.schema == arrow_schema(True)
    got = rb.to_pylist()
    assert [g["offset"] for g in got] == list(range(7, off - 5))
    for g, e in zip(got, expected[7:]):
        assert (g["key"], g["value"]) == (e["key"], e["value"])
        assert g["headers"] == (None if not e["headers"] else [{"key": k, "value": v} for k, v in e["headers"]])
        assert round(g["timestamp"].timestamp() * 1000) == 1_000 + g["offset"]
        assert (g["topic"], g["partition"], g["timestampType"]) == ("t", 3, 0)
    assert ArrowBuilder(False).build("t", 0, list(iter_batches(memoryview(data))), off, off + 5) is None


def test_arrow_schema_is_what_pyspark_expects() -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    for headers in (False, True):
        assert to_arrow_schema(kafka_schema(headers), timezone="UTC") == arrow_schema(headers)
