"""A consumer group member run as a subprocess by test_consumer_groups.py.

Usage: python group_member.py BOOTSTRAP TOPIC GROUP PROTOCOL STRATEGY LOGFILE [INSTANCE_ID]

Writes one JSON line per event to LOGFILE (flushed at once, so a SIGKILL loses
nothing already logged): assigned / revoked / lost with partitions and the owned set
afterwards, and records with (partition, offset) pairs, each with time.time(). SIGTERM
closes the consumer cleanly (commit, revoke, leave).

Environment: ``MEMBER_SESSION_TIMEOUT_MS`` (classic; default 6000),
``MEMBER_MAX_POLL_INTERVAL_MS`` (classic: also the rebalance timeout; default 300000) and
``MEMBER_COMMIT_EACH_POLL=1``: the plainest correct loop instead of auto-commit —
poll, process, ``commit()`` after every poll, catching only errors whose ``retriable``
is true (logged as ``retry``); any other error ends the process (logged as ``died``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from kafkalite import Consumer, ConsumerRebalanceListener
from kafkalite.errors import KafkaError

bootstrap, topic, group, protocol, strategy, logfile = sys.argv[1:7]
instance = sys.argv[7] if len(sys.argv) > 7 else None
out = open(logfile, "a", buffering=1)  # noqa: SIM115


def log(event: str, **fields: object) -> None:
    out.write(json.dumps({"t": time.time(), "event": event, **fields}) + "\n")
    out.flush()


commit_each_poll = os.environ.get("MEMBER_COMMIT_EACH_POLL") == "1"
conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
        "auto.offset.reset": "earliest", "auto.commit.interval.ms": 500, "max.poll.records": 50,
        "enable.auto.commit": not commit_each_poll}
if protocol == "classic":
    conf.update({"partition.assignment.strategy": strategy,
                 "session.timeout.ms": int(os.environ.get("MEMBER_SESSION_TIMEOUT_MS", "6000")),
                 "max.poll.interval.ms": int(os.environ.get("MEMBER_MAX_POLL_INTERVAL_MS", "300000")),
                 "heartbeat.interval.ms": 500})
if instance:
    conf["group.instance.id"] = instance
consumer = Consumer(conf)


class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, partitions):
        log("revoked", partitions=sorted(tp.partition for tp in partitions))

    def on_partitions_assigned(self, partitions):
        log("assigned", partitions=sorted(tp.partition for tp in partitions),
            owned=sorted(tp.partition for tp in consumer.assignment()))

    def on_partitions_lost(self, partitions):
        log("lost", partitions=sorted(tp.partition for tp in partitions))


stopping = False


def stop(*_: object) -> None:
    global stopping
    stopping = True
    consumer.wakeup()


signal.signal(signal.SIGTERM, stop)
consumer.subscribe([topic], listener=Listener())
log("started")


def plain_loop() -> None:
    """poll -> process -> commit, retrying only what says it is retriable."""
    while not stopping:
        try:
            records = consumer.poll(0.2)
            if records:
                log("records", records=[[r.partition, r.offset] for r in records])
            consumer.commit()
            if records:
                log("committed", positions={str(tp.partition): consumer.position(tp)
                                            for tp in consumer.assignment()})
        except KafkaError as exc:
            if stopping:
                return
            if not exc.retriable:
                log("died", error=repr(exc), type=type(exc).__name__)
                raise
            log("retry", error=str(exc), type=type(exc).__name__)


if commit_each_poll:
    plain_loop()
while not stopping and not commit_each_poll:
    try:
        records = consumer.poll(0.2)
    except Exception as exc:
        if stopping:
            break
        log("error", error=repr(exc))
        continue
    if records:
        log("records", records=[[r.partition, r.offset] for r in records])
consumer.close(timeout=20)
log("closed")
