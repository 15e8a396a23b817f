"""Decoded records are not tracked by the cyclic GC (C kernel): nothing in them can
form a cycle, and tracking a fetch's worth of records cost as much as decoding them."""

from __future__ import annotations

import gc

import pytest

from kafkalite.protocol.record_builder import RecordBatchBuilder
from kafkalite.protocol.record_codec import c_impl, python_impl
from kafkalite.types import ConsumerRecord

needs_c = pytest.mark.skipif(c_impl is None, reason="kafkalite._speedups is not built")


def batch() -> bytes:
    b = RecordBatchBuilder(batch_size=1 << 20)
    b.try_append(1_700_000_000_000, b"k", b"v", None)
    b.try_append(1_700_000_000_001, None, b"w", [("h", b"1"), ("n", None)])
    return b.build()


@needs_c
def test_c_records_are_untracked_and_equal_to_the_python_ones():
    data = batch()
    args = (data, 61, len(data), 2, 10, 1_700_000_000_000, None, ConsumerRecord, (0, "t", 3, None))
    c_records = c_impl.decode_records(*args)
    assert c_records == python_impl.decode_records(*args)
    for rec in c_records:
        assert not gc.is_tracked(rec) and not gc.is_tracked(rec.headers)
        assert all(not gc.is_tracked(h) for h in rec.headers)
    assert c_records[1].headers == [("h", b"1"), ("n", None)]
    c_records[0].headers.append(("added", b"x"))  # still an ordinary list
    assert c_records[0].headers == [("added", b"x")]


@needs_c
def test_records_with_a_tracked_extra_stay_tracked():
    data = batch()
    extra = ([],)  # a container: a cycle through it is possible, so the GC must see the record
    records = c_impl.decode_records(data, 61, len(data), 2, 0, 0, None, tuple, extra)
    assert all(gc.is_tracked(r) for r in records)
