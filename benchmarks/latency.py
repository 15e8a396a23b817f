"""End-to-end latency at fixed rates: kafkalite vs confluent-kafka, kafka-python, aiokafka.

For each rate (``--rates``, default 1,000, 10,000 and 50,000 msg/s) and each client a
producer and a consumer of the same library run in two processes of their own (so
neither's GIL or garbage collector delays the other) on a fresh one-partition topic.
The producer sends ``--size``-byte values at the fixed rate for ``--seconds``, each
value starting with ``time.time_ns()`` taken just before its ``send()``; the consumer
polls one call at a time and takes ``time.time_ns()`` for every record it gets. The
difference is the end-to-end latency (same machine, same clock). Both run with the
library's defaults except ``acks=all`` and idempotence on (as ``produce.py
--defaults``); the first ``WARMUP_S`` seconds of records are left out.

The table: achieved rate, p50 / p99 / max in ms, producer + consumer CPU µs per
record, and ``kafkalite / it`` = the peer's p99 / kafkalite's p99 (above 1: kafkalite's
p99 is lower).

Usage::

    .venv/bin/python benchmarks/latency.py                       # 1k, 10k, 50k msg/s, 10 s each
    .venv/bin/python benchmarks/latency.py --short               # 1k and 10k msg/s, 2 s each (CI)
    .venv/bin/python benchmarks/latency.py --rates 10000 --clients kafkalite,confluent-kafka
    KAFKALITE_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/latency.py --short

How each consumer polls (one call at a time, its default records per call):
kafkalite ``poll(1.0)``, confluent-kafka ``poll(1.0)`` (one message), kafka-python
``poll(timeout_ms=1000)``, aiokafka ``await getone()``. Producers: kafkalite and
kafka-python ``send()``, confluent-kafka ``produce()`` and ``poll(0)`` after each
paced group of sends, aiokafka ``await send()``. A client that cannot keep up shows it
in the achieved rate (and in its latency, which then grows with the backlog).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Broker, load, print_settings, write_results

CLIENTS = ["kafkalite", "confluent-kafka", "kafka-python", "aiokafka"]
WARMUP_S = 0.5
WARMUP_VALUE = b"w"


# ---------------------------------------------------------------- producer workers


def paced(rate: int, seconds: float) -> Iterator[int]:
    """Yield how many records to send now, sleeping between groups so that ``rate`` per second holds."""
    total = int(rate * seconds)
    sent = 0
    start = time.perf_counter()
    while sent < total:
        due = min(total, int((time.perf_counter() - start) * rate) + 1)
        if due > sent:
            yield due - sent
            sent = due
        delay = start + sent / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)


async def apaced(rate: int, seconds: float) -> Any:
    total = int(rate * seconds)
    sent = 0
    start = time.perf_counter()
    while sent < total:
        due = min(total, int((time.perf_counter() - start) * rate) + 1)
        if due > sent:
            yield due - sent
            sent = due
        delay = start + sent / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)


def stamped(pad: bytes) -> bytes:
    return time.time_ns().to_bytes(8, "big") + pad


#: perf_counter and process CPU when the timed part began (the producer: "go"; the consumer: ready)
MARK = {"wall": 0.0, "cpu": 0.0}


def ready() -> None:
    """Tell the parent this side is connected; the timed part (and its CPU) starts here."""
    print("ready", flush=True)
    MARK["wall"], MARK["cpu"] = time.perf_counter(), time.process_time()


def wait_go() -> None:
    print("ready", flush=True)
    sys.stdin.readline()
    MARK["wall"], MARK["cpu"] = time.perf_counter(), time.process_time()


def sent_for(n: int) -> int:
    """Called when the last record was handed over (before flush): the achieved rate's clock stops."""
    MARK["sent_s"] = time.perf_counter() - MARK["wall"]
    return n


def produce_kafkalite(bootstrap: str, topic: str, rate: int, seconds: float, pad: bytes) -> int:
    from kafkalite import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    p.send(topic, WARMUP_VALUE).result(30)
    wait_go()
    n = 0
    for k in paced(rate, seconds):
        for _ in range(k):
            p.send(topic, stamped(pad))
        n += k
    sent_for(n)
    p.flush()
    p.close()
    return n


def produce_confluent(bootstrap: str, topic: str, rate: int, seconds: float, pad: bytes) -> int:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    p.produce(topic, WARMUP_VALUE)
    p.flush(30)
    wait_go()
    n = 0
    for k in paced(rate, seconds):
        for _ in range(k):
            p.produce(topic, stamped(pad))
        p.poll(0)
        n += k
    sent_for(n)
    p.flush()
    return n


