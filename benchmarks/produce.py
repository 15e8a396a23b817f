"""Produce throughput: kafkalite vs confluent-kafka, kafka-python, aiokafka and Java.

One invocation, one broker (or, with ``--cluster``, also a 3-node cluster). For each
value size and codec every client sends the same number of records (one fixed payload,
as Kafka's ProducerPerformance does) to a fresh topic with ``acks=all`` and idempotence
on, and the clock stops when every record is acknowledged (flush). The table prints
msg/s, MB/s, CPU µs/msg and kafkalite / each peer; before the runs each client's
effective settings and calling pattern are printed.

Usage::

    .venv/bin/python benchmarks/produce.py                       # own broker, 1M records
    .venv/bin/python benchmarks/produce.py --messages 200000 --sizes 100 --codecs none
    .venv/bin/python benchmarks/produce.py --defaults            # every client at its own defaults
    .venv/bin/python benchmarks/produce.py --cluster             # also a 3-node cluster, replication 3
    .venv/bin/python benchmarks/produce.py --clients kafkalite,java --repeat 3
    KAFKALITE_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/produce.py
    .venv/bin/python benchmarks/produce.py --pure-python --clients kafkalite,kafka-python,aiokafka,confluent-kafka

Two modes. The default (tuned) mode sets for every client ``acks=all``, idempotence,
``compression.type``, ``linger.ms=5`` (the Java default) and ``batch.size=1000000``
(librdkafka's default, so confluent-kafka runs as it ships); ``--batch-size 0`` leaves
batch.size to each client. ``--defaults`` sets only ``acks=all``, idempotence and the
codec: everything else (linger, batch size, buffers, queue limits) is the library's own.

Each peer is called its fastest documented way (benchmarks/HISTORY.md, "Methods"):
confluent-kafka ``produce()`` without a per-message callback, ``poll(0)`` every
``--poll-every`` sends (default 1000) and on BufferError, queue.buffering.max.* left
at their defaults; ``confluent-kafka.cb`` is the same with a per-message delivery
callback (the pattern of confluent-kafka's own examples); ``confluent-kafka.flush``
never polls until BufferError / flush(). Peers are optional (``pip install
kafkalite[bench]``); a missing one is reported and skipped. Throughput means something
only on a quiet machine; the CPU column is comparable on a busy one too.

``--pure-python`` runs kafkalite without its C kernels (``KAFKALITE_PURE_PYTHON=1``, set
before kafkalite is imported): what users without the compiled extension get, against
the same peers in the same run (benchmarks/README.md, "Pure Python"). The peers run as
installed (aiokafka with its compiled record extensions, when its wheel has them).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    Broker,
    Row,
    choose_kernels,
    load,
    meter_provider,
    payload,
    print_settings,
    print_table,
    run_clients,
    tracer_provider,
    write_results,
)

LINGER_MS = 5


@dataclass
class Method:
    """What main() chose: each client's settings and confluent-kafka's poll cadence."""

    defaults: bool = False
    batch_size: int | None = 1_000_000
    poll_every: int = 1000


METHOD = Method()


def java_conf(bootstrap: str, codec: str) -> dict[str, Any]:
    """Settings for kafkalite, confluent-kafka and Java (Java names)."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                            "compression.type": codec}
    if not METHOD.defaults:
        conf["linger.ms"] = LINGER_MS
        if METHOD.batch_size:
            conf["batch.size"] = METHOD.batch_size
    return conf


def py_conf(bootstrap: str, codec: str, batch_key: str) -> dict[str, Any]:
    """Settings for kafka-python and aiokafka (keyword arguments; batch_key: their batch.size)."""
    kw: dict[str, Any] = {"bootstrap_servers": bootstrap, "acks": "all", "enable_idempotence": True,
                          "compression_type": None if codec == "none" else codec}
    if not METHOD.defaults:
        kw["linger_ms"] = LINGER_MS
        if METHOD.batch_size:
            kw[batch_key] = METHOD.batch_size
    return kw


def run_kafkalite_traced(bootstrap: str, topic: str, value: bytes, n: int, codec: str) -> tuple[float, float]:
    """send() with OpenTelemetry tracing on: a span and a traceparent header per record."""
    return run_kafkalite(bootstrap, topic, value, n, codec, tracer_provider())


def run_kafkalite_metered(bootstrap: str, topic: str, value: bytes, n: int, codec: str) -> tuple[float, float]:
    """send() with otel.meter.provider only: a duration histogram record per record, no span."""
    return run_kafkalite(bootstrap, topic, value, n, codec, meter=meter_provider())


def run_kafkalite(bootstrap: str, topic: str, value: bytes, n: int, codec: str,
                  tracer: object = None, meter: object = None) -> tuple[float, float]:
    from kafkalite import Producer

    conf = java_conf(bootstrap, codec)
    if tracer is not None:
        conf["otel.tracer.provider"] = tracer
    if meter is not None:
        conf["otel.meter.provider"] = meter
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


