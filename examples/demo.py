"""kafkalite's tour: create a topic, start a consumer group, produce keyed events into it.

Run it against any broker::

    python examples/demo.py --bootstrap 127.0.0.1:9092

or let ``bash scripts/demo.sh`` start a local Kafka (no Docker needed) and run it.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import Counter

from kafkalite import AdminClient, Consumer, NewTopic, Producer
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="demo-orders")
    parser.add_argument("--count", type=int, default=10_000)
    args = parser.parse_args()
    create_topic(args.bootstrap, args.topic, partitions=6)
    consume_while_producing(args.bootstrap, args.topic, args.count)


if __name__ == "__main__":
    main()
