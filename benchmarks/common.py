"""Helpers shared by the benchmarks: a broker for the run, Java tools, topics, tables.

``Broker()`` uses ``KAFKALITE_BOOTSTRAP`` when set, else starts a one-node Kafka from
:mod:`kafkalite.testing` for the run (closed by ``close()``). ``run_clients`` runs each
client (best of ``repeat``), isolating failures so one broken peer does not hide the
others; ``print_table`` prints msg/s, MB/s and the ratio kafkalite / each peer;
``write_results`` writes a run's figures as JSON (``--json FILE``), the form
``benchmarks/results/`` keeps and the docs site charts (tools/docs/charts.py).
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import platform
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class Broker:
    """KAFKALITE_BOOTSTRAP, or a LocalBroker from kafkalite.testing for the run.

    ``nodes=3``: KAFKALITE_CLUSTER_BOOTSTRAP, or a 3-node LocalCluster whose topics have
    replication 3 and min.insync.replicas 2 (acks=all then waits for two followers).
    """

    def __init__(self, heap: str = "1g", nodes: int = 1) -> None:
        from kafkalite.testing.broker import LocalBroker
        from kafkalite.testing.cluster import LocalCluster

        self.local: LocalBroker | LocalCluster | None = None
        self._run_dir: Path | None = None
        self.replication = 3 if nodes > 1 else -1
        self.bootstrap = os.environ.get("KAFKALITE_CLUSTER_BOOTSTRAP" if nodes > 1 else "KAFKALITE_BOOTSTRAP", "")
        if not self.bootstrap:
            run_dir = self._run_dir = Path(tempfile.mkdtemp(prefix="kafkalite-bench-"))
            if nodes > 1:
                self.local = LocalCluster(nodes, run_dir=run_dir, replication_factor=3, min_insync_replicas=2,
                                          heap="512m").start()
            else:
                self.local = LocalBroker(run_dir=run_dir, heap=heap).start()
            self.bootstrap = self.local.bootstrap
        self._tools: object = None

    @property
    def run_dir(self) -> Path | None:
        """Where the run's own broker keeps its files (None for an external broker)."""
        return self._run_dir

    @property
    def tools(self) -> Any:
        """Kafka's Java tools: the local broker's, else from the jar cache (fetched on first use)."""
        if self._tools is None:
            if self.local is not None:
                self._tools = self.local.tools
            else:
                from kafkalite.testing.distribution import KafkaDistribution
                from kafkalite.testing.java import find_java
                from kafkalite.testing.tools import JavaTools

                self._tools = JavaTools(KafkaDistribution().ensure(), find_java())
        return self._tools

    def create_topic(self, name: str, partitions: int) -> str:
        from kafkalite.testing.topics import create_topic

        return create_topic(self.bootstrap, name, partitions, self.replication, exist_ok=True, timeout=120.0)

    def run_tool(self, tool: str, args: Sequence[str], timeout: float = 900.0) -> str:
        done = self.tools.run(tool, list(args), timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed:\n{done.stderr[-2000:]}")
        return str(done.stdout)

    def close(self) -> None:
        """Stop the run's broker and delete its data (a 10M-record run leaves ~2 GB)."""
        if self.local is not None:
            self.local.close()
        if self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)


def choose_kernels(pure_python: bool) -> str:
    """Pick kafkalite's record kernels for the run; call before anything imports kafkalite.

    ``pure_python`` sets ``KAFKALITE_PURE_PYTHON=1``: kafkalite runs its pure-Python
    reference kernels, what a user without the compiled extension gets (the peers are
    unaffected). Returns the kernels in use, "c" or "python", for the run's header.
    """
    if pure_python:
        os.environ["KAFKALITE_PURE_PYTHON"] = "1"
    from kafkalite.protocol import record_codec

    if pure_python and record_codec.IMPLEMENTATION != "python":
        raise RuntimeError("kafkalite was imported before the pure-Python kernels were chosen")
    return record_codec.IMPLEMENTATION


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


def read_ahead_kib(path: Path) -> int | None:
    """The read-ahead, in KiB, of the block device holding ``path`` (None if unknown).

    Kafka preallocates each segment's offset and time index (10 MiB sparse files) and
    maps them; the first read of a partition faults its index in, and Linux reads up
    to this much around the fault. At the usual 128 KiB that is nothing; on a machine
    set to several MiB, a broker serving thousands of partitions reads gigabytes of
    zeros and evicts them again (measured: 2.3 ms of system time per partition at
    8 MiB), which swamps what any client does. Printed beside the partition figures.
    """
    try:
        dev = os.stat(path).st_dev
        block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
        for queue in (block / "queue", block.resolve().parent / "queue"):
            if (queue / "read_ahead_kb").exists():
                return int((queue / "read_ahead_kb").read_text())
    except (OSError, ValueError):
        pass
    return None


