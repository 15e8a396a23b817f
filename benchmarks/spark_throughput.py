"""Spark throughput: kafkalite's data source vs Spark's JVM Kafka connector, one run.

Both connectors run in the same SparkSession of the PySpark 4.0.0 environment
(``tools/spark_matrix/jvm_connector.py``: the only Spark release with a matched JVM
connector on Maven Central), against the same broker, on the same data shape:
``--rows`` rows (default 2M) of ``--value-size``-byte values (100) in ``--partitions``
partitions (6). The session runs on ``local[2]``, or with ``--cluster`` on a Spark
standalone cluster that the script starts from the 4.0.0 wheel
(:class:`kafkalite.testing.spark.SparkStandaloneCluster`: a master and two workers of
one core each, so two executor JVMs with Python workers of their own). There kafkalite
reaches the executors as docs/spark.md ("Running on a cluster") says: installed on
every node (the 4.0.0 venv; every worker runs on this machine) and named by the
driver's ``PYSPARK_PYTHON``; the JVM connector's jars go to the executors through
``spark.jars``.

* write: ``spark.range(rows)`` → a 100-byte ``value`` column (cached, generated once
  outside the timings) → ``df.write.format(F)`` into a fresh topic per connector and
  run (timed from the action to its end), ``--repeat`` times: "cold" is the first (for
  kafkalite it also starts Spark's Python workers), "warm" the best of the others;
* read: ``spark.read.format(F)...load()`` of the same topic, forced with a full
  ``count()`` of a column that needs the value (``sum(length(value))``), run
  ``--repeat`` times; "warm" is the best run after the first.
* memory: while each kafkalite write and read runs, a thread samples (every 200 ms,
  from ``/proc``) the RSS of every Spark Python worker that runs tasks (``pyspark.daemon
  pyspark.worker`` and the workers it forks) under the executors (on local[2] the
  driver JVM is the executor); it reports the peak RSS of one worker (over the run, and
  over its first and its second half), the peak of their sum, and the peak of one of the
  driver's own Python workers (planning and commit). Spark reuses Python workers, and
  RSS keeps its high-water mark: a run's figures include what earlier runs left.
* ``--arrow-only-sink``: writes into a Python sink that only iterates the Arrow batches
  too (after kafkalite's, same DataFrame, no Kafka): the ceiling of any Python sink here;
* load: the 1-minute load average (``os.getloadavg()``) at the end of every timed run.

Run from the project's venv; the script sets up the 4.0.0 environment and re-runs
itself there (use KAFKALITE_BOOTSTRAP for an existing broker, else it starts one)::

    .venv/bin/python benchmarks/spark_throughput.py                      # 2M rows (quiet machine!)
    .venv/bin/python benchmarks/spark_throughput.py --rows 200000        # a quick sanity run
    .venv/bin/python benchmarks/spark_throughput.py --cluster            # on a standalone cluster
    .venv/bin/python benchmarks/spark_throughput.py --arrow-only-sink    # and a Python sink's ceiling
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: Spark's Python workers: each worker module gets a daemon of its own
#: (``python -m pyspark.daemon <module>``) that forks the workers (which keep its command
#: line). Read and write tasks run in ``pyspark.worker``; the driver plans and commits
#: Python data sources in others (``pyspark.sql.worker.lookup_data_sources``,
#: ``...create_data_source``, ``...plan_data_source_read``, ``...write_into_data_source``,
#: ``...commit_data_source_write``).
TASK_WORKER = b"pyspark.worker"
PYTHON_WORKER_MARKERS = (b"pyspark.daemon", b"pyspark.worker", b"pyspark.sql.worker")
EXECUTOR_MARKER = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _rss_kb(pid: int) -> int:
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith(b"VmRSS:"):
            return int(line.split()[1])
    return 0


def python_workers(on_cluster: bool) -> tuple[dict[int, int], dict[int, int]]:
    """RSS (KiB) of the Spark Python workers among this process's descendants:
    (task workers, the others). Task workers run ``pyspark.worker`` (daemon or forked
    worker), on a cluster under an executor JVM; the others are the driver's workers
    that plan and commit Python data sources (on local[2] the driver is the executor)."""
    children = _children()
    tasks: dict[int, int] = {}
    others: dict[int, int] = {}
    stack = [(pid, False) for pid in children.get(os.getpid(), [])]
    while stack:
        pid, under_executor = stack.pop()
        cmdline = _read(f"/proc/{pid}/cmdline")
        argv = cmdline.split(b"\0")
        if EXECUTOR_MARKER in argv:
            under_executor = True
        elif any(m in cmdline for m in PYTHON_WORKER_MARKERS):
            is_task = TASK_WORKER in argv and (under_executor or not on_cluster)
            (tasks if is_task else others)[pid] = _rss_kb(pid)
        stack.extend((child, under_executor) for child in children.get(pid, []))
    return tasks, others


class WorkerMemory:
    """Samples :func:`python_workers` every ``interval`` seconds while in the block: the
    peak RSS of one task worker, over the whole run and over its first and second half
    (by time: memory that grew with the rows would be higher in the second half), the
    peak of their sum (shared pages of a forked worker and its daemon count in both), the
    peak of one of the other (driver-side) workers."""

    def __init__(self, on_cluster: bool, interval: float = 0.2) -> None:
        self.on_cluster = on_cluster
        self.interval = interval
        self.peak_one_kb = 0
        self.peak_sum_kb = 0
        self.peak_other_kb = 0
        self.pids: set[int] = set()
        self.trace: list[tuple[float, int]] = []  # (seconds, the largest task worker's RSS)
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-memory", daemon=True)

    def _sample(self) -> None:
        tasks, others = python_workers(self.on_cluster)
        self.pids.update(tasks)
        self.trace.append((time.monotonic() - self._started, max(tasks.values(), default=0)))
        self.peak_one_kb = max(self.peak_one_kb, *tasks.values(), 0)
        self.peak_sum_kb = max(self.peak_sum_kb, sum(tasks.values()))
        self.peak_other_kb = max(self.peak_other_kb, *others.values(), 0)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> WorkerMemory:
        self._started = time.monotonic()
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def summary(self) -> dict[str, Any]:
        half = self.trace[-1][0] / 2
        first = max((kb for t, kb in self.trace if t <= half), default=0)
        second = max((kb for t, kb in self.trace if t > half), default=0)
        return {"peak_worker_mb": self.peak_one_kb / 1024, "peak_sum_mb": self.peak_sum_kb / 1024,
                "peak_worker_first_half_mb": first / 1024, "peak_worker_second_half_mb": second / 1024,
                "workers": len(self.pids), "peak_driver_side_mb": self.peak_other_kb / 1024,
                "samples": len(self.trace)}


def arrow_only_sink() -> Any:
    """A Python data source whose writer only iterates the Arrow batches Spark hands it
    (``format("arrow_only_sink")``): the ceiling of any Python sink in this session,
    what PySpark's Arrow hand-over to the Python workers costs without any Kafka."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class ArrowOnlyWriter(DataSourceArrowWriter):
        def write(self, iterator: Any) -> WriterCommitMessage:
            rows = 0
            for batch in iterator:
                rows += batch.num_rows
            return WriterCommitMessage()

    class ArrowOnlySink(DataSource):
        @classmethod
        def name(cls) -> str:
            return "arrow_only_sink"

        def writer(self, schema: Any, overwrite: bool) -> ArrowOnlyWriter:
            return ArrowOnlyWriter()

    return ArrowOnlySink


