"""Argument checking and settings shared by the blocking and asyncio consumers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.config import Config
from kafkalite.consumer.settings import CONSUMER_RULES
from kafkalite.consumer.subscription import SubscriptionState
from kafkalite.errors import IllegalStateError, InvalidGroupIdError
from kafkalite.types import OffsetAndMetadata, TopicPartition


def resolve_settings(config: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> Config:
    """The consumer's settings (checks in :mod:`kafkalite.consumer.settings`)."""
    return CONSUMER_RULES.resolve(config, **kwargs)


def require_group(cfg: Config, what: str) -> str:
    group = cfg["group.id"]
    if not group:
        raise InvalidGroupIdError(f"{what} needs the setting 'group.id' (a consumer group)")
    return str(group)


#: What subscribe() takes: topic names, or a regex (a pattern, or a string starting with '^').
Topics = Iterable[str] | str | re.Pattern[str] | None
Pattern = str | re.Pattern[str]


def parse_subscription(topics: Topics, pattern: Pattern | None) -> tuple[list[str] | None, Pattern | None]:
    """(topic list, None) or (None, pattern) from subscribe()'s arguments: one is None."""
    if pattern is not None:
        if topics is not None:
            raise IllegalStateError("subscribe() takes topics or pattern, not both")
        return None, pattern
    if isinstance(topics, re.Pattern):
        return None, topics
    if isinstance(topics, str):
        # confluent-kafka's convention: a name starting with '^' is a regex.
        return (None, topics) if topics.startswith("^") else ([topics], None)
    if topics is None:
        raise IllegalStateError("subscribe() needs a list of topics or a pattern")
    names = list(topics)
    if any(isinstance(t, str) and t.startswith("^") for t in names):
        if len(names) != 1:
            raise IllegalStateError("subscribe() takes one regex (starting with '^') or topic names, not both")
        return None, names[0]
    return names, None


def partitions_arg(partitions: Iterable[Any] | Any) -> list[TopicPartition]:
    if isinstance(partitions, TopicPartition):
        return [partitions]
    out = []
    for tp in partitions:
        if not isinstance(tp, tuple) or len(tp) != 2 or not isinstance(tp[0], str) or not isinstance(tp[1], int):
            raise IllegalStateError(f"expected TopicPartition(topic, partition), got {tp!r}")
        out.append(TopicPartition(tp[0], tp[1]))
    return out


def offsets_arg(offsets: Mapping[Any, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    out = {}
    for tp, om in offsets.items():
        (tp2,) = partitions_arg([tp])
        if isinstance(om, OffsetAndMetadata):
            out[tp2] = om
        elif isinstance(om, int) and not isinstance(om, bool):
            out[tp2] = OffsetAndMetadata(om)
        else:
            raise IllegalStateError(f"commit offsets must be OffsetAndMetadata or int, got {om!r} for {tp2}")
    return out


def check_seek_target(subs: SubscriptionState, tp: TopicPartition) -> None:
    subs.state(tp)  # IllegalStateError naming the partition if unassigned
