"""Helpers shared by the benchmarks: a broker for the run, Java tools, topics, tables.

``Broker()`` uses ``KAFKALITE_BOOTSTRAP`` when set, else starts a one-node Kafka from
:mod:`kafkalite.testing` for the run (closed by ``close()``). ``run_clients`` runs each
client (best of ``repeat``), isolating failures so one broken peer does not hide the
others; ``print_table`` prints msg/s, MB/s and the ratio kafkalite / each peer.
"""

from __future__ import annotations

import gc
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


class Broker:
    """KAFKALITE_BOOTSTRAP, or a LocalBroker from kafkalite.testing for the run."""

    def __init__(self, heap: str = "1g") -> None:
        from kafkalite.testing.broker import LocalBroker
        from kafkalite.testing.distribution import KafkaDistribution
        from kafkalite.testing.java import find_java
        from kafkalite.testing.tools import JavaTools

        self.local = None
        self.bootstrap = os.environ.get("KAFKALITE_BOOTSTRAP", "")
        if not self.bootstrap:
            self.local = LocalBroker(run_dir=Path(tempfile.mkdtemp(prefix="kafkalite-bench-")), heap=heap).start()
            self.bootstrap = self.local.bootstrap
            self.tools = self.local.tools
        else:
            self.tools = JavaTools(KafkaDistribution().ensure(), find_java())

    def create_topic(self, name: str, partitions: int) -> str:
        from kafkalite.testing.topics import create_topic

        return create_topic(self.bootstrap, name, partitions, exist_ok=True)

    def run_tool(self, tool: str, args: Sequence[str], timeout: float = 900.0) -> str:
        done = self.tools.run(tool, list(args), timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed:\n{done.stderr[-2000:]}")
        return str(done.stdout)

    def close(self) -> None:
        if self.local is not None:
            self.local.close()


def payload(size: int, seed: int = 7) -> bytes:
    """Random upper-case letters, as Kafka's ProducerPerformance makes its payload."""
    rng = random.Random(seed)
    return bytes(rng.randrange(65, 91) for _ in range(size))


@dataclass
class Row:
    case: str  # e.g. "100 B lz4"
    client: str
    messages: int
    seconds: float
    size: int
    #: CPU time of this process (all its threads: caller, I/O threads, librdkafka's)
    #: per message during the best run, in µs; None for clients in another process.
    cpu_us: float | None = None

    @property
    def rate(self) -> float:
        return self.messages / self.seconds

    @property
    def mbs(self) -> float:
        return self.messages * self.size / self.seconds / 1e6


def run_clients(case: str, clients: dict[str, Callable[[], float | tuple[float, float]]], messages: int, size: int,
                repeat: int = 1, baseline: str = "kafkalite") -> list[Row]:
    """Run each client ``repeat`` times (it returns elapsed seconds, or (elapsed, CPU seconds)); keep the best.

    Rounds are interleaved (every client once, then every client again), so no client
    always runs first on a broker whose JIT is still warming up, or last on one whose
    log segments have grown: with ``repeat`` >= 2 each client's best run comes from a
    warmed-up broker.
    """
    best: dict[str, tuple[float, float]] = {}
    broken: set[str] = set()
    for round_no in range(repeat):
        for name, fn in clients.items():
            if name in broken:
                continue
            gc.collect()
            try:
                cpu_start = time.process_time()
                out = fn()
                # A client may return (elapsed, cpu) measured over its timed part only
                # (without imports and setup); else the whole call's CPU counts.
                elapsed, cpu = out if isinstance(out, tuple) else (out, time.process_time() - cpu_start)
            except ImportError as exc:
                print(f"  {name}: not installed ({exc}); pip install 'kafkalite[bench]'", flush=True)
                broken.add(name)
                continue
            except Exception as exc:  # one broken peer must not hide the others
                print(f"  {name}: failed: {exc!r}", flush=True)
                broken.add(name)
                continue
            if repeat > 1:
                print(f"    round {round_no + 1}: {name:16s} {messages / elapsed:12,.0f} msg/s", flush=True)
            if name not in best or elapsed < best[name][0]:
                best[name] = (elapsed, cpu)
    rows = []
    for name in clients:
        if name not in best:
            continue
        elapsed, cpu = best[name]
        # Java runs in its own process: this process's CPU says nothing about it.
        row = Row(case, name, messages, elapsed, size, None if name == "java" else cpu / messages * 1e6)
        rows.append(row)
        cpu_text = "" if row.cpu_us is None else f" {row.cpu_us:7.2f} us CPU/msg"
        print(f"  {name:16s} {row.rate:12,.0f} msg/s {row.mbs:9.1f} MB/s{cpu_text}", flush=True)
    return rows


def print_table(rows: Sequence[Row], baseline: str = "kafkalite") -> None:
    """The summary: msg/s, MB/s, CPU µs/msg and baseline / client (above 1: the baseline is faster).

    CPU is this process's CPU time per message over the run (every thread of the
    client; not the broker's, not Java's): unlike msg/s it hardly depends on what else
    the machine is doing, so it is the column to compare on a busy machine.
    """
    print()
    print(f"{'case':>12} {'client':16s} {'msg/s':>12} {'MB/s':>8} {'CPU us/msg':>11} {baseline + ' / it':>16}")
    for row in rows:
        ours = next((r.rate for r in rows if r.case == row.case and r.client == baseline), None)
        ratio = f"{ours / row.rate:15.2f}x" if ours else ""
        cpu = "-" if row.cpu_us is None else f"{row.cpu_us:.2f}"
        print(f"{row.case:>12} {row.client:16s} {row.rate:12,.0f} {row.mbs:8.1f} {cpu:>11} {ratio:>16}")


def tracer_provider() -> object:
    """An OpenTelemetry SDK TracerProvider that samples every span and hands it, in batches,
    to an exporter that drops it: what tracing costs the client, without an exporter's I/O."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard(), max_queue_size=65536, max_export_batch_size=4096))
    return provider


def meter_provider() -> object:
    """An OpenTelemetry SDK MeterProvider whose reader collects only when asked (never, in a
    run): what the duration histograms cost the client per operation, without an exporter."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    return MeterProvider(metric_readers=[InMemoryMetricReader()])