def run_kafkalite_many_traced(bootstrap: str, topic: str, value: bytes, n: int, codec: str) -> tuple[float, float]:
    """send_many() with tracing on: a span per call, its traceparent in every record's headers."""
    return run_kafkalite_many(bootstrap, topic, value, n, codec, tracer_provider())


def run_kafkalite_many(bootstrap: str, topic: str, value: bytes, n: int, codec: str,
                       tracer: object = None) -> tuple[float, float]:
    """kafkalite's bulk API: Producer.send_many in chunks of 10,000 (as the Spark sink does)."""
    from kafkalite import Producer

    conf = java_conf(bootstrap, codec)
    if tracer is not None:
        conf["otel.tracer.provider"] = tracer
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


def run_kafkalite_aio(bootstrap: str, topic: str, value: bytes, n: int, codec: str) -> tuple[float, float]:
    from kafkalite import aio

    async def main() -> tuple[float, float]:
        p = aio.Producer(java_conf(bootstrap, codec))
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


def _confluent(bootstrap: str, topic: str, value: bytes, n: int, codec: str, poll_every: int,
               callback: bool) -> tuple[float, float]:
    """produce() in a loop; poll(0) every ``poll_every`` sends (0: never) and on BufferError; flush().

    With ``callback`` every record carries an ``on_delivery`` callback (confluent-kafka's
    examples do that); poll() then calls into Python once per record.
    """
    from confluent_kafka import Producer

    p = Producer(java_conf(bootstrap, codec))
    p.produce(topic, value)
    p.flush(30)
    produce, poll = p.produce, p.poll
    delivered = [0]

    def on_delivery(err: object, msg: object) -> None:
        delivered[0] += 1

    kwargs = {"on_delivery": on_delivery} if callback else {}
    every = poll_every or n + 1
    started, cpu0 = time.perf_counter(), time.process_time()
    for i in range(n):
        while True:
            try:
                produce(topic, value, **kwargs)
                break
            except BufferError:  # local queue full: serve delivery reports, then retry
                poll(0.05)
        if i % every == 0:
            poll(0)
    p.flush()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    if callback and delivered[0] != n:
        raise RuntimeError(f"confluent-kafka delivered {delivered[0]} of {n}")
    return elapsed, cpu


def run_confluent(bootstrap: str, topic: str, value: bytes, n: int, codec: str) -> tuple[float, float]:
    return _confluent(bootstrap, topic, value, n, codec, METHOD.poll_every, callback=False)


def run_confluent_cb(bootstrap: str, topic: str, value: bytes, n: int, codec: str) -> tuple[float, float]:
    return _confluent(bootstrap, topic, value, n, codec, METHOD.poll_every, callback=True)


def run_confluent_flush(bootstrap: str, topic: str, value: bytes, n: int, codec: str) -> tuple[float, float]:
    return _confluent(bootstrap, topic, value, n, codec, 0, callback=False)


def run_kafka_python(bootstrap: str, topic: str, value: bytes, n: int, codec: str) -> tuple[float, float]:
    from kafka import KafkaProducer

    p = KafkaProducer(**py_conf(bootstrap, codec, "batch_size"))
    p.send(topic, value).get(30)
    send = p.send
    started, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        send(topic, value)
    p.flush()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    p.close()
    return elapsed, cpu


def run_aiokafka(bootstrap: str, topic: str, value: bytes, n: int, codec: str) -> tuple[float, float]:
    from aiokafka import AIOKafkaProducer

    async def main() -> tuple[float, float]:
        p = AIOKafkaProducer(**py_conf(bootstrap, codec, "max_batch_size"))
        await p.start()
        await p.send_and_wait(topic, value)
        send = p.send
        started, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            await send(topic, value)  # returns once appended to a batch (waits while the batch is full)
        await p.flush()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
        await p.stop()
        return elapsed, cpu

    return asyncio.run(main())


PY_CLIENTS: dict[str, Callable[[str, str, bytes, int, str], tuple[float, float]]] = {
    "kafkalite": run_kafkalite,
    "kafkalite.many": run_kafkalite_many,
    "kafkalite.aio": run_kafkalite_aio,
    "kafkalite.traced": run_kafkalite_traced,
    "kafkalite.many.traced": run_kafkalite_many_traced,
    "kafkalite.metered": run_kafkalite_metered,
    "confluent-kafka": run_confluent,
    "confluent-kafka.cb": run_confluent_cb,
    "confluent-kafka.flush": run_confluent_flush,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}
DEFAULT_CLIENTS = ["kafkalite", "kafkalite.many", "kafkalite.aio", "kafkalite.traced", "confluent-kafka",
                   "kafka-python", "aiokafka", "java"]


