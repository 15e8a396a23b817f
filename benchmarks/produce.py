"""Produce throughput: kafkalite vs confluent-kafka, kafka-python, aiokafka and Java.

One invocation, one broker. For each value size and codec every client sends the same
number of records (one fixed payload, as Kafka's ProducerPerformance does) to a fresh
topic with ``acks=all`` and idempotence on, and the clock stops when every record is
acknowledged (flush). The table prints msg/s, MB/s and kafkalite / each peer.

Usage::

    .venv/bin/python benchmarks/produce.py                       # own broker, 1M records
    .venv/bin/python benchmarks/produce.py --messages 200000 --sizes 100 --codecs none
    .venv/bin/python benchmarks/produce.py --clients kafkalite,java --repeat 3
    KAFKALITE_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/produce.py

Every client runs with ``acks=all``, idempotence, ``compression.type``,
``linger.ms=5`` (the Java default) and ``batch.size=1000000`` (librdkafka's default,
so confluent-kafka runs as it ships) set the same for all; ``--batch-size 0`` leaves
each client its own default (Java's and kafkalite's 16 KiB, librdkafka's 1 MB,
aiokafka's and kafka-python's 16 KiB). Peers are optional (``pip install
kafkalite[bench]``); a missing one is reported and skipped. Throughput means something
only on a quiet machine: run it alone. The CPU column (this process's CPU time per
message, all threads) is comparable on a busy machine too.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Broker, Row, meter_provider, payload, print_table, run_clients, tracer_provider

LINGER_MS = 5


def run_kafkalite_traced(bootstrap: str, topic: str, value: bytes, n: int, codec: str,
                         batch_size: int | None) -> tuple[float, float]:
    """send() with OpenTelemetry tracing on: a span and a traceparent header per record."""
    return run_kafkalite(bootstrap, topic, value, n, codec, batch_size, tracer_provider())


def run_kafkalite_metered(bootstrap: str, topic: str, value: bytes, n: int, codec: str,
                          batch_size: int | None) -> tuple[float, float]:
    """send() with otel.meter.provider only: a duration histogram record per record, no span."""
    return run_kafkalite(bootstrap, topic, value, n, codec, batch_size, meter=meter_provider())


def run_kafkalite(bootstrap: str, topic: str, value: bytes, n: int, codec: str, batch_size: int | None,
                  tracer: object = None, meter: object = None) -> tuple[float, float]:
    from kafkalite import Producer

    conf = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
            "compression.type": codec, "linger.ms": LINGER_MS, "otel.tracer.provider": tracer,
            "otel.meter.provider": meter}
    if batch_size:
        conf["batch.size"] = batch_size
    p = Producer(conf)
    p.send(topic, value).result(30)  # metadata and producer id before the clock starts
    send = p.send
    started, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        send(topic, value)
    p.flush()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    p.close()
    return elapsed, cpu


def run_kafkalite_many_traced(bootstrap: str, topic: str, value: bytes, n: int, codec: str,
                              batch_size: int | None) -> tuple[float, float]:
    """send_many() with tracing on: a span per call, its traceparent in every record's headers."""
    return run_kafkalite_many(bootstrap, topic, value, n, codec, batch_size, tracer_provider())


def run_kafkalite_many(bootstrap: str, topic: str, value: bytes, n: int, codec: str,
                       batch_size: int | None, tracer: object = None) -> tuple[float, float]:
    """kafkalite's bulk API: Producer.send_many in chunks of 10,000 (as the Spark sink does)."""
    from kafkalite import Producer

    conf = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
            "compression.type": codec, "linger.ms": LINGER_MS, "otel.tracer.provider": tracer}
    if batch_size:
        conf["batch.size"] = batch_size
    p = Producer(conf)
    p.send(topic, value).result(30)
    chunk = [value] * 10_000
    outcomes = []
    started, cpu0 = time.perf_counter(), time.process_time()
    for start in range(0, n, len(chunk)):
        outcomes.append(p.send_many(topic, chunk if n - start >= len(chunk) else chunk[: n - start]))
    p.flush()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    for outcome in outcomes:
        outcome.result()
    p.close()
    return elapsed, cpu


def run_kafkalite_aio(bootstrap: str, topic: str, value: bytes, n: int, codec: str, batch_size: int | None) -> tuple[float, float]:
    from kafkalite import aio

    async def main() -> tuple[float, float]:
        conf = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                "compression.type": codec, "linger.ms": LINGER_MS}
        if batch_size:
            conf["batch.size"] = batch_size
        p = aio.Producer(conf)
        await p.send_and_wait(topic, value)
        send = p.send
        started, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            await send(topic, value)
        await p.flush()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
        await p.close()
        return elapsed, cpu

    return asyncio.run(main())


