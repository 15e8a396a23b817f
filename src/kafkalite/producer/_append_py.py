"""The producer's per-record append path in pure Python (when the C kernel is absent).

Import these through :mod:`kafkalite.producer.append_kernel`, which picks the C
versions (:mod:`kafkalite._speedups`) when they are built. Both give the same batches
byte for byte; the tests run both.

The base classes hold what the C kernel reads and writes per record as struct fields;
the classes of :mod:`kafkalite.producer.accumulator`,
:mod:`~kafkalite.producer.partitioner` and :mod:`~kafkalite.producer.futures` add
everything else:

* :class:`BatchBase` (ProducerBatch): ``builder``, ``callbacks``, ``closed``, ``done``;
* :class:`QueueBase` (PartitionQueue): ``batches`` (a deque), ``lock``;
* :class:`TopicBase` (TopicState): ``queues``, ``sticky``, ``available``, ``num_partitions``;
* :class:`StickyBase` (StickyPartitioner): ``current``, ``produced_bytes``, ``batch_size``;
* :class:`FutureBase` (RecordFuture): ``_batch``, ``_index``, ``_timestamp``, sizes.

:class:`Appender` has the C kernel's interface (``append``, ``append_many``,
``enabled``) but no placement of its own: it takes what the kernel takes (a known
topic, bytes or None for key and value, below the size threshold, a valid partition
and timestamp), partitions keyed records by murmur2 and hands the record to
:meth:`RecordAccumulator.append <kafkalite.producer.accumulator.RecordAccumulator.append>`,
send()'s one general append path (explicit or sticky partition). Anything else
returns None and changes nothing: the producer's general path takes the record
(serializers, metadata, size checks, waiting for memory).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from time import time as _time
from typing import Any

from kafkalite.errors import InvalidArgumentError

__all__ = ["Appender", "BatchBase", "FastLock", "FutureBase", "QueueBase", "StickyBase", "TopicBase"]

FastLock = threading.Lock
_INT64_MAX = (1 << 63) - 1


class BatchBase:
    __slots__ = ("builder", "callbacks", "closed", "done")


class QueueBase:
    __slots__ = ("batches", "lock")


class TopicBase:
    __slots__ = ("available", "num_partitions", "queues", "sticky")


class StickyBase:
    __slots__ = ("batch_size", "current", "produced_bytes")

    def __init__(self) -> None:
        self.current = -1
        self.produced_bytes = 0
        self.batch_size = 1


class FutureBase:
    __slots__ = ("_batch", "_index", "_key_size", "_timestamp", "_value_size")

    def __init__(self, batch: Any, index: int, timestamp: int, key_size: int, value_size: int) -> None:
        self._batch = batch
        self._index = index
        self._timestamp = timestamp
        self._key_size = key_size
        self._value_size = value_size


from kafkalite.protocol._record_codec_py import murmur2 as _murmur2  # noqa: E402


def _timestamp_ms(timestamp: Any) -> int:
    """The record's create time (ms): now for None, else the int as given; -1 for anything
    else (the general path converts or refuses it)."""
    if timestamp is None:
        return int(time.time() * 1000)
    if type(timestamp) is int and 0 <= timestamp <= _INT64_MAX:
        return timestamp
    return -1


class Appender:
    """``Appender(accumulator, future_cls, size_threshold)`` (see the module doc).

    ``accumulator`` is the producer's RecordAccumulator (its ``topics`` are the ones
    sent to); ``size_threshold``: records whose key + value sizes reach it take the
    general path (which checks ``max.request.size`` and ``buffer.memory``).
    ``enabled = False`` sends every record down the general path (closed producer,
    fatal error, interceptors, transactions, a custom partitioner).
    """

    __slots__ = ("acc", "enabled", "future_cls", "size_threshold", "topics")

    def __init__(self, accumulator: Any, future_cls: type, size_threshold: int) -> None:
        self.acc = accumulator
        self.topics: dict[str, Any] = accumulator.topics
        self.future_cls = future_cls
        self.size_threshold = size_threshold
        self.enabled = True

    def append(self, topic: str, key: Any, value: Any, partition: Any, timestamp: Any,
               callback: Callable[..., Any] | None) -> Any:
        """The record's future, or None: take the general path."""
        if not self.enabled:
            return None
        state = self.topics.get(topic)
        if state is None or state.expired:
            return None
        # No timestamp (the common case) is now; _timestamp_ms says what else is taken.
        ts = int(_time() * 1000) if timestamp is None else _timestamp_ms(timestamp)
        if ts < 0:
            return None
        return self._place(state, key, value, partition, ts, callback, self.future_cls)

    def append_many(self, topic: str, keys: Any, values: Any, start: int, partition: Any, timestamp: Any,
                    spans: list[tuple[Any, int, int]]) -> int:
        """Append ``values[start:]`` without futures; the index of the first one not appended.

        ``spans`` gets ``(batch, index in the batch, index in values)`` for the first
        record of each run appended to one batch with consecutive indexes.
        """
        if not isinstance(values, (list, tuple)):
            values = list(values)
        count = len(values)
        if keys is not None:
            if not isinstance(keys, (list, tuple)):
                keys = list(keys)
            if len(keys) != count:
                raise InvalidArgumentError(f"keys has {len(keys)} items but values has {count}")
        i = max(0, start)
        state = self.topics.get(topic) if self.enabled else None
        if state is None or state.expired:
            return i
        ts = _timestamp_ms(timestamp)
        if ts < 0:
            return i
        last = None
        last_index = -2
        while i < count:
            # A FutureBase only carries (batch, index) back: no future per record.
            placed = self._place(state, keys[i] if keys is not None else None, values[i], partition, ts, None,
                                 FutureBase)
            if placed is None:
                break
            batch, index = placed._batch, placed._index
            if batch is not last or index != last_index + 1:
                spans.append((batch, index, i))
                last = batch
            last_index = index
            i += 1
            if not self.enabled:
                break
        return i

    def _place(self, state: Any, key: Any, value: Any, partition: Any, ts: int,
               callback: Callable[..., Any] | None, future_cls: type,
               _bytes: type = bytes, _len: Callable[[Any], int] = len) -> Any:
        """What the C kernel checks, then the accumulator's append: the future, or None
        (nothing changed, or no buffer memory: the general path takes the record)."""
        if key is None:
            klen = -1
        elif type(key) is _bytes:
            klen = _len(key)
        else:
            return None
        if value is None:
            vlen = -1
        elif type(value) is _bytes:
            vlen = _len(value)
        else:
            return None
        if klen + vlen >= self.size_threshold:
            return None  # the general path checks max.request.size / buffer.memory
        n = state.num_partitions
        if partition is None:
            if key is not None:
                if n <= 0:
                    return None
                partition = (_murmur2(key) & 0x7FFFFFFF) % n
            # else: the sticky partition (KIP-794), chosen by the accumulator
        elif type(partition) is not int or not 0 <= partition < n or partition >= _len(state.queues):
            return None
        # The size hint is the general path's (ProducerCore.append, no headers).
        return self.acc.append(state, partition, ts, key, value, None, klen, vlen, future_cls, callback, None,
                               klen + vlen + 32)
