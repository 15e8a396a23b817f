"""Settings and argument checks shared by the blocking and asyncio share consumers.

A share consumer takes the common client settings, ``group.id`` (required), the fetch
and poll limits, deserializers, ``share.acknowledgement.mode`` and
``share.acquire.mode``. Consumer-group settings that mean nothing for a share group are
refused with a hint: where the records start, the isolation level, the lock duration,
the heartbeat and session timings are *group* configs, set by an administrator
(``AdminClient.incremental_alter_configs`` on ``ConfigResource("group", group_id)``).
Those refusals are declared in :mod:`kafkalite.config` with the schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.config import SHARE_CONSUMER, Config
from kafkalite.errors import IllegalStateError
from kafkalite.settings import ClientRules
from kafkalite.share.types import ShareConsumerRecord

#: The share consumer's settings: the schema and the security checks; it has no rules of
#: its own (the refusals of consumer-only settings and the required ``group.id`` are part
#: of the schema, :mod:`kafkalite.config`).
SHARE_CONSUMER_RULES = ClientRules(SHARE_CONSUMER)


def resolve_settings(config: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> Config:
    """Validate share consumer settings (:data:`SHARE_CONSUMER_RULES`)."""
    return SHARE_CONSUMER_RULES.resolve(config, **kwargs)


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


def record_position(record: ShareConsumerRecord | str, partition: int | None,
                    offset: int | None) -> tuple[str, int, int]:
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
