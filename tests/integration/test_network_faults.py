"""The network-fault proxies of kafkalite.testing against a real 3-node cluster: each
fault does what it says, and clients behind it end in typed errors or recover."""

from __future__ import annotations

import time

import pytest

from kafkalite import AdminClient, Consumer, Producer, TopicPartition
from kafkalite.errors import CorruptRecordsError, KafkaError, KafkaTimeoutError
from kafkalite.testing import TO_CLIENT, NetworkFaults
from kafkalite.testing.wire import KafkaSocket
from tests.integration.consumer_support import wait_until

pytestmark = [pytest.mark.cluster]


def _produce(bootstrap: str, topic: str, n: int, size: int = 20) -> list[bytes]:
    values = [b"%06d-" % i + b"x" * (size - 7) for i in range(n)]
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        for v in values:
            producer.send(topic, v, partition=0)
        producer.flush(60)
    return values


def _consumer(faults: NetworkFaults, **settings: object) -> Consumer:
    return Consumer({"bootstrap.servers": faults.bootstrap, "auto.offset.reset": "earliest", **settings})


def test_clients_that_bootstrap_through_the_proxies_stay_behind_them(kafka_cluster, network_faults,
                                                                    unique_topic) -> None:
    with KafkaSocket.to(network_faults.bootstrap) as conn:
        brokers = conn.metadata([]).brokers
    assert sorted(port for _, port in brokers.values()) == sorted(p.port for p in network_faults)
    topic = kafka_cluster.create_topic(unique_topic, 3)
    before = {node: p.stats.bytes["to_broker"] for node, p in network_faults.proxies.items()}
    with Producer({"bootstrap.servers": network_faults.bootstrap, "linger.ms": 0}) as producer:
        for partition in range(3):
            producer.send(topic, b"through the proxy", partition=partition).result(30)
    leaders = {kafka_cluster.leader(topic, p).node_id for p in range(3)}
    for node in leaders:  # every leader was reached through its own proxy
        assert network_faults[node].stats.bytes["to_broker"] > before[node]


def test_latency_delays_every_round_trip(kafka_cluster, network_faults, unique_topic) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1)
    with Producer({"bootstrap.servers": network_faults.bootstrap, "linger.ms": 0}) as producer:
        producer.send(topic, b"warm").result(30)
        # A long latency keeps "slow" and "fast again" apart on a busy machine: a round
        # trip without it takes milliseconds, far under the 0.96 s it must take with it.
        with network_faults.latency(500, jitter_ms=20):
            took = []
            for _ in range(2):
                started = time.monotonic()
                producer.send(topic, b"slow").result(30)
                took.append(time.monotonic() - started)
        assert min(took) >= 0.96  # request and response each waited >= 480 ms
        started = time.monotonic()
        producer.send(topic, b"fast again").result(30)
        assert time.monotonic() - started < 0.96


def test_bandwidth_limits_what_a_consumer_reads(kafka_cluster, network_faults, unique_topic) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1)
    values = _produce(kafka_cluster.bootstrap, topic, 200, size=1000)  # 200 KB
    with network_faults.bandwidth(80_000, direction=TO_CLIENT), _consumer(network_faults) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        started = time.monotonic()
        got: list[bytes] = []
        while len(got) < len(values):
            got += [r.value for r in consumer.poll(1.0)]
        took = time.monotonic() - started
    assert got == values
    assert took >= 200_000 / 80_000 * 0.8


def test_black_hole_bounds_every_call_and_the_client_recovers(kafka_cluster, network_faults,
                                                              unique_topic) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1)
    with AdminClient({"bootstrap.servers": network_faults.bootstrap, "request.timeout.ms": 1500,
                      "default.api.timeout.ms": 3000}) as admin:
        assert topic in admin.list_topics()
        with network_faults.black_hole():
            started = time.monotonic()
            result = admin.describe_topics([topic], timeout=3)
            assert isinstance(result[topic].error, KafkaTimeoutError)
            assert time.monotonic() - started < 15  # no hang past the 3 s timeout (generous)
        # Once the hole closes the same client recovers by itself.
        wait_until(lambda: _lists(admin, topic), 30, interval=0.5, what="the admin client to recover")


def _lists(admin: AdminClient, topic: str) -> bool:
    try:
        return topic in admin.list_topics(timeout=3)
    except KafkaError:
        return False


