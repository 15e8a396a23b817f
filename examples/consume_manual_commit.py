"""At-least-once processing with manual commits, per partition, after processing.

    python examples/consume_manual_commit.py 127.0.0.1:9092 orders billing

Commits what was processed before partitions are revoked, so the next owner starts
right after it; commits only partitions this member still owns.
"""

from __future__ import annotations

import sys

from kafkalite import Consumer, ConsumerRebalanceListener, OffsetAndMetadata


def process(record) -> None:
    print(record.partition, record.offset, record.value)


def main(bootstrap: str, topic: str, group: str) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    processed: dict = {}

    class CommitOnRevoke(ConsumerRebalanceListener):
        def on_partitions_revoked(self, partitions):
            mine = {tp: om for tp, om in processed.items() if tp in partitions}
            if mine:
                consumer.commit(mine)  # still owned here: the commit is allowed
            for tp in partitions:
                processed.pop(tp, None)

    consumer.subscribe([topic], listener=CommitOnRevoke())
    try:
        while True:
            records = consumer.poll(timeout=1.0)
            for tp in records.partitions():
                batch = records.records(tp)
                for record in batch:
                    process(record)
                # the committed offset is the NEXT one to read
                processed[tp] = OffsetAndMetadata(batch[-1].offset + 1)
            if processed:
                consumer.commit_async(dict(processed), callback=lambda offsets, err: err and print("commit failed:", err))
    except KeyboardInterrupt:
        pass
    finally:
        if processed:
            consumer.commit(processed)
        consumer.close()


if __name__ == "__main__":
    main(*(sys.argv[1:4] if len(sys.argv) >= 4 else ("127.0.0.1:9092", "orders", "example-manual")))
