"""Driver programs the standalone-cluster tests run as their own processes (a driver of
its own, as spark-submit would start it, so a test can kill and restart it).

    python jobs.py batch MASTER BOOTSTRAP SOURCE SINK [--conf k=v ...]
        read SOURCE on the cluster, write its rows to SINK; prints one JSON line
        {"rows": n, "executor_jvms": [...], "python_pids": [...]} (the executor JVMs
        and Python workers that ran the read tasks)
    python jobs.py stream MASTER BOOTSTRAP SOURCE OUTPUT CHECKPOINT STOPFILE [--conf k=v ...]
        a processing-time (1 s) query with maxOffsetsPerTrigger into parquet files in
        OUTPUT, restarted from CHECKPOINT; runs until STOPFILE exists and the query has
        read up to the offsets written in it ({"partition": end, ...}); prints one JSON
        line per micro-batch
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# The checkout's root: the tests' helpers (tests.spark.streams) for this driver program.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def session(master: str, app: str, conf: list[str]) -> Any:
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.executor.memory", "512m")
               .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
               .config("spark.pyspark.python", os.environ.get("PYSPARK_PYTHON", sys.executable)))
    for item in conf:
        key, _, value = item.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def executor_jvm() -> int:
    """The pid of the executor JVM this Python worker serves (up the parent chain)."""
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"CoarseGrainedExecutorBackend" in f.read():
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return -1


def batch(args: argparse.Namespace) -> None:
    from pyspark.sql import functions as F

    spark = session(args.master, "kafkalite-cluster-batch", args.conf)
    df = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", args.bootstrap)
          .option("subscribe", args.source).option("includeHeaders", "true").load())
    # Which executors ran the read tasks (each is its own JVM with its own Python workers).
    seen = (df.select(F.spark_partition_id().alias("task"))
            .rdd.mapPartitions(lambda rows: [(executor_jvm(), os.getpid(), sum(1 for _ in rows),
                                              sys.executable)]).collect())
    (df.selectExpr("key", "value", "headers").write.format("kafkalite")
     .option("kafka.bootstrap.servers", args.bootstrap).option("topic", args.sink)
     .option("includeHeaders", "true").mode("append").save())
    print(json.dumps({"rows": sum(n for _, _, n, _ in seen),
                      "executor_jvms": sorted({e for e, _, _, _ in seen}),
                      "python_pids": sorted({p for _, p, _, _ in seen}),
                      "pythons": sorted({x for _, _, _, x in seen})}), flush=True)
    spark.stop()


def stream(args: argparse.Namespace) -> None:
    spark = session(args.master, "kafkalite-cluster-stream", args.conf)
    df = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", args.bootstrap)
          .option("subscribe", args.source).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", str(args.max_offsets)).load())
    from tests.spark.streams import started

    query = started(lambda: df.selectExpr("CAST(value AS STRING) AS id", "partition", "offset")
                    .writeStream.format("parquet").option("path", args.output)
                    .option("checkpointLocation", args.checkpoint)
                    .trigger(processingTime="1 second").start())
    stop_file = Path(args.stopfile)
    reported = -1
    while query.isActive:
        progress = query.lastProgress
        if progress is not None and progress["batchId"] != reported:
            reported = progress["batchId"]
            print(json.dumps({"batch": reported, "rows": progress["numInputRows"],
                              "end": progress["sources"][0]["endOffset"]}), flush=True)
        if stop_file.exists():
            target = json.loads(stop_file.read_text())
            end = json.loads(progress["sources"][0]["endOffset"] or "{}") if progress else {}
            done = end.get(args.source, {})
            if all(int(done.get(p, -1)) >= int(v) for p, v in target.items()):
                query.stop()
                break
        time.sleep(0.5)
    if query.exception() is not None:
        print(json.dumps({"error": str(query.exception())}), flush=True)
        sys.exit(3)
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    b = sub.add_parser("batch")
    for name in ("master", "bootstrap", "source", "sink"):
        b.add_argument(name)
    s = sub.add_parser("stream")
    for name in ("master", "bootstrap", "source", "output", "checkpoint", "stopfile"):
        s.add_argument(name)
    s.add_argument("--max-offsets", type=int, default=3000)
    for p in (b, s):
        p.add_argument("--conf", action="append", default=[])
    args = parser.parse_args()
    {"batch": batch, "stream": stream}[args.mode](args)


if __name__ == "__main__":
    main()
