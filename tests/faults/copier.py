"""A transactional consume-transform-produce copier, run as a process of its own by
test_scenario_transactions.py (so that it can be SIGKILLed mid-transaction).

Usage: python copier.py BOOTSTRAP INPUT OUTPUT GROUP TXN_ID LOGFILE

The loop of docs/producer.md "Transactions": poll (read_committed), copy every record to
the same partition of OUTPUT with its headers (the checker's id travels along),
send the consumer's positions to the transaction, commit. Errors are handled as the
docs say — fatal: stop; otherwise abort and rewind to the committed offsets — and
logged as JSON lines (``commit``, ``abort`` with the error's class and flags). A fatal
error ends the process with exit code 3 (``fatal`` logged): its supervisor starts a
new one, as it would after a crash. SIGTERM finishes the current transaction and exits 0.
"""

from __future__ import annotations

import json
import signal
import sys
import time

from kafkalite import Consumer, OffsetAndMetadata, Producer
from kafkalite.errors import KafkaError, KafkaTimeoutError

bootstrap, source, target, group, txn_id, logfile = sys.argv[1:7]
out = open(logfile, "a", buffering=1)  # noqa: SIM115


def log(event: str, **fields: object) -> None:
    out.write(json.dumps({"t": time.time(), "event": event, **fields}) + "\n")
    out.flush()


stopping = False


def stop(*_: object) -> None:
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
                     "request.timeout.ms": 10_000,
                     "delivery.timeout.ms": 30_000, "max.block.ms": 60_000})
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                     "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                     "max.poll.records": 200, "session.timeout.ms": 10_000, "heartbeat.interval.ms": 500,
                     # static membership: a restarted copier takes its partitions over at once
                     "group.instance.id": txn_id})
producer.init_transactions(timeout=120)
log("started")
consumer.subscribe([source])


def rewind() -> None:
    assigned = consumer.assignment()
    committed = consumer.committed(assigned, timeout=60) if assigned else {}
    for tp in assigned:
        om = committed.get(tp)
        consumer.seek(tp, om.offset if om is not None else 0)


while not stopping:
    try:
        records = consumer.poll(0.5)
    except KafkaError as exc:
        if not exc.retriable:
            log("died", where="poll", error=repr(exc), type=type(exc).__name__)
            raise
        log("retry", where="poll", error=str(exc))
        continue
    if not records:
        continue
    producer.begin_transaction()
    try:
        for r in records:
            producer.send(target, r.value, key=r.key, partition=r.partition, headers=r.headers)
        offsets = {tp: OffsetAndMetadata(consumer.position(tp)) for tp in consumer.assignment()}
        producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
        while True:
            try:
                producer.commit_transaction(timeout=30)
                break
            except KafkaTimeoutError as exc:  # outcome unknown: the same call again (docs)
                log("commit-retry", error=str(exc))
        log("commit", records=len(records))
    except KafkaError as exc:
        kind = {"fatal": exc.fatal, "abortable": exc.abortable, "retriable": exc.retriable}
        if exc.fatal:  # docs: close this producer; a new process takes over
            log("fatal", where="transaction", error=repr(exc), type=type(exc).__name__, **kind)
            sys.exit(3)
        log("abort", error=str(exc), type=type(exc).__name__, **kind)
        while True:
            try:
                producer.abort_transaction(timeout=30)
                break
            except KafkaTimeoutError as again:
                log("abort-retry", error=str(again))
            except KafkaError as again:
                if not again.fatal:
                    raise
                log("fatal", where="abort", error=repr(again), type=type(again).__name__)
                sys.exit(3)
        rewind()
producer.close(30)
consumer.close(30)
log("closed")
