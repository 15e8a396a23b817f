"""Where kafkalite's end-to-end latency goes: each step of a record's way, in milliseconds.

``latency.py`` measures the whole way from ``send()`` to ``poll()``; this splits it. A
kafkalite producer and a consumer run in two processes of their own at a fixed rate on
a fresh one-partition topic, as in ``latency.py``, and both take ``CLOCK_MONOTONIC``
stamps (one clock for every process of the machine) at each step:

* ``to_drain``: ``send()`` → the sender takes the record's batch (the linger wait);
* ``drain_to_written``: the batch taken → its Produce request written to the socket;
* ``written_to_recv``: written → the consumer's engine reads the Fetch answer that
  holds it (the broker, loopback TCP, and the consumer's engine waking up);
* ``recv_to_added``: the answer read → its records handed to the fetch buffer;
* ``added_to_poll``: handed over → the ``poll()`` that returns them returns;
* ``written_to_poll``: the sum of the three consumer-side steps.

Rows for every record and for the first record of each batch (the one that waits the
whole ``linger.ms``: the p99 of ``latency.py`` is mostly such records). Under each
table, what the records at or above the p99 of ``total`` are made of: each step's
median for them less its median for all records; for kafkalite's consumer, how many of
them came in a Fetch the consumer started only after their Produce request was written
(no Fetch was waiting for them at the broker); and the consumer process's garbage
collections (``gc.callbacks``) that took a millisecond or more, which stop its threads.
``--clients`` names the consumers to run, each in turn (the producer is kafkalite's):
confluent-kafka's has no stamps inside it (``written_to_poll`` and ``total`` only) and
shows what librdkafka's consumer does with the same batches.

The stamps come from wrapping internal methods (``Sender._send``,
``FetchBuffer.add``, the connection's ``_on_received``): a diagnostic for the
engine's developers, which follows the code when those move. Figures differ from
``latency.py``'s by the cost of the stamps (a few microseconds a step).

Usage::

    .venv/bin/python benchmarks/latency_breakdown.py                    # 1k, 10k, 50k msg/s, 8 s each, both consumers
    .venv/bin/python benchmarks/latency_breakdown.py --rates 50000 --clients kafkalite
    .venv/bin/python benchmarks/latency_breakdown.py --short            # 1k msg/s for 2 s (CI)
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Broker, load

CONSUMERS = ["kafkalite", "confluent-kafka"]
STEPS = ("total", "to_drain", "drain_to_written", "written_to_recv", "recv_to_added", "added_to_poll",
         "written_to_poll")
PAD = 92  # + the 8-byte stamp: 100 B values, as latency.py
mono = time.monotonic_ns


def producer(bootstrap: str, topic: str, rate: int, seconds: float) -> None:
    from kafkalite import Producer
    from kafkalite.producer.sender import Sender

    sent_batches: list[tuple[Any, int, int]] = []  # (batch, taken, written)
    send_batches = Sender._send

    def stamped_send(self: Sender, node: int, conn: Any, batches: list[Any], now: float) -> None:
        taken = mono()
        send_batches(self, node, conn, batches, now)
        written = mono()
        sent_batches.extend((batch, taken, written) for batch in batches)

    Sender._send = stamped_send  # type: ignore[method-assign]
    with Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True}) as p:
        p.send(topic, b"warm-up").get(60)
        print("ready", flush=True)
        sys.stdin.readline()
        pad = b"x" * PAD
        start, total, sent = time.perf_counter(), int(rate * seconds), 0
        while sent < total:
            due = min(total, int((time.perf_counter() - start) * rate) + 1)
            while sent < due:
                p.send(topic, mono().to_bytes(8, "big") + pad)
                sent += 1
            delay = start + sent / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        p.flush()
    # Base offsets are known once acknowledged: the consumer's records are matched by offset.
    print(json.dumps([(batch.base_offset, taken, written) for batch, taken, written in sent_batches]))


def consumer_kafkalite(bootstrap: str, topic: str, expected: int) -> None:
    from kafkalite import Consumer, TopicPartition
    from kafkalite.consumer.fetch_buffer import FetchBuffer
    from kafkalite.consumer.fetcher import Fetcher
    from kafkalite.net.transport import BrokerConnection

    pauses = gc_pauses()
    last_read = [0]
    fetch_started = [0]
    # (first offset of the fetch, answer read, handed to the buffer, its Fetch request started)
    handed: list[tuple[int, int, int, int]] = []
    on_received, add, answered = BrokerConnection._on_received, FetchBuffer.add, Fetcher._answered

    def stamped_received(self: BrokerConnection, nbytes: int) -> None:
        last_read[0] = mono()
        on_received(self, nbytes)

    def stamped_answered(self: Fetcher, *args: Any) -> None:
        fetch_started[0] = int(args[-1] * 1e9)  # _answered's last argument: time.monotonic() at _start
        answered(self, *args)

    def stamped_add(self: FetchBuffer, fetch: Any) -> None:
        handed.append((fetch.next_offset, last_read[0], mono(), fetch_started[0]))
        add(self, fetch)

    BrokerConnection._on_received = stamped_received  # type: ignore[method-assign]
    Fetcher._answered = stamped_answered  # type: ignore[method-assign]
    FetchBuffer.add = stamped_add  # type: ignore[method-assign]
    with Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False}) as c:
        c.assign([TopicPartition(topic, 0)])
        c.poll(0.5)  # the position (latest: only what is sent from now on)
        print("ready", flush=True)
        rows = poll_until(expected, lambda: [(r.value, r.offset) for r in c.poll(1.0)])
    print(json.dumps({"rows": rows, "handed": handed, "gc": pauses}))


def consumer_confluent(bootstrap: str, topic: str, expected: int) -> None:
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    pauses = gc_pauses()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_END)])
        c.poll(0.5)
        print("ready", flush=True)

        def poll() -> list[tuple[bytes | None, int]]:
            m = c.poll(1.0)
            return [] if m is None or m.error() else [(m.value(), m.offset())]

        rows = poll_until(expected, poll)
    finally:
        c.close()
    print(json.dumps({"rows": rows, "handed": [], "gc": pauses}))


def gc_pauses() -> list[tuple[int, int, int]]:
    """A list that fills with (start, end, generation) of this process's garbage collections."""
    import gc

    pauses: list[tuple[int, int, int]] = []
    started = [0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = mono()
        else:
            pauses.append((started[0], mono(), info["generation"]))

    gc.callbacks.append(on_gc)
    return pauses


def poll_until(expected: int, poll: Any) -> list[tuple[int, int, int]]:
    """(sent stamp, poll() returned, offset) of every stamped record, until all came or 2 minutes."""
    rows: list[tuple[int, int, int]] = []
    deadline = time.monotonic() + 120
    while len(rows) < expected and time.monotonic() < deadline:
        records = poll()
        returned = mono()
        rows.extend((int.from_bytes(v[:8], "big"), returned, off) for v, off in records
                    if v is not None and len(v) == PAD + 8)
    return rows


def percentile(sorted_ns: list[int], q: float) -> float:
    return sorted_ns[min(len(sorted_ns) - 1, int(q * len(sorted_ns)))] / 1e6


def breakdown(produced: list[list[int]], consumed: dict[str, Any]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Each record's steps (ns), joined by offset: its batch (the producer's) and its fetch (the consumer's)."""
    batches = sorted(produced)
    bases = [b[0] for b in batches]
    fetches = sorted(consumed["handed"])
    starts = [f[0] for f in fetches]
    every: dict[str, list[int]] = {k: [] for k in STEPS}
    firsts: dict[str, list[int]] = {k: [] for k in STEPS}
    every["fetch_started_after"] = []  # per record: its Fetch started - its Produce written (kafkalite)
    for sent, returned, offset in consumed["rows"]:
        i = bisect.bisect_right(bases, offset) - 1
        if i < 0:
            continue
        base, taken, written = batches[i]
        steps = {"total": returned - sent, "to_drain": taken - sent, "drain_to_written": written - taken,
                 "written_to_poll": returned - written}
        j = bisect.bisect_right(starts, offset) - 1
        if j >= 0:
            _, read, handed, started = fetches[j]
            steps.update(written_to_recv=read - written, recv_to_added=handed - read, added_to_poll=returned - handed)
        for name, ns in steps.items():
            every[name].append(ns)
            if offset == base:
                firsts[name].append(ns)
        if j >= 0:
            every["fetch_started_after"].append(started - written)
    return every, firsts


def tail_report(every: dict[str, list[int]], pauses: list[tuple[int, int, int]]) -> list[str]:
    """What the records at or above the p99 of ``total`` are made of (see the module doc)."""
    import statistics

    totals = every["total"]
    if not totals:
        return []
    p99 = sorted(totals)[min(len(totals) - 1, int(0.99 * len(totals)))]
    tail = [i for i, t in enumerate(totals) if t >= p99]
    parts = []
    for step in STEPS[1:]:
        values = every[step]
        if len(values) == len(totals):  # the step is stamped for every record
            excess = statistics.median(values[i] for i in tail) - statistics.median(values)
            parts.append(f"{step} {excess / 1e6:+.3f}")
    lines = [f"  p99 records ({len(tail)}, total >= {p99 / 1e6:.3f} ms), their median less all records', ms: "
             + ", ".join(parts)]
    after = every["fetch_started_after"]
    if len(after) == len(totals):
        late = [after[i] for i in tail if after[i] > 0]
        lines.append(f"  p99 records that came in a Fetch started after their Produce was written: {len(late)}"
                     + (f", a median {statistics.median(late) / 1e6:.3f} ms after it" if late else ""))
    long = sorted(((end - start) / 1e6, gen) for start, end, gen in pauses if end - start >= 1_000_000)
    lines.append(f"  consumer garbage collections of 1 ms or more: {len(long)}"
                 + (" (" + ", ".join(f"{ms:.1f} ms gen {gen}" for ms, gen in long[-5:]) + ")" if long else ""))
    return lines


def run(broker: Broker, rate: int, seconds: float, consumer: str) -> str:
    topic = broker.create_topic(f"bench-breakdown-{rate}-{time.time_ns()}", 1)
    me = [sys.executable, __file__, "--bootstrap", broker.bootstrap, "--topic", topic]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cons = subprocess.Popen([*me, "--worker", consumer, "--expected", str(int(rate * seconds))],
                            stdout=subprocess.PIPE, text=True, env=env)
    prod = subprocess.Popen([*me, "--worker", "producer", "--rates", str(rate), "--seconds", str(seconds)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert cons.stdout is not None and prod.stdout is not None and prod.stdin is not None
        for proc in (cons, prod):
            line = proc.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"a worker did not start: {line!r}")
        prod.stdin.write("go\n")
        prod.stdin.flush()
        p_out, _ = prod.communicate(timeout=seconds * 4 + 120)
        c_out, _ = cons.communicate(timeout=seconds * 4 + 180)
        if prod.returncode or cons.returncode:
            raise RuntimeError(f"a worker failed (producer exit {prod.returncode}, consumer exit {cons.returncode})")
        consumed = json.loads(c_out.strip().splitlines()[-1])
        every, firsts = breakdown(json.loads(p_out.strip().splitlines()[-1]), consumed)
    finally:
        for proc in (cons, prod):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    lines = [f"{rate:,} msg/s, kafkalite producer -> {consumer} consumer: {len(every['total'])} records "
             f"({len(firsts['total'])} first of a batch); {load()}",
             f"  {'step (ms)':18s} {'p50':>8} {'p90':>8} {'p99':>8} {'first p50':>10} {'first p99':>10}"]
    for step in STEPS:
        if every[step]:
            a, f = sorted(every[step]), sorted(firsts[step])
            lines.append(f"  {step:18s} {percentile(a, .5):8.3f} {percentile(a, .9):8.3f} {percentile(a, .99):8.3f} "
                         f"{percentile(f, .5):10.3f} {percentile(f, .99):10.3f}")
    lines += tail_report(every, consumed["gc"])
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="1000,10000,50000")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--clients", default=",".join(CONSUMERS),
                    help="the consumers, each in turn after the other (the producer is kafkalite's)")
    ap.add_argument("--short", action="store_true", help="1k msg/s for 2 s (CI)")
    ap.add_argument("--worker", choices=["producer", *CONSUMERS], help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--expected", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker == "producer":
        producer(args.bootstrap, args.topic, int(args.rates), args.seconds)
        return 0
    if args.worker:
        (consumer_kafkalite if args.worker == "kafkalite" else consumer_confluent)(
            args.bootstrap, args.topic, args.expected)
        return 0
    consumers = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in consumers if c not in CONSUMERS]
    if unknown:
        ap.error(f"unknown consumers {unknown}; choose from {CONSUMERS}")
    if args.short:
        args.rates, args.seconds = "1000", 2.0
    broker = Broker()
    try:
        for rate in (int(r) for r in args.rates.split(",")):
            for consumer in consumers:
                print(run(broker, rate, args.seconds, consumer), flush=True)
    finally:
        broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
