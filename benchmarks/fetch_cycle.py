"""What one idle fetch cycle costs a consumer: kafkalite vs confluent-kafka (issue 27).

An idle consumer's CPU is mostly its fetch long-poll: every ``fetch.max.wait.ms`` (500 by
default) the broker answers an empty Fetch and the client sends the next one. To measure
that cycle and nothing else, each client (in a process of its own) reads one record of a
one-partition topic, then polls an idle partition with ``fetch.max.wait.ms`` lowered to
10 ms, so the cycle repeats ~80 times a second. The figure is the process's CPU (all
threads, the poll loop included) per Fetch request, the requests counted by the client
itself: kafkalite's ``fetch-total`` per broker, librdkafka's per-broker request counts
(``statistics.interval.ms``).

``--instructions`` counts instructions instead, with valgrind (``--tool=cachegrind``,
every thread): each client runs for ``--seconds`` and three times as long, and the
difference in instructions over the difference in Fetch requests is the cycle's cost,
start-up cancelled out. Unlike CPU time this does not depend on what else the machine is
doing, so it is the figure to compare before and after a change (user-space instructions
only: the system calls' kernel time is not in it). Beside it, the misses per cycle of
cachegrind's simulated first-level instruction and data caches (this process alone, so a
lower bound of what a real machine, where other processes run between two cycles, sees):
how much code and data one cycle touches.

Usage::

    .venv/bin/python benchmarks/fetch_cycle.py                   # 3 interleaved rounds of 10 s
    .venv/bin/python benchmarks/fetch_cycle.py --instructions    # instructions per cycle (valgrind)
    .venv/bin/python benchmarks/fetch_cycle.py --short           # one round of 3 s (CI)
    .venv/bin/python benchmarks/fetch_cycle.py --short --instructions   # runs of 1 s and 3 s (CI)
    KAFKALITE_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/fetch_cycle.py --clients kafkalite
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Broker, load

CLIENTS = ["kafkalite", "confluent-kafka"]
WAIT_MS = 10


def idle_kafkalite(bootstrap: str, topic: str, seconds: float) -> dict[str, float]:
    from kafkalite import Consumer, TopicPartition

    def fetches(consumer: Consumer) -> int:
        # per broker (consumer-fetch-manager-metrics has the same total once more)
        return int(sum(v for m, v in consumer.metrics().items()
                       if m.name == "fetch-total" and m.group == "consumer-node-metrics"))

    with Consumer({"bootstrap.servers": bootstrap, "fetch.max.wait.ms": WAIT_MS,
                   "auto.offset.reset": "earliest", "enable.auto.commit": False}) as c:
        c.assign([TopicPartition(topic, 0)])
        while not c.poll(1.0):
            pass
        return timed(seconds, lambda: c.poll(0.5), lambda: fetches(c))


def idle_confluent(bootstrap: str, topic: str, seconds: float) -> dict[str, float]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    stats: dict[str, Any] = {}

    def on_stats(text: str) -> None:
        stats.update(json.loads(text))

    def fetches(consumer: Consumer) -> int:
        consumer.poll(0)  # serves the statistics callback
        brokers = stats.get("brokers", {}).values()
        return sum(int(b.get("req", {}).get("Fetch", 0)) for b in brokers)

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-fetch-cycle-{time.time_ns()}",
                  "fetch.wait.max.ms": WAIT_MS, "enable.auto.commit": False,
                  "statistics.interval.ms": 100, "stats_cb": on_stats})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    while True:
        m = c.poll(1.0)
        if m is not None and not m.error():
            break
    try:
        # librdkafka's counts are as old as its last statistics (100 ms): settle first
        time.sleep(0.3)
        return timed(seconds, lambda: c.poll(0.5), lambda: fetches(c))
    finally:
        c.close()


def timed(seconds: float, poll: Any, fetches: Any) -> dict[str, float]:
    n0, cpu0, t0 = fetches(), time.process_time(), time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        poll()
    n1, cpu1, t1 = fetches(), time.process_time(), time.perf_counter()
    return {"fetches": n1 - n0, "cpu_s": cpu1 - cpu0, "wall_s": t1 - t0}


WORKERS = {"kafkalite": idle_kafkalite, "confluent-kafka": idle_confluent}


def run_worker(client: str, bootstrap: str, topic: str, seconds: float, valgrind: bool) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--worker", "--client", client, "--bootstrap", bootstrap,
           "--topic", topic, "--seconds", str(seconds)]
    if valgrind:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null", *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600 + 40 * seconds,
                          env=dict(os.environ, PYTHONHASHSEED="0"))
    if done.returncode != 0:
        raise RuntimeError(f"{client} worker exited {done.returncode}:\n{done.stderr[-3000:]}")
    out: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    if valgrind:
        for key, label in (("instructions", "I\\s+refs"), ("i1_misses", "I1\\s+misses"), ("d1_misses", "D1\\s+misses")):
            match = re.search(label + r":\s+([\d,]+)", done.stderr)
            if match is None:
                raise RuntimeError(f"no {key} count from valgrind:\n{done.stderr[-2000:]}")
            out[key] = int(match.group(1).replace(",", ""))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--instructions", action="store_true", help="instructions per cycle with valgrind")
    ap.add_argument("--short", action="store_true", help="one round of 3 s; with --instructions, 1 s and 3 s (CI)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(WORKERS[args.client](args.bootstrap, args.topic, args.seconds)), flush=True)
        return
    if args.short:  # valgrind runs ~10x slower: its runs are 1 s and 3 s
        args.seconds, args.rounds = (1.0 if args.instructions else 3.0), 1
    clients = [c for c in args.clients.split(",") if c]
    broker = Broker()
    try:
        topic = broker.create_topic(f"bench-fetch-cycle-{time.time_ns()}", 1)
        from kafkalite import Producer

        with Producer({"bootstrap.servers": broker.bootstrap}) as p:
            p.send(topic, b"x").result(30)
        print(f"fetch cycle: an idle partition polled with fetch.max.wait.ms={WAIT_MS}; "
              f"{'instructions (valgrind)' if args.instructions else f'{args.rounds} round(s) of {args.seconds:g} s'}; "
              f"{load()}", flush=True)
        per_cycle: dict[str, list[float]] = {c: [] for c in clients}
        if args.instructions:
            for client in clients:
                short = run_worker(client, broker.bootstrap, topic, args.seconds, True)
                long = run_worker(client, broker.bootstrap, topic, 3 * args.seconds, True)
                cycles = long["fetches"] - short["fetches"]
                if cycles <= 0:
                    raise RuntimeError(f"{client}: no more fetches in the longer run ({short}, {long})")
                figure, i1, d1 = ((long[k] - short[k]) / cycles for k in ("instructions", "i1_misses", "d1_misses"))
                per_cycle[client].append(figure)
                print(f"  {client:16s} {figure:12,.0f} instructions per fetch cycle, first-level cache misses "
                      f"{i1:8,.0f} instruction {d1:8,.0f} data ({cycles:.0f} more fetches in the longer run)",
                      flush=True)
        else:
            for r in range(args.rounds):
                for client in clients:
                    got = run_worker(client, broker.bootstrap, topic, args.seconds, False)
                    if got["fetches"] <= 0:
                        raise RuntimeError(f"{client}: no fetch in {args.seconds} s ({got})")
                    figure = got["cpu_s"] / got["fetches"] * 1e6
                    per_cycle[client].append(figure)
                    print(f"  round {r + 1}: {client:16s} {figure:8.1f} us CPU per fetch cycle "
                          f"({got['fetches'] / got['wall_s']:.0f} fetches/s; {load()})", flush=True)
        unit = "instructions/cycle" if args.instructions else "us CPU/cycle"
        base = statistics.median(per_cycle[clients[0]]) if per_cycle[clients[0]] else None
        print(f"\n{'client':16s} {unit:>20s}  {clients[0]} / it")
        for client in clients:
            med = statistics.median(per_cycle[client])
            ratio = f"{base / med:.2f}x" if base else "-"
            print(f"{client:16s} {med:20,.1f}  {ratio:>8s}")
    finally:
        broker.close()


if __name__ == "__main__":
    main()
