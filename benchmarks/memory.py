"""Peak memory: kafkalite vs confluent-kafka, kafka-python, aiokafka, each in its own process.

Two cases, every client at its defaults (``acks=all`` and idempotence on for the
producers, as ``produce.py --defaults``):

* **producer fed faster than the broker takes**: ``--records`` values of ``--size``
  bytes sent in a tight loop (no pacing), then flush. What bounds the memory is the
  client's buffer limit: kafkalite and kafka-python ``buffer.memory`` (32 MB; ``send()``
  blocks when full), librdkafka ``queue.buffering.max.messages`` / ``.kbytes`` (100,000
  messages / 1 GB; ``produce()`` raises BufferError, the loop polls and retries), aiokafka
  none of its own (``send()`` waits while a partition's batch is full).
* **consumer reading a backlog**: a topic filled beforehand with ``--records`` x
  ``--size`` (default 1 GB: 1M x 1 KiB) read from the beginning to the end, every
  value touched and dropped. What bounds it: the prefetch (kafkalite and the Java-like
  clients ``fetch.max.bytes`` 50 MB, librdkafka ``queued.max.messages.kbytes`` 64 MB),
  and per partition ``max.partition.fetch.bytes`` (1 MB): with the default one
  partition (``--partitions``) a fetch brings at most 1 MB, so give the backlog more
  partitions to see the whole prefetch.

Each client runs in a subprocess of its own, so the resident set is the client's
alone: the baseline is its RSS once it is constructed and connected (the producer has
had one record acknowledged; the consumer is assigned), then the kernel's peak (VmHWM)
is reset (``/proc/self/clear_refs``) and the figure is the peak during the run minus
that baseline. ``kafkalite / it`` = the peer's peak over baseline / kafkalite's (above
1: kafkalite needs less).

Usage::

    .venv/bin/python benchmarks/memory.py                   # 1M x 1 KiB = 1 GB each way
    .venv/bin/python benchmarks/memory.py --short           # 50k x 1 KiB = ~50 MB (CI)
    .venv/bin/python benchmarks/memory.py --cases consumer --records 200000 --partitions 16
    KAFKALITE_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/memory.py --short
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
from common import Broker, load, payload, print_settings, reset_peak_rss, rss_kib, write_results

CLIENTS = ["kafkalite", "confluent-kafka", "kafka-python", "aiokafka"]
#: (RSS at the baseline, CPU seconds, perf_counter) when the measured part began
MARK: dict[str, float] = {}
PARTS = [1]  # partitions of the topics (--partitions)


def baseline() -> None:
    """The client is constructed and connected: note its RSS and start the peak afresh."""
    import gc

    gc.collect()
    MARK["rss"] = rss_kib()[0]
    reset_peak_rss()
    MARK["cpu"], MARK["wall"] = time.process_time(), time.perf_counter()


# ---------------------------------------------------------------- producers


def produce_kafkalite(bootstrap: str, topic: str, value: bytes, n: int) -> None:
    from kafkalite import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    p.send(topic, value).result(30)
    baseline()
    send = p.send
    for _ in range(n):
        send(topic, value)
    p.flush()
    p.close()


def produce_confluent(bootstrap: str, topic: str, value: bytes, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    p.produce(topic, value)
    p.flush(30)
    baseline()
    produce, poll = p.produce, p.poll
    for i in range(n):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:  # queue.buffering.max.* reached
                poll(0.05)
        if i % 1000 == 0:
            poll(0)
    p.flush()


def produce_kafka_python(bootstrap: str, topic: str, value: bytes, n: int) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    p.send(topic, value).get(30)
    baseline()
    for _ in range(n):
        p.send(topic, value)
    p.flush()
    p.close()


def produce_aiokafka(bootstrap: str, topic: str, value: bytes, n: int) -> None:
    from aiokafka import AIOKafkaProducer

    async def main() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
        await p.start()
        await p.send_and_wait(topic, value)
        baseline()
        for _ in range(n):
            await p.send(topic, value)
        await p.flush()
        await p.stop()

    asyncio.run(main())


# ---------------------------------------------------------------- consumers


def consume_kafkalite(bootstrap: str, topic: str, n: int) -> None:
    from kafkalite import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p) for p in range(PARTS[0])])
    baseline()
    seen = 0
    while seen < n:
        for r in c.poll(5.0):
            seen += len(r.value) > 0
    c.close()


def consume_confluent(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-memory-{time.time_ns()}"})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTS[0])])
    baseline()
    seen = 0
    while seen < n:
        for m in c.consume(500, 5.0):
            if not m.error():
                seen += len(m.value() or b"") > 0
    c.close()


def consume_kafka_python(bootstrap: str, topic: str, n: int) -> None:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    c.assign([TopicPartition(topic, p) for p in range(PARTS[0])])
    baseline()
    seen = 0
    while seen < n:
        for records in c.poll(timeout_ms=5000).values():
            for r in records:
                seen += len(r.value) > 0
    c.close()


def consume_aiokafka(bootstrap: str, topic: str, n: int) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> None:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        c.assign([TopicPartition(topic, p) for p in range(PARTS[0])])
        baseline()
        seen = 0
        while seen < n:
            for records in (await c.getmany(timeout_ms=5000)).values():
                for r in records:
                    seen += len(r.value) > 0
        await c.stop()

    asyncio.run(main())


PRODUCERS: dict[str, Callable[[str, str, bytes, int], None]] = {
    "kafkalite": produce_kafkalite, "confluent-kafka": produce_confluent,
    "kafka-python": produce_kafka_python, "aiokafka": produce_aiokafka,
}
CONSUMERS: dict[str, Callable[[str, str, int], None]] = {
    "kafkalite": consume_kafkalite, "confluent-kafka": consume_confluent,
    "kafka-python": consume_kafka_python, "aiokafka": consume_aiokafka,
}


def worker(args: argparse.Namespace) -> int:
    PARTS[0] = args.partitions
    try:
        if args.worker == "producer":
            PRODUCERS[args.client](args.bootstrap, args.topic, payload(args.size), args.records)
        else:
            CONSUMERS[args.client](args.bootstrap, args.topic, args.records)
    except ImportError as exc:
        print(json.dumps({"error": f"not installed ({exc})"}), flush=True)
        return 3
    _, peak = rss_kib()
    print(json.dumps({"baseline_mb": MARK["rss"] / 1024, "peak_mb": (peak - MARK["rss"]) / 1024,
                      "seconds": time.perf_counter() - MARK["wall"],
                      "cpu_us": (time.process_time() - MARK["cpu"]) / args.records * 1e6}), flush=True)
    return 0


# ---------------------------------------------------------------- parent


def run_worker(role: str, client: str, bootstrap: str, topic: str, records: int, size: int,
               timeout: float) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", role, "--client", client, "--bootstrap", bootstrap, "--topic", topic,
         "--records", str(records), "--size", str(size), "--partitions", str(PARTS[0])],
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    return {"error": f"exited {done.returncode}: {done.stderr.strip()[-300:]}"}


def fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    """The backlog, written by kafkalite with 1 MB batches (what writes it does not matter to the readers)."""
    from kafkalite import Producer

    value = payload(size)
    with Producer({"bootstrap.servers": bootstrap, "batch.size": 1_000_000, "linger.ms": 20,
                   "buffer.memory": 128 * 1024 * 1024}) as p:
        chunk = [value] * 10_000
        for start in range(0, records, len(chunk)):
            p.send_many(topic, chunk[: records - start])
        p.flush()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=1, help="partitions of the topics (default 1)")
    ap.add_argument("--cases", default="producer,consumer")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--short", action="store_true", help="50,000 x 1 KiB (~50 MB) each way")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON (benchmarks/results/, charted by the docs)")
    ap.add_argument("--worker", choices=["producer", "consumer"], help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args()
    PARTS[0] = args.partitions
    if args.worker:
        return worker(args)
    if args.short:
        args.records = 50_000
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CLIENTS]
    if unknown:
        ap.error(f"unknown clients {unknown}; choose from {CLIENTS}")
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    mb = args.records * args.size / 1e6
    print(f"memory: {args.records} x {args.size} B ({mb:,.0f} MB) per case, {args.partitions} partition(s), "
          f"each client at its defaults; {load()}",
          flush=True)
    for name in wanted:
        java_names = name in ("kafkalite", "confluent-kafka")
        if "producer" in cases:
            print_settings(name, "producer", {"acks": "all", "enable.idempotence" if java_names else
                                              "enable_idempotence": True}, "send() in a tight loop, flush()")
        if "consumer" in cases:
            print_settings(name, "consumer", {}, "poll loop, each value touched and dropped")
    broker = Broker()
    rows: list[tuple[str, str, dict[str, Any]]] = []
    timeout = 120 + args.records * args.size / 1e6  # a second per MB on top of start-up: generous
    try:
        backlog = ""
        if "consumer" in cases:
            backlog = broker.create_topic(f"bench-memory-backlog-{time.time_ns()}", args.partitions)
            started = time.perf_counter()
            fill(broker.bootstrap, backlog, args.records, args.size)
            print(f"  backlog of {mb:,.0f} MB written in {time.perf_counter() - started:.1f} s", flush=True)
        for case in cases:
            for name in wanted:
                if case == "producer":
                    topic = broker.create_topic(f"bench-memory-{name}-{time.time_ns()}", args.partitions)
                else:
                    topic = backlog
                try:
                    res = run_worker(case, name, broker.bootstrap, topic, args.records, args.size, timeout)
                except subprocess.TimeoutExpired:
                    res = {"error": f"did not finish in {timeout:.0f} s"}
                if "error" in res:
                    print(f"  {case:9s} {name:16s} {res['error']}", flush=True)
                    continue
                print(f"  {case:9s} {name:16s} baseline {res['baseline_mb']:7.1f} MB  peak over it "
                      f"{res['peak_mb']:8.1f} MB  {res['seconds']:6.1f} s  ({load()})", flush=True)
                rows.append((case, name, res))
    finally:
        broker.close()
    print()
    print(f"{'case':>9} {'client':16s} {'baseline MB':>11} {'peak over MB':>12} {'seconds':>8} {'CPU us/msg':>11} "
          f"{'kafkalite / it':>15}")
    for case, name, res in rows:
        ours = next((r for c, n, r in rows if c == case and n == "kafkalite"), None)
        ratio = f"{res['peak_mb'] / ours['peak_mb']:14.2f}x" if ours and ours["peak_mb"] > 0 else ""
        print(f"{case:>9} {name:16s} {res['baseline_mb']:11.1f} {res['peak_mb']:12.1f} {res['seconds']:8.1f} "
              f"{res['cpu_us']:11.2f} {ratio:>15}")
    write_results(args.json, "memory", sys.argv, [
        {"case": case, "client": name, "baseline_mb": round(res["baseline_mb"], 1),
         "peak_over_baseline_mb": round(res["peak_mb"], 1), "seconds": round(res["seconds"], 1),
         "cpu_us_per_msg": round(res["cpu_us"], 2)} for case, name, res in rows], "MB")
    print(f"({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
