"""Read a topic as a member of a consumer group, with a rebalance listener.

    python examples/consume_group.py 127.0.0.1:9092 orders billing

Start it several times: the members share the topic's partitions. Ctrl-C closes
cleanly (commits, revokes, leaves the group).
"""

from __future__ import annotations

import sys

from kafkalite import Consumer, ConsumerRebalanceListener


class Report(ConsumerRebalanceListener):
    def on_partitions_assigned(self, partitions):
        print("assigned:", sorted(str(tp) for tp in partitions))

    def on_partitions_revoked(self, partitions):
        print("revoked:", sorted(str(tp) for tp in partitions))


def main(bootstrap: str, topic: str, group: str) -> None:
    settings = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky",
    }
    with Consumer(settings) as consumer:
        consumer.subscribe([topic], listener=Report())
        try:
            while True:
                for record in consumer.poll(timeout=1.0):
                    print(f"{record.topic}-{record.partition}@{record.offset}: {record.key!r} {record.value!r}")
        except KeyboardInterrupt:
            print("closing")


if __name__ == "__main__":
    main(*(sys.argv[1:4] if len(sys.argv) >= 4 else ("127.0.0.1:9092", "orders", "example-group")))
