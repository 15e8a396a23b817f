"""Kafka in a scheduled Spark job on any Spark release from 3.5 on (EMR 7, Dataproc 2.2,
Synapse, Fabric 1.3, Databricks 14.3 ...): read_kafka, write_kafka and
read_kafka_incremental, no jar, no Python Data Source API needed.

Needs ``pip install "kafkalite[spark]"`` (any PySpark >= 3.5) and Java 17.

    python examples/spark35_incremental.py --bootstrap 127.0.0.1:9092

It writes 500 orders to topic ``orders35`` with ``write_kafka``, totals them per
customer with ``read_kafka`` (one batch read), then runs the scheduled job twice:
each run reads what arrived since the last one (at most 300 records a run,
``maxOffsetsPerTrigger``), writes it under its batch id (an idempotent sink: a re-run
of the same batch overwrites the same directory) and commits the offsets only after
the write succeeded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from kafkalite import AdminClient, NewTopic
from kafkalite.errors import TopicExistsError

CUSTOMERS = ["ada", "grace", "linus", "barbara", "ken"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="orders35")
    parser.add_argument("--work-dir", default=None, help="where the checkpoint and the output go")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark_kafkalite import read_kafka, read_kafka_incremental, write_kafka

    with AdminClient({"bootstrap.servers": args.bootstrap}) as admin:
        try:
            admin.create_topics([NewTopic(args.topic, num_partitions=3, replication_factor=1)])[args.topic].result()
        except TopicExistsError:
            pass

    spark = (SparkSession.builder.master("local[2]").appName("kafkalite-spark35")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kafka = {"kafka.bootstrap.servers": args.bootstrap}
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="kafkalite-spark35-"))
    try:
        print(f"pyspark {pyspark.__version__}")
        orders = spark.createDataFrame(
            [(CUSTOMERS[i % 5], json.dumps({"customer": CUSTOMERS[i % 5], "amount": i % 7 + 1})) for i in range(500)],
            "key string, value string")
        written = write_kafka(orders, {**kafka, "topic": args.topic})
        print(f"write_kafka wrote {written} orders")

        df = read_kafka(spark, {**kafka, "subscribe": args.topic})
        totals = (df.select(F.col("key").cast("string").alias("customer"),
                            F.get_json_object(F.col("value").cast("string"), "$.amount").cast("int").alias("amount"))
                  .groupBy("customer").agg(F.sum("amount").alias("total")).orderBy("customer"))
        print("read_kafka totals:", {r.customer: r.total for r in totals.collect()})

        options = {**kafka, "subscribe": args.topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "300"}
        for _ in range(2):  # two runs of the scheduled job
            batch, commit = read_kafka_incremental(spark, str(work / "checkpoint"), options)
            (batch.select("partition", "offset", F.col("value").cast("string").alias("value"))
             .write.mode("overwrite").parquet(str(work / "orders" / f"batch={commit.batch_id}")))
            commit()  # only after the write succeeded
            print(f"run: batch {commit.batch_id} wrote {commit.records} records")
        stored = spark.read.parquet(str(work / "orders")).count()
        print(f"the sink holds {stored} records")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
