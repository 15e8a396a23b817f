"""The benchmarks' short scale, run as a user runs them, against the session's broker.

The project's rule: a long run has a documented command and CI runs a short version of
it. Each benchmark script runs here with ``--short`` (``KAFKALITE_BOOTSTRAP`` points it
at the session's broker, as benchmarks/README.md shows) and the test checks that it
printed a complete summary table: a row for every client at every rate / case /
partition count, every figure a number above zero. No figure is compared with
anything: on a busy CI machine the numbers mean little; that they are produced at all
is what breaks when a client's API or the harness changes.

The peers are kafkalite and confluent-kafka (both in the ``dev`` extra); aiokafka and
kafka-python (``bench`` extra) would add a minute or more at this scale, so CI leaves
them to the documented full runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ["kafkalite", "confluent-kafka"]
NUMBER = r"[\d,]+(?:\.\d+)?"


def run_benchmark(script: str, bootstrap: str, *args: str, timeout: float = 200) -> str:
    env = dict(os.environ, KAFKALITE_BOOTSTRAP=bootstrap, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--short",
                           "--clients", ",".join(CLIENTS), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout}\n{done.stderr[-4000:]}"
    return done.stdout


def table_rows(out: str, header: str, prefix: str, columns: int) -> dict[tuple[str, ...], list[float]]:
    """The rows after the line containing ``header``: ``prefix`` words (e.g. rate, client), then numbers."""
    assert header in out, out
    rows = {}
    pattern = re.compile(rf"^\s*{prefix}((?:\s+{NUMBER}x?){{{columns}}})")
    for line in out[out.index(header):].splitlines()[1:]:
        match = pattern.match(line)
        if match:
            words = match.groups()[:-1]
            rows[words] = [float(v.rstrip("x").replace(",", "")) for v in match.groups()[-1].split()]
    return rows


@pytest.mark.timeout(240)
def test_latency_short(kafka_broker) -> None:
    out = run_benchmark("latency.py", kafka_broker.bootstrap)
    rows = table_rows(out, "kafkalite / it", r"(\d+)\s+(\S+)", 6)
    for rate in ("1000", "10000"):
        for client in CLIENTS:
            figures = rows.get((rate, client))
            assert figures is not None, f"no row for {client} at {rate} msg/s:\n{out}"
            achieved, p50, p99, top, cpu, _ratio = figures
            assert achieved > 0 and cpu > 0 and 0 < p50 <= p99 <= top, (rate, client, figures, out)


@pytest.mark.timeout(240)
def test_memory_short(kafka_broker) -> None:
    out = run_benchmark("memory.py", kafka_broker.bootstrap)
    rows = table_rows(out, "kafkalite / it", r"(producer|consumer)\s+(\S+)", 4)
    for case in ("producer", "consumer"):
        for client in CLIENTS:
            figures = rows.get((case, client))
            assert figures is not None, f"no {case} row for {client}:\n{out}"
            baseline, peak, seconds, cpu = figures
            # a client that holds nothing beyond its baseline would show 0.0 over it: not an error
            assert baseline > 0 and peak >= 0 and seconds > 0 and cpu > 0, (case, client, figures, out)


@pytest.mark.timeout(240)
def test_partitions_short(kafka_broker) -> None:
    out = run_benchmark("partitions.py", kafka_broker.bootstrap)
    produce = table_rows(out, "partitions produce", r"(1000)\s+produce\s+(\S+)", 3)
    consume = table_rows(out, "partitions consume", r"(1000)\s+consume\s+(\S+)", 6)
    for client in CLIENTS:
        assert ("1000", client) in produce and ("1000", client) in consume, f"rows missing for {client}:\n{out}"
        rate, cpu, peak = produce["1000", client]
        assert rate > 0 and cpu > 0 and peak >= 0, (client, produce, out)
        rate, cpu, peak, startup, meta_ms, meta_cpu = consume["1000", client]
        assert rate > 0 and cpu > 0 and peak >= 0 and startup > 0 and meta_ms > 0 and meta_cpu > 0, (client, out)


@pytest.mark.timeout(240)
def test_low_rate_short(kafka_broker) -> None:
    out = run_benchmark("low_rate.py", kafka_broker.bootstrap)
    rows = table_rows(out, "kafkalite / it", r"(\S+)", 4)
    for client in CLIENTS:
        figures = rows.get((client,))
        assert figures is not None, f"no row for {client}:\n{out}"
        idle_pct, _idle_ratio, us_per_record, _rate_ratio = figures
        # a connected, subscribed client uses some CPU at rest; every record was read (the run checks it)
        assert 0 < idle_pct < 100 and us_per_record > 0, (client, figures, out)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", ["cpu", "instructions"])
def test_fetch_cycle_short(kafka_broker, mode: str) -> None:
    out = run_benchmark("fetch_cycle.py", kafka_broker.bootstrap, *(["--instructions"] if mode == "instructions" else []))
    rows = table_rows(out, "kafkalite / it", r"(\S+)", 2)
    for client in CLIENTS:
        figures = rows.get((client,))
        assert figures is not None, f"no row for {client}:\n{out}"
        per_cycle, _ratio = figures
        # an idle fetch cycle (empty answer, next request) costs something, and not a whole
        # second of CPU or a billion instructions
        assert 0 < per_cycle < (1e9 if mode == "instructions" else 1e6), (client, figures, out)
    if mode == "instructions":
        assert out.count("first-level cache misses") == len(CLIENTS), out


@pytest.mark.timeout(240)
def test_latency_breakdown_short(kafka_broker) -> None:
    out = run_benchmark("latency_breakdown.py", kafka_broker.bootstrap)
    runs = out.split("kafkalite producer -> ")[1:]
    assert [run.split()[0] for run in runs] == [f"{client}" for client in CLIENTS], out
    for client, run in zip(CLIENTS, runs):
        assert "2000 records" in run, out
        steps = table_rows(run, "step (ms)", r"(\w+)", 5)
        # kafkalite's consumer is stamped inside; librdkafka's is not (its steps are one)
        inside = ["written_to_recv", "recv_to_added", "added_to_poll"] if client == "kafkalite" else []
        for step in ["total", "to_drain", "drain_to_written", "written_to_poll", *inside]:
            figures = steps.get((step,))
            assert figures is not None, f"no row for {step} ({client}):\n{out}"
            p50, p90, p99, _first_p50, _first_p99 = figures
            assert 0 < p50 <= p90 <= p99, (client, step, figures, out)
        # the first record of a batch waits linger.ms (5) counted in whole milliseconds
        # as Java counts it (RecordAccumulator.linger_due): more than 4 ms, never less
        assert steps[("to_drain",)][3] > 4.0, out
        # under the table: what the p99 records are made of, and the consumer's GC pauses
        assert re.search(r"p99 records \(\d+, total >= [\d.]+ ms\).*: to_drain [+-][\d.]+", run), out
        assert re.search(r"consumer garbage collections of 1 ms or more: \d+", run), out
        fetch_line = re.search(r"p99 records that came in a Fetch started after their Produce was written: (\d+)", run)
        assert (fetch_line is not None) == (client == "kafkalite"), out
