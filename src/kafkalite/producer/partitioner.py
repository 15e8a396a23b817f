"""Choosing a partition for each record: Java's rules, byte for byte.

* Keyed records (default): ``murmur2(key) & 0x7fffffff % number of ALL partitions``,
  exactly as the Java client's ``BuiltInPartitioner.partitionForKey``, so the same
  key lands in the same partition whichever client wrote it.
* Unkeyed records (or every record with ``partitioner.ignore.keys``): the KIP-794
  built-in sticky partitioner. Records stick to one partition until ``batch.size``
  bytes were produced to it (and its batch is full, or twice that many regardless),
  then another partition is picked: uniformly at random among partitions with a
  leader, or, with ``partitioner.adaptive.partitioning.enable`` (the default),
  weighted towards partitions whose brokers have shorter queues of batches; with
  ``partitioner.availability.timeout.ms`` > 0, partitions whose leader has not taken
  data for that long are skipped.
* ``partitioner.class``: ``"round_robin"`` (Java's RoundRobinPartitioner), or a
  custom partitioner: an object with ``partition(topic, key, key_bytes, value,
  value_bytes, cluster) -> int`` (and optional ``configure(config)`` / ``close()``),
  a class of such objects, or a plain callable ``fn(key_bytes, all_partitions,
  available_partitions) -> int`` (kafka-python's signature).

Example::

    Producer({"bootstrap.servers": ..., "partitioner.class": "round_robin"})

    class ByRegion:
        def partition(self, topic, key, key_bytes, value, value_bytes, cluster):
            return 0 if key == "eu" else cluster.partition_count(topic) - 1

    Producer({"bootstrap.servers": ..., "partitioner.class": ByRegion()})
"""

from __future__ import annotations

import bisect
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from kafkalite.errors import ConfigError, KafkaError
from kafkalite.plugins import configure_each, instantiate
from kafkalite.producer.append_kernel import StickyBase
from kafkalite.protocol.record_codec import murmur2

__all__ = [
    "ClusterView",
    "CustomPartitioning",
    "Partitioner",
    "RoundRobinPartitioner",
    "StickyPartitioner",
    "partition_for_key",
    "resolve_partitioner",
]


def partition_for_key(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """Java's keyed choice: ``toPositive(murmur2(key)) % num_partitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class ClusterView(Protocol):
    """What a custom partitioner may ask about the cluster."""

    def partition_count(self, topic: str) -> int:
        """Number of partitions of ``topic`` (all of them, with a leader or not)."""
        ...

    def available_partitions(self, topic: str) -> list[int]:
        """Partitions of ``topic`` whose leader is known and alive."""
        ...


@runtime_checkable
class Partitioner(Protocol):
    """A custom partitioner (Java's ``Partitioner`` interface)."""

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any,
                  value_bytes: bytes | None, cluster: ClusterView) -> int:
        ...


class StickyPartitioner(StickyBase):
    """KIP-794's built-in partitioner state for one topic (unkeyed records).

    ``partition()`` returns the current sticky partition (choosing one first if
    needed); the accumulator reports what it appended with :meth:`update`, and the
    sender refreshes the load statistics with :meth:`update_load_stats`. Races
    between threads only shift a switch by a record or two; each read and write here
    is atomic under the GIL.
    """

    # current, produced_bytes and batch_size are StickyBase's (the append path reads
    # and counts them without a call).
    __slots__ = ("_cumulative", "_lock", "_partition_ids", "_rng")

    def __init__(self, batch_size: int, rng: random.Random | None = None) -> None:
        self.batch_size = max(1, batch_size)
        self.current = -1
        self.produced_bytes = 0
        self._rng = rng or random.Random()
        self._cumulative: list[int] | None = None
        self._partition_ids: list[int] | None = None
        self._lock = threading.Lock()

    def partition(self, available: Sequence[int], num_partitions: int) -> int:
        current = self.current
        if current < 0 or current >= num_partitions:
            with self._lock:
                if self.current < 0 or self.current >= num_partitions:
                    self.current = self._next(available, num_partitions)
                    self.produced_bytes = 0
                current = self.current
        return current

    def _next(self, available: Sequence[int], num_partitions: int) -> int:
        cumulative, ids = self._cumulative, self._partition_ids
        if cumulative is not None and ids is not None and cumulative and cumulative[-1] > 0:
            # Adaptive (KIP-794): a partition's weight is (longest queue + 1 - its
            # queue), so partitions on less loaded brokers are picked more often.
            pick = self._rng.randrange(cumulative[-1])
            return ids[bisect.bisect_right(cumulative, pick)]
        if available:
            return available[self._rng.randrange(len(available))]
        return self._rng.randrange(num_partitions)

    def update(self, partition: int, appended_bytes: int, enable_switch: bool,
               available: Sequence[int], num_partitions: int) -> None:
        """Count bytes appended to ``partition``; switch once ``batch.size`` is reached.

        ``enable_switch`` is true when the partition's open batch is full, so a switch
        does not leave a half-filled batch behind (Java switches anyway at twice
        ``batch.size``).
        """
        if partition != self.current:
            return
        produced = self.produced_bytes + appended_bytes
        self.produced_bytes = produced
        if (produced >= self.batch_size and enable_switch) or produced >= 2 * self.batch_size:
            with self._lock:
                if self.current == partition:
                    self.current = self._next(available, num_partitions)
                    self.produced_bytes = 0

    def update_load_stats(self, queue_sizes: Sequence[int] | None, partition_ids: Sequence[int] | None,
                          num_partitions: int) -> None:
        """Set queue sizes (batches waiting, per partition with an available leader).

        None, or equal queues over all partitions, means uniform choice.
        """
        if not queue_sizes or partition_ids is None:
            self._cumulative = self._partition_ids = None
            return
        longest = max(queue_sizes)
        if len(queue_sizes) == num_partitions and min(queue_sizes) == longest:
            self._cumulative = self._partition_ids = None
            return
        top = longest + 1
        total = 0
        cumulative = []
        for size in queue_sizes:
            total += top - size
            cumulative.append(total)
        self._partition_ids = list(partition_ids)
        self._cumulative = cumulative


class RoundRobinPartitioner:
    """Every record to the next partition in turn (Java's RoundRobinPartitioner).

    Keys are ignored. Partitions without a leader are skipped when any has one.
    """

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()

    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any,
                  value_bytes: bytes | None, cluster: ClusterView) -> int:
        with self._lock:
            n = self._counters.get(topic, 0)
            self._counters[topic] = n + 1
        available = cluster.available_partitions(topic)
        if available:
            return available[n % len(available)]
        return n % cluster.partition_count(topic)

    def close(self) -> None:
        pass


