"""Consume throughput: kafkalite vs confluent-kafka, kafka-python, aiokafka and Java.

One invocation, one broker, the same topics for everyone. For each value size and
codec a topic is filled once with Kafka's own ProducerPerformance, then every client
reads it from the beginning to the end, touching each record's value (``len()``), and
the table prints msg/s, MB/s and each client's ratio to kafkalite.

Usage::

    .venv/bin/python benchmarks/consume.py                      # starts its own broker
    .venv/bin/python benchmarks/consume.py --messages 200000 --sizes 100 --codecs none
    KAFKALITE_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/consume.py
    .venv/bin/python benchmarks/consume.py --pure-python --clients kafkalite,kafka-python,aiokafka,confluent-kafka

Records per call: ``--batch`` (default 2000) for every client: kafkalite
``poll(max_records=)`` (``max.poll.records``), confluent-kafka ``consume(num_messages=)``,
kafka-python ``poll(max_records=)``, aiokafka ``getmany(max_records=)``.
``confluent-kafka.poll`` calls ``poll()`` once per record (confluent-kafka's basic
consume loop). ``--defaults`` gives every client its own defaults instead: kafkalite
and kafka-python ``max.poll.records`` 500, aiokafka ``getmany()`` without a limit,
confluent-kafka ``consume(num_messages=500)`` (its API default is 1, which is what
``confluent-kafka.poll`` measures). Each client's effective settings are printed before
the runs.

Peers are optional (``pip install kafkalite[bench]``); a missing one is reported and
skipped. Numbers mean something only on a quiet machine: run it alone.

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
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Broker, Row, choose_kernels, load, print_settings, print_table, run_clients

BATCH = 2000  # records per poll()/getmany()/consume() call, the same for every client (--batch)
DEFAULTS = False  # --defaults: each client's own records per call


# ---------------------------------------------------------------- data


def fill_with_trace_context(broker: Broker, topic: str, messages: int, size: int, codec: str) -> None:
    """Write ``messages`` records of ``size`` bytes, each with its own W3C ``traceparent``
    header, as a traced producer sends them (kafkalite's producer, untraced, sets them)."""
    import os

    from kafkalite import Producer

    value = b"x" * size
    with Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 20,
                   "batch.size": 262144, "acks": 1}) as producer:
        for _ in range(messages):
            ids = os.urandom(24).hex()
            producer.send(topic, value, headers=[("traceparent", f"00-{ids[:32]}-{ids[32:]}-01".encode())])
        producer.flush()


def fill(broker: Broker, topic: str, messages: int, size: int, codec: str) -> None:
    """Write ``messages`` records of ``size`` bytes with Kafka's own ProducerPerformance."""
    broker.run_tool("kafka-producer-perf-test", [
        "--topic", topic, "--num-records", str(messages), "--record-size", str(size), "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={broker.bootstrap}", f"compression.type={codec}",
        "linger.ms=20", "batch.size=262144", "acks=1"], timeout=600)


# ---------------------------------------------------------------- clients


def run_kafkalite_traced(bootstrap: str, topic: str, partitions: int, messages: int) -> tuple[float, float]:
    """poll() with OpenTelemetry tracing on: a receive span per poll (linking producers)."""
    from common import tracer_provider

    return run_kafkalite(bootstrap, topic, partitions, messages, tracer_provider())


def run_kafkalite_traced_process(bootstrap: str, topic: str, partitions: int, messages: int) -> tuple[float, float]:
    """Traced poll() plus a process_span() per record (the producer's context as its parent)."""
    from common import tracer_provider

    return run_kafkalite(bootstrap, topic, partitions, messages, tracer_provider(), process=True)


def run_kafkalite_metered(bootstrap: str, topic: str, partitions: int, messages: int) -> tuple[float, float]:
    """poll() with otel.meter.provider only: a duration histogram record per poll, no span."""
    from common import meter_provider

    return run_kafkalite(bootstrap, topic, partitions, messages, meter=meter_provider())