def produce_kafka_python(bootstrap: str, topic: str, rate: int, seconds: float, pad: bytes) -> int:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    p.send(topic, WARMUP_VALUE).get(30)
    wait_go()
    n = 0
    for k in paced(rate, seconds):
        for _ in range(k):
            p.send(topic, stamped(pad))
        n += k
    sent_for(n)
    p.flush()
    p.close()
    return n


def produce_aiokafka(bootstrap: str, topic: str, rate: int, seconds: float, pad: bytes) -> int:
    from aiokafka import AIOKafkaProducer

    async def main() -> int:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
        await p.start()
        await p.send_and_wait(topic, WARMUP_VALUE)
        await asyncio.get_running_loop().run_in_executor(None, wait_go)
        n = 0
        async for k in apaced(rate, seconds):
            for _ in range(k):
                await p.send(topic, stamped(pad))
            n += k
        sent_for(n)
        await p.flush()
        await p.stop()
        return n

    return asyncio.run(main())


PRODUCERS: dict[str, Callable[[str, str, int, float, bytes], int]] = {
    "kafkalite": produce_kafkalite, "confluent-kafka": produce_confluent,
    "kafka-python": produce_kafka_python, "aiokafka": produce_aiokafka,
}


# ---------------------------------------------------------------- consumer workers


class Latencies:
    """Collects (receive - send) per record; ends when ``expected`` records came or the deadline passed."""

    def __init__(self, expected: int, deadline: float) -> None:
        self.expected = expected
        self.deadline = deadline
        self.ms: list[float] = []
        self.sent_ns: list[int] = []
        self.count = 0

    def take(self, value: bytes | None) -> None:
        now = time.time_ns()
        if not value or value == WARMUP_VALUE:
            return
        sent = int.from_bytes(value[:8], "big")
        self.count += 1
        self.sent_ns.append(sent)
        self.ms.append((now - sent) / 1e6)

    @property
    def done(self) -> bool:
        return self.count >= self.expected or time.monotonic() > self.deadline


def consume_kafkalite(bootstrap: str, topic: str, lat: Latencies) -> None:
    from kafkalite import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0)])
    c.poll(0.5)  # connection and position before the producer starts
    ready()
    while not lat.done:
        for r in c.poll(1.0):
            lat.take(r.value)
    c.close()


def consume_confluent(bootstrap: str, topic: str, lat: Latencies) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-latency-{time.time_ns()}"})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    c.poll(0.5)
    ready()
    while not lat.done:
        m = c.poll(1.0)
        if m is not None and not m.error():
            lat.take(m.value())
    c.close()


def consume_kafka_python(bootstrap: str, topic: str, lat: Latencies) -> None:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    c.assign([TopicPartition(topic, 0)])
    c.poll(timeout_ms=500)
    ready()
    while not lat.done:
        for records in c.poll(timeout_ms=1000).values():
            for r in records:
                lat.take(r.value)
    c.close()


def consume_aiokafka(bootstrap: str, topic: str, lat: Latencies) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> None:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        c.assign([TopicPartition(topic, 0)])
        await c.getmany(timeout_ms=500)
        ready()
        while not lat.done:
            try:
                r = await asyncio.wait_for(c.getone(), 1.0)
            except asyncio.TimeoutError:
                continue
            lat.take(r.value)
        await c.stop()

    asyncio.run(main())


CONSUMERS: dict[str, Callable[[str, str, Latencies], None]] = {
    "kafkalite": consume_kafkalite, "confluent-kafka": consume_confluent,
    "kafka-python": consume_kafka_python, "aiokafka": consume_aiokafka,
}


def percentile(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))]


def worker(args: argparse.Namespace) -> int:
    """One side of one client's run; prints a JSON line with its figures."""
    expected = int(args.rate * args.seconds)
    try:
        if args.worker == "producer":
            sent = PRODUCERS[args.client](args.bootstrap, args.topic, args.rate, args.seconds, b"x" * (args.size - 8))
            out: dict[str, Any] = {"sent": sent, "seconds": MARK["sent_s"]}
        else:
            lat = Latencies(expected, time.monotonic() + args.seconds * 4 + 30)
            CONSUMERS[args.client](args.bootstrap, args.topic, lat)
            first = min(lat.sent_ns) if lat.sent_ns else 0
            kept = sorted(ms for ms, sent in zip(lat.ms, lat.sent_ns) if sent - first >= WARMUP_S * 1e9)
            out = {"received": lat.count, "p50": percentile(kept, 0.5) if kept else 0.0,
                   "p99": percentile(kept, 0.99) if kept else 0.0, "max": kept[-1] if kept else 0.0}
        out["cpu"] = time.process_time() - MARK["cpu"]  # the timed part's CPU, without imports and set-up
    except ImportError as exc:
        print(json.dumps({"error": f"not installed ({exc})"}), flush=True)
        return 3
    print(json.dumps(out), flush=True)
    return 0


