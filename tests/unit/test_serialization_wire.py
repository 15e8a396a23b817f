"""The Confluent wire format, Protobuf message indexes, subject name strategies and the
helpers that find a message in a registered Protobuf schema (no registry needed)."""

from __future__ import annotations

import base64

import pytest

from kafkalite.errors import ConfigError
from kafkalite.serialization import WireFormatError
from kafkalite.serialization.strategies import (
    record_name_strategy,
    resolve_strategy,
    topic_name_strategy,
    topic_record_name_strategy,
)
from kafkalite.serialization.wire import (
    decode_message_indexes,
    encode_message_indexes,
    frame,
    parse_header,
    read_zigzag_varint,
    zigzag_varint,
)


def test_header_is_magic_zero_then_big_endian_id() -> None:
    data = frame(0x01020304, b"payload")
    assert data == b"\x00\x01\x02\x03\x04payload"
    assert parse_header(data) == (0x01020304, 5)
    assert parse_header(bytearray(frame(2**31 - 1, b""))) == (2**31 - 1, 5)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "0 bytes are too short"),
        (b"\x00\x00\x00\x01", "4 bytes are too short"),
        (b"\x01\x00\x00\x00\x01x", "unknown magic byte 1"),
        (b"{\"json\": 1}", "unknown magic byte 123"),
        (None, "got None"),
    ],
)
def test_bad_headers_are_wire_format_errors(data: bytes | None, match: str) -> None:
    with pytest.raises(WireFormatError, match=match) as info:
        parse_header(data, topic="orders")
    assert info.value.topic == "orders"


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, 2**31 - 1, -(2**31)])
def test_zigzag_varints_round_trip(value: int) -> None:
    encoded = zigzag_varint(value)
    assert read_zigzag_varint(encoded + b"rest", 0) == (value, len(encoded))


def test_zigzag_matches_javas_byte_utils() -> None:
    # ByteUtils.writeVarint: 0->00, -1->01, 1->02, 2->04, 64->80 01
    assert [zigzag_varint(v) for v in (0, -1, 1, 2, 64)] == [b"\x00", b"\x01", b"\x02", b"\x04", b"\x80\x01"]


@pytest.mark.parametrize(
    ("indexes", "encoded"),
    [([0], b"\x00"), ([1], b"\x02\x02"), ([3], b"\x02\x06"), ([1, 0], b"\x04\x02\x00"), ([0, 2, 1], b"\x06\x00\x04\x02")],
)
def test_message_indexes_use_the_single_zero_shortcut(indexes: list[int], encoded: bytes) -> None:
    assert encode_message_indexes(indexes) == encoded
    assert decode_message_indexes(b"\xaa" + encoded + b"tail", 1) == (indexes, 1 + len(encoded))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "truncated varint"),
        (b"\x04\x02", "truncated varint"),
        (b"\xff\xff\xff\xff\xff\x01", "longer than 5 bytes"),
        (b"\x01", "invalid Protobuf message-index count -1"),
        (zigzag_varint(10_000), "invalid Protobuf message-index count 10000"),
        (b"\x02\x01", "negative Protobuf message index -1"),
    ],
)
def test_corrupt_message_indexes_fail_cleanly(data: bytes, match: str) -> None:
    with pytest.raises(WireFormatError, match=match):
        decode_message_indexes(data, 0)


def test_strategies() -> None:
    assert topic_name_strategy("orders", True, None) == "orders-key"
    assert topic_name_strategy("orders", False, "shop.Order") == "orders-value"
    assert record_name_strategy("orders", False, "shop.Order") == "shop.Order"
    assert topic_record_name_strategy("orders", True, "shop.Order") == "orders-shop.Order"
    with pytest.raises(ConfigError, match="needs a named record"):
        record_name_strategy("orders", False, None)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, topic_name_strategy),
        ("topic", topic_name_strategy),
        ("TopicNameStrategy", topic_name_strategy),
        ("record", record_name_strategy),
        ("io.confluent.kafka.serializers.subject.RecordNameStrategy", record_name_strategy),
        ("topic_record", topic_record_name_strategy),
        ("topic-record", topic_record_name_strategy),
        ("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy", topic_record_name_strategy),
    ],
)
def test_strategy_names(spec: str | None, expected: object) -> None:
    assert resolve_strategy(spec) is expected


def test_custom_and_unknown_strategies() -> None:
    def custom(topic: str, is_key: bool, name: str | None) -> str:
        return f"team-{topic}"

    assert resolve_strategy(custom) is custom
    with pytest.raises(ConfigError, match="subject.name.strategy.*'bogus'"):
        resolve_strategy("bogus")




def test_message_at_indexes_in_proto_text_and_descriptors() -> None:
    from google.protobuf import descriptor_pb2

    from kafkalite.serialization.protobuf import message_name_at

    text = """
    syntax = "proto3";
    package shop.v1;  // message Commented {}
    /* message Hidden { } */
    import "google/protobuf/timestamp.proto";
    option java_package = "com.example {";
    message Order {
      message Line { string sku = 1; }
      enum State { NEW = 0; }
      message Note { map<string, string> tags = 1; }
      oneof pay { string card = 2; string iban = 3; }
    }
    service Orders { rpc Get (Order) returns (Order) { option (x) = { a: 1 }; } }
    message Shipment {}
    """
    assert message_name_at(text, [0]) == "shop.v1.Order"
    assert message_name_at(text, [0, 1]) == "shop.v1.Order.Note"
    assert message_name_at(text, [1]) == "shop.v1.Shipment"
    assert message_name_at(text, [2]) is None
    assert message_name_at(text, [0, 5]) is None

    proto = descriptor_pb2.FileDescriptorProto(name="a.proto", package="p")
    proto.message_type.add(name="A").nested_type.add(name="Inner")
    proto.message_type.add(name="B")
    encoded = base64.b64encode(proto.SerializeToString()).decode()
    assert message_name_at(encoded, [0, 0]) == "p.A.Inner"
    assert message_name_at(encoded, [1]) == "p.B"


def test_message_indexes_of_generated_classes() -> None:
    from kafkalite.serialization.protobuf import message_indexes
    from tests.helpers.schemas import events_pb2

    assert message_indexes(events_pb2.OrderPlaced.DESCRIPTOR) == [0]
    assert message_indexes(events_pb2.OrderShipped.Parcel.DESCRIPTOR) == [1, 0]
    assert message_indexes(events_pb2.OrderEvent.DESCRIPTOR) == [3]
