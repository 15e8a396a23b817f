"""Exactly-once consume-transform-produce: copy ``input`` to ``output`` in transactions.

Each poll's records and the consumer's positions are committed in one transaction, so
``output`` (read with ``isolation.level=read_committed``) gets every input record
exactly once, even if the program fails and restarts midway.

    python examples/producer_transactions.py --bootstrap 127.0.0.1:9092
"""

from __future__ import annotations

import argparse
import contextlib

from kafkalite import AdminClient, Consumer, NewTopic, OffsetAndMetadata, Producer
from kafkalite.errors import KafkaError, TopicExistsError


def setup(bootstrap: str, count: int) -> None:
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        for name in ("input", "output"):
            with contextlib.suppress(TopicExistsError):
                admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)]).raise_on_error()
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(count):
            producer.send("input", b"record-%d" % i, key=b"k%d" % (i % 10))


def copy(bootstrap: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "example-copier"})
    producer.init_transactions()  # fences any older copier with this id
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "example-copier",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe(["input"])
    copied = 0
    try:
        while copied < count:
            records = consumer.poll(1.0)
            if not records:
                continue
            producer.begin_transaction()
            try:
                for r in records:
                    producer.send("output", r.value.upper(), key=r.key)
                positions = {tp: OffsetAndMetadata(consumer.position(tp)) for tp in consumer.assignment()}
                producer.send_offsets_to_transaction(positions, consumer.group_metadata())
                producer.commit_transaction()
                copied += len(records)
            except KafkaError as exc:
                if exc.fatal:  # e.g. fenced by a newer instance: this one must stop
                    raise
                producer.abort_transaction()
                for tp, committed in consumer.committed(consumer.assignment()).items():
                    consumer.seek(tp, committed.offset if committed else 0)
        print(f"copied {copied} records exactly once")
    finally:
        consumer.close()
        producer.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", help="Kafka bootstrap servers (default: start a local broker)")
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()
    if args.bootstrap:
        setup(args.bootstrap, args.count)
        copy(args.bootstrap, args.count)
    else:
        from kafkalite.testing import LocalBroker

        print("starting a local Kafka broker ...")
        with LocalBroker() as broker:
            setup(broker.bootstrap, args.count)
            copy(broker.bootstrap, args.count)
