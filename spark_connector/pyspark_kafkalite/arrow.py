"""Fetched record batches → Arrow record batches in Spark's Kafka schema, column at a time.

The consumer hands over whole record batches (:meth:`kafkalite.Consumer.poll_batches`);
their ``columns()`` (:mod:`kafkalite.protocol.records`, v2 and legacy v0/v1 batches
alike) decodes each into parallel arrays (offsets, timestamps, start and length of
every key, value and header inside the batch's buffer) with no Python object per
record. Here those arrays are concatenated and turned into Arrow arrays with numpy,
again with no per-record Python work:

* ``key`` / ``value`` / header fields become Arrow *binary view* arrays whose 16-byte
  views point into the fetched buffer (short values inline, as the format requires),
  then one C++ cast to ``binary`` copies the bytes out;
* ``topic`` / ``partition`` are repeated scalars, ``timestamp`` is milliseconds * 1000
  (Spark timestamps are microseconds, UTC);
* ``headers`` is a list array over a struct array; a record without headers gets a
  null list, as Spark's JVM connector returns.

The record batch matches ``to_arrow_schema(kafka_schema(include_headers))`` exactly,
which PySpark checks.

Example::

    builder = ArrowBuilder(include_headers=True)
    rb = builder.build("orders", 0, batches, start=100, end=200)   # pa.RecordBatch or None
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pyarrow as pa

from kafkalite.protocol.record_types import CREATE_TIME, RecordColumns
from kafkalite.protocol.records import Batch

HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS_TYPE = pa.list_(pa.field("element", HEADER_TYPE))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

_INLINE = 12  # Arrow's binary view: values up to 12 bytes live in the view itself
_J12 = np.arange(_INLINE, dtype=np.int64)
_J4 = np.arange(4, dtype=np.int64)


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema PySpark expects for Spark's Kafka schema (every field nullable)."""
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", TIMESTAMP_TYPE),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", HEADERS_TYPE))
    return pa.schema(fields)


def _validity(valid: np.ndarray) -> pa.Buffer | None:
    if valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def binary_from_positions(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                          view_type: pa.DataType | None = None) -> pa.Array:
    """A binary (or string) Arrow array of ``data[start:start+length]`` per row.

    ``lengths`` of -1 are nulls. Builds Arrow's 16-byte views with numpy (length,
    then the value itself if it fits in 12 bytes, else a 4-byte prefix, buffer 0 and
    the start) and casts once to the contiguous type, in C++.
    """
    n = len(starts)
    if view_type is None:
        view_type = pa.binary_view()
    target = pa.string() if view_type == pa.string_view() else pa.binary()
    if n == 0:
        return pa.array([], type=target)
    valid = lengths >= 0
    lens = np.where(valid, lengths, 0).astype(np.int32, copy=False)
    views = np.zeros((n, 4), dtype=np.int32)
    views[:, 0] = lens
    raw = views.view(np.uint8)  # (n, 16)
    if len(data) == 0:
        data = np.zeros(1, dtype=np.uint8)  # every value is empty or null
    top = len(data) - 1
    starts64 = starts.astype(np.int64, copy=False)
    short = lens <= _INLINE
    if short.all():
        idx = starts64[:, None] + _J12
        np.minimum(idx, top, out=idx)
        inline = data[idx]
        inline[_J12[None, :] >= lens[:, None]] = 0
        raw[:, 4:] = inline
    else:
        long_ = ~short
        if short.any():
            s_idx = starts64[short][:, None] + _J12
            np.minimum(s_idx, top, out=s_idx)
            inline = data[s_idx]
            inline[_J12[None, :] >= lens[short][:, None]] = 0
            raw[short, 4:] = inline
        l_starts = starts64[long_]
        raw[long_, 4:8] = data[l_starts[:, None] + _J4]
        views[long_, 3] = l_starts  # buffer index (column 2) stays 0
    arr = pa.Array.from_buffers(view_type, n, [_validity(valid), pa.py_buffer(views), pa.py_buffer(data)])
    return arr.cast(target)


