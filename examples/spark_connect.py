"""format("kafkalite") through Spark Connect: a Spark Connect server started from the
PySpark wheel (its Python has kafkalite: the data source runs there), and a client
session that only speaks gRPC to it.

Needs ``pip install kafkalite[spark,testing] "pyspark[connect]"``, a full Java 17/21,
and a broker (``python -m kafkalite.testing up``)::

    python examples/spark_connect.py --bootstrap 127.0.0.1:9092

It writes 1,000 records, reads them back through the server, writes the upper-cased
values to a second topic with a streaming query (Trigger.AvailableNow), and stops.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from kafkalite import AdminClient, NewTopic, Producer
from kafkalite.testing.spark import SparkConnectServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    args = parser.parse_args()
    source, upper = f"connect-demo-{int(time.time())}", f"connect-demo-upper-{int(time.time())}"
    with AdminClient({"bootstrap.servers": args.bootstrap}) as admin:
        admin.create_topics([NewTopic(source, 2, 1), NewTopic(upper, 1, 1)]).raise_on_error()
    with Producer({"bootstrap.servers": args.bootstrap}) as producer:
        for i in range(1000):
            producer.send(source, f"hello {i}".encode())

    from pyspark.sql import SparkSession

    with SparkConnectServer("local[2]") as server:
        print(f"Spark Connect server at {server.url}")
        spark = SparkSession.builder.remote(server.url).getOrCreate()
        df = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", source).load())
        print(f"read {df.count()} records through Spark Connect")
        stream = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", args.bootstrap)
                  .option("subscribe", source).option("startingOffsets", "earliest").load())
        with tempfile.TemporaryDirectory() as checkpoint:
            query = (stream.selectExpr("upper(CAST(value AS STRING)) AS value").writeStream.format("kafkalite")
                     .option("kafka.bootstrap.servers", args.bootstrap).option("topic", upper)
                     .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
            query.awaitTermination()
        copied = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", args.bootstrap)
                  .option("subscribe", upper).load().selectExpr("CAST(value AS STRING) AS v"))
        print(f"{copied.count()} upper-cased records, e.g. {copied.first()['v']!r}")
        spark.stop()


if __name__ == "__main__":
    main()
