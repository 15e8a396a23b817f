"""The producer's per-record append path in pure Python (the reference implementation).

Import these through :mod:`kafkalite.producer.append_kernel`, which picks the C
versions (:mod:`kafkalite._speedups`) when they are built. Both give the same batches
byte for byte; the tests run both.

The base classes hold what the append path reads and writes per record; the classes
of :mod:`kafkalite.producer.accumulator`, :mod:`~kafkalite.producer.partitioner` and
:mod:`~kafkalite.producer.futures` add everything else:

* :class:`BatchBase` (ProducerBatch): ``builder``, ``callbacks``, ``closed``, ``done``;
* :class:`QueueBase` (PartitionQueue): ``batches`` (a deque), ``lock``;
* :class:`TopicBase` (TopicState): ``queues``, ``sticky``, ``available``, ``num_partitions``;
* :class:`StickyBase` (StickyPartitioner): ``current``, ``produced_bytes``, ``batch_size``;
* :class:`FutureBase` (RecordFuture): ``_batch``, ``_index``, ``_timestamp``, sizes.

:class:`Appender` is ``send()``'s common case in one call: choose the partition
(murmur2 of the key, or the sticky partition), take the partition's lock without
waiting, encode into the open batch if it has room, make the future. Whenever that
is not the whole story (unknown topic, data that is not bytes, headers, no open batch
or a full one, the sticky partition due to switch, the lock busy) it returns None
and changes nothing, and the producer takes its general path.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
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


class Appender:
    """``Appender(topics, future_cls, batch_size, size_threshold)`` (see the module doc).

    ``topics`` is the accumulator's dict of TopicState; ``size_threshold``: records
    whose key + value sizes reach it take the general path (which checks
    ``max.request.size`` and ``buffer.memory``). ``enabled = False`` sends every
    record down the general path (closed producer, fatal error).
    """

    __slots__ = ("batch_size", "enabled", "future_cls", "size_threshold", "topics")

    def __init__(self, topics: dict[str, Any], future_cls: type, batch_size: int, size_threshold: int) -> None:
        self.topics = topics
        self.future_cls = future_cls
        self.batch_size = max(1, batch_size)
        self.size_threshold = size_threshold
        self.enabled = True

    def append(self, topic: str, key: Any, value: Any, partition: Any, timestamp: Any,
               callback: Callable[..., Any] | None) -> Any:
        """The record's future, or None: take the general path."""
        if not self.enabled:
            return None
        state = self.topics.get(topic)
        if state is None:
            return None
        if timestamp is None:
            ts = int(time.time() * 1000)
        elif type(timestamp) is int and 0 <= timestamp <= _INT64_MAX:
            ts = timestamp
        else:
            return None
        placed = self._place(state, key, value, partition, ts, callback, True)
        return None if placed is None else placed[0]

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
        if state is None:
            return i
        if timestamp is None:
            ts = int(time.time() * 1000)
        elif type(timestamp) is int and 0 <= timestamp <= _INT64_MAX:
            ts = timestamp
        else:
            return i
        last = None
        last_index = -2
        while i < count:
            placed = self._place(state, keys[i] if keys is not None else None, values[i], partition, ts, None,
                                 False)
            if placed is None:
                break
            _, batch, index = placed
            if batch is not last or index != last_index + 1:
                spans.append((batch, index, i))
                last = batch
            last_index = index
            i += 1
            if not self.enabled:
                break
        return i

    def _place(self, state: Any, key: Any, value: Any, partition: Any, ts: int,
               callback: Callable[..., Any] | None, want_future: bool,
               _bytes: type = bytes, _len: Callable[[Any], int] = len) -> tuple[Any, Any, int] | None:
        """Append one record to its partition's open batch: (future or None, batch, index
        in the batch), or None (nothing changed: the general path takes the record).

        The one per-record step of :meth:`append` and :meth:`append_many`, as the C
        kernel's ``append_one`` (locals for builtins: this runs once per record).
        """
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
        sticky = None
        if partition is None:
            if key is not None:
                if n <= 0:
                    return None
                p = (_murmur2(key) & 0x7FFFFFFF) % n
            else:
                sticky = state.sticky
                p = sticky.current
                if p < 0 or p >= n or sticky.produced_bytes >= 2 * self.batch_size:
                    return None  # a switch is due (KIP-794): the general path decides
        elif type(partition) is int and 0 <= partition < n:
            p = partition
        else:
            return None
        queues = state.queues
        if p >= _len(queues):
            return None
        pq = queues[p]
        lock = pq.lock
        if not lock.acquire(False):
            return None  # the sender is draining: wait in the general path
        try:
            dq = pq.batches
            if not dq:
                return None
            last = dq[-1]
            if last.closed or last.done:
                return None
            builder = last.builder
            buf = builder._buf
            before = _len(buf)
            index = builder.try_append(ts, key, value, None)
            if index < 0:
                return None  # full: the general path closes it and starts the next batch
            future = None
            if want_future:
                future = self.future_cls(last, index, ts, klen, vlen)
                if callback is not None:
                    cbs = last.callbacks
                    if cbs is None:
                        last.callbacks = [(future, callback, 0)]
                    else:
                        cbs.append((future, callback, 0))
        finally:
            lock.release()
        if sticky is not None:
            # StickyPartitioner.update: count the bytes; switch once batch.size was
            # produced and the batch is full, or twice batch.size regardless.
            appended = _len(buf) - before
            produced = sticky.produced_bytes + appended
            bs = sticky.batch_size
            full = produced >= bs and builder.is_full()
            if full or produced >= 2 * bs:
                sticky.update(p, appended, full, state.available, n)
            elif sticky.current == p:
                sticky.produced_bytes = produced
        return future, last, index
