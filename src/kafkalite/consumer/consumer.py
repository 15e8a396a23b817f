"""The blocking consumer: ``kafkalite.Consumer``.

Its engine (fetching, heartbeats, commits) runs on a background thread; ``poll()``
takes already fetched records from a buffer and decodes them in the calling thread.
Rebalance listener callbacks and commit callbacks run in the thread that calls
``poll()``. Every blocking call honours its timeout, ``wakeup()`` and Ctrl-C.

Not thread-safe, like the Java consumer: use one consumer per thread; only
:meth:`Consumer.wakeup` may be called from another thread.

Example::

    from kafkalite import Consumer

    with Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing",
                   "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe(["orders"])
        while True:
            for record in consumer.poll(timeout=1.0):
                handle(record.key, record.value)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from kafkalite.consumer import _frontend as fe
from kafkalite.consumer.core import CommitCallback, ConsumerCore
from kafkalite.consumer.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListedOffset
from kafkalite.consumer.records import ConsumerRecords
from kafkalite.errors import ClientClosedError, IllegalStateError, WakeupError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.net.engine import EngineCalls, EngineThread
from kafkalite.otel.tracing import install_consumer_tracing, tracing_for
from kafkalite.protocol.records import Batch
from kafkalite.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

R = TypeVar("R")
_SLICE = 0.1


class Consumer(EngineCalls):
    """A Kafka consumer with a blocking API (see the module doc for an example).

    Args:
        config: settings with Java names (``{"group.id": "g"}``); keyword arguments
            take snake_case aliases (``group_id="g"``). See ``docs/consumer.md``.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._closed = True
        self.config = fe.resolve_settings(config, kwargs)
        tracing = tracing_for(self.config, self.config["group.id"])  # settings errors before any thread starts
        self._event = threading.Event()
        self._wakeup = False
        name = f"kafkalite-consumer-{self.config['client.id'] or id(self)}"
        self._engine = EngineThread(name=name).start()
        engine = self._engine
        event = self._event

        async def make() -> ConsumerCore:
            import asyncio

            return ConsumerCore(self.config, asyncio.get_running_loop(), event.set, engine.call_soon)

        try:
            self._core: ConsumerCore = engine.run(make(), timeout=30, what="starting the consumer")
        except BaseException:
            engine.stop()  # e.g. a deserializer that fails to configure: no thread left behind
            raise
        self._closed = False
        engine.call_soon(self._core.start)
        if tracing is not None:
            install_consumer_tracing(self, tracing)

    # ------------------------------------------------------------ plumbing

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("the consumer is closed")

    def _drain_callbacks(self) -> None:
        err = self._core.app_calls.run()
        if err is not None:
            raise err

    # ------------------------------------------------------------ subscribing

    def subscribe(self, topics: Iterable[str] | str | Any = None, listener: Any = None, *,
                  pattern: Any = None) -> None:
        """Join the group and read the topics it assigns to this member.

        ``topics`` is a list of names, or a regex (``re.Pattern``, ``pattern="^orders-.*"``,
        or a string starting with ``^``) matched against every topic's whole name.
        ``listener`` is a :class:`~kafkalite.ConsumerRebalanceListener`. An empty list
        unsubscribes. Needs ``group.id``; mixing with assign() raises IllegalStateError.
        """
        self._check_open()
        names, regex = fe.parse_subscription(topics, pattern)
        if names is not None and not names:
            self.unsubscribe()
            return
        fe.require_group(self.config, "subscribe()")
        core = self._core
        if names is not None:
            core.subs.subscribe(names, listener)
        else:
            core.subs.subscribe_pattern(regex, listener)

        async def attach() -> None:
            core.ensure_group()
            core.start()
        self._run(attach(), 30, "subscribe()")

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions, with no group membership (positions from the
        committed offsets if ``group.id`` is set, else ``auto.offset.reset``)."""
        self._check_open()
        self._core.subs.assign_from_user(fe.partitions_arg(partitions))
        self._engine.call_soon(self._core.wake_positions)

    def unsubscribe(self) -> None:
        """Stop reading: leave the group (after revoking through the listener) or drop the assignment."""
        self._check_open()
        core = self._core
        if core.group is not None and core.subs.has_auto_assignment:
            owned = core.subs.assigned_partitions()
            if core.auto_commit and owned:
                try:
                    self.commit(core.subs.all_consumed())
                except Exception:
                    pass
            if owned:
                self._drain_callbacks()
                core.revoke_now(owned)
            self._run(core.group.leave("the consumer unsubscribed"), self._timeout(None), "unsubscribe()")
        core.subs.unsubscribe()
        core.buffer.drop()

    def assignment(self) -> set[TopicPartition]:
        """Partitions currently assigned to this consumer."""
        return self._core.subs.assigned_partitions()

    def subscription(self) -> set[str]:
        """Topics subscribed to (for a pattern, those it currently matches)."""
        return self._core.subs.subscription()

    # ------------------------------------------------------------ polling

    def poll(self, timeout: float | None = None, max_records: int | None = None) -> ConsumerRecords:
        """Return fetched records, waiting up to ``timeout`` seconds (None: until some arrive).

        At most ``max_records`` (default ``max.poll.records``). Runs pending rebalance
        and commit callbacks, commits automatically when due (what earlier polls
        returned), and raises errors of the partitions it reads (e.g.
        OffsetOutOfRangeError with auto.offset.reset=none, CorruptRecordsError).
        """
        limit = max_records or self._core.max_poll_records
        records = self._poll(lambda core: core.collect(limit), timeout, "poll()")
        interceptors = self._core.interceptors
        if records and interceptors is not None:
            records = interceptors.on_consume(records)
        return records

    def poll_batches(self, timeout: float | None = None, max_bytes: int = 8 * 1024 * 1024
                     ) -> list[tuple[TopicPartition, list[Batch]]]:
        """Like :meth:`poll`, but return whole fetched record batches, undecoded.

        For columnar readers (the Spark connector builds Arrow arrays from
        ``RecordBatch.columns()`` with no Python object per record). Returns
        ``[(partition, [batch, ...]), ...]``, about ``max_bytes`` at most (at least one
        fetch), and advances positions past the batches returned. Control batches and
        aborted transactions (read_committed) are left out; a partition's first batch
        may start before its position, so drop offsets below the position you sought.
        Deserializers do not apply. An empty list after ``timeout`` seconds.

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            consumer.seek(TopicPartition("orders", 0), 100)
            for tp, batches in consumer.poll_batches(timeout=1.0):
                for batch in batches:
                    cols = batch.columns()   # offsets, timestamps, key/value positions ...
        """
        return self._poll(lambda core: core.collect_batches(max_bytes), timeout, "poll_batches()")

    def _poll(self, collect: Callable[[ConsumerCore], R], timeout: float | None, what: str) -> R:
        """The loop of poll() and poll_batches(): callbacks, errors, then ``collect``
        until it returns something or ``timeout`` passes (None: no limit)."""
        self._check_open()
        core = self._core
        subs = core.subs
        if not subs.assignment and not subs.has_auto_assignment:
            raise IllegalStateError("the consumer is not subscribed to any topic and has no assigned partitions")
        deadline = None if timeout is None else time.monotonic() + timeout
        event = self._event
        core.poll_begin()
        while True:
            event.clear()
            if self._wakeup:
                self._wakeup = False
                raise WakeupError(f"{what} was interrupted by wakeup()")
            if core.app_calls:
                self._drain_callbacks()
            core.raise_errors()
            out = collect(core)
            if out:
                return out
            now = time.monotonic()
            core.last_poll = now
            if deadline is not None and now >= deadline:
                return out
            event.wait(_SLICE if deadline is None else min(_SLICE, deadline - now))

    def __iter__(self) -> Iterator[Any]:
        """Records forever (poll in a loop); stop with wakeup(), close() or Ctrl-C."""
        while not self._closed:
            try:
                records = self.poll(1.0)
            except ClientClosedError:
                return
            yield from records

    def wakeup(self) -> None:
        """Make the current (or next) blocking call raise WakeupError. Thread-safe."""
        self._wakeup = True
        self._event.set()

    # ------------------------------------------------------------ positions

    def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record poll() returns for ``partition`` (looked up if needed)."""
        self._check_open()
        (tp,) = fe.partitions_arg([partition])
        pos = self._core.subs.valid_position(tp)
        if pos is not None:
            return pos
        t = self._timeout(timeout)
        return self._run(self._core.wait_for_position(tp, t), t, f"position({tp})")

    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """Make the next poll() return ``partition`` from ``offset``."""
        self._check_open()
        (tp,) = fe.partitions_arg([partition])
        epoch: int | None = None
        if isinstance(offset, OffsetAndMetadata):
            value, epoch = offset.offset, offset.leader_epoch
        else:
            value = offset
        self._core.subs.seek(tp, value, epoch)
        self._engine.call_soon(self._core.fetcher.wake)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Start from the earliest offset (all assigned partitions if none given); lazy, as Java."""
        self._seek_to("earliest", partitions)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Start from the end of the log (only new records); lazy, as Java."""
        self._seek_to("latest", partitions)

    def _seek_to(self, where: str, partitions: Iterable[TopicPartition] | None) -> None:
        self._check_open()
        subs = self._core.subs
        tps = fe.partitions_arg(partitions) if partitions is not None else sorted(subs.assigned_partitions())
        for tp in tps:
            subs.state(tp)
        subs.request_reset(tps, where)
        self._engine.call_soon(self._core.wake_positions)

    def committed(self, partitions: Iterable[TopicPartition] | TopicPartition, timeout: float | None = None
                  ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where nothing is committed)."""
        self._check_open()
        fe.require_group(self.config, "committed()")
        tps = fe.partitions_arg(partitions)
        t = self._timeout(timeout)
        return self._run(self._core.offsets.fetch_committed(tps, t, self._core._generation_for_fetch()),
                         t, "committed()")

    def beginning_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                          ) -> dict[TopicPartition, int]:
        """The first offset of each partition."""
        return self._list(partitions, EARLIEST_TIMESTAMP, timeout)

    def end_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                    ) -> dict[TopicPartition, int]:
        """The offset after the last record (the last stable offset with read_committed)."""
        return self._list(partitions, LATEST_TIMESTAMP, timeout)

    def _list(self, partitions: Iterable[TopicPartition], stamp: int, timeout: float | None) -> dict[TopicPartition, int]:
        self._check_open()
        tps = fe.partitions_arg(partitions)
        t = self._timeout(timeout)
        found = self._run(self._core.offsets.list_offsets({tp: stamp for tp in tps}, t), t, "listing offsets")
        return {tp: (v.offset if v is not None else -1) for tp, v in found.items()}

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
                          ) -> dict[TopicPartition, ListedOffset | None]:
        """For each partition, the earliest offset whose timestamp is >= the given one
        (ms), as ``ListedOffset(offset, timestamp, leader_epoch)``; None if there is none."""
        self._check_open()
        stamps = {}
        for tp, ts in timestamps.items():
            (tp2,) = fe.partitions_arg([tp])
            if not isinstance(ts, int) or ts < 0:
                raise IllegalStateError(f"timestamp for {tp2} must be >= 0, got {ts!r}",
                                        topic=tp2.topic, partition=tp2.partition)
            stamps[tp2] = ts
        t = self._timeout(timeout)
        return self._run(self._core.offsets.list_offsets(stamps, t), t, "offsets_for_times()")

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop returning records of these partitions (the group membership stays)."""
        self._check_open()
        tps = fe.partitions_arg(partitions)
        self._core.subs.pause(tps)
        self._core.buffer.drop(lambda f: f.tp not in set(tps))

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._check_open()
        self._core.subs.resume(fe.partitions_arg(partitions))
        self._engine.call_soon(self._core.fetcher.wake)

    def paused(self) -> set[TopicPartition]:
        return self._core.subs.paused_partitions()

    def lag(self, partition: TopicPartition) -> int | None:
        """Records between the position and the end of the partition as of the last fetch
        (the last stable offset with read_committed); None if unknown yet."""
        (tp,) = fe.partitions_arg([partition])
        return self._core.subs.lag(tp, self._core.read_committed)

    current_lag = lag

    def partitions_for(self, topic: str, timeout: float | None = None) -> set[TopicPartition]:
        """The partitions of ``topic``, asked of the cluster as Java's ``partitionsFor``: an
        empty set at once when the topic does not exist (and ``allow.auto.create.topics``
        did not create it), its typed error when it is unauthorized or invalid."""
        self._check_open()
        t = self._timeout(timeout)
        found = self._run(self._core.client.partitions_of(topic, timeout_s=t), t, "partitions_for()")
        return {TopicPartition(topic, p.partition) for p in found}

    def list_topics(self, timeout: float | None = None) -> dict[str, set[TopicPartition]]:
        """Every topic the client may see, with its partitions."""
        self._check_open()
        t = self._timeout(timeout)
        meta = self._run(self._core.client.refresh_metadata(all_topics=True, timeout_s=t), t, "list_topics()")
        return {name: {TopicPartition(name, p) for p in topic.partitions} for name, topic in meta.topics.items()}

    # ------------------------------------------------------------ commits

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, *,
               asynchronous: bool = False, callback: CommitCallback | None = None,
               timeout: float | None = None) -> None:
        """Commit ``offsets`` (default: the positions of everything poll() returned).

        The committed offset is the NEXT offset to read. Synchronous commits retry
        retriable errors until ``timeout`` (default.api.timeout.ms); asynchronous ones
        never retry and call ``callback(offsets, error_or_None)`` from a later poll().
        """
        if asynchronous:
            self.commit_async(offsets, callback)
        else:
            self.commit_sync(offsets, timeout)

    def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
                    timeout: float | None = None) -> None:
        self._check_open()
        core = self._core
        values = core.subs.all_consumed() if offsets is None else fe.offsets_arg(offsets)
        core.check_commit(values)
        if core.app_calls:
            self._drain_callbacks()
        if not values:
            return
        t = self._timeout(timeout)
        self._run(core.commit(values, t), t, "commit")
        if core.app_calls:
            self._drain_callbacks()

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
                     callback: CommitCallback | None = None) -> None:
        self._check_open()
        core = self._core
        values = core.subs.all_consumed() if offsets is None else fe.offsets_arg(offsets)
        core.check_commit(values)
        self._engine.call_soon(core.commit_async_from_poll, values, callback)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group identity, for ``Producer.send_offsets_to_transaction``."""
        self._check_open()
        return self._core.group_metadata()

    # ------------------------------------------------------------ metrics and closing

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``; ``metrics()["records-lag-max"]`` reads
        one by its Java name."""
        return self._core.registry.snapshot()

    def close(self, timeout: float = 30.0) -> None:
        """Commit (with enable.auto.commit), revoke through the listener, leave the group
        (unless static member), and stop. Never takes longer than ``timeout`` seconds."""
        if self._closed:
            return
        deadline = time.monotonic() + max(0.0, timeout)
        core = self._core
        try:
            if core.group is not None and core.subs.has_auto_assignment:
                owned = core.subs.assigned_partitions()
                if core.auto_commit and owned:
                    try:
                        self._run(core.commit(core.subs.all_consumed(), max(0.01, deadline - time.monotonic())),
                                  max(0.01, deadline - time.monotonic()), "commit on close")
                    except Exception:
                        pass
                try:
                    core.app_calls.run()
                    if owned:
                        core.revoke_now(owned)
                except Exception:
                    pass
            try:
                # Static members do not leave (classic: no LeaveGroup; KIP-848: epoch -2).
                # The core gets a little less than what is left, so that it ends (cancelling
                # what still runs) before this wait gives up on it.
                self._run(core.close(max(0.01, deadline - time.monotonic() - 0.2), commit=False, leave=True),
                          max(0.05, deadline - time.monotonic() - 0.05), "close")
            except Exception:
                pass
        finally:
            self._closed = True
            self._engine.stop(timeout=max(0.0, deadline - time.monotonic()))
            if core.interceptors is not None:
                core.interceptors.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._core.subs.assignment)} partitions"
        return f"<kafkalite.Consumer group={self.config['group.id']!r} {state}>"