def run_kafkalite(bootstrap: str, topic: str, partitions: int, messages: int,
                  tracer: object = None, meter: object = None, process: bool = False) -> tuple[float, float]:
    from kafkalite import Consumer, TopicPartition
    from kafkalite.otel import process_span

    conf: dict[str, object] = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                               "enable.auto.commit": False, "otel.tracer.provider": tracer,
                               "otel.meter.provider": meter}
    if not DEFAULTS:
        conf["max.poll.records"] = BATCH
    c = Consumer(conf)
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    n = 0
    nbytes = 0
    started, cpu0 = time.perf_counter(), time.process_time()
    while n < messages:
        for r in c.poll(5.0):
            if process:
                with process_span(r, c):
                    nbytes += len(r.value)
            else:
                nbytes += len(r.value)
            n += 1
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    c.close()
    return elapsed, cpu


def run_kafkalite_aio(bootstrap: str, topic: str, partitions: int, messages: int) -> tuple[float, float]:
    from kafkalite import TopicPartition, aio

    async def main() -> tuple[float, float]:
        conf: dict[str, object] = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                                   "enable.auto.commit": False}
        if not DEFAULTS:
            conf["max.poll.records"] = BATCH
        c = aio.Consumer(conf)
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        n = 0
        nbytes = 0
        started, cpu0 = time.perf_counter(), time.process_time()
        while n < messages:
            for r in await c.poll(5.0):
                nbytes += len(r.value)
                n += 1
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
        await c.close()
        return elapsed, cpu

    return asyncio.run(main())