# ---------------------------------------------------------------- parent


def spawn(role: str, client: str, bootstrap: str, topic: str, rate: int, seconds: float, size: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--worker", role, "--client", client, "--bootstrap", bootstrap, "--topic", topic,
         "--rates", str(rate), "--seconds", str(seconds), "--size", str(size)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise TimeoutError("no answer from the worker")
    return proc.stdout.readline().strip()


def last_json(text: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    raise RuntimeError(f"worker printed no result: {text[-500:]!r}")


def run_one(broker: Broker, client: str, rate: int, seconds: float, size: int) -> dict[str, Any]:
    topic = broker.create_topic(f"bench-latency-{client}-{rate}-{time.time_ns()}", 1)
    cons = spawn("consumer", client, broker.bootstrap, topic, rate, seconds, size)
    prod = spawn("producer", client, broker.bootstrap, topic, rate, seconds, size)
    try:
        for proc in (cons, prod):
            line = read_line(proc, 120)
            if line != "ready":
                out, _ = proc.communicate(timeout=60)
                return last_json(line + "\n" + out)
        assert prod.stdin is not None
        prod.stdin.write("go\n")
        prod.stdin.flush()
        p_out, _ = prod.communicate(timeout=seconds * 4 + 120)
        c_out, _ = cons.communicate(timeout=seconds * 4 + 120)
        p, c = last_json(p_out), last_json(c_out)
        if "error" in p or "error" in c:
            return p if "error" in p else c
        return {"rate": p["sent"] / p["seconds"], "received": c["received"], "sent": p["sent"], "p50": c["p50"],
                "p99": c["p99"], "max": c["max"], "cpu_us": (p["cpu"] + c["cpu"]) / max(1, p["sent"]) * 1e6}
    finally:
        for proc in (cons, prod):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="1000,10000,50000")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--short", action="store_true", help="1k and 10k msg/s, 2 s each (finishes in well under a minute)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON (benchmarks/results/, charted by the docs)")
    ap.add_argument("--worker", choices=["producer", "consumer"], help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.rate = int(args.rates)
        return worker(args)
    if args.short:
        args.rates, args.seconds = "1000,10000", 2.0
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CLIENTS]
    if unknown:
        ap.error(f"unknown clients {unknown}; choose from {CLIENTS}")
    print(f"latency: {args.size} B values, {args.seconds:g} s per rate, acks=all, idempotent, defaults otherwise; "
          f"{load()}", flush=True)
    for name in wanted:
        java_names = name in ("kafkalite", "confluent-kafka")
        print_settings(name, "producer", {"acks": "all", "enable.idempotence" if java_names else "enable_idempotence": True},
                       "paced send()")
        print_settings(name, "consumer", {}, "one poll call at a time")
    broker = Broker()
    rows: list[tuple[int, str, dict[str, Any]]] = []
    try:
        for rate in [int(r) for r in args.rates.split(",")]:
            for name in wanted:
                try:
                    res = run_one(broker, name, rate, args.seconds, args.size)
                except Exception as exc:  # one broken peer must not hide the others
                    res = {"error": f"failed: {exc!r}"}
                if "error" in res:
                    print(f"  {rate:>6} msg/s {name:16s} {res['error']}", flush=True)
                    continue
                print(f"  {rate:>6} msg/s {name:16s} p50 {res['p50']:8.2f} ms  p99 {res['p99']:8.2f} ms  "
                      f"max {res['max']:8.2f} ms  ({res['received']}/{res['sent']} received; {load()})", flush=True)
                rows.append((rate, name, res))
    finally:
        broker.close()
    print()
    print(f"{'rate':>7} {'client':16s} {'achieved':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'CPU us/msg':>11} "
          f"{'kafkalite / it':>15}")
    for rate, name, res in rows:
        ours = next((r for q, n, r in rows if q == rate and n == "kafkalite"), None)
        ratio = f"{res['p99'] / ours['p99']:14.2f}x" if ours and ours["p99"] > 0 else ""
        print(f"{rate:>7} {name:16s} {res['rate']:10,.0f} {res['p50']:8.2f} {res['p99']:8.2f} {res['max']:8.2f} "
              f"{res['cpu_us']:11.2f} {ratio:>15}")
    write_results(args.json, "latency", sys.argv, [
        {"case": f"{rate:,} msg/s", "client": name, "achieved_per_s": round(res["rate"]), "p50_ms": round(res["p50"], 2),
         "p99_ms": round(res["p99"], 2), "max_ms": round(res["max"], 2), "cpu_us_per_msg": round(res["cpu_us"], 2)}
        for rate, name, res in rows], "ms")
    print(f"({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