def progress(message: str) -> None:
    print(f"# {message}", flush=True)


def inner(args: argparse.Namespace) -> int:
    """Runs inside the PySpark 4.0.0 venv."""
    # The interpreter Python data sources run with, on the driver and on every executor
    # (docs/spark.md, "Running on a cluster"): this venv, which has kafkalite installed.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    cluster = None
    if args.cluster:
        from kafkalite.testing.spark import SparkStandaloneCluster

        cluster = SparkStandaloneCluster(workers=2, cores_per_worker=1, worker_memory="3g",
                                         python=sys.executable).start()
        progress(f"standalone cluster {cluster.master_url} up ({cluster.work_dir})")
        # Both executors registered before the first job (the ratio counts against
        # spark.cores.max), as tests/spark_cluster/ does; executors big enough to cache the rows.
        builder = cluster.session_builder(
            "kafkalite-spark-bench", **{"spark.cores.max": "2", "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                                        "spark.scheduler.maxRegisteredResourcesWaitingTime": "240s",
                                        "spark.executor.memory": "2g"})
    else:
        builder = SparkSession.builder.master("local[2]").appName("kafkalite-spark-bench")
    try:
        spark = (builder.config("spark.jars", args.jars).config("spark.ui.enabled", "false")
                 .config("spark.driver.memory", "4g").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        results = run(spark, args, on_cluster=cluster is not None)
        spark.stop()
    finally:
        if cluster is not None:
            cluster.stop()
            shutil.rmtree(cluster.work_dir, ignore_errors=True)
    print(json.dumps(results))
    return 0


def run(spark: Any, args: argparse.Namespace, *, on_cluster: bool) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from kafkalite import AdminClient, NewTopic

    run_id = uuid.uuid4().hex[:6]
    # One topic per connector and write run; reads use the first.
    write_topics = {fmt: [f"spark-bench-{fmt}-{run_id}-{i}" for i in range(args.repeat)]
                    for fmt in ("kafka", "kafkalite")}
    topics = {fmt: names[0] for fmt, names in write_topics.items()}
    with AdminClient({"bootstrap.servers": args.bootstrap}) as admin:
        admin.create_topics([NewTopic(t, num_partitions=args.partitions, replication_factor=1)
                             for names in write_topics.values() for t in names]).all()
    source = (spark.range(args.rows, numPartitions=args.partitions)
              .select(F.expr(f"substring(concat(cast(id AS string), repeat('x', {args.value_size})), 1, "
                             f"{args.value_size})").cast("binary").alias("value")))
    source.cache().count()  # generate once, outside the timings
    import pyspark

    results: dict[str, Any] = {"pyspark": pyspark.__version__, "rows": args.rows, "partitions": args.partitions, "value_size": args.value_size,
                               "cluster": on_cluster, "memory": [], "load": []}

    def timed(fmt: str, what: str, index: int, action: Any) -> float:
        memory = WorkerMemory(on_cluster) if fmt == "kafkalite" and args.memory else None
        with memory if memory is not None else contextlib.nullcontext():
            started = time.perf_counter()
            action()
            elapsed = time.perf_counter() - started
        load = os.getloadavg()[0]
        results["load"].append(load)
        line = f"{what} {fmt} run {index + 1}: {args.rows / elapsed:,.0f} rows/s, load {load:.1f}"
        if memory is not None:
            results["memory"].append({"op": what, "run": index + 1, **memory.summary()})
            line += (f", task Python workers: peak {memory.peak_one_kb / 1024:.0f} MB one, "
                     f"{memory.peak_sum_kb / 1024:.0f} MB sum ({len(memory.pids)} processes); "
                     f"driver-side workers: peak {memory.peak_other_kb / 1024:.0f} MB one")
        progress(line)
        return elapsed

    has_datasource_api = hasattr(spark, "dataSource")  # PySpark >= 4.0 (or a backport)
    if args.arrow_only_sink and not has_datasource_api:
        raise SystemExit("--arrow-only-sink needs the Python Data Source API (PySpark >= 4.0)")
    if args.arrow_only_sink:
        spark.dataSource.register(arrow_only_sink())
    results["api"] = "format" if has_datasource_api else "functions"

    def write(fmt: str, topic: str) -> Any:
        options = {"kafka.bootstrap.servers": args.bootstrap, "topic": topic}
        if fmt == "kafkalite" and not has_datasource_api:
            # Spark 3.5: the DataFrame function (mapInArrow), the same sink code.
            from pyspark_kafkalite import write_kafka

            return lambda: write_kafka(source, options)
        return source.write.format(fmt).options(**options).mode("append").save

    def read(fmt: str, topic: str, counted: list[Any]) -> Any:
        options = {"kafka.bootstrap.servers": args.bootstrap, "subscribe": topic}
        if fmt == "kafkalite" and not has_datasource_api:
            from pyspark_kafkalite import read_kafka

            load = lambda: read_kafka(spark, options)  # noqa: E731
        else:
            load = spark.read.format(fmt).options(**options).load
        return lambda: counted.extend(load().agg(F.count("*"), F.sum(F.length("value"))).first())

    # Rounds interleave the connectors (the order alternates from round to round), so a
    # change of the machine's load touches both; round 1 is cold (for kafkalite it also
    # starts Spark's Python workers and imports pyarrow and kafkalite in them).
    formats = ["kafka", "kafkalite"] + ["arrow_only_sink"] * args.arrow_only_sink
    write_times: dict[str, list[float]] = {fmt: [] for fmt in formats}
    for i in range(args.repeat):
        for fmt in (formats if i % 2 == 0 else formats[::-1]):
            topic = write_topics[fmt][i] if fmt in write_topics else f"unused-{i}"
            write_times[fmt].append(timed(fmt, "write", i, write(fmt, topic)))
    read_times: dict[str, list[float]] = {fmt: [] for fmt in topics}
    for i in range(args.repeat if not args.skip_read else 0):
        for fmt in (list(topics) if i % 2 == 0 else list(topics)[::-1]):
            counted: list[Any] = []
            read_times[fmt].append(timed(fmt, "read", i, read(fmt, topics[fmt], counted)))
            total, size = counted
            assert total == args.rows and size == args.rows * args.value_size, (fmt, total, size)
    for what, times in (("write", write_times), ("read", read_times)):
        for fmt, ts in times.items():
            if ts:
                results[f"{what}_{fmt}_cold"] = args.rows / ts[0]
                results[f"{what}_{fmt}_warm"] = args.rows / min(ts[1:] or ts)
                results[f"{what}_{fmt}_runs"] = [args.rows / t for t in ts]
        if times["kafkalite"]:
            # kafkalite's rows/s over the JVM connector's, round by round (same round, same load)
            results[f"{what}_ratios"] = [j / k for j, k in zip(times["kafka"], times["kafkalite"])]
    return results


def spread(values: list[float]) -> str:
    """``min / median / max`` of ratios."""
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def run_release(args: argparse.Namespace, version: str, bootstrap: str) -> dict[str, Any] | None:
    """One PySpark release's session (its venv and its JVM connector's jars): the results."""
    import jvm_connector  # type: ignore[import-not-found]  # tools/spark_matrix, put on sys.path by outer()

    python = jvm_connector.ensure_venv(version)
    jars = ",".join(str(j) for j in jvm_connector.fetch_jars(version))
    cmd = [str(python), __file__, "--inner", "--bootstrap", bootstrap, "--jars", jars,
           "--rows", str(args.rows), "--partitions", str(args.partitions),
           "--value-size", str(args.value_size), "--repeat", str(args.repeat)]
    cmd += (["--cluster"] * args.cluster + ["--arrow-only-sink"] * args.arrow_only_sink
            + ["--skip-read"] * args.skip_read + ["--memory"] * args.memory)
    print(f"PySpark {version}: load at start {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    r: dict[str, Any] | None = None
    with tempfile.TemporaryFile("w+") as stderr:
        # Outside the checkout: the venv's installed kafkalite, not the source tree's.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=tempfile.gettempdir())
        assert proc.stdout is not None
        for line in proc.stdout:  # progress lines ("# ...") as they come, the results last
            if line.startswith("# "):
                print(line.rstrip(), flush=True)
            elif line.startswith("{"):
                r = json.loads(line)
        if proc.wait() != 0 or r is None:
            stderr.seek(0)
            print(stderr.read()[-5000:], file=sys.stderr)
            return None
    return r


def report(r: dict[str, Any]) -> None:
    where = "standalone cluster (2 workers x 1 core)" if r["cluster"] else "local[2]"
    api = 'format("kafkalite")' if r["api"] == "format" else "write_kafka / read_kafka"
    print(f"Spark {where}, PySpark {r['pyspark']} ({api}), {r['rows']:,} rows of {r['value_size']} B, "
          f"{r['partitions']} partitions")
    print(f"{'':18}{'JVM connector':>16}{'kafkalite':>16}{'kafkalite / JVM':>18}")
    for label, key in (("write (cold)", "write_{}_cold"), ("write (warm)", "write_{}_warm"),
                       ("read (cold)", "read_{}_cold"), ("read (warm)", "read_{}_warm")):
        if key.format("kafka") in r:
            jvm, ours = r[key.format("kafka")], r[key.format("kafkalite")]
            print(f"{label + ' rows/s':18}{jvm:>16,.0f}{ours:>16,.0f}{ours / jvm:>18.2f}")
    for what in ("write", "read"):
        ratios = r.get(f"{what}_ratios", [])[1:]
        if ratios:
            print(f"{what}: kafkalite / JVM per warm round (rounds 2-{len(ratios) + 1}): "
                  f"{', '.join(f'{x:.2f}' for x in ratios)}; min / median / max {spread(ratios)}")
    if "write_arrow_only_sink_warm" in r:
        print(f"arrow-only sink (a Python sink that only iterates the Arrow batches): write cold "
              f"{r['write_arrow_only_sink_cold']:,.0f}, warm {r['write_arrow_only_sink_warm']:,.0f} rows/s; "
              f"kafkalite's warm write is {r['write_kafkalite_warm'] / r['write_arrow_only_sink_warm']:.2f} of it")
    if r["memory"]:
        print("kafkalite: RSS of the Python workers that ran the tasks" + (" (on the executors)" if r["cluster"] else "")
              + ", and of the driver's planning ones, per run:")
        print(f"{'':10}{'peak one (MB)':>15}{'1st half':>10}{'2nd half':>10}{'peak sum (MB)':>15}{'processes':>11}"
              f"{'driver-side (MB)':>18}")
        for m in r["memory"]:
            print(f"{m['op'] + ' ' + str(m['run']):10}{m['peak_worker_mb']:>15.0f}"
                  f"{m['peak_worker_first_half_mb']:>10.0f}{m['peak_worker_second_half_mb']:>10.0f}"
                  f"{m['peak_sum_mb']:>15.0f}{m['workers']:>11}{m['peak_driver_side_mb']:>18.0f}")
    print(f"1-min load at the end of the timed runs: {min(r['load']):.1f} to {max(r['load']):.1f}")


def figures(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON figures of one release: per operation and connector, warm rows/s (median,
    min, max over rounds 2..n) and, for kafkalite, its ratio to the JVM connector."""
    out: list[dict[str, Any]] = []
    for what in ("write", "read"):
        ratios = r.get(f"{what}_ratios", [])[1:]
        if not ratios:
            continue
        case = f"{what}, PySpark {r['pyspark']}"
        for fmt, client in (("kafka", "JVM connector"), ("kafkalite", "kafkalite")):
            warm = r[f"{what}_{fmt}_runs"][1:]
            figure: dict[str, Any] = {"case": case, "client": client,
                                      "rows_per_s": round(statistics.median(warm)),
                                      "rows_per_s_min": round(min(warm)), "rows_per_s_max": round(max(warm))}
            if fmt == "kafkalite":
                figure.update(ratio_min=round(min(ratios), 2), ratio_median=round(statistics.median(ratios), 2),
                              ratio_max=round(max(ratios), 2))
            out.append(figure)
    return out


def outer(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ROOT / "tools" / "spark_matrix"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from common import Broker, write_results  # type: ignore[import-not-found]

    broker = Broker()
    runs: list[dict[str, Any]] = []
    try:
        for version in args.pyspark:
            r = run_release(args, version, broker.bootstrap)
            if r is None:
                return 1
            runs.append(r)
    finally:
        broker.close()
    for r in runs:
        report(r)
    method = (f"{args.rows:,} rows of {args.value_size} B in {args.partitions} partitions, "
              f"{'a standalone cluster' if args.cluster else 'local[2]'}; per PySpark release one session "
              f"with both connectors, {args.repeat} interleaved rounds (the order alternates), round 1 cold and "
              "left out; rows_per_s is the median of the other rounds, the ratio kafkalite's rows/s over the "
              "JVM connector's in the same round")
    write_results(args.json, "spark", sys.argv, [f for r in runs for f in figures(r)], "rows/s", method)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="write and read runs per connector (first is cold)")
    parser.add_argument("--cluster", action="store_true",
                        help="run on a standalone cluster of 2 workers x 1 core started here, not local[2]")
    parser.add_argument("--arrow-only-sink", action="store_true",
                        help="also time writes into a Python sink that only iterates the Arrow batches")
    parser.add_argument("--pyspark", nargs="+", default=["4.0.0"], choices=["4.0.0", "3.5.7"],
                        help="the PySpark releases to run, one session each (those with a JVM connector "
                             "on Maven Central); 3.5.7 runs kafkalite's write_kafka / read_kafka")
    parser.add_argument("--skip-read", action="store_true", help="time the writes only")
    parser.add_argument("--memory", action="store_true",
                        help="sample the RSS of the Python workers during kafkalite's runs (costs some CPU)")
    parser.add_argument("--json", metavar="FILE",
                        help="also write the figures as JSON (benchmarks/results/, charted by the docs)")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--jars", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    return inner(args) if args.inner else outer(args)


if __name__ == "__main__":
    sys.exit(main())
