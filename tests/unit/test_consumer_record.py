"""ConsumerRecord: a tuple subclass the record decoders build directly."""

from __future__ import annotations

import pickle

import pytest

from kafkalite.protocol import record_codec
from kafkalite.protocol.record_builder import RecordBatchBuilder
from kafkalite.types import ConsumerRecord, TopicPartition

IMPLS = [record_codec.python_impl] + ([record_codec.c_impl] if record_codec.c_impl else [])


def test_public_constructor_and_attributes() -> None:
    r = ConsumerRecord("orders", 2, 42, 1700, 1, b"k", b"value", [("h", b"1")], leader_epoch=3)
    assert (r.topic, r.partition, r.offset, r.timestamp, r.timestamp_type) == ("orders", 2, 42, 1700, 1)
    assert (r.key, r.value, r.headers, r.leader_epoch) == (b"k", b"value", [("h", b"1")], 3)
    assert r.serialized_key_size == 1 and r.serialized_value_size == 5
    assert r.topic_partition == TopicPartition("orders", 2)
    tomb = ConsumerRecord("t", 0, 0, 0, 0, None, None)
    assert tomb.serialized_key_size == -1 and tomb.serialized_value_size == -1 and tomb.headers == []
    explicit = ConsumerRecord("t", 0, 0, 0, 0, "decoded", {"a": 1}, serialized_key_size=7, serialized_value_size=9)
    assert explicit.serialized_key_size == 7 and explicit.serialized_value_size == 9


def test_equality_pickle_and_unhashable() -> None:
    a = ConsumerRecord("t", 0, 1, 2, 0, b"k", b"v")
    b = ConsumerRecord("t", 0, 1, 2, 0, b"k", b"v")
    assert a == b
    assert a != ConsumerRecord("t", 0, 1, 2, 0, b"k", b"w")
    clone = pickle.loads(pickle.dumps(a))
    assert type(clone) is ConsumerRecord and clone == a
    with pytest.raises(TypeError):
        hash(a)
    assert "offset=1" in repr(a) and "topic='t'" in repr(a)


@pytest.mark.parametrize("impl", IMPLS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_decoders_build_consumer_records(impl: object) -> None:
    builder = RecordBatchBuilder()
    builder.append(1000, b"a", b"bb", [("h", b"x")])
    builder.append(1001, None, None)
    data = builder.build()
    recs = impl.decode_records(data, 61, len(data), 2, 100, 1000, None, ConsumerRecord,  # type: ignore[attr-defined]
                               (0, "orders", 4, 7))
    assert [type(r) for r in recs] == [ConsumerRecord, ConsumerRecord]
    assert recs[0] == ConsumerRecord("orders", 4, 100, 1000, 0, b"a", b"bb", [("h", b"x")], 7)
    assert recs[1].key is None and recs[1].value is None and recs[1].offset == 101
    assert recs[1].serialized_value_size == -1
    assert pickle.loads(pickle.dumps(recs[0])) == recs[0]
