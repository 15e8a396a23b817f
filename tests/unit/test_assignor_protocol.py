"""Consumer protocol bytes (Java's ConsumerProtocol), assignor lookup and leader-side checks.

Expected bytes here are built by hand from the ConsumerProtocolSubscription /
ConsumerProtocolAssignment specs (int16 version, then int32-counted arrays, int16-length
strings, int32-length nullable bytes), independent of the generated codec.
test_assignor_java.py compares with bytes the Java client wrote.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.consumer.assignors import (
    Assignment,
    ConsumerPartitionAssignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    assignor_by_name,
    assignors_from_config,
    common_rebalance_protocol,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    validate_assignment,
    validate_cooperative_assignment,
)
from kafkalite.errors import ConfigError, IllegalStateError, ProtocolError
from kafkalite.types import TopicPartition as TP


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def s(text: str | None) -> bytes:
    if text is None:
        return i16(-1)
    raw = text.encode()
    return i16(len(raw)) + raw


def b(data: bytes | None) -> bytes:
    return i32(-1) if data is None else i32(len(data)) + data


def arr(items: list[bytes]) -> bytes:
    return i32(len(items)) + b"".join(items)


def tp_arr(groups: list[tuple[str, list[int]]]) -> bytes:
    return arr([s(t) + arr([i32(p) for p in parts]) for t, parts in groups])


SUB = Subscription(
    topics=["orders", "audit"],
    user_data=b"\x01\x02",
    owned_partitions=[TP("orders", 2), TP("audit", 0), TP("orders", 1)],
    generation_id=9,
    rack_id="rack-a",
)


def expected_subscription(version: int) -> bytes:
    # Java sorts topics and owned partitions before writing them.
    body = arr([s("audit"), s("orders")]) + b(b"\x01\x02")
    if version >= 1:
        body += tp_arr([("audit", [0]), ("orders", [1, 2])])
    if version >= 2:
        body += i32(9)
    if version >= 3:
        body += s("rack-a")
    return i16(version) + body


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_bytes_follow_the_spec(version: int) -> None:
    assert encode_subscription(SUB, version) == expected_subscription(version)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_decodes_what_each_version_carries(version: int) -> None:
    sub = decode_subscription(expected_subscription(version))
    assert sub.topics == ["audit", "orders"]
    assert sub.user_data == b"\x01\x02"
    assert sub.owned_partitions == ([TP("audit", 0), TP("orders", 1), TP("orders", 2)] if version >= 1 else [])
    assert sub.generation_id == (9 if version >= 2 else -1)
    assert sub.rack_id == ("rack-a" if version >= 3 else None)
    assert sub.group_instance_id is None  # not on the wire: comes from JoinGroup


def test_default_version_is_3_and_null_fields() -> None:
    raw = encode_subscription(Subscription(["t"]))
    assert raw == i16(3) + arr([s("t")]) + b(None) + arr([]) + i32(-1) + s(None)
    sub = decode_subscription(raw)
    assert sub == Subscription(["t"], None, [], -1, None)


def test_empty_rack_id_means_no_rack_as_in_java() -> None:
    raw = i16(3) + arr([s("t")]) + b(b"") + arr([]) + i32(4) + s("")
    sub = decode_subscription(raw)
    assert sub.rack_id is None
    assert sub.user_data == b""  # empty, not null


def test_newer_subscription_version_is_read_as_the_highest_known() -> None:
    raw = bytearray(expected_subscription(3))
    raw[0:2] = i16(7)
    raw += b"\x00\x00\x00\x2a" + s("a future field")
    sub = decode_subscription(bytes(raw))
    assert sub.generation_id == 9 and sub.rack_id == "rack-a"
    # and we write at most version 3 even if asked for more (as Java does)
    assert encode_subscription(SUB, 9) == expected_subscription(3)


@pytest.mark.parametrize(
    "raw",
    [b"", b"\x00", i16(-1) + arr([]), i16(0) + i32(5) + s("t"), i16(1) + arr([s("t")]) + b(None) + i32(3)],
    ids=["empty", "one-byte", "negative-version", "short-topic-array", "short-owned-array"],
)
def test_malformed_subscription_raises_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_subscription(raw)


def test_negative_version_is_refused_on_encode() -> None:
    with pytest.raises(ProtocolError, match="version -1"):
        encode_subscription(SUB, -1)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_bytes_group_by_first_appearance(version: int) -> None:
    a = Assignment([TP("b", 1), TP("a", 0), TP("b", 0)], b"\x09")
    expected = i16(version) + tp_arr([("b", [1, 0]), ("a", [0])]) + b(b"\x09")
    assert encode_assignment(a, version) == expected
    back = decode_assignment(expected)
    assert back.partitions == [TP("b", 1), TP("b", 0), TP("a", 0)]
    assert back.user_data == b"\x09"


def test_empty_assignment_buffer_means_no_partitions() -> None:
    assert decode_assignment(b"") == Assignment([], None)


def test_newer_assignment_version_and_trailing_bytes() -> None:
    raw = i16(5) + tp_arr([("t", [3])]) + b(None) + b"extra"
    assert decode_assignment(raw) == Assignment([TP("t", 3)], None)


def test_malformed_assignment_raises_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        decode_assignment(i16(0) + i32(1) + s("t") + i32(2) + i32(0))


topic_names = st.text(alphabet="abcxyz._-", min_size=1, max_size=6)


@given(
    topics=st.lists(topic_names, unique=True, max_size=4),
    user_data=st.none() | st.binary(max_size=8),
    owned=st.lists(st.tuples(topic_names, st.integers(0, 50)), unique=True, max_size=8),
    generation=st.integers(-1, 2**31 - 1),
    rack=st.none() | st.text(min_size=1, max_size=5),
    version=st.integers(0, 3),
)
def test_subscription_round_trip(topics, user_data, owned, generation, rack, version) -> None:
    sub = Subscription(topics, user_data, [TP(t, p) for t, p in owned], generation, rack)
    back = decode_subscription(encode_subscription(sub, version))
    assert back.topics == sorted(topics)
    assert back.user_data == user_data
    if version >= 1:
        assert back.owned_partitions == sorted(sub.owned_partitions)
    assert back.generation_id == (generation if version >= 2 else -1)
    assert back.rack_id == (rack if version >= 3 else None)


@given(
    parts=st.lists(st.tuples(topic_names, st.integers(0, 50)), unique=True, max_size=10),
    user_data=st.none() | st.binary(max_size=8),
    version=st.integers(0, 3),
)
def test_assignment_round_trip(parts, user_data, version) -> None:
    a = Assignment([TP(t, p) for t, p in parts], user_data)
    back = decode_assignment(encode_assignment(a, version))
    assert sorted(back.partitions) == sorted(a.partitions)
    assert back.user_data == user_data


# ---------------------------------------------------------------- lookup by name


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("range", RangeAssignor),
        ("roundrobin", RoundRobinAssignor),
        ("sticky", StickyAssignor),
        ("cooperative-sticky", CooperativeStickyAssignor),
        ("org.apache.kafka.clients.consumer.RangeAssignor", RangeAssignor),
        ("org.apache.kafka.clients.consumer.RoundRobinAssignor", RoundRobinAssignor),
        ("org.apache.kafka.clients.consumer.StickyAssignor", StickyAssignor),
        (" org.apache.kafka.clients.consumer.CooperativeStickyAssignor ", CooperativeStickyAssignor),
        ("kafkalite.consumer.assignors.range.RangeAssignor", RangeAssignor),
        ("kafkalite.consumer.assignors.sticky:StickyAssignor", StickyAssignor),
    ],
)
def test_assignor_by_name(name: str, cls: type) -> None:
    a = assignor_by_name(name)
    assert type(a) is cls


def test_java_and_wire_names() -> None:
    names = [assignor_by_name(n).name for n in ("range", "roundrobin", "sticky", "cooperative-sticky")]
    assert names == ["range", "roundrobin", "sticky", "cooperative-sticky"]


class Custom(ConsumerPartitionAssignor):
    name = "custom"

    def assign(self, partitions_per_topic, subscriptions, *, partition_racks=None):
        return {m: Assignment([]) for m in subscriptions}


def test_custom_assignor_class_and_instance() -> None:
    inst = Custom()
    assert assignor_by_name(inst) is inst
    assert isinstance(assignor_by_name(Custom), Custom)
    assert assignor_by_name(f"{__name__}.Custom").name == "custom"


@pytest.mark.parametrize("bad", ["rangee", "no.such.module.Assignor", object(), "builtins.dict"])
def test_bad_assignor_names_the_setting(bad: object) -> None:
    with pytest.raises(ConfigError, match="partition.assignment.strategy"):
        assignor_by_name(bad)


def test_assignors_from_config() -> None:
    got = assignors_from_config("range, org.apache.kafka.clients.consumer.CooperativeStickyAssignor")
    assert [a.name for a in got] == ["range", "cooperative-sticky"]
    with pytest.raises(ConfigError, match="at least one"):
        assignors_from_config([])
    with pytest.raises(ConfigError, match="two assignors named 'range'"):
        assignors_from_config(["range", "org.apache.kafka.clients.consumer.RangeAssignor"])


def test_common_rebalance_protocol() -> None:
    coop = CooperativeStickyAssignor()
    assert common_rebalance_protocol([coop]) is RebalanceProtocol.COOPERATIVE
    # Java's default [range, cooperative-sticky] stays eager until range is removed
    assert common_rebalance_protocol([RangeAssignor(), coop]) is RebalanceProtocol.EAGER

    class CoopOnly(Custom):
        supported_protocols = [RebalanceProtocol.COOPERATIVE]

    with pytest.raises(ConfigError, match="no rebalance protocol in common"):
        common_rebalance_protocol([RangeAssignor(), CoopOnly()])


# ---------------------------------------------------------------- leader-side checks


def test_validate_assignment() -> None:
    subs = {"a": Subscription(["t"]), "b": Subscription(["t"])}
    validate_assignment({"a": Assignment([TP("t", 0)]), "b": Assignment([TP("t", 1)])}, {"t": 2}, subs)
    with pytest.raises(IllegalStateError, match="same partition") as info:
        validate_assignment({"a": Assignment([TP("t", 0)]), "b": Assignment([TP("t", 0)])}, {"t": 2}, subs)
    assert info.value.topic == "t" and info.value.partition == 0
    with pytest.raises(IllegalStateError, match="does not exist"):
        validate_assignment({"a": Assignment([TP("t", 2)])}, {"t": 2}, subs)
    with pytest.raises(IllegalStateError, match="unknown member 'c'"):
        validate_assignment({"c": Assignment([])}, {"t": 2}, subs)


def test_validate_cooperative_assignment() -> None:
    owned = {"a": [TP("t", 0), TP("t", 1)], "b": []}
    validate_cooperative_assignment(owned, {"a": Assignment([TP("t", 0)]), "b": Assignment([])})
    with pytest.raises(IllegalStateError, match="still owned by 'a'"):
        validate_cooperative_assignment(owned, {"a": Assignment([TP("t", 0)]), "b": Assignment([TP("t", 1)])})
