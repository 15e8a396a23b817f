"""Work through a topic as a queue: a share group member (KIP-932) that accepts,
retries or rejects every record.

    python examples/share_consume.py 127.0.0.1:9092 jobs workers

Start it several times: the members share the records of the same partitions, one
record to one member at a time. A record whose value starts with b"retry" is released
(delivered again, maybe to another member, until the group's delivery count limit); one
starting with b"bad" is rejected (archived). Ctrl-C closes cleanly (acknowledges, ends
the share sessions, leaves the group).
"""

from __future__ import annotations

import sys

from kafkalite import AcknowledgeType, AdminClient, ConfigResource, ShareConsumer
from kafkalite.admin.types import AlterConfigOp


def main(bootstrap: str, topic: str, group: str) -> None:
    # Where a new share group starts is a group config (the default is the end).
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.incremental_alter_configs({ConfigResource("group", group): [
            AlterConfigOp.set("share.auto.offset.reset", "earliest")]}).all()
    settings = {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    with ShareConsumer(settings) as consumer:
        consumer.set_acknowledgement_commit_callback(
            lambda offsets, error: error and print("acknowledgement failed:", offsets, error))
        consumer.subscribe([topic])
        try:
            while True:
                for record in consumer.poll(timeout=1.0):
                    value = record.value or b""
                    if value.startswith(b"retry"):
                        kind = AcknowledgeType.RELEASE
                    elif value.startswith(b"bad"):
                        kind = AcknowledgeType.REJECT
                    else:
                        kind = AcknowledgeType.ACCEPT
                    print(f"{record.topic}-{record.partition}@{record.offset} delivery {record.delivery_count}: "
                          f"{value!r} -> {kind.name}")
                    consumer.acknowledge(record, kind)
        except KeyboardInterrupt:
            print("closing")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
