"""Spark throughput: kafkalite's data source vs Spark's JVM Kafka connector, one run.

Both connectors run in the same SparkSession (local[2]) of the PySpark 4.0.0
environment (``tools/spark_matrix/jvm_connector.py``: the only Spark release with a matched JVM
connector on Maven Central), against the same broker, on the same data shape:
``--rows`` rows (default 2M) of ``--value-size``-byte values (100) in ``--partitions``
partitions (6).

* write: ``spark.range(rows)`` → a 100-byte ``value`` column → ``df.write.format(F)``
  into a fresh topic per connector and run (timed from the action to its end),
  ``--repeat`` times: "cold" is the first (for kafkalite it also starts Spark's
  Python workers), "warm" the best of the others;
* read: ``spark.read.format(F)...load()`` of the same topic, forced with a full
  ``count()`` of a column that needs the value (``sum(length(value))``), run
  ``--repeat`` times; "warm" is the best run after the first.

Run from the project's venv; the script sets up the 4.0.0 environment and re-runs
itself there (use KAFKALITE_BOOTSTRAP for an existing broker, else it starts one)::

    .venv/bin/python benchmarks/spark_throughput.py                      # 2M rows (quiet machine!)
    .venv/bin/python benchmarks/spark_throughput.py --rows 200000        # a quick sanity run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def inner(args: argparse.Namespace) -> int:
    """Runs inside the PySpark 4.0.0 venv."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from kafkalite import AdminClient, NewTopic

    spark = (SparkSession.builder.master("local[2]").appName("kafkalite-spark-bench")
             .config("spark.jars", args.jars).config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    run = uuid.uuid4().hex[:6]
    # One topic per connector and write run; reads use the first.
    write_topics = {fmt: [f"spark-bench-{fmt}-{run}-{i}" for i in range(args.repeat)] for fmt in ("kafka", "kafkalite")}
    topics = {fmt: names[0] for fmt, names in write_topics.items()}
    with AdminClient({"bootstrap.servers": args.bootstrap}) as admin:
        admin.create_topics([NewTopic(t, num_partitions=args.partitions, replication_factor=1)
                             for names in write_topics.values() for t in names]).all()
    source = (spark.range(args.rows, numPartitions=args.partitions)
              .select(F.expr(f"substring(concat(cast(id AS string), repeat('x', {args.value_size})), 1, "
                             f"{args.value_size})").cast("binary").alias("value")))
    source.cache().count()  # generate once, outside the timings
    results: dict[str, Any] = {"rows": args.rows, "partitions": args.partitions, "value_size": args.value_size}
    for fmt, names in write_topics.items():
        times = []
        for topic in names:
            started = time.perf_counter()
            (source.write.format(fmt).option("kafka.bootstrap.servers", args.bootstrap)
             .option("topic", topic).mode("append").save())
            times.append(time.perf_counter() - started)
        # The first write of kafkalite also starts Spark's Python workers (and imports
        # pyarrow and kafkalite in them), which the JVM connector never needs.
        results[f"write_{fmt}_cold"] = args.rows / times[0]
        results[f"write_{fmt}_warm"] = args.rows / min(times[1:] or times)
    for fmt, topic in topics.items():
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            df = (spark.read.format(fmt).option("kafka.bootstrap.servers", args.bootstrap)
                  .option("subscribe", topic).load())
            total, size = df.agg(F.count("*"), F.sum(F.length("value"))).first()
            times.append(time.perf_counter() - started)
            assert total == args.rows and size == args.rows * args.value_size, (fmt, total, size)
        results[f"read_{fmt}_cold"] = args.rows / times[0]
        results[f"read_{fmt}_warm"] = args.rows / min(times[1:] or times)
    spark.stop()
    print(json.dumps(results))
    return 0


def outer(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ROOT / "tools" / "spark_matrix"))
    import jvm_connector  # type: ignore[import-not-found]

    python = jvm_connector.ensure_venv(jvm_connector.PYSPARK_VERSION)
    jars = ",".join(str(j) for j in jvm_connector.fetch_jars())
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from common import Broker  # type: ignore[import-not-found]

    broker = Broker()
    try:
        cmd = [str(python), __file__, "--inner", "--bootstrap", broker.bootstrap, "--jars", jars,
               "--rows", str(args.rows), "--partitions", str(args.partitions),
               "--value-size", str(args.value_size), "--repeat", str(args.repeat)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-5000:], file=sys.stderr)
            return done.returncode
        r = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        broker.close()
    print(f"Spark local[2], PySpark 4.0.0, {r['rows']:,} rows of {r['value_size']} B, {r['partitions']} partitions")
    print(f"{'':18}{'JVM connector':>16}{'kafkalite':>16}{'kafkalite / JVM':>18}")
    for label, key in (("write (cold)", "write_{}_cold"), ("write (warm)", "write_{}_warm"),
                       ("read (cold)", "read_{}_cold"), ("read (warm)", "read_{}_warm")):
        jvm, ours = r[key.format("kafka")], r[key.format("kafkalite")]
        print(f"{label + ' rows/s':18}{jvm:>16,.0f}{ours:>16,.0f}{ours / jvm:>18.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="write and read runs per connector (first is cold)")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--jars", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    return inner(args) if args.inner else outer(args)


if __name__ == "__main__":
    sys.exit(main())