def run_confluent(bootstrap: str, topic: str, value: bytes, n: int, codec: str, batch_size: int | None) -> tuple[float, float]:
    from confluent_kafka import Producer

    conf = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
            "compression.type": codec, "linger.ms": LINGER_MS}
    if batch_size:
        conf["batch.size"] = batch_size
    p = Producer(conf)
    p.produce(topic, value)
    p.flush(30)
    produce, poll = p.produce, p.poll
    started, cpu0 = time.perf_counter(), time.process_time()
    for i in range(n):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:  # local queue full: serve delivery reports, then retry
                poll(0.05)
        if i & 1023 == 0:
            poll(0)
    p.flush()
    return time.perf_counter() - started, time.process_time() - cpu0


def run_kafka_python(bootstrap: str, topic: str, value: bytes, n: int, codec: str, batch_size: int | None) -> tuple[float, float]:
    from kafka import KafkaProducer

    kw = {"bootstrap_servers": bootstrap, "acks": "all", "enable_idempotence": True, "linger_ms": LINGER_MS,
          "compression_type": None if codec == "none" else codec}
    if batch_size:
        kw["batch_size"] = batch_size
    p = KafkaProducer(**kw)
    p.send(topic, value).get(30)
    send = p.send
    started, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        send(topic, value)
    p.flush()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    p.close()
    return elapsed, cpu


def run_aiokafka(bootstrap: str, topic: str, value: bytes, n: int, codec: str, batch_size: int | None) -> tuple[float, float]:
    from aiokafka import AIOKafkaProducer

    async def main() -> tuple[float, float]:
        kw = {"bootstrap_servers": bootstrap, "acks": "all", "enable_idempotence": True, "linger_ms": LINGER_MS,
              "compression_type": None if codec == "none" else codec}
        if batch_size:
            kw["max_batch_size"] = batch_size
        p = AIOKafkaProducer(**kw)
        await p.start()
        await p.send_and_wait(topic, value)
        send = p.send
        started, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            await send(topic, value)
        await p.flush()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
        await p.stop()
        return elapsed, cpu

    return asyncio.run(main())


PY_CLIENTS: dict[str, Callable[[str, str, bytes, int, str, int | None], tuple[float, float]]] = {
    "kafkalite": run_kafkalite,
    "kafkalite.many": run_kafkalite_many,
    "kafkalite.aio": run_kafkalite_aio,
    "kafkalite.traced": run_kafkalite_traced,
    "kafkalite.many.traced": run_kafkalite_many_traced,
    "kafkalite.metered": run_kafkalite_metered,
    "confluent-kafka": run_confluent,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}


def run_java(broker: Broker, topic: str, size: int, n: int, codec: str, batch_size: int | None) -> float:
    """Kafka's ProducerPerformance; returns the elapsed time it implies (n / its rate)."""
    props = [f"bootstrap.servers={broker.bootstrap}", "acks=all", "enable.idempotence=true",
             f"compression.type={codec}", f"linger.ms={LINGER_MS}"]
    if batch_size:
        props.append(f"batch.size={batch_size}")
    out = broker.run_tool("kafka-producer-perf-test", [
        "--topic", topic, "--num-records", str(n), "--record-size", str(size), "--throughput", "-1",
        "--producer-props", *props])
    # last line: "N records sent, R records/sec (M MB/sec), ... avg latency, ..."
    match = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", out)
    if not match:
        raise RuntimeError(f"cannot parse ProducerPerformance output:\n{out[-1000:]}")
    return n / float(match[-1][1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--codecs", default="none,lz4")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=1_000_000,
                    help="batch.size for every client (default 1000000, librdkafka's own; 0: each client's default)")
    ap.add_argument("--clients", default=",".join([*PY_CLIENTS, "java"]))
    ap.add_argument("--repeat", type=int, default=1, help="runs per client; the best is kept")
    args = ap.parse_args()
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in PY_CLIENTS and c != "java"]
    if unknown:
        ap.error(f"unknown clients {unknown}; choose from {[*PY_CLIENTS, 'java']}")
    broker = Broker()
    rows: list[Row] = []
    runs = 0
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            value = payload(size)
            for codec in args.codecs.split(","):
                case = f"{size} B {codec}"
                batching = f"batch.size={args.batch_size}" if args.batch_size else "each client's batch.size"
                print(f"{case}: {args.messages} records, acks=all, idempotent, linger.ms={LINGER_MS}, {batching}",
                      flush=True)

                def fresh_topic(name: str, size: int = size, codec: str = codec) -> str:
                    nonlocal runs
                    runs += 1
                    return broker.create_topic(f"bench-produce-{name}-{size}-{codec}-{time.time_ns()}-{runs}",
                                               args.partitions)

                clients: dict[str, Callable[[], float | tuple[float, float]]] = {}
                for name in wanted:
                    if name == "java":
                        clients[name] = lambda s=size, c=codec: run_java(
                            broker, fresh_topic("java"), s, args.messages, c, args.batch_size)
                    else:
                        fn = PY_CLIENTS[name]
                        clients[name] = lambda fn=fn, n=name, v=value, c=codec: fn(
                            broker.bootstrap, fresh_topic(n.replace(".", "-")), v, args.messages, c,
                            args.batch_size)
                rows.extend(run_clients(case, clients, args.messages, size, args.repeat))
    finally:
        broker.close()
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
