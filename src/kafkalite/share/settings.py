"""Settings and argument checks shared by the blocking and asyncio share consumers.

A share consumer takes the common client settings, ``group.id`` (required), the fetch
and poll limits, deserializers, ``share.acknowledgement.mode`` and
``share.acquire.mode``. Consumer-group settings that mean nothing for a share group are
refused with a hint: where the records start, the isolation level, the lock duration,
the heartbeat and session timings are *group* configs, set by an administrator
(``AdminClient.incremental_alter_configs`` on ``ConfigResource("group", group_id)``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.config import SHARE_CONSUMER, Config, cross_check, lookup, resolve
from kafkalite.errors import ConfigError, IllegalStateError, InvalidGroupIdError

#: consumer settings with a share group counterpart (a group config)
_GROUP_CONFIG_HINTS = {
    "auto.offset.reset": "share.auto.offset.reset",
    "isolation.level": "share.isolation.level",
    "session.timeout.ms": "share.session.timeout.ms",
    "heartbeat.interval.ms": "share.heartbeat.interval.ms",
    "max.poll.interval.ms": "share.record.lock.duration.ms",
}
_NOT_FOR_SHARE = ("enable.auto.commit", "auto.commit.interval.ms", "group.instance.id", "group.protocol",
                  "group.remote.assignor", "partition.assignment.strategy", "max.partition.fetch.bytes")


@cross_check(SHARE_CONSUMER)
def _check_share_settings(cfg: Config) -> Config:
    group = cfg["group.id"]
    if group is None or not str(group).strip():
        raise InvalidGroupIdError("a share consumer needs the setting 'group.id' (its share group)")
    return cfg


def resolve_settings(config: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> Config:
    """Validate share consumer settings; consumer-only settings get a pointed error."""
    for source in (dict(config or {}), kwargs):
        for key in source:
            setting = lookup(key) if isinstance(key, str) else None
            if setting is None:
                continue
            hint = _GROUP_CONFIG_HINTS.get(setting.name)
            if hint is not None:
                raise ConfigError(
                    f"setting '{setting.name}' does not apply to a share consumer: set the share group's "
                    f"config '{hint}' instead (AdminClient.incremental_alter_configs on "
                    "ConfigResource('group', <group.id>))")
            if setting.name in _NOT_FOR_SHARE:
                raise ConfigError(
                    f"setting '{setting.name}' does not apply to a share consumer (share groups assign "
                    "partitions on the broker and track every record's state there)")
    return resolve(SHARE_CONSUMER, config, **kwargs)


def topics_arg(topics: Iterable[str] | str) -> frozenset[str]:
    """The topic names of ``subscribe()`` (share groups take names, not patterns)."""
    if isinstance(topics, str):
        topics = [topics]
    if topics is None:
        raise IllegalStateError("subscribe() needs a list of topic names")
    names = list(topics)
    for t in names:
        if not isinstance(t, str) or not t.strip():
            raise IllegalStateError(f"subscribe() takes non-empty topic names, got {t!r}")
        if t.startswith("^"):
            raise IllegalStateError(f"share consumers subscribe to topic names, not patterns: {t!r}")
    return frozenset(names)


def record_position(record: Any, partition: int | None, offset: int | None) -> tuple[str, int, int]:
    """(topic, partition, offset) from acknowledge()'s arguments: a record, or a topic
    name with partition and offset."""
    if isinstance(record, str):
        if partition is None or offset is None:
            raise IllegalStateError("acknowledge(topic, partition, offset, type) needs partition and offset")
        return record, int(partition), int(offset)
    try:
        return record[6], record[7], record[0]
    except (TypeError, IndexError):
        raise IllegalStateError(f"acknowledge() takes a record from poll(), got {record!r}") from None