def test_reset_cuts_open_connections_and_refuse_new_resets_new_ones(kafka_cluster, network_faults,
                                                                    unique_topic) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1)
    with Producer({"bootstrap.servers": network_faults.bootstrap, "linger.ms": 0,
                   "reconnect.backoff.ms": 50}) as producer:
        producer.send(topic, b"before").result(30)
        stats = producer._core.client.stats
        closed = stats.closed
        assert network_faults.reset() >= 1
        wait_until(lambda: stats.closed > closed, 15, what="the producer to see the reset")
        assert producer.send(topic, b"after").result(30).offset == 1  # reconnected
    with network_faults.refuse_new():
        resets = sum(p.stats.resets for p in network_faults)
        with pytest.raises(KafkaError), AdminClient({"bootstrap.servers": network_faults.bootstrap,
                                                     "default.api.timeout.ms": 3000}) as admin:
            admin.list_topics(timeout=3)
        assert sum(p.stats.resets for p in network_faults) > resets


def test_partial_writes_deliver_everything_in_fragments(kafka_cluster, network_faults, unique_topic) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1)
    values = [b"fragment-%d" % i for i in range(100)]
    written0 = sum(p.stats.bytes["to_client"] for p in network_faults)
    writes0 = sum(p.stats.writes["to_client"] for p in network_faults)
    with network_faults.partial_writes(max_fragment=3):
        with Producer({"bootstrap.servers": network_faults.bootstrap}) as producer:
            for v in values:
                producer.send(topic, v)
            producer.flush(60)
        with _consumer(network_faults) as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            got: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(got) < len(values) and time.monotonic() < deadline:
                got += [r.value for r in consumer.poll(1.0)]
    assert got == values
    written = sum(p.stats.bytes["to_client"] for p in network_faults) - written0
    writes = sum(p.stats.writes["to_client"] for p in network_faults) - writes0
    assert written > 1000 and writes * 3 >= written  # at most 3 bytes per write


def test_records_only_corruption_is_caught_by_the_crc(kafka_cluster, network_faults, unique_topic) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1)
    values = _produce(kafka_cluster.bootstrap, topic, 2000)
    with network_faults.corrupt(0.002, records_only=True), _consumer(network_faults) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        got: list[bytes] = []
        with pytest.raises(CorruptRecordsError) as info:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                got += [r.value for r in consumer.poll(1.0)]
    assert info.value.topic == topic and info.value.partition == 0
    assert got == values[:len(got)]  # nothing corrupt reached the application
    assert sum(p.stats.corrupted for p in network_faults) > 0


def test_stream_corruption_gives_typed_errors_then_recovery(kafka_cluster, network_faults, unique_topic) -> None:
    topic = kafka_cluster.create_topic(unique_topic, 1)
    values = _produce(kafka_cluster.bootstrap, topic, 500)
    with _consumer(network_faults, request_timeout_ms=3000, reconnect_backoff_max_ms=200) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        got: list[bytes] = []
        with network_faults.corrupt(0.001, direction=TO_CLIENT):
            until = time.monotonic() + 5
            while time.monotonic() < until and len(got) < len(values):
                try:
                    got += [r.value for r in consumer.poll(0.5)]
                except KafkaError:  # typed: corrupt frames, CRC failures; never anything else
                    consumer.seek(TopicPartition(topic, 0), len(got))
        assert got == values[:len(got)]
        deadline = time.monotonic() + 60
        while len(got) < len(values) and time.monotonic() < deadline:
            try:
                got += [r.value for r in consumer.poll(1.0)]
            except CorruptRecordsError:  # a fetch damaged just before the window closed
                consumer.seek(TopicPartition(topic, 0), len(got))
    assert got == values


def test_the_documented_example_runs(kafka_cluster, network_faults, unique_topic) -> None:
    """docs/testing.md "Network faults": a user's consumer under latency and a partition."""
    topic = kafka_cluster.create_topic(unique_topic, partitions=1)
    with Producer({"bootstrap.servers": kafka_cluster.bootstrap}) as producer:
        for i in range(1000):
            producer.send(topic, b"%d" % i)
    seen: list[bytes] = []
    with Consumer({"bootstrap.servers": network_faults.bootstrap,  # behind the proxies
                   "group.id": "my-app-" + topic, "auto.offset.reset": "earliest",
                   "request.timeout.ms": 5000}) as consumer:
        consumer.subscribe([topic])
        with network_faults.latency(100, jitter_ms=50):
            seen += [r.value for r in consumer.poll(5)]
        with network_faults.black_hole():
            started = time.monotonic()
            try:
                seen += [r.value for r in consumer.poll(3)]  # must not hang
            except KafkaError:
                pass  # typed errors only
            assert time.monotonic() - started < 15  # no hang past the 3 s poll (generous)
        deadline = time.monotonic() + 60  # and it recovers by itself
        while len(seen) < 1000 and time.monotonic() < deadline:
            seen += [r.value for r in consumer.poll(1)]
    assert seen == [b"%d" % i for i in range(1000)]
