"""The asyncio consumer, KIP-848 group protocol, coroutine listener.

    python examples/consume_async.py 127.0.0.1:9092 orders billing
"""

from __future__ import annotations

import asyncio
import sys

from kafkalite import aio


class Listener:
    async def on_partitions_assigned(self, partitions):
        print("assigned:", sorted(str(tp) for tp in partitions))

    async def on_partitions_revoked(self, partitions):
        print("revoked:", sorted(str(tp) for tp in partitions))


async def main(bootstrap: str, topic: str, group: str) -> None:
    settings = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                "auto.offset.reset": "earliest"}
    async with aio.Consumer(settings) as consumer:
        consumer.subscribe([topic], listener=Listener())
        async for record in consumer:
            print(f"{record.topic}-{record.partition}@{record.offset}: {record.value!r}")


if __name__ == "__main__":
    args = sys.argv[1:4] if len(sys.argv) >= 4 else ("127.0.0.1:9092", "orders", "example-async")
    try:
        asyncio.run(main(*args))
    except KeyboardInterrupt:
        pass
