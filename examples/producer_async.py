"""The asyncio producer: ``send`` appends and returns an awaitable, ``send_and_wait`` waits.

    python examples/producer_async.py --bootstrap 127.0.0.1:9092
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from kafkalite import AdminClient, NewTopic
from kafkalite.aio import Producer
from kafkalite.errors import TopicExistsError


async def main(bootstrap: str, topic: str = "clicks") -> None:
    with AdminClient({"bootstrap.servers": bootstrap}) as admin, contextlib.suppress(TopicExistsError):
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)]).raise_on_error()

    async with Producer({"bootstrap.servers": bootstrap, "value.serializer": "str"}) as producer:
        # One record, waiting for the broker's acknowledgement:
        metadata = await producer.send_and_wait(topic, "hello")
        print("acknowledged:", metadata)

        # Many records: append quickly (no per-record round trip), await the futures later.
        futures = [await producer.send(topic, f"click-{i}", key=f"user-{i % 10}".encode()) for i in range(5000)]
        await producer.flush()
        last = await futures[-1]
        print(f"5000 records sent; the last one is at {last.topic}-{last.partition}@{last.offset}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", help="Kafka bootstrap servers (default: start a local broker)")
    args = parser.parse_args()
    if args.bootstrap:
        asyncio.run(main(args.bootstrap))
    else:
        from kafkalite.testing import LocalBroker

        print("starting a local Kafka broker ...")
        with LocalBroker() as broker:
            asyncio.run(main(broker.bootstrap))
