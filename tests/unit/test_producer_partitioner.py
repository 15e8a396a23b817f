"""Partitioners without a broker: Java's keyed choice, KIP-794 sticky/adaptive, round robin, custom."""

from __future__ import annotations

import collections
import json
import random
from pathlib import Path

import pytest

from kafkalite.errors import ConfigError
from kafkalite.producer.partitioner import (
    RoundRobinPartitioner,
    StickyPartitioner,
    partition_for_key,
    resolve_partitioner,
)

VECTORS = json.loads((Path(__file__).parent / "data" / "records" / "java_vectors.json").read_text())


def test_keyed_partition_matches_the_java_client_vectors() -> None:
    # Vectors computed by Kafka's own BuiltInPartitioner.partitionForKey (see RecordVectors.java).
    checked = 0
    for case in VECTORS["murmur2"]:
        key = bytes.fromhex(case["key"])
        for count, expected in case["partitions"].items():
            assert partition_for_key(key, int(count)) == expected, (case["key"], count)
            checked += 1
    assert checked > 20


def test_keyed_partition_uses_all_partitions_and_masks_the_sign_bit() -> None:
    # A negative murmur2 hash must still give a partition in range (toPositive, not abs()).
    keys = [f"key-{i}".encode() for i in range(5000)]
    seen = collections.Counter(partition_for_key(k, 7) for k in keys)
    assert set(seen) == set(range(7))
    assert min(seen.values()) > 500  # roughly uniform


class _FixedRandom(random.Random):
    # Before 3.11, random.Random.__new__ seeds itself from the constructor's arguments
    # (hashing them: "unhashable type: 'list'"); it must see none of ours.
    def __new__(cls, values: list[int]) -> _FixedRandom:
        return super().__new__(cls)

    def __init__(self, values: list[int]) -> None:
        super().__init__(0)
        self.values = values

    def randrange(self, n: int) -> int:  # type: ignore[override]
        return self.values.pop(0) % n


def test_sticky_partitioner_sticks_until_batch_size_then_switches() -> None:
    sticky = StickyPartitioner(batch_size=1000, rng=_FixedRandom([1, 2, 0, 1]))
    available = [0, 1, 2]
    first = sticky.partition(available, 3)
    assert first == 1
    # Not switched while below batch.size, even when the batch is full.
    sticky.update(first, 600, True, available, 3)
    assert sticky.partition(available, 3) == first
    # batch.size reached but the batch is not full: keep filling it...
    sticky.update(first, 500, False, available, 3)
    assert sticky.partition(available, 3) == first
    # ...unless twice batch.size was produced.
    sticky.update(first, 1000, False, available, 3)
    second = sticky.partition(available, 3)
    assert second == 2 and sticky.produced_bytes == 0
    sticky.update(second, 1000, True, available, 3)
    assert sticky.partition(available, 3) == 0


def test_sticky_partitioner_prefers_available_partitions() -> None:
    sticky = StickyPartitioner(batch_size=10)
    seen = set()
    for _ in range(200):
        p = sticky.partition([2, 5], 8)
        seen.add(p)
        sticky.update(p, 20, True, [2, 5], 8)
    assert seen == {2, 5}


def test_adaptive_weights_favour_short_queues() -> None:
    sticky = StickyPartitioner(batch_size=10, rng=random.Random(42))
    # Partition 0's broker has 9 batches queued, partition 1 none, partition 2 three.
    sticky.update_load_stats([9, 0, 3], [0, 1, 2], 3)
    counts = collections.Counter()
    for _ in range(3000):
        p = sticky.partition([0, 1, 2], 3)
        counts[p] += 1
        sticky.update(p, 10, True, [0, 1, 2], 3)
    # Weights are (max + 1 - queue): 1, 10, 7.
    assert counts[1] > counts[2] > counts[0]
    assert counts[0] / 3000 == pytest.approx(1 / 18, abs=0.03)
    assert counts[1] / 3000 == pytest.approx(10 / 18, abs=0.05)


def test_adaptive_equal_queues_fall_back_to_uniform() -> None:
    sticky = StickyPartitioner(batch_size=10)
    sticky.update_load_stats([4, 4, 4], [0, 1, 2], 3)
    assert sticky._cumulative is None
    # A subset of partitions (one unavailable) keeps weights even if equal.
    sticky.update_load_stats([4, 4], [0, 2], 3)
    assert sticky._partition_ids == [0, 2]
    for _ in range(100):
        p = sticky.partition([0, 1, 2], 3)
        assert p in (0, 2)
        sticky.update(p, 20, True, [0, 1, 2], 3)


class _Cluster:
    def __init__(self, count: int, available: list[int]) -> None:
        self.count, self.available = count, available

    def partition_count(self, topic: str) -> int:
        return self.count

    def available_partitions(self, topic: str) -> list[int]:
        return self.available


def test_round_robin_cycles_available_partitions_per_topic() -> None:
    rr = RoundRobinPartitioner()
    cluster = _Cluster(4, [0, 1, 3])
    assert [rr.partition("a", b"k", b"k", None, None, cluster) for _ in range(6)] == [0, 1, 3, 0, 1, 3]
    assert rr.partition("b", None, None, None, None, _Cluster(2, [])) == 0
    assert rr.partition("b", None, None, None, None, _Cluster(2, [])) == 1


def test_resolve_partitioner_accepts_names_objects_classes_and_callables() -> None:
    assert resolve_partitioner(None, {}) is None
    assert resolve_partitioner("default", {}) is None
    assert isinstance(resolve_partitioner("round_robin", {}), RoundRobinPartitioner)
    assert isinstance(resolve_partitioner("org.apache.kafka.clients.producer.RoundRobinPartitioner", {}),
                      RoundRobinPartitioner)

    class Configured:
        def configure(self, config):
            self.config = config

        def partition(self, topic, key, key_bytes, value, value_bytes, cluster):
            return 1

    obj = resolve_partitioner(Configured, {"x": 1})
    assert obj.config == {"x": 1}
    fn = resolve_partitioner(lambda key_bytes, all_p, avail: all_p[-1], {})
    assert fn.partition("t", None, b"k", None, None, _Cluster(5, [1])) == 4


def test_resolve_partitioner_rejects_unknown_names() -> None:
    with pytest.raises(ConfigError, match="partitioner.class"):
        resolve_partitioner("murmur3", {})
    with pytest.raises(ConfigError, match="partitioner.class"):
        resolve_partitioner(42, {})
