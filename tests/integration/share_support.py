"""Helpers of the share consumer tests: share group configs, producing in many small
batches, polling until a condition holds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kafkalite import AdminClient, ConfigResource, ShareConsumer
from kafkalite.admin.types import AlterConfigOp
from kafkalite.testing.topics import unique_topic_name
from kafkalite.types import TopicPartition
from tests.integration.admin_support import produce, wait_until

__all__ = ["Member", "configure_group", "new_group", "offsets_of", "produce_values", "settings", "wait_until"]


def new_group(prefix: str = "share") -> str:
    return unique_topic_name(prefix)


def configure_group(bootstrap: str, group: str, *, lock_ms: int | None = None,
                    delivery_limit: int | None = None) -> None:
    """Group configs: read from the beginning; optionally a short acquisition lock and a
    low delivery count limit (the test brokers allow 1 s and 2)."""
    ops = [AlterConfigOp.set("share.auto.offset.reset", "earliest")]
    if lock_ms is not None:
        ops.append(AlterConfigOp.set("share.record.lock.duration.ms", str(lock_ms)))
    if delivery_limit is not None:
        ops.append(AlterConfigOp.set("share.delivery.count.limit", str(delivery_limit)))
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.incremental_alter_configs({ConfigResource("group", group): ops}).all()


def produce_values(bootstrap: str, topic: str, values: Sequence[bytes], per_batch: int = 1,
                   partition: int = 0) -> None:
    """Append ``values`` in batches of ``per_batch`` records (a broker hands out whole
    batches, so small batches let members share them)."""
    for i in range(0, len(values), per_batch):
        produce(bootstrap, topic, partition, list(values[i:i + per_batch]))


def settings(bootstrap: str, group: str, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group}
    cfg.update({k.replace("_", "."): v for k, v in extra.items()})
    return cfg


def offsets_of(bootstrap: str, group: str, tp: TopicPartition) -> Any:
    """The group's SharePartitionOffset for ``tp`` (None before the group has state)."""
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        item = admin.list_share_group_offsets([group])[group]
        return item.result().get(tp) if item.ok else None


class Member(threading.Thread):
    """A share consumer polling in its own thread until told to stop; ``handle(consumer,
    record)`` runs per record (explicit mode acknowledges there)."""

    def __init__(self, config: dict[str, Any], topic: str, handle: Callable[[Any, Any], None] | None = None,
                 pause: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.consumer = ShareConsumer(config)
        self.consumer.subscribe([topic])
        self.handle = handle
        self.pause = pause
        self.records: list[Any] = []
        self.error: BaseException | None = None
        self.stopping = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                for record in self.consumer.poll(0.2):
                    if self.handle is not None:
                        self.handle(self.consumer, record)
                    with self._lock:
                        self.records.append(record)
                    if self.pause:
                        time.sleep(self.pause)
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.consumer.close(10)

    def snapshot(self) -> list[Any]:
        with self._lock:
            return list(self.records)

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        assert not self.is_alive(), "a share consumer thread did not stop"
        if self.error is not None:
            raise self.error
