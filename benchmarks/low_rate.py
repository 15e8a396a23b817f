"""CPU at rest and at a low rate: kafkalite vs confluent-kafka, kafka-python, aiokafka.

Most applications never run at full speed: they sit idle, or send a few hundred to a
few thousand records a second, and what they pay for is CPU. Each client runs in a
subprocess of its own, with a producer and a consumer of the same library in one
process, every setting at the library's defaults (the consumer's
``auto.offset.reset`` set to earliest, so that every record sent is also read):

* **idle**: connected (one record sent and read back), subscribed, nothing sent; the
  consumer's poll loop runs (``poll(1.0)`` or the library's equivalent) for
  ``--idle-seconds``. The figure is the process's CPU (all its threads: the caller's,
  the I/O threads, librdkafka's) over that time as % of one core.
* **low rate**: a thread sends ``--size``-byte values at ``--rate`` per second for
  ``--seconds`` while the consumer's poll loop reads them; the phase ends when every
  record sent has been read (checked: the run fails otherwise). The figure is the
  process's CPU per record, µs.

Rounds are interleaved (every client once, then every client again; ``--rounds``) and
the best round of each client is kept, the figure least disturbed by the rest of the
machine. ``kafkalite / it`` = the peer's figure / kafkalite's (above 1: kafkalite uses
less). ``--threads`` also prints each thread's share of the CPU (Linux ``/proc``), the
first step of a profile.

Usage::

    .venv/bin/python benchmarks/low_rate.py                     # 30 s idle + 20 s at 1k msg/s, 3 rounds
    .venv/bin/python benchmarks/low_rate.py --short             # 5 s + 5 s, one round (CI)
    .venv/bin/python benchmarks/low_rate.py --clients kafkalite,confluent-kafka --threads
    KAFKALITE_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/low_rate.py --short

How each library is driven: kafkalite ``send()`` and ``poll(1.0)``; confluent-kafka
``produce()`` with ``poll(0)`` after each paced group, and ``poll(1.0)``; kafka-python
``send()`` and ``poll(timeout_ms=1000)``; aiokafka ``await send()`` and
``getmany(timeout_ms=1000)`` in one event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Broker, load, print_settings, write_results
from latency import apaced, paced

CLIENTS = ["kafkalite", "confluent-kafka", "kafka-python", "aiokafka"]
WARMUP_VALUE = b"w"
#: after the first record is read back: group join, first offset commit and metadata settle
SETTLE_S = 2.0


class Phases:
    """What the worker was asked for, and the CPU it measured (filled in as the phases run)."""

    def __init__(self, bootstrap: str, topic: str, idle_s: float, rate: int, seconds: float, size: int) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.idle_s, self.rate, self.seconds = idle_s, rate, seconds
        self.value = b"v" * size
        self.expected = int(rate * seconds)
        self.received = 0
        self.result: dict[str, Any] = {}
        self._mark = (0.0, 0.0, {})  # (perf_counter, process CPU, per-thread CPU) when a phase began

    def take(self, value: bytes | None) -> None:
        """One record read in the low-rate phase (the warm-up record and others are not counted)."""
        if value == self.value:
            self.received += 1

    def start(self) -> None:
        self._mark = (time.perf_counter(), time.process_time(), thread_cpu())

    def stop(self, phase: str) -> None:
        wall0, cpu0, threads0 = self._mark
        self.result[phase + "_wall"] = time.perf_counter() - wall0
        self.result[phase + "_cpu"] = time.process_time() - cpu0
        self.result[phase + "_threads"] = {
            name: (round(cpu - threads0.get(name, (0.0, 0))[0], 4), wakes - threads0.get(name, (0.0, 0))[1])
            for name, (cpu, wakes) in thread_cpu().items()}

    @property
    def idle_ticks(self) -> Iterator[None]:
        """Yields until the idle phase's time is up (one poll call per yield)."""
        deadline = time.perf_counter() + self.idle_s
        while time.perf_counter() < deadline:
            yield None

    def all_read(self, deadline: float) -> bool:
        if time.monotonic() > deadline:
            raise TimeoutError(f"read {self.received} of {self.expected} records")
        return self.received >= self.expected


def thread_cpu() -> dict[str, tuple[float, int]]:
    """CPU seconds (user + system) and wake-ups (voluntary context switches: each time
    the thread slept and was woken) per thread of this process, by name (Linux /proc).

    Python's threads are named by their ``threading`` name; others (librdkafka's) by
    the kernel's name for them; the id tells apart threads of one name.
    """
    out: dict[str, tuple[float, int]] = {}
    names = {t.native_id: t.name for t in threading.enumerate()}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            # schedstat: nanoseconds on a CPU (stat's utime + stime count whole clock ticks,
            # 10 ms: too coarse for a thread that runs a millisecond a second)
            with open(f"/proc/self/task/{tid}/schedstat") as fh:
                cpu_ns = int(fh.read().split()[0])
            with open(f"/proc/self/task/{tid}/comm") as fh:
                comm = fh.read().strip()
            with open(f"/proc/self/task/{tid}/status") as fh:
                wakes = next(int(line.split()[1]) for line in fh if line.startswith("voluntary_ctxt_switches"))
        except (OSError, StopIteration, ValueError, IndexError):
            continue
        out[f"{names.get(int(tid), comm)}/{tid}"] = (cpu_ns / 1e9, wakes)
    return out


