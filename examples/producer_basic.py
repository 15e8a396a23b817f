"""The blocking producer: keyed JSON events, callbacks, headers, flush and metrics.

Run against any broker (the topic is created if missing)::

    python examples/producer_basic.py --bootstrap 127.0.0.1:9092

Without ``--bootstrap`` a local Kafka is started with ``kafkalite.testing`` (no Docker).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections import Counter

from kafkalite import AdminClient, NewTopic, Producer
from kafkalite.errors import KafkaError, TopicExistsError


def main(bootstrap: str, topic: str = "orders") -> None:
    with AdminClient({"bootstrap.servers": bootstrap}) as admin, contextlib.suppress(TopicExistsError):
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)]).raise_on_error()

    delivered: Counter[int] = Counter()

    def on_delivery(metadata, error: KafkaError | None) -> None:
        # Runs on the producer's I/O thread, in send order per partition: keep it quick.
        if error is not None:
            print(f"failed: {error}")
        else:
            delivered[metadata.partition] += 1

    settings = {
        "bootstrap.servers": bootstrap,
        "key.serializer": "str",
        "value.serializer": "json",
        "linger.ms": 10,
        "compression.type": "lz4",
    }
    with Producer(settings) as producer:  # idempotent, acks=all by default
        first = producer.send(topic, key="customer-1", value={"order": 0, "qty": 1})
        print("first record at", first.result(timeout=30))
        for i in range(1, 10_000):
            producer.send(topic, key=f"customer-{i % 100}", value={"order": i, "qty": i % 7},
                          headers=[("source", b"example")], callback=on_delivery)
        started = time.monotonic()
        producer.flush()
        print(f"flushed in {time.monotonic() - started:.2f}s; per partition: {dict(delivered)}")
        metrics = producer.metrics()
        print("record-send-total", metrics["record-send-total"], "batch-size-avg", round(metrics["batch-size-avg"]),
              "compression-rate-avg", round(metrics["compression-rate-avg"], 3))
    # Leaving the with block flushed and closed the producer.


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", help="Kafka bootstrap servers (default: start a local broker)")
    args = parser.parse_args()
    if args.bootstrap:
        main(args.bootstrap)
    else:
        from kafkalite.testing import LocalBroker

        print("starting a local Kafka broker ...")
        with LocalBroker() as broker:
            main(broker.bootstrap)
