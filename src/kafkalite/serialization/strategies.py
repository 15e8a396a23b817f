"""Subject name strategies: under which registry subject a key or value schema lives.

========================  ==========================  ==================================
``subject.name.strategy``  subject                     use it for
========================  ==========================  ==================================
``topic`` (default)        ``<topic>-key|value``       one schema (evolving) per topic
``record``                 ``<record full name>``      a type shared by many topics
``topic_record``           ``<topic>-<record name>``   several event types in one topic
========================  ==========================  ==================================

The Java class names (``io.confluent.kafka.serializers.subject.TopicNameStrategy``
...) are accepted too, and so is a callable ``fn(topic, is_key, record_name) -> str``.
The record name is the Avro record's full name, the Protobuf message's full name or
the JSON Schema's ``title``.

>>> topic_name_strategy("orders", False, "shop.Order")
'orders-value'
>>> topic_record_name_strategy("orders", False, "shop.Order")
'orders-shop.Order'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from kafkalite.errors import ConfigError

SubjectNameStrategy = Callable[[str, bool, "str | None"], str]


def topic_name_strategy(topic: str, is_key: bool, record_name: str | None) -> str:
    """``<topic>-key`` or ``<topic>-value`` (Confluent's default).

    Example::

        from kafkalite.serialization.strategies import topic_name_strategy
        assert topic_name_strategy("orders", False, "shop.Order") == "orders-value"
    """
    return f"{topic}-{'key' if is_key else 'value'}"


def _need_name(record_name: str | None, strategy: str) -> str:
    if not record_name:
        raise ConfigError(
            f"subject.name.strategy '{strategy}' needs a named record (an Avro record, a Protobuf "
            "message, a JSON Schema with a 'title'); this schema has no name")
    return record_name


def record_name_strategy(topic: str, is_key: bool, record_name: str | None) -> str:
    """The record's full name (the same subject in every topic).

    Example::

        from kafkalite.serialization.strategies import record_name_strategy
        assert record_name_strategy("orders", False, "shop.Order") == "shop.Order"
    """
    return _need_name(record_name, "record")


def topic_record_name_strategy(topic: str, is_key: bool, record_name: str | None) -> str:
    """``<topic>-<record full name>``: one subject per event type per topic.

    Example::

        from kafkalite.serialization.strategies import topic_record_name_strategy
        assert topic_record_name_strategy("orders", True, "shop.Order") == "orders-shop.Order"
    """
    return f"{topic}-{_need_name(record_name, 'topic_record')}"


_BY_NAME: dict[str, SubjectNameStrategy] = {
    "topic": topic_name_strategy,
    "topicname": topic_name_strategy,
    "topic_name": topic_name_strategy,
    "io.confluent.kafka.serializers.subject.topicnamestrategy": topic_name_strategy,
    "record": record_name_strategy,
    "recordname": record_name_strategy,
    "record_name": record_name_strategy,
    "io.confluent.kafka.serializers.subject.recordnamestrategy": record_name_strategy,
    "topic_record": topic_record_name_strategy,
    "topicrecord": topic_record_name_strategy,
    "topic_record_name": topic_record_name_strategy,
    "topicrecordname": topic_record_name_strategy,
    "io.confluent.kafka.serializers.subject.topicrecordnamestrategy": topic_record_name_strategy,
}


def resolve_strategy(spec: Any, setting: str = "subject.name.strategy") -> SubjectNameStrategy:
    """A strategy from a name, a Java class name or a callable; ConfigError otherwise."""
    if spec is None:
        return topic_name_strategy
    if callable(spec):
        return cast(SubjectNameStrategy, spec)  # the application's function, called as a strategy
    if isinstance(spec, str):
        key = spec.strip().lower().replace("-", "_")
        found = _BY_NAME.get(key) or _BY_NAME.get(key.replace("strategy", "").rstrip("_"))
        if found is not None:
            return found
    raise ConfigError(
        f"setting '{setting}' must be 'topic', 'record', 'topic_record', a Confluent strategy class "
        f"name or a callable (topic, is_key, record_name) -> subject; got {spec!r}")