def run_sync(phases: Phases, send: Callable[[bytes], None], flush: Callable[[], None],
             poll: Callable[[], list[bytes | None]]) -> None:
    """The two phases for a blocking library: poll loop in this thread, paced sends in another."""
    send(WARMUP_VALUE)
    flush()
    deadline = time.monotonic() + 60
    while WARMUP_VALUE not in poll():
        if time.monotonic() > deadline:
            raise TimeoutError("the warm-up record was not read back in 60 s")
    settle = time.perf_counter() + SETTLE_S
    while time.perf_counter() < settle:
        poll()
    phases.start()
    for _ in phases.idle_ticks:
        poll()
    phases.stop("idle")

    def producer() -> None:
        for k in paced(phases.rate, phases.seconds):
            for _ in range(k):
                send(phases.value)
        flush()

    phases.start()
    sender = threading.Thread(target=producer, name="bench-producer", daemon=True)
    sender.start()
    deadline = time.monotonic() + phases.seconds * 4 + 60
    while not phases.all_read(deadline):
        for value in poll():
            phases.take(value)
    sender.join()
    phases.stop("rate")


def kafkalite_client(phases: Phases) -> None:
    from kafkalite import Consumer, Producer

    p = Producer({"bootstrap.servers": phases.bootstrap})
    c = Consumer({"bootstrap.servers": phases.bootstrap, "group.id": f"bench-low-rate-{time.time_ns()}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([phases.topic])
    def send(value: bytes) -> None:
        p.send(phases.topic, value)

    try:
        run_sync(phases, send, p.flush, lambda: [r.value for r in c.poll(1.0)])
    finally:
        c.close()
        p.close()


def confluent_client(phases: Phases) -> None:
    from confluent_kafka import Consumer, Producer

    p = Producer({"bootstrap.servers": phases.bootstrap})
    c = Consumer({"bootstrap.servers": phases.bootstrap, "group.id": f"bench-low-rate-{time.time_ns()}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([phases.topic])

    def send(value: bytes) -> None:
        p.produce(phases.topic, value)
        p.poll(0)  # serves delivery reports, as an application must

    def poll() -> list[bytes | None]:
        m = c.poll(1.0)
        return [] if m is None or m.error() else [m.value()]

    try:
        run_sync(phases, send, lambda: p.flush(30) and None, poll)
    finally:
        c.close()


def kafka_python_client(phases: Phases) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    p = KafkaProducer(bootstrap_servers=phases.bootstrap)
    c = KafkaConsumer(bootstrap_servers=phases.bootstrap, group_id=f"bench-low-rate-{time.time_ns()}",
                      auto_offset_reset="earliest")
    c.subscribe([phases.topic])

    def poll() -> list[bytes | None]:
        return [r.value for records in c.poll(timeout_ms=1000).values() for r in records]

    def send(value: bytes) -> None:
        p.send(phases.topic, value)

    try:
        run_sync(phases, send, p.flush, poll)
    finally:
        c.close()
        p.close()


def aiokafka_client(phases: Phases) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def main() -> None:
        p = AIOKafkaProducer(bootstrap_servers=phases.bootstrap)
        c = AIOKafkaConsumer(phases.topic, bootstrap_servers=phases.bootstrap,
                             group_id=f"bench-low-rate-{time.time_ns()}", auto_offset_reset="earliest")
        await p.start()
        await c.start()

        async def poll() -> list[bytes | None]:
            return [r.value for records in (await c.getmany(timeout_ms=1000)).values() for r in records]

        try:
            await p.send_and_wait(phases.topic, WARMUP_VALUE)
            deadline = time.monotonic() + 60
            while WARMUP_VALUE not in await poll():
                if time.monotonic() > deadline:
                    raise TimeoutError("the warm-up record was not read back in 60 s")
            settle = time.perf_counter() + SETTLE_S
            while time.perf_counter() < settle:
                await poll()
            phases.start()
            for _ in phases.idle_ticks:
                await poll()
            phases.stop("idle")

            async def producer() -> None:
                async for k in apaced(phases.rate, phases.seconds):
                    for _ in range(k):
                        await p.send(phases.topic, phases.value)
                await p.flush()

            phases.start()
            sending = asyncio.ensure_future(producer())
            deadline = time.monotonic() + phases.seconds * 4 + 60
            while not phases.all_read(deadline):
                for value in await poll():
                    phases.take(value)
            await sending
            phases.stop("rate")
        finally:
            await c.stop()
            await p.stop()

    asyncio.run(main())


RUNNERS: dict[str, Callable[[Phases], None]] = {
    "kafkalite": kafkalite_client, "confluent-kafka": confluent_client,
    "kafka-python": kafka_python_client, "aiokafka": aiokafka_client,
}


def worker(args: argparse.Namespace) -> int:
    phases = Phases(args.bootstrap, args.topic, args.idle_seconds, args.rate, args.seconds, args.size)
    try:
        RUNNERS[args.client](phases)
    except ImportError as exc:
        print(json.dumps({"error": f"not installed ({exc})"}), flush=True)
        return 3
    res = phases.result
    print(json.dumps({"idle_pct": res["idle_cpu"] / res["idle_wall"] * 100,
                      "rate_us": res["rate_cpu"] / phases.expected * 1e6, "records": phases.received,
                      "achieved": phases.expected / res["rate_wall"],
                      "idle_threads": res["idle_threads"], "rate_threads": res["rate_threads"]}), flush=True)
    return 0


# ---------------------------------------------------------------- parent


def run_one(broker: Broker, client: str, args: argparse.Namespace) -> dict[str, Any]:
    topic = broker.create_topic(f"bench-low-rate-{client}-{time.time_ns()}", 1)
    timeout = 120 + args.idle_seconds + args.seconds * 4
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--client", client, "--bootstrap", broker.bootstrap, "--topic", topic,
         "--idle-seconds", str(args.idle_seconds), "--rate", str(args.rate), "--seconds", str(args.seconds),
         "--size", str(args.size)],
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    return {"error": f"exited {done.returncode}: {done.stderr.strip()[-500:]}"}


def print_threads(label: str, threads: dict[str, list[float]], seconds: float) -> None:
    busy = sorted(((cpu, wakes, name) for name, (cpu, wakes) in threads.items() if cpu > 0 or wakes > 0),
                  reverse=True)
    text = ", ".join(f"{name} {cpu / seconds * 100:.3f} % {wakes / seconds:.1f}/s" for cpu, wakes, name in busy)
    print(f"      {label} per thread (% of a core, wake-ups/s): {text or 'none measurable'}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=20.0, help="length of the low-rate phase")
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--threads", action="store_true", help="also print each thread's CPU share")
    ap.add_argument("--short", action="store_true", help="5 s idle, 5 s at the rate, one round (CI)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON (benchmarks/results/, charted by the docs)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.short:
        args.idle_seconds, args.seconds, args.rounds = 5.0, 5.0, 1
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CLIENTS]
    if unknown:
        ap.error(f"unknown clients {unknown}; choose from {CLIENTS}")
    print(f"low rate: idle {args.idle_seconds:g} s, then {args.rate:,} msg/s of {args.size} B for {args.seconds:g} s; "
          f"producer + consumer in one process, each client at its defaults; {args.rounds} round(s); {load()}",
          flush=True)
    for name in wanted:
        print_settings(name, "producer", {}, "paced send() from a thread")
        print_settings(name, "consumer", {}, "subscribe(), poll loop")
    broker = Broker()
    best: dict[str, dict[str, Any]] = {}
    broken: set[str] = set()
    try:
        for round_no in range(args.rounds):
            for name in wanted:
                if name in broken:
                    continue
                try:
                    res = run_one(broker, name, args)
                except Exception as exc:  # one broken peer must not hide the others
                    res = {"error": f"failed: {exc!r}"}
                if "error" in res:
                    print(f"  round {round_no + 1}: {name:16s} {res['error']}", flush=True)
                    broken.add(name)
                    continue
                print(f"  round {round_no + 1}: {name:16s} idle {res['idle_pct']:6.3f} % of a core  "
                      f"{args.rate:,} msg/s: {res['rate_us']:7.1f} us CPU/record ({res['records']} read, "
                      f"{res['achieved']:,.0f}/s; {load()})", flush=True)
                if args.threads:
                    print_threads("idle", res["idle_threads"], args.idle_seconds)
                    print_threads("rate", res["rate_threads"], args.seconds)
                old = best.setdefault(name, dict(res))
                old["idle_pct"] = min(old["idle_pct"], res["idle_pct"])
                old["rate_us"] = min(old["rate_us"], res["rate_us"])
    finally:
        broker.close()
    ours = best.get("kafkalite")
    print()
    print(f"{'client':16s} {'idle % core':>12} {'kafkalite / it':>15} {'us CPU/rec':>11} {'kafkalite / it':>15}")
    for name, res in best.items():
        idle_ratio = f"{res['idle_pct'] / ours['idle_pct']:14.2f}x" if ours and ours["idle_pct"] > 0 else ""
        rate_ratio = f"{res['rate_us'] / ours['rate_us']:14.2f}x" if ours and ours["rate_us"] > 0 else ""
        print(f"{name:16s} {res['idle_pct']:12.3f} {idle_ratio:>15} {res['rate_us']:11.1f} {rate_ratio:>15}")
    write_results(args.json, "low_rate", sys.argv, [
        *({"case": "idle", "client": name, "cpu_pct_of_core": round(res["idle_pct"], 3)} for name, res in best.items()),
        *({"case": f"{args.rate:,} msg/s", "client": name, "cpu_us_per_record": round(res["rate_us"], 1)}
          for name, res in best.items())], "CPU")
    print(f"({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
