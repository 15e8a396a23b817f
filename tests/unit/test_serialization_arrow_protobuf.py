"""Protobuf <-> Arrow column helpers without a registry (the generated class is the shape).

With a registry (types built from registered schemas) they are tested in
tests/integration/test_serdes_arrow_formats.py, inside Spark in
tests/spark/test_spark_schema_columns.py."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.arrow_protobuf import (
    decode_protobuf_column,
    encode_protobuf_column,
    protobuf_to_arrow_schema,
    protobuf_to_struct,
    struct_to_protobuf,
)
from kafkalite.serialization.wire import encode_message_indexes, frame
from tests.helpers.schemas import events_pb2

F = descriptor_pb2.FieldDescriptorProto


def _kitchen_sink() -> Any:
    """A message with an enum, a map of messages, an optional, unsigned ints and a Duration."""
    from google.protobuf import duration_pb2

    pool = descriptor_pool.DescriptorPool()
    known = descriptor_pb2.FileDescriptorProto()
    duration_pb2.DESCRIPTOR.CopyToProto(known)
    pool.Add(known)
    f = descriptor_pb2.FileDescriptorProto(name="sink.proto", package="t", syntax="proto3",
                                           dependency=["google/protobuf/duration.proto"])
    f.enum_type.add(name="Level", value=[descriptor_pb2.EnumValueDescriptorProto(name=n, number=i)
                                         for i, n in enumerate(["LOW", "HIGH"])])
    inner = f.message_type.add(name="Inner")
    inner.field.add(name="x", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    sink = f.message_type.add(name="Sink")
    entry = sink.nested_type.add(name="ByNameEntry", options=descriptor_pb2.MessageOptions(map_entry=True))
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, type_name=".t.Inner", label=F.LABEL_OPTIONAL)
    sink.field.add(name="level", number=1, type=F.TYPE_ENUM, type_name=".t.Level", label=F.LABEL_OPTIONAL)
    sink.field.add(name="by_name", number=2, type=F.TYPE_MESSAGE, type_name=".t.Sink.ByNameEntry",
                   label=F.LABEL_REPEATED)
    sink.field.add(name="maybe", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, proto3_optional=True,
                   oneof_index=0)
    sink.oneof_decl.add(name="_maybe")
    sink.field.add(name="big", number=4, type=F.TYPE_UINT64, label=F.LABEL_OPTIONAL)
    sink.field.add(name="took", number=5, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Duration",
                   label=F.LABEL_OPTIONAL)
    sink.field.add(name="levels", number=6, type=F.TYPE_ENUM, type_name=".t.Level", label=F.LABEL_REPEATED)
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("t.Sink"))


Sink = _kitchen_sink()


def placed(order_id: str, seconds: int = 1_700_000_000) -> Any:
    m = events_pb2.OrderPlaced(order_id=order_id, items=["book", "pen"])
    m.total.currency, m.total.units = "EUR", 12
    m.placed_at.FromSeconds(seconds)
    return m


def framed(message: Any, schema_id: int = 3, indexes: list[int] | None = None) -> bytes:
    return frame(schema_id, message.SerializeToString(), encode_message_indexes(indexes or [0]))


def test_arrow_type_follows_sparks_from_protobuf() -> None:
    t = protobuf_to_arrow_schema(events_pb2.OrderPlaced)
    assert t.field("order_id").type == pa.string()
    assert t.field("total").type == pa.struct([pa.field("currency", pa.string()), pa.field("units", pa.int64()),
                                               pa.field("nanos", pa.int32())])
    assert t.field("items").type == pa.list_(pa.string())
    assert t.field("placed_at").type == pa.timestamp("us", tz="UTC")
    s = protobuf_to_arrow_schema(Sink)
    assert s.field("level").type == pa.string() and s.field("big").type == pa.int64()
    assert s.field("by_name").type == pa.map_(pa.string(), pa.struct([pa.field("x", pa.int32())]))
    assert s.field("took").type == pa.duration("us") and s.field("levels").type == pa.list_(pa.string())
    envelope = protobuf_to_arrow_schema(events_pb2.OrderEvent)
    assert envelope.names == ["placed", "shipped", "cancelled"]


def test_decode_nested_repeated_and_well_known_types() -> None:
    shipped = events_pb2.OrderShipped(order_id="o-2", carrier="ups", parcels=[
        events_pb2.OrderShipped.Parcel(tracking="1Z", weight_grams=250), events_pb2.OrderShipped.Parcel()])
    column = pa.array([framed(placed("o-1")), None, framed(events_pb2.OrderPlaced())], pa.binary())
    rows = protobuf_to_struct(column, events_pb2.OrderPlaced).to_pylist()
    assert rows[0] == {"order_id": "o-1", "total": {"currency": "EUR", "units": 12, "nanos": 0},
                       "items": ["book", "pen"],
                       "placed_at": datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)}
    assert rows[1] is None  # a tombstone stays null
    # Unset message fields are null; proto3 scalars without presence have their value.
    assert rows[2] == {"order_id": "", "total": None, "items": [], "placed_at": None}
    ship = protobuf_to_struct(pa.array([framed(shipped, indexes=[1])]), events_pb2.OrderShipped).to_pylist()
    assert ship[0]["parcels"] == [{"tracking": "1Z", "weight_grams": 250}, {"tracking": "", "weight_grams": 0}]
    events = [events_pb2.OrderEvent(placed=placed("o-3")),
              events_pb2.OrderEvent(cancelled=events_pb2.OrderCancelled(order_id="o-4", reason="late"))]
    env = protobuf_to_struct(pa.array([framed(e, indexes=[3]) for e in events]), events_pb2.OrderEvent).to_pylist()
    assert env[0]["placed"]["order_id"] == "o-3" and env[0]["cancelled"] is None
    assert env[1] == {"placed": None, "shipped": None, "cancelled": {"order_id": "o-4", "reason": "late"}}


def test_enums_maps_optional_unsigned_and_durations_round_trip() -> None:
    full = Sink(level=1, maybe="yes", big=(1 << 64) - 1, levels=[1, 0])
    full.by_name["b"].x = 2
    full.by_name["a"].x = 1
    full.took.FromMicroseconds(1_500_000)
    column = pa.array([framed(full, indexes=[1]), framed(Sink(), indexes=[1]), None])  # Sink: the 2nd message
    structs = protobuf_to_struct(column, Sink)
    rows = structs.to_pylist()
    assert rows[0]["level"] == "HIGH" and rows[0]["maybe"] == "yes" and rows[0]["levels"] == ["HIGH", "LOW"]
    assert rows[0]["by_name"] == [("a", {"x": 1}), ("b", {"x": 2})]  # keys sorted
    assert rows[0]["big"] == -1  # uint64 above 2^63 wraps into int64, as Spark's default
    assert rows[0]["took"] == datetime.timedelta(seconds=1.5)
    assert rows[1] == {"level": "LOW", "by_name": [], "maybe": None, "big": 0, "took": None, "levels": []}
    back = struct_to_protobuf(structs.slice(0, 2), Sink, schema_id=3)
    parsed = [Sink.FromString(b[7:]) for b in back.to_pylist()]
    assert parsed[0].level == 1 and parsed[0].by_name["b"].x == 2 and parsed[0].took.ToMicroseconds() == 1_500_000
    assert parsed[0].HasField("maybe") and not parsed[1].HasField("maybe") and not parsed[1].HasField("took")
    assert parsed[0].big == (1 << 64) - 1
    assert back.to_pylist()[1] == framed(Sink(), indexes=[1])


def test_encode_is_what_the_serializer_writes() -> None:
    structs = protobuf_to_struct(pa.array([framed(placed("o-1"))]), events_pb2.OrderPlaced)
    back = struct_to_protobuf(structs, events_pb2.OrderPlaced, schema_id=3)
    assert back.to_pylist() == [framed(placed("o-1"))]
    shipped = events_pb2.OrderShipped(order_id="o", parcels=[events_pb2.OrderShipped.Parcel(tracking="t")])
    structs = protobuf_to_struct(pa.array([framed(shipped, indexes=[1])]), events_pb2.OrderShipped)
    assert struct_to_protobuf(structs, events_pb2.OrderShipped, schema_id=3).to_pylist() == [
        framed(shipped, indexes=[1])]


def test_record_batches_and_bad_rows_name_the_kafka_record() -> None:
    batch = pa.record_batch({"topic": pa.array(["clicks"] * 3), "partition": pa.array([2, 2, 2], pa.int32()),
                             "offset": pa.array([40, 41, 42], pa.int64()),
                             "value": pa.array([framed(placed("o-1")), b"\x00\x00\x00\x00\x03\x00\xff\xff", None])})
    with pytest.raises(SerializationError) as failed:
        decode_protobuf_column(batch, "value", events_pb2.OrderPlaced)
    text = str(failed.value)
    assert "row 1 of the Protobuf column" in text and "topic 'clicks' partition 2" in text and "offset 41" in text
    assert failed.value.partition == 2 and failed.value.context["offset"] == 41
    lenient = decode_protobuf_column(batch, "value", events_pb2.OrderPlaced, mode="PERMISSIVE", name="order")
    assert lenient.schema.names == ["topic", "partition", "offset", "value", "order"]
    assert [r is None for r in lenient.column(4).to_pylist()] == [False, True, True]
    with pytest.raises(SerializationError, match="row 0 of the Protobuf column.*magic byte"):
        protobuf_to_struct(pa.array([b"\x01junkjunk"]), events_pb2.OrderPlaced)
    encoded = encode_protobuf_column(lenient.select(["order"]), "order", events_pb2.OrderPlaced, schema_id=3)
    assert encoded.column(0).to_pylist() == [framed(placed("o-1")), None, None]


def test_bad_calls() -> None:
    with pytest.raises(ConfigError, match="message_type or a registry"):
        protobuf_to_struct(pa.array([b""]))
    with pytest.raises(ConfigError, match="generated Protobuf message class"):
        protobuf_to_struct(pa.array([b""]), dict)
    with pytest.raises(ConfigError, match="FAILFAST or PERMISSIVE"):
        protobuf_to_struct(pa.array([b""]), Sink, mode="lenient")
    with pytest.raises(ConfigError, match="schema_id, or registry and subject"):
        struct_to_protobuf(pa.array([{"order_id": "x"}]), events_pb2.OrderPlaced)
    with pytest.raises(SerializationError, match="row 0 does not match kafkalite.test.OrderPlaced.*'nope'"):
        struct_to_protobuf(pa.array([{"nope": 1}]), events_pb2.OrderPlaced, schema_id=1)
    with pytest.raises(ConfigError, match="no column 'payload'"):
        decode_protobuf_column(pa.record_batch({"value": pa.array([b""])}), "payload", Sink)
