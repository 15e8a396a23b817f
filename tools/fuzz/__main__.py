"""``python -m tools.fuzz``: fuzz kafkalite's decoders (see :mod:`tools.fuzz`).

    python -m tools.fuzz --inputs 1000000              # the long run (both cores)
    python -m tools.fuzz --seconds 40 --workers 1      # what CI runs
    python -m tools.fuzz --targets records --inputs 50000
    python -m tools.fuzz --replay 1:123456             # one input again, with its traceback
    python -m tools.fuzz --list                        # the targets

Exit status 0 when no input crashed, 1 otherwise; ``--report FILE`` writes the figures
as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from tools.fuzz.engine import Limits, replay, run_chunk, select_targets

CHUNK = 2000


def _merge(total: dict[str, Any], chunk: dict[str, Any]) -> None:
    total["inputs"] += chunk["inputs"]
    total["cpu_seconds"] += chunk["seconds"]
    for key in ("outcomes", "families"):
        for name, n in chunk[key].items():
            total[key][name] = total[key].get(name, 0) + n
    total["crashes"].extend(chunk["crashes"][: max(0, 50 - len(total["crashes"]))])
    for key in ("longest", "longest_cpu", "peak", "ratio"):
        if chunk[key]["value"] > total[key]["value"]:
            total[key] = chunk[key]
    seen = total["retained"].setdefault(str(chunk["pid"]), [chunk["retained"], chunk["retained"]])
    seen[1] = chunk["retained"]


def _locate(seed: int, start: int, count: int, pattern: str | None, limits: Limits) -> dict[str, Any]:
    """Replay a chunk whose worker died, input by input in a subprocess, to find the
    input that killed it (a crash in C, or a hang the alarm could not interrupt)."""
    with tempfile.NamedTemporaryFile(prefix="kafkalite-fuzz-") as progress:
        code = ("import sys, os; from tools.fuzz.engine import Limits, run_chunk; "
                f"fd = os.open({progress.name!r}, os.O_WRONLY); "
                f"run_chunk({seed}, {start}, {count}, {pattern!r}, Limits(*{tuple(vars(limits).values())!r}), fd)")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=limits.chunk_timeout_s + 60)
        with open(progress.name) as f:
            text = f.read().strip()
    index = int(text) if text else start
    return {"seed": seed, "index": index, "target": "?", "kind": f"process died (exit {done.returncode})",
            "size": 0, "detail": done.stderr[-3000:], "input": ""}


def run(args: argparse.Namespace) -> dict[str, Any]:
    limits = Limits(time_s=args.time_limit)
    targets = select_targets(args.targets)
    total: dict[str, Any] = {
        "seed": args.seed, "inputs": 0, "cpu_seconds": 0.0, "outcomes": {}, "families": {}, "crashes": [],
        "longest": {"value": 0.0}, "longest_cpu": {"value": 0.0}, "peak": {"value": 0.0}, "ratio": {"value": 0.0}, "retained": {},
        "targets": len(targets), "workers": args.workers,
        "limits": {"time_s": limits.time_s, "ratio": limits.ratio, "slack": limits.slack},
    }
    deadline = time.monotonic() + args.seconds if args.seconds else None
    started = time.monotonic()
    next_start = 0
    last_print = started
    chunk = min(CHUNK, max(100, args.inputs // (args.workers * 4))) if args.inputs else 500
    with ProcessPoolExecutor(args.workers) as pool:
        running: dict[Future[dict[str, Any]], int] = {}

        def submit() -> None:
            nonlocal next_start
            while len(running) < args.workers * 2:
                if args.inputs and next_start >= args.inputs:
                    return
                if deadline is not None and time.monotonic() >= deadline:
                    return
                count = min(chunk, args.inputs - next_start) if args.inputs else chunk
                running[pool.submit(run_chunk, args.seed, next_start, count, args.targets, limits)] = next_start
                next_start += count

        submit()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                start = running.pop(future)
                try:
                    _merge(total, future.result())
                except BrokenProcessPool:
                    total["crashes"].append(_locate(args.seed, start, chunk, args.targets, limits))
                    total["broken"] = True
            if total.get("broken"):
                break
            submit()
            if not args.quiet and time.monotonic() - last_print > 15:
                last_print = time.monotonic()
                print(f"  {total['inputs']:,} inputs, {time.monotonic() - started:.0f} s, "
                      f"crashes {sum(n for k, n in total['outcomes'].items() if k.startswith('crash:'))}",
                      file=sys.stderr, flush=True)
    total["wall_seconds"] = time.monotonic() - started
    return total


def _kib(n: float) -> str:
    return f"{n / 1024:,.1f} KiB"


def summary(total: dict[str, Any]) -> str:
    crashes = sum(n for k, n in total["outcomes"].items() if k.startswith("crash:"))
    ok = total["outcomes"].get("ok", 0)
    typed = {k[6:]: n for k, n in sorted(total["outcomes"].items()) if k.startswith("typed:")}
    retained = [(b - a) for a, b in total["retained"].values()]
    lines = [
        f"inputs: {total['inputs']:,} in {total['wall_seconds']:.0f} s wall ({total['workers']} worker(s), "
        f"{total['targets']} targets; by family {total['families']})",
        f"decoded: {ok:,}; typed errors: {sum(typed.values()):,} {typed}",
        f"crashes: {crashes}" + ("" if not crashes else f" {dict((k, n) for k, n in total['outcomes'].items() if k.startswith('crash:'))}"),
        f"longest input: {total['longest']['value'] * 1000:.2f} ms ({total['longest'].get('target')}, "
        f"{total['longest'].get('size')} bytes, input {total['seed']}:{total['longest'].get('index')}; "
        f"wall time on a shared machine)",
        f"longest input in CPU time: {total['longest_cpu']['value'] * 1000:.2f} ms "
        f"({total['longest_cpu'].get('target')}, {total['longest_cpu'].get('size')} bytes; "
        f"limit {total['limits']['time_s']} s)",
        f"largest peak allocation: {_kib(total['peak']['value'])} ({total['peak'].get('target')}, "
        f"{total['peak'].get('size')}-byte input)",
        f"largest peak / work (inputs with >= 1 KiB of work): {total['ratio']['value']:.1f}x "
        f"({total['ratio'].get('target')}, {total['ratio'].get('size')} bytes); limit "
        f"{total['limits']['ratio']:.0f}x + {_kib(total['limits']['slack'])}",
        f"memory retained by a worker, first to last chunk: {_kib(max(retained, default=0))}",
    ]
    for crash in total["crashes"][:10]:
        lines.append(f"  CRASH {crash['kind']} in {crash['target']} (replay: --replay "
                     f"{crash['seed']}:{crash['index']}): {crash['detail'].strip().splitlines()[-1:] }")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=0, help="how many inputs (0: until --seconds)")
    parser.add_argument("--seconds", type=float, default=0.0, help="stop starting new work after this")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--targets", help="only targets whose name contains this")
    parser.add_argument("--time-limit", type=float, default=1.0, help="CPU seconds per input")
    parser.add_argument("--report", help="write the figures as JSON here")
    parser.add_argument("--replay", metavar="SEED:INDEX", help="run one input again and show it")
    parser.add_argument("--list", action="store_true", help="list the targets")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        for t in select_targets(args.targets):
            print(f"{t.family:9} {t.name}")
        return 0
    if args.replay:
        seed, index = (int(x) for x in args.replay.split(":"))
        target, data, case = replay(seed, index, args.targets, Limits(time_s=args.time_limit))
        print(f"target {target.name}, {len(data)} bytes: {data.hex()}")
        print(f"outcome {case.outcome}, {case.elapsed * 1000:.2f} ms, peak {case.peak} bytes, work {case.work}")
        print(case.detail)
        return 1 if case.outcome.startswith("crash:") else 0
    if not args.inputs and not args.seconds:
        parser.error("give --inputs and/or --seconds")
    total = run(args)
    print(summary(total))
    if args.report:
        with open(args.report, "w") as f:
            json.dump(total, f, indent=1)
    return 1 if any(k.startswith("crash:") for k in total["outcomes"]) or total.get("broken") else 0


if __name__ == "__main__":
    sys.exit(main())