class _CallablePartitioner:
    """Adapts kafka-python style ``fn(key_bytes, all_partitions, available_partitions)``."""

    def __init__(self, fn: Callable[..., int]) -> None:
        self.fn = fn

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any,
                  value_bytes: bytes | None, cluster: ClusterView) -> int:
        return self.fn(key_bytes, list(range(cluster.partition_count(topic))), cluster.available_partitions(topic))

    def close(self) -> None:
        close = getattr(self.fn, "close", None)
        if callable(close):
            close()


class CustomPartitioning:
    """``partitioner.class`` on send()'s path: the partitioner asked, its answer checked.

    Its errors become :class:`~kafkalite.errors.ConfigError` naming the setting (a
    ``KafkaError`` it raises passes through), and so does a partition that is not an
    int of the topic's range.
    """

    def __init__(self, partitioner: Partitioner, cluster: ClusterView) -> None:
        self.partitioner = partitioner
        self.cluster = cluster

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any, value_bytes: bytes | None,
                  num_partitions: int) -> int:
        try:
            partition = self.partitioner.partition(topic, key, key_bytes, value, value_bytes, self.cluster)
        except KafkaError:
            raise
        except Exception as exc:
            raise ConfigError(f"the custom partitioner (partitioner.class) failed: {exc!r}", topic=topic) from exc
        if type(partition) is not int or not 0 <= partition < num_partitions:
            raise ConfigError(
                f"the custom partitioner (partitioner.class) returned {partition!r}; topic '{topic}' has "
                f"partitions 0..{num_partitions - 1}", topic=topic)
        return partition


_BUILTIN_DEFAULT = {"default", "sticky", "builtin", "built-in",
                    "org.apache.kafka.clients.producer.internals.defaultpartitioner"}
_BUILTIN_ROUND_ROBIN = {"round_robin", "roundrobin", "round-robin", "roundrobinpartitioner",
                        "org.apache.kafka.clients.producer.roundrobinpartitioner"}


def resolve_partitioner(spec: Any, config: Mapping[str, Any]) -> Any | None:
    """The custom partitioner for ``partitioner.class`` (None: the built-in one).

    Calls ``configure(config)`` on objects that have it. Raises :class:`ConfigError`
    naming the setting for anything else.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        name = spec.strip().lower()
        if name in _BUILTIN_DEFAULT:
            return None
        if name in _BUILTIN_ROUND_ROBIN:
            return RoundRobinPartitioner()
        raise ConfigError(
            f"setting 'partitioner.class' names no built-in partitioner: {spec!r} "
            "(use 'default' or 'round_robin', or pass a partitioner object, class or callable)"
        )
    if isinstance(spec, type):
        spec = instantiate("partitioner.class", spec)
    if hasattr(spec, "partition") and callable(spec.partition):
        configure_each([spec], config)
        return spec
    if callable(spec):
        return _CallablePartitioner(spec)
    raise ConfigError(f"setting 'partitioner.class' must be a partitioner object, class, callable or name; got {spec!r}")