def machine() -> dict[str, Any]:
    """What the figures were measured on: cores, memory, OS, Python, and the load then."""
    memory_gib = None
    try:
        with open("/proc/meminfo") as f:
            memory_gib = round(int(f.readline().split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return {"cores": os.cpu_count(), "memory_gib": memory_gib, "platform": platform.platform(),
            "python": platform.python_version(), "load": load()}


def write_results(path: str | None, benchmark: str, argv: Sequence[str], figures: list[dict[str, Any]],
                  unit: str, method: str | None = None) -> None:
    """Write a run's figures as JSON to ``path`` (nothing when None).

    ``{"benchmark", "date", "machine", "command", "unit", "figures": [{"case", "client", ...}]}``;
    committed into ``benchmarks/results/``, the docs site draws them (tools/docs/charts.py).
    """
    if path is None:
        return
    out = {"benchmark": benchmark, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "machine": machine(), "command": " ".join(["benchmarks/" + Path(argv[0]).name, *argv[1:]]),
           "unit": unit, "figures": figures}
    if method is not None:
        out["method"] = method
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=1) + "\n")
    print(f"results written to {path}", flush=True)


def load() -> str:
    """The machine's load average (1, 5, 15 min), to print beside every figure."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


# Defaults of the settings that decide throughput, as each library documents them
# (read from the installed package where it exposes them, see library_defaults()).
# librdkafka: CONFIGURATION.md of the release confluent-kafka bundles.
LIBRDKAFKA_PRODUCER_DEFAULTS = {
    "acks": "all", "enable.idempotence": False, "linger.ms": 5, "batch.size": 1000000,
    "batch.num.messages": 10000, "queue.buffering.max.messages": 100000,
    "queue.buffering.max.kbytes": 1048576, "compression.type": "none"}
LIBRDKAFKA_CONSUMER_DEFAULTS = {
    "fetch.min.bytes": 1, "fetch.wait.max.ms": 500, "fetch.max.bytes": 52428800,
    "max.partition.fetch.bytes": 1048576, "queued.min.messages": 100000,
    "queued.max.messages.kbytes": 65536}
_WATCHED = {
    ("kafkalite", "producer"): ["acks", "enable.idempotence", "linger.ms", "batch.size", "buffer.memory",
                                "compression.type"],
    ("kafkalite", "consumer"): ["max.poll.records", "fetch.min.bytes", "fetch.max.wait.ms", "fetch.max.bytes",
                                "max.partition.fetch.bytes"],
    ("kafka-python", "producer"): ["acks", "enable_idempotence", "linger_ms", "batch_size", "compression_type"],
    ("kafka-python", "consumer"): ["max_poll_records", "fetch_min_bytes", "fetch_max_wait_ms", "fetch_max_bytes",
                                   "max_partition_fetch_bytes"],
    ("aiokafka", "producer"): ["acks", "enable_idempotence", "linger_ms", "max_batch_size", "compression_type"],
    ("aiokafka", "consumer"): ["max_poll_records", "fetch_min_bytes", "fetch_max_wait_ms", "fetch_max_bytes",
                               "max_partition_fetch_bytes"],
}


def library_defaults(library: str, kind: str) -> dict[str, object]:
    """The library's own defaults for the settings that decide throughput ({} if not installed)."""
    try:
        if library == "kafkalite":
            from kafkalite.config import parse

            cfg = parse(kind, {"bootstrap.servers": "127.0.0.1:9092", **({"group.id": "x"} if kind == "consumer"
                                                                          else {})})
            return {k: cfg[k] for k in _WATCHED[library, kind]}
        if library == "confluent-kafka":
            import confluent_kafka  # noqa: F401  (only: is it installed?)

            return dict(LIBRDKAFKA_PRODUCER_DEFAULTS if kind == "producer" else LIBRDKAFKA_CONSUMER_DEFAULTS)
        if library == "kafka-python":
            from kafka import KafkaConsumer, KafkaProducer

            conf = (KafkaProducer if kind == "producer" else KafkaConsumer).DEFAULT_CONFIG
            return {k: conf.get(k) for k in _WATCHED[library, kind]}
        if library == "aiokafka":
            import inspect

            from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

            params = inspect.signature((AIOKafkaProducer if kind == "producer" else AIOKafkaConsumer).__init__).parameters
            out: dict[str, object] = {}
            for k in _WATCHED[library, kind]:
                default = params[k].default if k in params else None
                # aiokafka's acks default is a sentinel: 1, or "all" when idempotence is on
                out[k] = default if isinstance(default, (int, str, type(None), bool)) else "1 (all if idempotent)"
            return out
    except ImportError:
        return {}
    return {}


def print_settings(client: str, kind: str, overrides: dict[str, object], how: str) -> None:
    """One line per client: how it is called, the settings it is given, and its defaults for the rest."""
    library = client.split(".")[0]
    defaults = library_defaults(library, kind)
    if not defaults and library not in ("kafkalite", "java"):
        print(f"  {client:18s} not installed", flush=True)
        return
    effective = {**defaults, **{k: v for k, v in overrides.items() if k != "bootstrap.servers"}}
    text = " ".join(f"{k}={v}" for k, v in effective.items())
    print(f"  {client:18s} {how}; {text}", flush=True)


def rss_kib() -> tuple[int, int]:
    """This process's resident set (VmRSS) and its peak since start or the last reset_peak_rss() (VmHWM), KiB."""
    fields = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                fields[line.split(":")[0]] = int(line.split()[1])
    return fields["VmRSS"], fields["VmHWM"]


def reset_peak_rss() -> None:
    """Reset VmHWM to the current RSS (Linux: write 5 to /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
