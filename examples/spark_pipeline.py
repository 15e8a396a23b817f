"""Read a topic into a DataFrame, aggregate it, write the result to another topic:
once as a batch job and once as a streaming query, with format("kafkalite").

Needs ``pip install kafkalite[spark]`` and Java 17+ (Spark's). No jar, no registration:
PySpark finds the connector by itself.

    python examples/spark_pipeline.py --bootstrap 127.0.0.1:9092

It creates the topics ``orders`` (3 partitions), ``order-totals`` and
``order-totals-live``, writes 1,000 orders (key = customer, value = JSON), then:

* batch: sums the amounts per customer and writes one record per customer;
* streaming: the same aggregation per micro-batch of a streaming query
  (Trigger.AvailableNow, 200 records per micro-batch) with progress visible in consumer group
  ``order-totals-live`` (``kafkalite groups describe order-totals-live``);
* then 300 more orders, and a new query (new checkpoint) that starts at that group's
  committed offsets (``startingOffsets=group``), in micro-batches of about 16 kB
  (``maxBytesPerTrigger``), printing each partition's lag from the query progress.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from typing import Any

from kafkalite import AdminClient, NewTopic, Producer
from kafkalite.errors import TopicExistsError


def create_topics(bootstrap: str) -> None:
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        result = admin.create_topics([NewTopic("orders", num_partitions=3, replication_factor=1),
                                      NewTopic("order-totals", num_partitions=1, replication_factor=1),
                                      NewTopic("order-totals-live", num_partitions=1, replication_factor=1)])
        for item in result.values():
            if item.error is not None and not isinstance(item.error, TopicExistsError):
                raise item.error


def write_orders(bootstrap: str, count: int = 1000) -> None:
    rng = random.Random(1)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(count):
            customer = f"customer-{rng.randrange(10)}"
            order = {"id": i, "customer": customer, "amount": round(rng.uniform(1, 100), 2)}
            producer.send("orders", json.dumps(order).encode(), key=customer.encode())


def main() -> int:
    parser = argparse.ArgumentParser(description="kafkalite + Spark: topic -> aggregate -> topic")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    create_topics(args.bootstrap)
    write_orders(args.bootstrap)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.builder.master("local[2]").appName("kafkalite-example").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    kafka = {"kafka.bootstrap.servers": args.bootstrap}
    order_schema = "id INT, customer STRING, amount DOUBLE"

    # ---- batch: read everything, aggregate, write
    orders = spark.read.format("kafkalite").options(**kafka).option("subscribe", "orders").load()
    totals = (orders.select(F.from_json(F.col("value").cast("string"), order_schema).alias("o"))
              .groupBy("o.customer").agg(F.round(F.sum("o.amount"), 2).alias("total"), F.count("*").alias("n")))
    (totals.select(F.col("customer").alias("key"), F.to_json(F.struct("customer", "total", "n")).alias("value"))
     .write.format("kafkalite").options(**kafka).option("topic", "order-totals").mode("append").save())
    back = spark.read.format("kafkalite").options(**kafka).option("subscribe", "order-totals").load()
    back.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)").show(truncate=False)

    # ---- streaming: the same aggregation per micro-batch (Python data source sinks take
    # append mode only, so each micro-batch's totals are written with foreachBatch)
    stream = (spark.readStream.format("kafkalite").options(**kafka).option("subscribe", "orders")
              .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "200")
              .option("kafka.group.id", "order-totals-live").load())

    def write_totals(batch: Any, batch_id: int) -> None:
        totals = (batch.select(F.from_json(F.col("value").cast("string"), order_schema).alias("o"))
                  .groupBy("o.customer").agg(F.round(F.sum("o.amount"), 2).alias("total")))
        (totals.select(F.col("customer").alias("key"),
                       F.to_json(F.struct(F.lit(batch_id).alias("batch"), "customer", "total")).alias("value"))
         .write.format("kafkalite").options(**kafka).option("topic", "order-totals-live").mode("append").save())

    with tempfile.TemporaryDirectory() as checkpoint:
        query = (stream.writeStream.foreachBatch(write_totals).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        print(f"streaming: {len([p for p in query.recentProgress if p['numInputRows']])} micro-batches of "
              "at most 200 orders; totals per micro-batch in topic order-totals-live")

    # ---- a new query (a new checkpoint) that carries on where the group left off, with
    # micro-batches of about 16 kB; the progress gives each partition's lag
    write_orders(args.bootstrap, 300)
    from pyspark_kafkalite.progress import lag_summary, source_lag

    resumed = (spark.readStream.format("kafkalite").options(**kafka).option("subscribe", "orders")
               .option("startingOffsets", "group").option("kafka.group.id", "order-totals-live")
               .option("startingOffsetsFallback", "earliest").option("maxBytesPerTrigger", "16384").load())
    with tempfile.TemporaryDirectory() as checkpoint:
        query = (resumed.writeStream.foreachBatch(write_totals).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        batches = [p for p in query.recentProgress if p["numInputRows"]]
        print(f"from the group's offsets: {sum(p['numInputRows'] for p in batches)} new orders in "
              f"{len(batches)} micro-batches of about 16 kB")
        if batches:  # PySpark >= 4.2 reports the partitions' ends, hence the lag
            print(f"lag after the first micro-batch: {source_lag(batches[0])} {lag_summary(source_lag(batches[0]))}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
