"""Which OpenTelemetry messaging conventions kafkalite emits, and their names.

The messaging conventions are still in development. Their migration rule (for
instrumentations that emitted v1.24 or earlier, which is what the Java agent's Kafka
instrumentation and the Python contrib packages do): keep emitting the old conventions by
default, and let ``OTEL_SEMCONV_STABILITY_OPT_IN`` (comma-separated) choose

* ``messaging``: the current conventions only;
* ``messaging/dup``: both (it wins over ``messaging``); span name and kind are then the
  current ones.

kafkalite follows that rule so that its spans and metrics line up with the Java client's
(the OpenTelemetry Java agent emits the old set by default, ``schema_url`` 1.24.0): a
trace or a dashboard that spans Java and Python services keys on the same attributes.

Old (default): span names ``"<topic> publish"`` / ``"<topic> receive"`` /
``"<topic> process"``, receive span kind CONSUMER, ``messaging.operation``,
``messaging.client_id``, ``messaging.kafka.consumer.group``,
``messaging.kafka.message.offset`` (the Java agent's set, with
``messaging.destination.partition.id``). Current (semantic conventions v1.44):
``"send <topic>"`` / ``"poll <topic>"`` / ``"process <topic>"``, receive kind CLIENT,
``messaging.operation.name`` + ``messaging.operation.type``, ``messaging.client.id``,
``messaging.consumer.group.name``, ``messaging.kafka.offset``. Both: ``messaging.system``
(``kafka``), ``messaging.destination.name``, ``messaging.destination.partition.id``,
``messaging.batch.message_count``, ``messaging.kafka.message.tombstone``, ``error.type``.

>>> Conventions(parse_opt_in("messaging/dup")).span_name("send", "orders")
'send orders'
>>> sorted(Conventions(OLD).attributes("send", "orders", client_id="p1"))[:3]
['messaging.client_id', 'messaging.destination.name', 'messaging.operation']
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["BOTH", "NEW", "OLD", "Conventions", "Operation", "SemconvMode", "error_type", "parse_opt_in"]


class SemconvMode(enum.Flag):
    """Which conventions to emit: the v1.24 set (OLD), the current one (NEW), or both."""

    OLD = 1
    NEW = 2


OLD = SemconvMode.OLD
NEW = SemconvMode.NEW
BOTH = SemconvMode.OLD | SemconvMode.NEW

#: What a span or attribute set is about: ``send`` (publish), ``receive`` (poll) or ``process``.
Operation = Literal["send", "receive", "process"]

OLD_SCHEMA_URL = "https://opentelemetry.io/schemas/1.24.0"
NEW_SCHEMA_URL = "https://opentelemetry.io/schemas/1.44.0"

# operation -> (old messaging.operation, new messaging.operation.name, new messaging.operation.type)
_OPERATIONS: dict[Operation, tuple[str, str, str]] = {
    "send": ("publish", "send", "send"),
    "receive": ("receive", "poll", "receive"),
    "process": ("process", "process", "process"),
}


def parse_opt_in(value: str | None) -> SemconvMode:
    """``OTEL_SEMCONV_STABILITY_OPT_IN`` -> OLD, NEW or BOTH (for the messaging category).

    Values of other categories (``http``, ``database/dup``) and unknown ones leave the
    default (OLD). Compared without case, as the OpenTelemetry SDK configuration spec asks
    of enum-like environment variables.

    Example::

        from kafkalite.otel import parse_opt_in
        from kafkalite.otel.semconv import SemconvMode

        assert parse_opt_in("http,messaging/dup") == SemconvMode.OLD | SemconvMode.NEW    # both
        assert parse_opt_in(None) == SemconvMode.OLD
    """
    entries = {v.strip().lower() for v in (value or "").split(",") if v.strip()}
    if "messaging/dup" in entries:
        return BOTH
    if "messaging" in entries:
        return NEW
    return OLD


def error_type(exc: BaseException) -> str:
    """``error.type``: Kafka's error name where there is one (``UNKNOWN_TOPIC_OR_PARTITION``),
    else the exception's class name (low cardinality either way)."""
    name = getattr(type(exc), "name", None)
    return name if isinstance(name, str) and name else type(exc).__qualname__


