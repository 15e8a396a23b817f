"""format("kafkalite") on a Spark standalone cluster: a master and two workers started
from the PySpark wheel on this machine, a driver whose executors are JVMs of their own.

Needs ``pip install kafkalite[spark,testing]``, a full Java 17/21, and a broker
(``python -m kafkalite.testing up``)::

    python examples/spark_cluster.py --bootstrap 127.0.0.1:9092

It writes 10,000 records to a new topic, counts them per partition on the cluster,
copies them to a second topic, and shows which executor JVMs did the work. On a real
cluster only the master URL changes, and kafkalite must be where the executors' Python
finds it (docs/spark.md, "Running on a cluster").
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from kafkalite import AdminClient, NewTopic, Producer
from kafkalite.testing.spark import SparkStandaloneCluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    args = parser.parse_args()
    source, copy = f"cluster-demo-{int(time.time())}", f"cluster-demo-copy-{int(time.time())}"
    with AdminClient({"bootstrap.servers": args.bootstrap}) as admin:
        admin.create_topics([NewTopic(source, 4, 1), NewTopic(copy, 2, 1)]).raise_on_error()
    with Producer({"bootstrap.servers": args.bootstrap}) as producer:
        for i in range(10_000):
            producer.send(source, f"event-{i}".encode(), key=f"user-{i % 50}".encode())

    # Python data sources run the interpreter the driver's PYSPARK_PYTHON names, on the
    # driver and on the executors: here the same machine, so this one.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with SparkStandaloneCluster(workers=2) as cluster:
        print(f"cluster up at {cluster.master_url} with {cluster.alive_workers()} workers")
        spark = cluster.session("kafkalite-cluster-example",
                                **{"spark.cores.max": "2",  # the ratio below counts against cores.max
                                   "spark.scheduler.minRegisteredResourcesRatio": "1.0"})
        df = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", source).load())
        for row in df.groupBy("partition").count().orderBy("partition").collect():
            print(f"  partition {row['partition']}: {row['count']} records")
        (df.selectExpr("key", "value").write.format("kafkalite")
         .option("kafka.bootstrap.servers", args.bootstrap).option("topic", copy).mode("append").save())
        print(f"copied to {copy}; executor JVMs: {cluster.executor_pids()}")
        spark.stop()


if __name__ == "__main__":
    main()
