"""A consumer group member run as a subprocess by test_consumer_groups.py.

Usage: python group_member.py BOOTSTRAP TOPIC GROUP PROTOCOL STRATEGY LOGFILE [INSTANCE_ID]

Writes one JSON line per event to LOGFILE (flushed at once, so a SIGKILL loses
nothing already logged): assigned / revoked / lost with partitions and the owned set
afterwards, and records with (partition, offset) pairs, each with time.time(). SIGTERM
closes the consumer cleanly (commit, revoke, leave).
"""

from __future__ import annotations

import json
import signal
import sys
import time

from kafkalite import Consumer, ConsumerRebalanceListener

bootstrap, topic, group, protocol, strategy, logfile = sys.argv[1:7]
instance = sys.argv[7] if len(sys.argv) > 7 else None
out = open(logfile, "a", buffering=1)  # noqa: SIM115


def log(event: str, **fields: object) -> None:
    out.write(json.dumps({"t": time.time(), "event": event, **fields}) + "\n")
    out.flush()


conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
        "auto.offset.reset": "earliest", "auto.commit.interval.ms": 500, "max.poll.records": 50}
if protocol == "classic":
    conf.update({"partition.assignment.strategy": strategy, "session.timeout.ms": 6000,
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
while not stopping:
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
