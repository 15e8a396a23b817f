"""A pure Spark Connect client (``pyspark-client``, no JVM, no full PySpark) using
``format("kafkalite")`` against a Spark Connect server: batch and streaming.

:func:`ensure_client_venv` makes ``.venv-pyspark/client-<version>`` (or under
``$KAFKALITE_PYSPARK_VENVS``) with ``pyspark-client==<version>`` and a regular install of
this checkout without the ``spark`` extra (which would pull the full ``pyspark``); the
server needs kafkalite (it runs the data source), the client only registers the data
source class. Run inside that venv, this file connects to ``--url``, checks that no
JVM-side PySpark is installed, registers the source, then reads ``--source`` in a
batch (with ``format("kafkalite")`` and with ``read_kafka``), writes it to ``--sink`` and runs a streaming query from ``--source`` to
``--stream-sink`` until it has read everything; it prints one JSON line.

    python tools/spark_matrix/connect_client.py --setup-only        # make the venv; print its python
    .venv-pyspark/client-4.2.0/bin/python tools/spark_matrix/connect_client.py --url sc://127.0.0.1:15002 \\
        --bootstrap 127.0.0.1:9092 --source t --sink t2 --stream-sink t3 --checkpoint /tmp/ckpt --expected 300
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The newest pyspark-client release this checks (its first release was 4.0.0).
CLIENT_VERSION = "4.2.0"
#: What the client needs besides pyspark-client (pandas and pyarrow for DataFrames, the
#: gRPC packages for Connect come with pyspark-client).
CLIENT_REQUIREMENTS = ["pyarrow>=16", "numpy>=1.23", "pandas>=2.2,<3"]


def ensure_client_venv(version: str = CLIENT_VERSION) -> Path:
    """Create or update the pure-client venv; return its python."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from matrix import _source_stamp, venvs_root  # tools/ is no package: this folder is on sys.path

    from kafkalite.testing.distribution import file_lock

    target = venvs_root() / f"client-{version}"
    python = target / "bin" / "python"
    requirements = [f"pyspark-client=={version}", *CLIENT_REQUIREMENTS]
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.with_name(target.name + ".lock")):
        if not python.exists():
            venv.EnvBuilder(with_pip=True, clear=True).create(target)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip", "setuptools",
                            "wheel"], check=True)
        stamp_file = target / "kafkalite-source.sha256"
        stamp = _source_stamp(requirements)
        if not stamp_file.exists() or stamp_file.read_text() != stamp:
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", *requirements], check=True)
            # kafkalite without the spark extra: its own dependencies only, never pyspark.
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--force-reinstall",
                            "--no-build-isolation", str(ROOT)], check=True, cwd=str(target))
            stamp_file.write_text(stamp)
    return python


def run_client(args: argparse.Namespace) -> dict[str, object]:
    from pyspark.sql import SparkSession
    from pyspark_kafkalite import KafkaLiteDataSource, read_kafka

    report: dict[str, object] = {"jars_installed": importlib.util.find_spec("pyspark.jars") is not None,
                                 "py4j_installed": importlib.util.find_spec("py4j") is not None}
    spark = SparkSession.builder.remote(args.url).getOrCreate()
    try:
        report["session"] = type(spark).__module__
        spark.dataSource.register(KafkaLiteDataSource)
        kafka = {"kafka.bootstrap.servers": args.bootstrap}
        df = spark.read.format("kafkalite").options(**kafka, subscribe=args.source).load()
        report["batch_rows"] = df.count()
        # The DataFrame functions plan on the client (kafkalite is installed here) and read in
        # the server's tasks: they need no Data Source API, so they work through Connect too.
        report["read_kafka_rows"] = read_kafka(spark, {**kafka, "subscribe": args.source}).count()
        df.selectExpr("key", "value").write.format("kafkalite").options(**kafka, topic=args.sink) \
            .mode("append").save()
        stream = (spark.readStream.format("kafkalite")
                  .options(**kafka, subscribe=args.source, startingOffsets="earliest", maxOffsetsPerTrigger="100")
                  .load())
        query = (stream.selectExpr("value").writeStream.format("kafkalite")
                 .options(**kafka, topic=args.stream_sink, checkpointLocation=args.checkpoint)
                 .trigger(processingTime="1 second").start())
        try:
            deadline = time.monotonic() + 240
            while sum(p.numInputRows for p in query.recentProgress) < args.expected:
                if query.exception() is not None:
                    raise RuntimeError(f"the streaming query failed: {query.exception()}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the streaming query read too little: {query.recentProgress[-3:]}")
                time.sleep(0.5)
            report["stream_rows"] = sum(p.numInputRows for p in query.recentProgress)
        finally:
            query.stop()
    finally:
        spark.stop()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup-only", action="store_true", help="make the client venv, print its python")
    parser.add_argument("--version", default=CLIENT_VERSION)
    parser.add_argument("--url")
    parser.add_argument("--bootstrap")
    parser.add_argument("--source")
    parser.add_argument("--sink")
    parser.add_argument("--stream-sink")
    parser.add_argument("--checkpoint")
    parser.add_argument("--expected", type=int, default=0)
    args = parser.parse_args(argv)
    if args.setup_only:
        print(json.dumps({"python": str(ensure_client_venv(args.version))}))
        return 0
    print(json.dumps(run_client(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
