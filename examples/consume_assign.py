"""Read chosen partitions from a point in time, with no consumer group.

    python examples/consume_assign.py 127.0.0.1:9092 orders 3600

Reads every partition of the topic from the first record written in the last N seconds
to the current end, then stops.
"""

from __future__ import annotations

import sys
import time

from kafkalite import Consumer


def main(bootstrap: str, topic: str, seconds: int) -> None:
    with Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False}) as consumer:
        partitions = sorted(consumer.partitions_for(topic))
        consumer.assign(partitions)
        since_ms = int((time.time() - seconds) * 1000)
        starts = consumer.offsets_for_times({tp: since_ms for tp in partitions})
        ends = consumer.end_offsets(partitions)
        for tp in partitions:
            found = starts[tp]
            if found is None:
                consumer.pause([tp])  # nothing that recent
            else:
                consumer.seek(tp, found.offset)
        remaining = {tp for tp in partitions if starts[tp] is not None and starts[tp].offset < ends[tp]}
        count = 0
        while remaining:
            for record in consumer.poll(timeout=5.0):
                count += 1
                tp = record.topic_partition
                if record.offset + 1 >= ends[tp]:
                    remaining.discard(tp)
            for tp in list(remaining):
                if consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
        print(f"{count} records from the last {seconds} s")


if __name__ == "__main__":
    args = sys.argv[1:4] if len(sys.argv) >= 4 else ("127.0.0.1:9092", "orders", "3600")
    main(args[0], args[1], int(args[2]))
