"""The messaging conventions kafkalite emits, and the OTEL_SEMCONV_STABILITY_OPT_IN rule.

The rule (OpenTelemetry semantic conventions, messaging migration): instrumentations that
emitted v1.24 keep it by default; ``messaging`` switches to the current conventions,
``messaging/dup`` emits both and wins over ``messaging``; other values (other
categories, unknown words) leave messaging alone.
"""

from __future__ import annotations

import pytest

from kafkalite.errors import KafkaTimeoutError, UnknownTopicOrPartitionError
from kafkalite.otel.semconv import (
    BOTH,
    NEW,
    NEW_SCHEMA_URL,
    OLD,
    OLD_SCHEMA_URL,
    Conventions,
    SemconvMode,
    error_type,
    parse_opt_in,
)


@pytest.mark.parametrize(("value", "mode"), [
    (None, OLD),
    ("", OLD),
    (" , ", OLD),
    ("messaging", NEW),
    ("messaging/dup", BOTH),
    ("messaging,messaging/dup", BOTH),   # dup wins, in either order
    ("messaging/dup,messaging", BOTH),
    ("http,messaging", NEW),              # other categories alongside
    ("database/dup, messaging ,http/dup", NEW),
    (" Messaging/DUP ", BOTH),            # enum-like OTel variables are case-insensitive
    ("http", OLD),                        # another category only
    ("http/dup,database", OLD),
    ("messaging/foo", OLD),               # unknown values change nothing
    ("messagingx", OLD),
    ("messaging/", OLD),
    ("messaging dup", OLD),
])
def test_opt_in_values(value: str | None, mode: SemconvMode) -> None:
    assert parse_opt_in(value) is mode


def test_default_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    assert Conventions().mode is OLD
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http,messaging")
    assert Conventions().mode is NEW
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "messaging/dup")
    assert Conventions().mode is BOTH
    # An explicit mode wins over the environment.
    assert Conventions(OLD).mode is OLD


def test_modes_are_flags() -> None:
    assert BOTH == OLD | NEW and OLD in BOTH and NEW in BOTH and NEW not in OLD
    old, new, both = Conventions(OLD), Conventions(NEW), Conventions(BOTH)
    assert (old.old, old.new, new.old, new.new, both.old, both.new) == (True, False, False, True, True, True)


@pytest.mark.parametrize(("mode", "names", "client_span", "schema"), [
    (OLD, ("orders publish", "orders receive", "orders process", "publish"), False, OLD_SCHEMA_URL),
    (NEW, ("send orders", "poll orders", "process orders", "send"), True, NEW_SCHEMA_URL),
    # messaging/dup: span name, kind and schema are single-valued: the current ones
    (BOTH, ("send orders", "poll orders", "process orders", "send"), True, NEW_SCHEMA_URL),
])
def test_span_names_kinds_and_schema(mode: SemconvMode, names: tuple[str, ...], client_span: bool,
                                     schema: str) -> None:
    conv = Conventions(mode)
    got = (conv.span_name("send", "orders"), conv.span_name("receive", "orders"),
           conv.span_name("process", "orders"), conv.span_name("send", None))
    assert got == names
    assert conv.receive_is_client_span() is client_span
    assert conv.schema_url == schema
    assert OLD_SCHEMA_URL.endswith("/1.24.0")


COMMON = {
    "messaging.system": "kafka",
    "messaging.destination.name": "orders",
    "messaging.destination.partition.id": "3",
    "messaging.batch.message_count": 2,
    "messaging.kafka.message.tombstone": True,
}
V1_24 = {
    "messaging.operation": "receive",
    "messaging.client_id": "c1",
    "messaging.kafka.consumer.group": "billing",
    "messaging.kafka.message.offset": 42,
}
CURRENT = {
    "messaging.operation.name": "poll",
    "messaging.operation.type": "receive",
    "messaging.client.id": "c1",
    "messaging.consumer.group.name": "billing",
    "messaging.kafka.offset": 42,
}


@pytest.mark.parametrize(("mode", "expected"), [
    (OLD, {**COMMON, **V1_24}),
    (NEW, {**COMMON, **CURRENT}),
    (BOTH, {**COMMON, **V1_24, **CURRENT}),
])
def test_attribute_names_per_set(mode: SemconvMode, expected: dict[str, object]) -> None:
    attrs = Conventions(mode).attributes("receive", "orders", partition=3, offset=42, group="billing",
                                         client_id="c1", count=2, tombstone=True)
    assert attrs == expected


def test_operation_attributes_and_what_is_left_out() -> None:
    old, new = Conventions(OLD), Conventions(NEW)
    assert old.attributes("send", "t")["messaging.operation"] == "publish"
    assert old.attributes("process", "t")["messaging.operation"] == "process"
    assert {k: v for k, v in new.attributes("send", "t").items() if k.startswith("messaging.operation")} == {
        "messaging.operation.name": "send", "messaging.operation.type": "send"}
    assert new.attributes("process", "t")["messaging.operation.type"] == "process"
    # Unknown or empty values are not recorded; a record that is not a tombstone has no flag.
    assert old.attributes("send") == {"messaging.system": "kafka", "messaging.operation": "publish"}
    assert new.attributes("receive", None, client_id="", group=None) == {
        "messaging.system": "kafka", "messaging.operation.name": "poll", "messaging.operation.type": "receive"}
    # Partition 0 and offset 0 are values, not absences.
    zero = Conventions(BOTH).attributes("send", "t", partition=0, offset=0)
    assert zero["messaging.destination.partition.id"] == "0"
    assert zero["messaging.kafka.message.offset"] == zero["messaging.kafka.offset"] == 0


def test_acknowledged_attributes() -> None:
    assert Conventions(OLD).acknowledged(1, 7) == {"messaging.destination.partition.id": "1",
                                                   "messaging.kafka.message.offset": 7}
    assert Conventions(NEW).acknowledged(1, 7) == {"messaging.destination.partition.id": "1",
                                                   "messaging.kafka.offset": 7}
    assert Conventions(BOTH).acknowledged(2, 0) == {"messaging.destination.partition.id": "2",
                                                    "messaging.kafka.message.offset": 0, "messaging.kafka.offset": 0}
    # acks=0: the broker returns no offset (-1), so none is recorded.
    assert Conventions(BOTH).acknowledged(0, -1) == {"messaging.destination.partition.id": "0"}


def test_message_counter_names_per_set() -> None:
    assert dict(Conventions(OLD).message_counters()) == {
        "sent": ("messaging.publish.messages",), "consumed": ("messaging.receive.messages",)}
    assert dict(Conventions(NEW).message_counters()) == {
        "sent": ("messaging.client.sent.messages",), "consumed": ("messaging.client.consumed.messages",)}
    assert dict(Conventions(BOTH).message_counters()) == {
        "sent": ("messaging.publish.messages", "messaging.client.sent.messages"),
        "consumed": ("messaging.receive.messages", "messaging.client.consumed.messages")}


def test_error_type_is_the_kafka_error_name_else_the_class() -> None:
    assert error_type(UnknownTopicOrPartitionError("gone")) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert error_type(KafkaTimeoutError("slow")) == "KafkaTimeoutError"
    assert error_type(ValueError("bad")) == "ValueError"