class Conventions:
    """Span names, kinds and attributes for one mode (OLD, NEW or BOTH).

    Example::

        from kafkalite.otel import Conventions, parse_opt_in

        conventions = Conventions(parse_opt_in("messaging"))     # the current conventions
        assert conventions.span_name("send", "orders") == "send orders"
    """

    def __init__(self, mode: SemconvMode | None = None) -> None:
        self.mode = parse_opt_in(os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN")) if mode is None else mode
        self.old = bool(self.mode & OLD)
        self.new = bool(self.mode & NEW)

    @property
    def schema_url(self) -> str:
        """The OpenTelemetry schema URL of the chosen semantic conventions.

        Example::

            from kafkalite.otel import Conventions

            assert Conventions().schema_url == "https://opentelemetry.io/schemas/1.24.0"
        """
        return NEW_SCHEMA_URL if self.new else OLD_SCHEMA_URL

    def span_name(self, operation: Operation, topic: str | None) -> str:
        """The span name of an operation on ``topic`` (``"send orders"`` in the new conventions).

        Example::

            from kafkalite.otel import Conventions

            assert Conventions().span_name("send", "orders") == "orders publish"    # v1.24, the default
        """
        old_op, new_op, _ = _OPERATIONS[operation]
        if self.new:  # with messaging/dup the single-valued things are the new ones
            return f"{new_op} {topic}" if topic else new_op
        return f"{topic} {old_op}" if topic else old_op

    def receive_is_client_span(self) -> bool:
        """The receive (poll) span's kind: CLIENT now, CONSUMER in v1.24.

        Example::

            from kafkalite.otel import Conventions, parse_opt_in

            assert Conventions(parse_opt_in("messaging")).receive_is_client_span()
        """
        return self.new

    def attributes(self, operation: Operation, topic: str | None = None, *, partition: int | None = None,
                   offset: int | None = None, group: str | None = None, client_id: str | None = None,
                   count: int | None = None, tombstone: bool = False) -> dict[str, Any]:
        """The span or metric attributes of one operation, in the chosen conventions.

        Example::

            from kafkalite.otel import Conventions

            attributes = Conventions().attributes("send", "orders", partition=0)
            assert attributes["messaging.system"] == "kafka"
        """
        old_op, new_op, new_type = _OPERATIONS[operation]
        attrs: dict[str, Any] = {"messaging.system": "kafka"}
        if topic:
            attrs["messaging.destination.name"] = topic
        if partition is not None:
            attrs["messaging.destination.partition.id"] = str(partition)
        if count is not None:
            attrs["messaging.batch.message_count"] = count
        if tombstone:
            attrs["messaging.kafka.message.tombstone"] = True
        if self.old:
            attrs["messaging.operation"] = old_op
            if client_id:
                attrs["messaging.client_id"] = client_id
            if group:
                attrs["messaging.kafka.consumer.group"] = group
            if offset is not None:
                attrs["messaging.kafka.message.offset"] = offset
        if self.new:
            attrs["messaging.operation.name"] = new_op
            attrs["messaging.operation.type"] = new_type
            if client_id:
                attrs["messaging.client.id"] = client_id
            if group:
                attrs["messaging.consumer.group.name"] = group
            if offset is not None:
                attrs["messaging.kafka.offset"] = offset
        return attrs

    def acknowledged(self, partition: int, offset: int) -> dict[str, Any]:
        """What a send span learns from the broker's answer.

        Example::

            from kafkalite.otel import Conventions

            assert Conventions().acknowledged(0, 42)["messaging.kafka.message.offset"] == 42   # v1.24 names
        """
        attrs: dict[str, Any] = {"messaging.destination.partition.id": str(partition)}
        if offset >= 0:
            if self.old:
                attrs["messaging.kafka.message.offset"] = offset
            if self.new:
                attrs["messaging.kafka.offset"] = offset
        return attrs

    # ------------------------------------------------------------ metrics

    def message_counters(self) -> Mapping[str, tuple[str, ...]]:
        """Instrument names of the sent / consumed message counters per direction.

        Example::

            from kafkalite.otel import Conventions

            assert Conventions().message_counters()["sent"] == ("messaging.publish.messages",)
        """
        sent: tuple[str, ...] = ()
        consumed: tuple[str, ...] = ()
        if self.old:  # v1.24 messaging metrics
            sent += ("messaging.publish.messages",)
            consumed += ("messaging.receive.messages",)
        if self.new:
            sent += ("messaging.client.sent.messages",)
            consumed += ("messaging.client.consumed.messages",)
        return {"sent": sent, "consumed": consumed}