class ArrowBuilder:
    """Builds one Arrow record batch per poll of one partition (see the module doc)."""

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.schema = arrow_schema(include_headers)

    def build(self, topic: str, partition: int, batches: Sequence[Batch], start: int, end: int
              ) -> pa.RecordBatch | None:
        """The records of ``batches`` with ``start <= offset < end``; None if there are none."""
        columns: list[RecordColumns] = []
        for b in batches:
            cols = b.columns()
            if len(cols.offsets):
                columns.append(cols)
        if not columns:
            return None
        return self._assemble(topic, partition, columns, start, end)

    def _assemble(self, topic: str, partition: int, columns: list[RecordColumns], start: int, end: int
                  ) -> pa.RecordBatch | None:
        # One data buffer for all rows: batches of one fetch share the response buffer;
        # decompressed batches have their own, concatenated here (a memcpy) with their
        # positions shifted.
        buffers: list[Any] = []
        bases: dict[int, int] = {}
        size = 0
        shift = []
        for cols in columns:
            key = id(cols.buffer)
            if key not in bases:
                bases[key] = size
                buffers.append(cols.buffer)
                size += len(cols.buffer)
            shift.append(bases[key])
        data = (np.frombuffer(buffers[0], dtype=np.uint8) if len(buffers) == 1
                else np.concatenate([np.frombuffer(b, dtype=np.uint8) for b in buffers]))
        counts = np.fromiter((len(c.offsets) for c in columns), dtype=np.int64, count=len(columns))

        def cat(index: int, typecode: str) -> np.ndarray:
            joined = array(typecode)
            for cols in columns:
                joined.extend(cast("array[int]", cols[index]))  # index: one of the array columns
            return np.frombuffer(joined, dtype=np.int64 if typecode == "q" else np.int32)

        offsets = cat(1, "q")
        i0 = int(np.searchsorted(offsets, start, "left"))
        i1 = int(np.searchsorted(offsets, end, "left"))
        if i1 <= i0:
            return None
        rows = slice(i0, i1)
        n = i1 - i0
        shifts = np.repeat(np.asarray(shift, dtype=np.int64), counts)
        timestamps = cat(2, "q")[rows] * 1000
        key_starts = cat(3, "i")[rows] + shifts[rows]
        value_starts = cat(5, "i")[rows] + shifts[rows]
        # Spark's timestampType is 0 (create time) or 1 (log-append time); a v0 message
        # set has none (-1) and reads as create time.
        ts_types = np.repeat(np.fromiter((max(c.timestamp_type, CREATE_TIME) for c in columns), dtype=np.int32,
                                         count=len(columns)), counts)[rows]
        arrays = [
            binary_from_positions(data, key_starts, cat(4, "i")[rows]),
            binary_from_positions(data, value_starts, cat(6, "i")[rows]),
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.array(offsets[rows], type=pa.int64()),
            pa.Array.from_buffers(TIMESTAMP_TYPE, n, [None, pa.py_buffer(np.ascontiguousarray(timestamps))]),
            pa.array(ts_types, type=pa.int32()),
        ]
        if self.include_headers:
            arrays.append(self._headers(columns, data, shift, rows))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _headers(self, columns: list[RecordColumns], data: np.ndarray, shift: list[int], rows: slice) -> pa.Array:
        # Per-record header ranges: each batch's header_offsets restart at 0, so add the
        # headers of the batches before it.
        parts = [np.zeros(1, dtype=np.int64)]
        base = 0
        hk_shift = []
        for cols, s in zip(columns, shift):
            ho = np.frombuffer(cols.header_offsets, dtype=np.int32).astype(np.int64)
            parts.append(ho[1:] + base)
            count = int(ho[-1]) if len(ho) else 0
            hk_shift.append((count, s))
            base += count
        list_offsets = np.concatenate(parts)
        per = np.repeat(np.asarray([s for _, s in hk_shift], dtype=np.int64),
                        np.asarray([c for c, _ in hk_shift], dtype=np.int64))

        def cat(index: int) -> np.ndarray:
            joined = array("i")
            for cols in columns:
                joined.extend(cast("array[int]", cols[index]))  # index: one of the array columns
            return np.frombuffer(joined, dtype=np.int32).astype(np.int64)

        keys = binary_from_positions(data, cat(8) + per, cat(9), pa.string_view())
        values = binary_from_positions(data, cat(10) + per, cat(11))
        structs = pa.StructArray.from_arrays([keys, values], fields=list(HEADER_TYPE))
        offs = list_offsets[rows.start:rows.stop + 1]
        has = np.diff(offs) > 0
        mask = None if has.all() else pa.array(~has)
        return pa.ListArray.from_arrays(pa.array(offs.astype(np.int32)), structs, type=HEADERS_TYPE, mask=mask)
