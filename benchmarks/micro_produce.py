"""Micro-benchmark of ``Producer.send()``'s CPU cost per record, without a broker.

The producer's engine is not started: metadata for the topic is filled in by hand and
batches pile up in memory (``buffer.memory`` is raised for that), so the numbers are
exactly the caller thread's work per ``send()`` — the append path, the new batch once
per ``batch.size``, the futures — with no GIL contention from the I/O thread. Each
kernel runs in its own process (the choice is made at import):
``KAFKALITE_PURE_PYTHON=1`` for the pure-Python path, the C extension otherwise.

Cases: unkeyed 100 B values (sticky partitioner), keyed (murmur2, 6 partitions),
with a callback, with one header (the general path), and ``send_many`` (one call per
1000 records).

Run: ``python benchmarks/micro_produce.py [--records 200000]``. Prints µs of CPU
(``time.thread_time``) per record, best of 3, and records/s that implies.

``--instructions`` counts instructions instead, with valgrind (``--tool=cachegrind``):
each case runs with N and 2N records and the difference divided by N is the
instructions per record (start-up cancels out). Unlike CPU time this does not depend
on what else the machine is doing, so it is the number to compare before/after a
change on a busy machine (e.g. ``--instructions --records 20000``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

VALUE = b"v" * 100
KEYS = [b"key-%06d" % i for i in range(1000)]


CASES = ("unkeyed", "keyed", "callback", "header", "send_many")


def measure(records: int, cases: tuple[str, ...] = CASES, rounds: int = 3) -> dict[str, float]:
    from kafkalite.producer.core import ProducerCore
    from kafkalite.producer.producer import Producer
    from kafkalite.producer.settings import PRODUCER_RULES

    def make(partitions: int) -> Producer:
        cfg = PRODUCER_RULES.resolve({"bootstrap.servers": "127.0.0.1:1", "buffer.memory": 1 << 31,
                                      "linger.ms": 5, "acks": "all"})
        core = ProducerCore(cfg, blocking=True)
        core.acc.update_topic("t", partitions, list(range(partitions)))
        p = Producer.__new__(Producer)  # no engine: nothing is sent
        p._core = core
        p._appender = core.appender
        p._append = core.appender.append
        p._raw = core.raw
        p._engine = None  # type: ignore[assignment]
        from kafkalite.producer.append_kernel import SendFunction
        if SendFunction is not None:  # as Producer.__init__ installs it
            p.send = SendFunction(core.appender, p, Producer.send)
        return p

    def run(case: str) -> float:
        best = float("inf")
        for _ in range(rounds):
            p = make(6 if case == "keyed" else 1)
            send = p.send
            cb = lambda md, err: None  # noqa: E731
            hdrs = [("trace-id", b"0123456789abcdef")]
            start = time.thread_time()
            if case == "unkeyed":
                for _ in range(records):
                    send("t", VALUE)
            elif case == "keyed":
                for i in range(records):
                    send("t", VALUE, KEYS[i % 1000])
            elif case == "callback":
                for _ in range(records):
                    send("t", VALUE, callback=cb)
            elif case == "header":
                for _ in range(records):
                    send("t", VALUE, headers=hdrs)
            elif case == "send_many":
                chunk = [VALUE] * 1000
                many = getattr(p, "send_many", None)
                if many is None:
                    return float("nan")
                for _ in range(records // 1000):
                    many("t", chunk)
            best = min(best, time.thread_time() - start)
        return best / records * 1e6

    return {case: run(case) for case in cases}


def instructions(case: str, records: int, pure: str) -> float:
    """Instructions per record of one case (valgrind; the N and 2N runs' difference / N)."""
    counts = []
    for n in (records, 2 * records):
        env = dict(os.environ, KAFKALITE_PURE_PYTHON=pure, PYTHONHASHSEED="0")
        done = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
             sys.executable, __file__, "--child", "--rounds", "1", "--case", case, "--records", str(n)],
            env=env, capture_output=True, text=True, check=True)
        match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if match is None:
            raise RuntimeError(f"no instruction count from valgrind:\n{done.stderr[-2000:]}")
        counts.append(int(match.group(1).replace(",", "")))
    return (counts[1] - counts[0]) / records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per record with valgrind instead of CPU time")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = tuple(c for c in args.cases.split(",") if c)
    if args.child:
        print(json.dumps(measure(args.records, (args.case,) if args.case else cases, args.rounds)))
        return
    if args.instructions:
        print(f"{'send() case':14s} {'python instr/rec':>17s} {'c instr/rec':>12s}")
        for case in cases:
            py, c = (instructions(case, args.records, pure) for pure in ("1", "0"))
            print(f"{case:14s} {py:17,.0f} {c:12,.0f}", flush=True)
        return
    results = {}
    for name, pure in (("python", "1"), ("c", "0")):
        env = dict(os.environ, KAFKALITE_PURE_PYTHON=pure)
        out = subprocess.run([sys.executable, __file__, "--child", "--records", str(args.records),
                              "--cases", ",".join(cases)],
                             env=env, capture_output=True, text=True, check=True).stdout
        results[name] = json.loads(out.strip().splitlines()[-1])
    print(f"{'send() case':14s} {'python us/rec':>14s} {'c us/rec':>10s} {'c rec/s':>12s}")
    for case in results["c"]:
        py, c = results["python"][case], results["c"][case]
        print(f"{case:14s} {py:14.3f} {c:10.3f} {1e6 / c if c == c else 0:12,.0f}")


if __name__ == "__main__":
    main()
