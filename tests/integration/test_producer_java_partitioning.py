"""Keyed records land where Kafka's Java producer puts them (kafka-console-producer)."""

from __future__ import annotations

import random

import pytest

from kafkalite import Producer
from kafkalite.producer.partitioner import partition_for_key
from tests.integration.producer_support import read_back

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def _keys() -> list[str]:
    rng = random.Random(1234)
    keys = ["", " ", "a", "ключ", "键", "🔑", "naïve-café", "x" * 300]
    keys += [f"user-{i}" for i in range(600)]
    keys += ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-_.:/") for _ in range(rng.randint(1, 40)))
             for _ in range(600)]
    keys += [f"ключ-{i}-键-{i * 7}-é" for i in range(500)]
    return list(dict.fromkeys(keys))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("partitions", [3, 7, 16])
def test_keyed_partitions_match_the_java_console_producer(kafka_broker, topic_factory, partitions) -> None:
    keys = _keys()
    assert len(keys) > 1500
    java_topic = topic_factory(partitions=partitions)
    ours_topic = topic_factory(partitions=partitions)
    lines = "".join(f"{key}\t{i}\n" for i, key in enumerate(keys))
    done = kafka_broker.run_tool(
        "kafka-console-producer",
        ["--bootstrap-server", kafka_broker.bootstrap, "--topic", java_topic,
         "--property", "parse.key=true", "--property", "key.separator=\t"],
        input=lines, timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    java_placement: dict[bytes, int] = {}
    for partition, records in read_back(kafka_broker.bootstrap, java_topic).items():
        for r in records:
            java_placement[r.key] = partition
    assert len(java_placement) == len(keys), "the console producer did not write every key"

    with Producer({"bootstrap.servers": kafka_broker.bootstrap, "key.serializer": "str"}) as p:
        futures = [(key.encode(), p.send(ours_topic, value=b"%d" % i, key=key)) for i, key in enumerate(keys)]
        p.flush(60)
    ours = {key: f.result().partition for key, f in futures}
    mismatches = {k: (ours[k], java_placement[k]) for k in ours if ours[k] != java_placement[k]}
    assert not mismatches, list(mismatches.items())[:10]
    # Read back too: the records really are in those partitions.
    for partition, records in read_back(kafka_broker.bootstrap, ours_topic).items():
        assert all(java_placement[r.key] == partition for r in records)
    assert all(partition_for_key(k, partitions) == p for k, p in java_placement.items())
    assert java_placement[b""] == partition_for_key(b"", partitions)  # an empty key is not a null key