def run_confluent_poll(bootstrap: str, topic: str, partitions: int, messages: int) -> tuple[float, float]:
    """confluent-kafka's basic consume loop: poll() returns one message per call."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time()}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    n = 0
    nbytes = 0
    poll = c.poll
    started, cpu0 = time.perf_counter(), time.process_time()
    while n < messages:
        m = poll(5.0)
        if m is None or m.error():
            continue
        nbytes += len(m.value() or b"")
        n += 1
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    c.close()
    return elapsed, cpu


def run_confluent(bootstrap: str, topic: str, partitions: int, messages: int) -> tuple[float, float]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    batch = 500 if DEFAULTS else BATCH

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time()}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    n = 0
    nbytes = 0
    started, cpu0 = time.perf_counter(), time.process_time()
    while n < messages:
        for m in c.consume(batch, 5.0):
            if m.error():
                continue
            nbytes += len(m.value() or b"")
            n += 1
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    c.close()
    return elapsed, cpu


def run_kafka_python(bootstrap: str, topic: str, partitions: int, messages: int) -> tuple[float, float]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    c.seek_to_beginning()
    n = 0
    nbytes = 0
    started, cpu0 = time.perf_counter(), time.process_time()
    while n < messages:
        for records in c.poll(timeout_ms=5000, max_records=None if DEFAULTS else BATCH).values():
            for r in records:
                nbytes += len(r.value)
                n += 1
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    c.close()
    return elapsed, cpu


def run_aiokafka(bootstrap: str, topic: str, partitions: int, messages: int) -> tuple[float, float]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> tuple[float, float]:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
        await c.start()
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        await c.seek_to_beginning()
        n = 0
        nbytes = 0
        started, cpu0 = time.perf_counter(), time.process_time()
        while n < messages:
            batches = await c.getmany(timeout_ms=5000, max_records=None if DEFAULTS else BATCH)
            for records in batches.values():
                for r in records:
                    nbytes += len(r.value)
                    n += 1
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
        await c.stop()
        return elapsed, cpu

    return asyncio.run(main())


CLIENTS: dict[str, Callable[[str, str, int, int], tuple[float, float]]] = {
    "kafkalite": run_kafkalite,
    "kafkalite.aio": run_kafkalite_aio,
    "kafkalite.traced": run_kafkalite_traced,
    "kafkalite.traced.process": run_kafkalite_traced_process,
    "kafkalite.metered": run_kafkalite_metered,
    "confluent-kafka": run_confluent,
    "confluent-kafka.poll": run_confluent_poll,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}


DEFAULT_CLIENTS = ["kafkalite", "kafkalite.aio", "kafkalite.traced", "confluent-kafka", "kafka-python", "aiokafka",
                   "java"]


def print_methods(wanted: list[str]) -> None:
    per_call = "each client's default" if DEFAULTS else str(BATCH)
    for name in wanted:
        how = {
            "kafkalite": f"poll() (records per call: {500 if DEFAULTS else BATCH})",
            "kafkalite.aio": f"await poll() (records per call: {500 if DEFAULTS else BATCH})",
            "kafkalite.traced": f"poll() with a tracer (records per call: {500 if DEFAULTS else BATCH})",
            "kafkalite.traced.process": f"poll() with a tracer and a process_span() per record "
                                        f"(records per call: {500 if DEFAULTS else BATCH})",
            "kafkalite.metered": f"poll() with a meter provider only (records per call: {500 if DEFAULTS else BATCH})",
            "confluent-kafka": f"consume(num_messages={500 if DEFAULTS else BATCH})",
            "confluent-kafka.poll": "poll() per record",
            "kafka-python": f"poll(max_records={'None: max_poll_records' if DEFAULTS else BATCH})",
            "aiokafka": f"getmany(max_records={'None: all buffered' if DEFAULTS else BATCH})",
            "java": "kafka-consumer-perf-test (its fetch.time.ms)",
        }[name]
        print_settings(name, "consumer", {} if DEFAULTS or name.startswith("confluent") else
                       {"max.poll.records" if name.startswith("kafkalite") else "max_poll_records": per_call}, how)


def run_java(broker: Broker, topic: str, messages: int) -> float:
    out = broker.run_tool("kafka-consumer-perf-test", [
        "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", str(messages),
        "--timeout", "60000", "--group", f"bench-java-{time.time()}"], timeout=600)
    # header: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, ...
    # fetch.time.ms (the time spent fetching after the group formed) is the fair number.
    lines = [line for line in out.splitlines() if re.match(r"^\d{4}-", line)]
    fields = [f.strip() for f in lines[-1].split(",")]
    fetch_ms = float(fields[7])
    return fetch_ms / 1000.0


# ---------------------------------------------------------------- main


def main() -> int:
    global BATCH, DEFAULTS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--codecs", default="none,lz4")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--batch", type=int, default=BATCH, help="records per poll/consume/getmany call, every client")
    ap.add_argument("--defaults", action="store_true", help="every client at its own defaults (records per call too)")
    ap.add_argument("--clients", default=",".join(DEFAULT_CLIENTS))
    ap.add_argument("--repeat", type=int, default=1, help="runs per client; the best is kept")
    ap.add_argument("--trace-context", action="store_true",
                    help="fill the topic with records that each carry a W3C traceparent header "
                         "(written by kafkalite's producer instead of ProducerPerformance)")
    ap.add_argument("--pure-python", action="store_true",
                    help="kafkalite without its C kernels (KAFKALITE_PURE_PYTHON=1); the peers as installed")
    args = ap.parse_args()
    kernels = choose_kernels(args.pure_python)
    BATCH, DEFAULTS = args.batch, args.defaults
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CLIENTS and c != "java"]
    if unknown:
        ap.error(f"unknown clients {unknown}; choose from {[*CLIENTS, 'java']}")
    broker = Broker()
    rows: list[Row] = []
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            for codec in args.codecs.split(","):
                case = f"{size} B {codec}" + (" traceparent" if args.trace_context else "")
                kind = "-tp" if args.trace_context else ""
                topic = broker.create_topic(f"bench-consume-{size}-{codec}-{args.partitions}-{args.messages}{kind}",
                                            args.partitions)
                print(f"{case}: filling {topic} with {args.messages} records ...", flush=True)
                (fill_with_trace_context if args.trace_context else fill)(broker, topic, args.messages, size, codec)
                per_call = "each client's defaults" if DEFAULTS else f"{BATCH} records per call"
                print(f"{case}: {per_call}, kafkalite kernels: {kernels}; {load()}", flush=True)
                print_methods(wanted)
                clients: dict[str, Callable[[], float | tuple[float, float]]] = {}
                for name in wanted:
                    if name == "java":
                        clients[name] = partial(run_java, broker, topic, args.messages)
                    else:
                        clients[name] = partial(CLIENTS[name], broker.bootstrap, topic, args.partitions,
                                                args.messages)
                rows.extend(run_clients(case, clients, args.messages, size, args.repeat))
    finally:
        broker.close()
    print_table(rows)
    print(f"({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
