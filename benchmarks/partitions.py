"""Many partitions: kafkalite vs confluent-kafka, kafka-python, aiokafka, each in its own process.

For each partition count (``--partitions``, default 1,000 and 10,000) one topic is
created and one record written to each partition (the broker's first write to a
partition is slow; no client should pay for it alone); then, every client at its defaults (``acks=all`` and idempotence on for the
producers):

* **produce**: ``--records`` values of ``--size`` bytes sent round-robin over every
  partition (explicit partition ``i % P``, so every partition has a batch open), then
  flush: msg/s, CPU µs per record, and peak RSS over the producer's baseline (its RSS
  once constructed with the topic's metadata and one record acknowledged);
* **consume**: a consumer assigned every partition from the beginning reads all that
  the producers wrote (``--records`` x producers), each value touched: start-up time
  (construction to the first record), msg/s, peak RSS over its baseline (constructed
  and assigned);
* **metadata refresh**: then the same consumer asks the broker for the metadata of all
  topics ``METADATA_CALLS`` times (kafkalite ``list_topics()``, confluent-kafka
  ``list_topics()``, kafka-python ``topics()``, aiokafka ``topics()``: each a fresh
  Metadata request): wall ms and CPU ms per refresh. The answer includes every topic of
  the broker; all clients ask the same broker in the same run.

Each client runs in a subprocess of its own, so the resident set is its alone.
``kafkalite / it`` for msg/s is kafkalite / the peer (above 1: kafkalite faster), for
times and memory the peer / kafkalite (above 1: kafkalite faster or smaller).

Usage::

    .venv/bin/python benchmarks/partitions.py                # 1,000 and 10,000 partitions, 200k records
    .venv/bin/python benchmarks/partitions.py --short        # 1,000 partitions, 5k records (CI)
    .venv/bin/python benchmarks/partitions.py --partitions 10000 --clients kafkalite,confluent-kafka
    KAFKALITE_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/partitions.py --short
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Broker, load, payload, print_settings, read_ahead_kib, reset_peak_rss, rss_kib

CLIENTS = ["kafkalite", "confluent-kafka", "kafka-python", "aiokafka"]
METADATA_CALLS = 5
OUT: dict[str, float] = {}


def baseline() -> None:
    import gc

    gc.collect()
    OUT["rss"] = rss_kib()[0]
    reset_peak_rss()
    OUT["cpu"], OUT["wall"] = time.process_time(), time.perf_counter()


def measured() -> None:
    """The measured part ended: its wall time, CPU and peak RSS over the baseline."""
    OUT["seconds"] = time.perf_counter() - OUT["wall"]
    OUT["cpu_s"] = time.process_time() - OUT["cpu"]
    OUT["peak_mb"] = (rss_kib()[1] - OUT["rss"]) / 1024


def timed_refreshes(refresh: Callable[[], object]) -> None:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(METADATA_CALLS):
        refresh()
    OUT["meta_ms"] = (time.perf_counter() - wall0) / METADATA_CALLS * 1e3
    OUT["meta_cpu_ms"] = (time.process_time() - cpu0) / METADATA_CALLS * 1e3


async def atimed_refreshes(refresh: Callable[[], Any]) -> None:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(METADATA_CALLS):
        await refresh()
    OUT["meta_ms"] = (time.perf_counter() - wall0) / METADATA_CALLS * 1e3
    OUT["meta_cpu_ms"] = (time.process_time() - cpu0) / METADATA_CALLS * 1e3


# ---------------------------------------------------------------- producers


def produce_kafkalite(bootstrap: str, topic: str, parts: int, value: bytes, n: int) -> None:
    from kafkalite import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    p.send(topic, value, partition=0).result(60)
    baseline()
    send = p.send
    for i in range(n):
        send(topic, value, partition=i % parts)
    p.flush()
    measured()
    p.close()


def produce_confluent(bootstrap: str, topic: str, parts: int, value: bytes, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    p.produce(topic, value, partition=0)
    p.flush(60)
    baseline()
    produce, poll = p.produce, p.poll
    for i in range(n):
        while True:
            try:
                produce(topic, value, partition=i % parts)
                break
            except BufferError:
                poll(0.05)
        if i % 1000 == 0:
            poll(0)
    p.flush()
    measured()


def produce_kafka_python(bootstrap: str, topic: str, parts: int, value: bytes, n: int) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    p.send(topic, value, partition=0).get(60)
    baseline()
    for i in range(n):
        p.send(topic, value, partition=i % parts)
    p.flush()
    measured()
    p.close()


def produce_aiokafka(bootstrap: str, topic: str, parts: int, value: bytes, n: int) -> None:
    from aiokafka import AIOKafkaProducer

    async def main() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
        await p.start()
        await p.send_and_wait(topic, value, partition=0)
        baseline()
        for i in range(n):
            await p.send(topic, value, partition=i % parts)
        await p.flush()
        measured()
        await p.stop()

    asyncio.run(main())


# ---------------------------------------------------------------- consumers


def consume_kafkalite(bootstrap: str, topic: str, parts: int, n: int) -> None:
    from kafkalite import Consumer, TopicPartition

    start = time.perf_counter()
    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p) for p in range(parts)])
    baseline()
    seen = 0
    while seen < n:
        for r in c.poll(5.0):
            if not seen:
                OUT["startup_s"] = time.perf_counter() - start
            seen += len(r.value) > 0
    measured()
    timed_refreshes(c.list_topics)
    c.close()


def consume_confluent(bootstrap: str, topic: str, parts: int, n: int) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    start = time.perf_counter()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-partitions-{time.time_ns()}"})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(parts)])
    baseline()
    seen = 0
    while seen < n:
        for m in c.consume(500, 5.0):
            if m.error():
                continue
            if not seen:
                OUT["startup_s"] = time.perf_counter() - start
            seen += len(m.value() or b"") > 0
    measured()
    timed_refreshes(lambda: c.list_topics(timeout=60))
    c.close()


def consume_kafka_python(bootstrap: str, topic: str, parts: int, n: int) -> None:
    from kafka import KafkaConsumer, TopicPartition

    start = time.perf_counter()
    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    c.assign([TopicPartition(topic, p) for p in range(parts)])
    baseline()
    seen = 0
    while seen < n:
        for records in c.poll(timeout_ms=5000).values():
            for r in records:
                if not seen:
                    OUT["startup_s"] = time.perf_counter() - start
                seen += len(r.value) > 0
    measured()
    timed_refreshes(c.topics)
    c.close()


def consume_aiokafka(bootstrap: str, topic: str, parts: int, n: int) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> None:
        start = time.perf_counter()
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        c.assign([TopicPartition(topic, p) for p in range(parts)])
        baseline()
        seen = 0
        while seen < n:
            for records in (await c.getmany(timeout_ms=5000)).values():
                for r in records:
                    if not seen:
                        OUT["startup_s"] = time.perf_counter() - start
                    seen += len(r.value) > 0
        measured()
        await atimed_refreshes(c.topics)
        await c.stop()

    asyncio.run(main())


PRODUCERS: dict[str, Callable[[str, str, int, bytes, int], None]] = {
    "kafkalite": produce_kafkalite, "confluent-kafka": produce_confluent,
    "kafka-python": produce_kafka_python, "aiokafka": produce_aiokafka,
}
CONSUMERS: dict[str, Callable[[str, str, int, int], None]] = {
    "kafkalite": consume_kafkalite, "confluent-kafka": consume_confluent,
    "kafka-python": consume_kafka_python, "aiokafka": consume_aiokafka,
}


def worker(args: argparse.Namespace) -> int:
    try:
        if args.worker == "produce":
            PRODUCERS[args.client](args.bootstrap, args.topic, args.parts, payload(args.size), args.records)
        else:
            CONSUMERS[args.client](args.bootstrap, args.topic, args.parts, args.records)
    except ImportError as exc:
        print(json.dumps({"error": f"not installed ({exc})"}), flush=True)
        return 3
    OUT["rate"] = args.records / OUT["seconds"]
    OUT["cpu_us"] = OUT["cpu_s"] / args.records * 1e6
    OUT["baseline_mb"] = OUT["rss"] / 1024
    print(json.dumps(OUT), flush=True)
    return 0


# ---------------------------------------------------------------- parent


def run_worker(role: str, client: str, bootstrap: str, topic: str, parts: int, records: int, size: int,
               timeout: float) -> dict[str, Any]:
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--worker", role, "--client", client, "--bootstrap", bootstrap,
             "--topic", topic, "--partitions", str(parts), "--records", str(records), "--size", str(size)],
            capture_output=True, text=True, timeout=timeout, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:.0f} s"}
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    return {"error": f"exited {done.returncode}: {done.stderr.strip()[-300:]}"}


COLUMNS = [  # (key, header, format, higher is better)
    ("rate", "msg/s", "{:10,.0f}", True),
    ("cpu_us", "CPU us/msg", "{:10.2f}", False),
    ("peak_mb", "peak over MB", "{:12.1f}", False),
    ("startup_s", "start-up s", "{:10.2f}", False),
    ("meta_ms", "meta ms", "{:8.1f}", False),
    ("meta_cpu_ms", "meta CPU ms", "{:11.2f}", False),
]


#: KRaft's controller refuses one operation of more than 10,000 metadata records (a
#: topic of 10,000 partitions is 10,001: POLICY_VIOLATION "Unable to perform
#: excessively large batch operation"), so a larger topic grows in steps of this many.
CREATE_STEP = 5000


def create_topic(broker: Broker, name: str, parts: int) -> str:
    """A topic of ``parts`` partitions: created with up to :data:`CREATE_STEP`, then grown."""
    from kafkalite import AdminClient

    topic = broker.create_topic(name, min(parts, CREATE_STEP))
    count = min(parts, CREATE_STEP)
    if count < parts:
        with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
            while count < parts:
                count = min(parts, count + CREATE_STEP)
                admin.create_partitions({topic: count}, timeout=120).all()
            deadline = time.monotonic() + 120
            while len(admin.describe_topics([topic]).all()[topic].partitions) < parts:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{topic} did not reach {parts} partitions")
                time.sleep(0.2)
    return topic


def warm(bootstrap: str, topic: str, parts: int) -> int:
    """One record to every partition, acknowledged, before any client is measured.

    The broker's first write to a fresh partition is slow and, for an idempotent
    producer, answered with retriable errors for a while (kafkalite counted ~3 retries
    per record on a fresh 1,000-partition topic; confluent-kafka slowed down the same
    way): whichever client ran first would pay for all. Returns the records written.
    """
    from kafkalite import Producer

    with Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20}) as p:
        futures = [p.send(topic, b"warm", partition=i) for i in range(parts)]
        p.flush()
        for future in futures:
            future.result(120)
    return parts


#: Above this read-ahead the broker's own index faults decide the 10,000-partition
#: figures (README "Many partitions"); the Linux default is 128 KiB.
READ_AHEAD_WARN_KIB = 1024


def describe_read_ahead(run_dir: Path | None) -> str:
    """A line on the read-ahead of the broker's disk, with a warning when it is large."""
    if run_dir is None:
        return "broker's disk read-ahead: unknown (an external broker)"
    kib = read_ahead_kib(run_dir)
    if kib is None:
        return "broker's disk read-ahead: unknown"
    line = f"broker's disk read-ahead: {kib} KiB"
    if kib > READ_AHEAD_WARN_KIB:
        line += (" -- WARNING: each partition's first read faults in its 10 MiB index with this much"
                 " read-ahead; with thousands of partitions the broker's system time, not the client,"
                 " decides consume start-up and rate (lower it: echo 128 > /sys/block/<disk>/queue/read_ahead_kb)")
    return line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", default="1000,10000")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--short", action="store_true", help="1,000 partitions, 5,000 records per producer")
    ap.add_argument("--worker", choices=["produce", "consume"], help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.parts = int(args.partitions)
        return worker(args)
    if args.short:
        args.partitions, args.records = "1000", 5_000
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CLIENTS]
    if unknown:
        ap.error(f"unknown clients {unknown}; choose from {CLIENTS}")
    print(f"partitions: {args.records} x {args.size} B per producer, each client at its defaults; {load()}", flush=True)
    for name in wanted:
        java_names = name in ("kafkalite", "confluent-kafka")
        print_settings(name, "producer", {"acks": "all", "enable.idempotence" if java_names else
                                          "enable_idempotence": True}, "send(partition=i % P), flush()")
        print_settings(name, "consumer", {}, "assign all partitions, poll loop")
    broker = Broker()
    print(describe_read_ahead(broker.run_dir), flush=True)
    rows: list[tuple[int, str, str, dict[str, Any]]] = []
    try:
        for parts in [int(p) for p in args.partitions.split(",")]:
            started = time.perf_counter()
            topic = create_topic(broker, f"bench-partitions-{parts}-{time.time_ns()}", parts)
            created = time.perf_counter()
            written = warm(broker.bootstrap, topic, parts)
            print(f"{parts} partitions: topic created in {created - started:.1f} s, a record written to each "
                  f"partition in {time.perf_counter() - created:.1f} s; {load()}", flush=True)
            timeout = 120 + parts / 50 + args.records / 2000
            for role in ("produce", "consume"):
                for name in wanted:
                    n = args.records if role == "produce" else written
                    res = run_worker(role, name, broker.bootstrap, topic, parts, n, args.size, timeout)
                    if "error" in res:
                        print(f"  {parts:>6} {role:8s} {name:16s} {res['error']}", flush=True)
                        continue
                    if role == "produce":
                        written += args.records + 1  # and the warm-up record
                    text = "  ".join(f"{h} {f.format(res[k]).strip()}" for k, h, f, _ in COLUMNS if k in res)
                    print(f"  {parts:>6} {role:8s} {name:16s} {text}  ({load()})", flush=True)
                    rows.append((parts, role, name, res))
    finally:
        broker.close()
    print()
    for role in ("produce", "consume"):
        cols = [c for c in COLUMNS if any(c[0] in r for _, ro, _, r in rows if ro == role)]
        print(f"{'partitions':>10} {role:8s} {'client':16s} " + " ".join(f"{h:>{len(f.format(0))}}" for _, h, f, _ in cols)
              + "  kafkalite / it (" + ", ".join(h for _, h, _, _ in cols) + ")")
        for parts, ro, name, res in rows:
            if ro != role:
                continue
            ours = next((r for p, o, n, r in rows if p == parts and o == role and n == "kafkalite"), None)
            ratios = []
            for key, _, _, higher in cols:
                if ours and ours.get(key) and res.get(key):
                    ratios.append(f"{(ours[key] / res[key]) if higher else (res[key] / ours[key]):.2f}")
                else:
                    ratios.append("-")
            values = " ".join(f.format(res[k]) if k in res else " " * len(f.format(0)) for k, _, f, _ in cols)
            print(f"{parts:>10} {role:8s} {name:16s} {values}  {' / '.join(ratios)}")
    print(f"({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
