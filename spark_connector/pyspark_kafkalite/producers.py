"""Producers kept between the write tasks of one Spark Python worker.

Spark runs task after task in the same Python worker process
(``spark.python.worker.reuse``, true by default). A producer started per task pays,
before its first record leaves, a connection, a metadata request and (idempotence, the
default) an ``InitProducerId`` round trip, and at its end the close; on a busy executor
these round trips are a large part of a small task. Spark's JVM connector keeps its
producers in an executor-wide cache keyed by their settings for the same reason
(``spark.kafka.producer.cache.timeout``, 10 minutes). This pool does that for one
Python worker:

* :meth:`ProducerPool.lend` gives an idle producer made with exactly these settings, or
  a new one; a producer is lent to one task at a time (it leaves the pool while lent).
* :meth:`ProducerPool.give_back` takes it back only from a task whose sends were all
  flushed and acknowledged: an idle producer holds no record of any task, so a task's
  delivery errors are always its own. A failed task closes its producer instead
  (:meth:`ProducerPool.discard`): it may hold unsent records or a fatal idempotence
  state.
* Producers with a ``transactional.id`` are never kept (one id is one producer
  identity, fenced by the next one), nor those whose settings hold an object (a
  callback: each task unpickles its own, so no later task has equal settings).
* At most :data:`MAX_IDLE` idle producers; one idle longer than :data:`IDLE_TIMEOUT_S`
  (the JVM connector's cache timeout) is closed when a producer is next lent or given
  back; the rest are closed when the process exits (:func:`atexit`; Spark may end a
  worker without running it, which loses nothing: an idle producer has nothing to send).

Example::

    settings = {"bootstrap.servers": "localhost:9092"}
    producer = POOL.lend(settings)
    try:
        outcome = producer.send_many("events", [b"a", b"b"])
        producer.flush()
        outcome.result()          # every record acknowledged, or raises
    except BaseException:
        POOL.discard(producer)
        raise
    POOL.give_back(settings, producer)
"""

from __future__ import annotations

import atexit
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite import Producer

__all__ = ["IDLE_TIMEOUT_S", "MAX_IDLE", "POOL", "ProducerPool"]

#: Idle producers kept per process (a worker writes with one set of settings at a time).
MAX_IDLE = 4
#: How long an idle producer is kept: Spark's ``spark.kafka.producer.cache.timeout``.
IDLE_TIMEOUT_S = 600.0
#: How long closing an idle producer may take (it has nothing to send).
_CLOSE_TIMEOUT_S = 5.0

SettingsKey = tuple[tuple[str, str], ...]


_PLAIN = (str, int, float, bool, type(None))


def settings_key(settings: Mapping[str, Any]) -> SettingsKey | None:
    """What identifies a producer's settings; None when such a producer is never kept:
    with a ``transactional.id``, or with a value that is not a plain string, number or
    None (a callback or a provider object: each task unpickles its own copy, so no two
    tasks' settings would be equal and an idle producer would only wait to expire)."""
    if settings.get("transactional.id") is not None:
        return None
    if not all(isinstance(v, _PLAIN) for v in settings.values()):
        return None
    return tuple(sorted((str(k), repr(v)) for k, v in settings.items()))


class ProducerPool:
    """Idle producers of this process by settings (see the module doc)."""

    def __init__(self, make: Callable[[dict[str, Any]], Producer] = Producer,
                 max_idle: int = MAX_IDLE, idle_timeout_s: float = IDLE_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._make = make
        self._max_idle = max_idle
        self._idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        # (settings key, producer) -> when it was given back; oldest first.
        self._idle: OrderedDict[tuple[SettingsKey, int], tuple[Producer, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._idle)

    def lend(self, settings: Mapping[str, Any]) -> Producer:
        """An idle producer made with ``settings``, or a new one; the caller owns it until
        it gives it back or discards it."""
        key = settings_key(settings)
        stale = self._expire()
        found: Producer | None = None
        if key is not None:
            with self._lock:
                for (k, ident), (producer, _) in reversed(self._idle.items()):
                    if k == key:
                        del self._idle[(k, ident)]
                        found = producer
                        break
        self._close(stale)
        return found if found is not None else self._make(dict(settings))

    def give_back(self, settings: Mapping[str, Any], producer: Producer) -> None:
        """Keep ``producer`` for the next task with the same settings. Only after every
        send of the task was flushed and acknowledged."""
        key = settings_key(settings)
        if key is None:
            self._close([producer])
            return
        with self._lock:
            self._idle[(key, id(producer))] = (producer, self._clock())
            surplus = []
            while len(self._idle) > self._max_idle:
                surplus.append(self._idle.popitem(last=False)[1][0])
        self._close(surplus + self._expire())

    def discard(self, producer: Producer) -> None:
        """Close a producer a failed task used: it is never lent again."""
        self._close([producer])

    def close_all(self) -> None:
        """Close every idle producer (at process exit)."""
        with self._lock:
            producers = [p for p, _ in self._idle.values()]
            self._idle.clear()
        self._close(producers)

    def _expire(self) -> list[Producer]:
        deadline = self._clock() - self._idle_timeout_s
        with self._lock:
            old = [k for k, (_, since) in self._idle.items() if since < deadline]
            return [self._idle.pop(k)[0] for k in old]

    @staticmethod
    def _close(producers: list[Producer]) -> None:
        for producer in producers:
            producer.close(timeout=_CLOSE_TIMEOUT_S)


#: The pool of this process: the write tasks' producers (:mod:`pyspark_kafkalite.sending`).
POOL = ProducerPool()
atexit.register(POOL.close_all)
