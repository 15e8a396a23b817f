"""Consume throughput: kafkalite vs confluent-kafka, kafka-python, aiokafka and Java.

One invocation, one broker, the same topics for everyone. For each value size and
codec a topic is filled once with Kafka's own ProducerPerformance, then every client
reads it from the beginning to the end, touching each record's value (``len()``), and
the table prints msg/s, MB/s and each client's ratio to kafkalite.

Usage::

    .venv/bin/python benchmarks/consume.py                      # starts its own broker
    .venv/bin/python benchmarks/consume.py --messages 200000 --sizes 100 --codecs none
    KAFKALITE_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/consume.py

Peers are optional (``pip install kafkalite[bench]``); a missing one is reported and
skipped. Numbers mean something only on a quiet machine: run it alone.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BATCH = 2000  # records per poll()/getmany()/consume() call, the same for every client


# ---------------------------------------------------------------- broker and data


class Broker:
    """KAFKALITE_BOOTSTRAP, or a LocalBroker from kafkalite.testing for the run."""

    def __init__(self) -> None:
        from kafkalite.testing.broker import LocalBroker
        from kafkalite.testing.distribution import KafkaDistribution
        from kafkalite.testing.java import find_java
        from kafkalite.testing.tools import JavaTools

        self.local = None
        self.bootstrap = os.environ.get("KAFKALITE_BOOTSTRAP", "")
        if not self.bootstrap:
            self.local = LocalBroker(run_dir=Path(tempfile.mkdtemp(prefix="kafkalite-bench-")), heap="1g").start()
            self.bootstrap = self.local.bootstrap
            self.tools = self.local.tools
        else:
            self.tools = JavaTools(KafkaDistribution().ensure(), find_java())

    def create_topic(self, name: str, partitions: int) -> None:
        from kafkalite.testing.topics import create_topic

        create_topic(self.bootstrap, name, partitions, exist_ok=True)

    def fill(self, topic: str, messages: int, size: int, codec: str) -> None:
        done = self.tools.run("kafka-producer-perf-test", [
            "--topic", topic, "--num-records", str(messages), "--record-size", str(size), "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={self.bootstrap}", f"compression.type={codec}",
            "linger.ms=20", "batch.size=262144", "acks=1"], timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"filling {topic} failed:\n{done.stderr[-2000:]}")

    def close(self) -> None:
        if self.local is not None:
            self.local.close()


# ---------------------------------------------------------------- clients


def run_kafkalite(bootstrap: str, topic: str, partitions: int, messages: int) -> float:
    from kafkalite import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", "max.poll.records": BATCH,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    n = 0
    nbytes = 0
    started = time.perf_counter()
    while n < messages:
        for r in c.poll(5.0):
            nbytes += len(r.value)
            n += 1
    elapsed = time.perf_counter() - started
    c.close()
    return elapsed


def run_kafkalite_aio(bootstrap: str, topic: str, partitions: int, messages: int) -> float:
    from kafkalite import TopicPartition, aio

    async def main() -> float:
        c = aio.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                          "max.poll.records": BATCH, "enable.auto.commit": False})
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        n = 0
        nbytes = 0
        started = time.perf_counter()
        while n < messages:
            for r in await c.poll(5.0):
                nbytes += len(r.value)
                n += 1
        elapsed = time.perf_counter() - started
        await c.close()
        return elapsed

    return asyncio.run(main())


def run_confluent(bootstrap: str, topic: str, partitions: int, messages: int) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time()}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    n = 0
    nbytes = 0
    started = time.perf_counter()
    while n < messages:
        for m in c.consume(BATCH, 5.0):
            if m.error():
                continue
            nbytes += len(m.value())
            n += 1
    elapsed = time.perf_counter() - started
    c.close()
    return elapsed


def run_kafka_python(bootstrap: str, topic: str, partitions: int, messages: int) -> float:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    c.seek_to_beginning()
    n = 0
    nbytes = 0
    started = time.perf_counter()
    while n < messages:
        for records in c.poll(timeout_ms=5000, max_records=BATCH).values():
            for r in records:
                nbytes += len(r.value)
                n += 1
    elapsed = time.perf_counter() - started
    c.close()
    return elapsed


def run_aiokafka(bootstrap: str, topic: str, partitions: int, messages: int) -> float:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> float:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
        await c.start()
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        await c.seek_to_beginning()
        n = 0
        nbytes = 0
        started = time.perf_counter()
        while n < messages:
            batches = await c.getmany(timeout_ms=5000, max_records=BATCH)
            for records in batches.values():
                for r in records:
                    nbytes += len(r.value)
                    n += 1
        elapsed = time.perf_counter() - started
        await c.stop()
        return elapsed

    return asyncio.run(main())


CLIENTS: dict[str, Callable[[str, str, int, int], float]] = {
    "kafkalite": run_kafkalite,
    "kafkalite.aio": run_kafkalite_aio,
    "confluent-kafka": run_confluent,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}


def run_java(broker: Broker, topic: str, messages: int) -> float:
    done = broker.tools.run("kafka-consumer-perf-test", [
        "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", str(messages),
        "--timeout", "60000", "--group", f"bench-java-{time.time()}"], timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-1000:])
    # header: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, ...
    # fetch.time.ms (the time spent fetching after the group formed) is the fair number.
    lines = [line for line in done.stdout.splitlines() if re.match(r"^\d{4}-", line)]
    fields = [f.strip() for f in lines[-1].split(",")]
    fetch_ms = float(fields[7])
    return fetch_ms / 1000.0


# ---------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--codecs", default="none,lz4")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--clients", default=",".join([*CLIENTS, "java"]))
    ap.add_argument("--repeat", type=int, default=1, help="runs per client; the best is kept")
    args = ap.parse_args()
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    broker = Broker()
    rows: list[tuple[str, str, str, float, float]] = []
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            for codec in args.codecs.split(","):
                topic = f"bench-consume-{size}-{codec}-{args.partitions}-{args.messages}"
                broker.create_topic(topic, args.partitions)
                print(f"filling {topic} with {args.messages} x {size} B ({codec}) ...", flush=True)
                broker.fill(topic, args.messages, size, codec)
                for name in wanted:
                    best = None
                    for _ in range(args.repeat):
                        gc.collect()
                        try:
                            if name == "java":
                                elapsed = run_java(broker, topic, args.messages)
                            else:
                                elapsed = CLIENTS[name](broker.bootstrap, topic, args.partitions, args.messages)
                        except ImportError as exc:
                            print(f"  {name}: not installed ({exc}); pip install 'kafkalite[bench]'")
                            break
                        except Exception as exc:  # one broken peer must not hide the others
                            print(f"  {name}: failed: {exc!r}")
                            break
                        best = elapsed if best is None else min(best, elapsed)
                    if best is None:
                        continue
                    rate = args.messages / best
                    mbs = args.messages * size / best / 1e6
                    rows.append((f"{size} B", codec, name, rate, mbs))
                    print(f"  {name:16s} {rate:12,.0f} msg/s {mbs:9.1f} MB/s", flush=True)
    finally:
        broker.close()
    print()
    print(f"{'value':>7} {'codec':>6} {'client':16s} {'msg/s':>12} {'MB/s':>8} {'kafkalite / it':>15}")
    for size, codec, name, rate, mbs in rows:
        ours = next((r[3] for r in rows if r[0] == size and r[1] == codec and r[2] == "kafkalite"), None)
        ratio = f"{ours / rate:14.2f}x" if ours else ""
        print(f"{size:>7} {codec:>6} {name:16s} {rate:12,.0f} {mbs:8.1f} {ratio:>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