def how_called(name: str) -> str:
    every = f"poll(0) every {METHOD.poll_every} sends" if METHOD.poll_every else "no poll()"
    return {
        "kafkalite": "send() per record, flush()",
        "kafkalite.many": "send_many() per 10,000 records, flush()",
        "kafkalite.aio": "await send() per record, await flush()",
        "kafkalite.traced": "send() per record with a tracer, flush()",
        "kafkalite.many.traced": "send_many() per 10,000 records with a tracer, flush()",
        "kafkalite.metered": "send() per record with a meter provider only, flush()",
        "confluent-kafka": f"produce() without callback, {every}, poll(0.05) on BufferError, flush()",
        "confluent-kafka.cb": f"produce(on_delivery=cb), {every}, poll(0.05) on BufferError, flush()",
        "confluent-kafka.flush": "produce() without callback, poll(0.05) only on BufferError, flush()",
        "kafka-python": "send() per record, flush()",
        "aiokafka": "await send() per record, await flush()",
        "java": "kafka-producer-perf-test --throughput -1",
    }[name]


def print_methods(wanted: list[str], codec: str) -> None:
    for name in wanted:
        library = name.split(".")[0]
        if library in ("kafkalite", "confluent-kafka", "java"):
            conf = java_conf("", codec)
        else:
            conf = py_conf("", codec, "batch_size" if library == "kafka-python" else "max_batch_size")
            conf.pop("bootstrap_servers")
        print_settings(name, "producer", conf, how_called(name))


def run_java(broker: Broker, topic: str, size: int, n: int, codec: str) -> float:
    """Kafka's ProducerPerformance; returns the elapsed time it implies (n / its rate)."""
    props = [f"{k}={str(v).lower() if isinstance(v, bool) else v}"
             for k, v in java_conf(broker.bootstrap, codec).items()]
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
    ap.add_argument("--defaults", action="store_true",
                    help="every client at its own defaults; only acks=all, idempotence and the codec are set")
    ap.add_argument("--poll-every", type=int, default=1000,
                    help="confluent-kafka: poll(0) every N sends (default 1000)")
    ap.add_argument("--cluster", action="store_true",
                    help="also run every case on a 3-node cluster (replication 3, min.insync.replicas 2)")
    ap.add_argument("--clients", default=",".join(DEFAULT_CLIENTS))
    ap.add_argument("--repeat", type=int, default=1, help="runs per client; the best is kept")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON (benchmarks/results/, charted by the docs)")
    ap.add_argument("--pure-python", action="store_true",
                    help="kafkalite without its C kernels (KAFKALITE_PURE_PYTHON=1); the peers as installed")
    args = ap.parse_args()
    kernels = choose_kernels(args.pure_python)
    METHOD.defaults, METHOD.batch_size, METHOD.poll_every = args.defaults, args.batch_size, args.poll_every
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in PY_CLIENTS and c != "java"]
    if unknown:
        ap.error(f"unknown clients {unknown}; choose from {[*PY_CLIENTS, 'java']}")
    targets: list[tuple[str, Broker]] = [("", Broker())]
    rows: list[Row] = []
    runs = 0
    try:
        if args.cluster:
            targets.append((" 3n", Broker(nodes=3)))
        for suffix, broker in targets:
            where = "3-node cluster, replication 3" if suffix else "one broker"
            for size in [int(s) for s in args.sizes.split(",")]:
                value = payload(size)
                for codec in args.codecs.split(","):
                    case = f"{size} B {codec}{suffix}"
                    mode = ("each client's defaults (acks=all, idempotent)" if args.defaults else
                            f"acks=all, idempotent, linger.ms={LINGER_MS}, "
                            + (f"batch.size={args.batch_size}" if args.batch_size else "each client's batch.size"))
                    print(f"{case}: {args.messages} records, {where}, {mode}, kafkalite kernels: {kernels}; "
                          f"{load()}", flush=True)
                    print_methods(wanted, codec)

                    def fresh_topic(name: str, size: int = size, codec: str = codec, broker: Broker = broker) -> str:
                        nonlocal runs
                        runs += 1
                        return broker.create_topic(f"bench-produce-{name}-{size}-{codec}-{time.time_ns()}-{runs}",
                                                   args.partitions)

                    clients: dict[str, Callable[[], float | tuple[float, float]]] = {}
                    for name in wanted:
                        if name == "java":
                            clients[name] = lambda s=size, c=codec, b=broker: run_java(
                                b, fresh_topic("java", broker=b), s, args.messages, c)
                        else:
                            fn = PY_CLIENTS[name]
                            clients[name] = lambda fn=fn, n=name, v=value, c=codec, b=broker: fn(
                                b.bootstrap, fresh_topic(n.replace(".", "-"), broker=b), v, args.messages, c)
                    rows.extend(run_clients(case, clients, args.messages, size, args.repeat))
    finally:
        for _, broker in targets:
            broker.close()
    print_table(rows)
    write_results(args.json, "produce", sys.argv, [
        {"case": r.case, "client": r.client, "msg_per_s": round(r.rate), "mb_per_s": round(r.mbs, 1),
         "cpu_us_per_msg": None if r.cpu_us is None else round(r.cpu_us, 2)} for r in rows], "msg/s")
    print(f"({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
