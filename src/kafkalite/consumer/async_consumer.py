"""The consumer's API, written once: ``kafkalite.aio.Consumer``.

This class is the definition of the consumer API: ``kafkalite.Consumer`` (blocking) is
generated from it by ``tools/generate_fronts.py`` over
:class:`~kafkalite.consumer.fronts.BlockingConsumerFront`; here it runs on the caller's
event loop (:class:`~kafkalite.consumer.fronts.AsyncConsumerFront`, no thread). Methods
that talk to brokers are coroutines; rebalance listener methods and commit callbacks
run in the task that awaits ``poll()`` (or a commit) and may be coroutines themselves.

Example::

    from kafkalite.aio import Consumer

    async with Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing",
                         "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe(["orders"])
        async for record in consumer:
            await handle(record)
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import TypeVar

from kafkalite.consumer import _frontend as fe
from kafkalite.consumer.core import CommitCallback, ConsumerCore
from kafkalite.consumer.fronts import AsyncConsumerFront
from kafkalite.consumer.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListedOffset
from kafkalite.consumer.records import ConsumerRecords
from kafkalite.errors import ClientClosedError, IllegalStateError, WakeupError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.protocol.records import Batch
from kafkalite.types import ConsumerGroupMetadata, ConsumerRecord, OffsetAndMetadata, TopicPartition

R = TypeVar("R")


class AsyncConsumer(AsyncConsumerFront):
    """A Kafka consumer.

    Args:
        config: settings with Java names (``{"group.id": "g"}``); keyword arguments
            take snake_case aliases (``group_id="g"``). See ``docs/consumer.md``.

    Not thread-safe, like the Java consumer: one consumer per thread (per task);
    only :meth:`wakeup` may be called from another thread.

    Example::

        async with Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing",
                             "auto.offset.reset": "earliest"}) as consumer:
            consumer.subscribe(["orders"])
            for record in await consumer.poll(timeout=10.0):   # an application polls in a loop
                print(record.key, record.value)
    """

    async def __aenter__(self) -> AsyncConsumer:
        self._open_core()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        core = self._core
        state = "closed" if self._closed else "not started" if core is None else \
            f"{len(core.subs.assignment)} partitions"
        return f"<{self._PUBLIC} group={self.config['group.id']!r} {state}>"

    async def _drain_callbacks(self) -> None:
        """Run what the engine queued for the polling thread; raise the first error."""
        error = await self._run_callbacks()
        if error is not None:
            raise error

    # ------------------------------------------------------------ subscribing

    def subscribe(self, topics: fe.Topics = None, listener: object | None = None, *,
                  pattern: fe.Pattern | None = None) -> None:
        """Join the group and read the topics it assigns to this member.

        ``topics`` is a list of names, or a regex (``re.Pattern``, ``pattern="^orders-.*"``,
        or a string starting with ``^``) matched against every topic's whole name.
        ``listener`` is a :class:`~kafkalite.ConsumerRebalanceListener` (on the asyncio
        consumer its methods may be coroutines). An empty list unsubscribes, as Java's
        (the asyncio consumer cannot wait for that inside a plain method: it raises
        IllegalStateError, ``await unsubscribe()`` instead). Needs ``group.id``; mixing
        with assign() raises IllegalStateError.

        Example::

            consumer.subscribe(["orders"])                 # or pattern="^orders.*"
            records = await consumer.poll(timeout=10.0)    # joins the group, then fetches
            assert consumer.subscription() == {"orders"}
        """
        core = self._open_core()
        names, regex = fe.parse_subscription(topics, pattern)
        if names is not None and not names:
            self._subscribe_to_nothing()
            return
        fe.require_group(self.config, "subscribe()")
        if regex is not None:  # parse_subscription gives names or a regex
            core.subs.subscribe_pattern(regex, listener)
        elif names is not None:
            core.subs.subscribe(names, listener)
        self._start_group(core)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions, with no group membership (positions from the
        committed offsets if ``group.id`` is set, else ``auto.offset.reset``).

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            records = await consumer.poll(timeout=10.0)
            assert [r.value for r in records] == [b"v0"]
        """
        core = self._open_core()
        core.subs.assign_from_user(fe.partitions_arg(partitions))
        self._call_soon(core.wake_positions)

    async def unsubscribe(self) -> None:
        """Stop reading: leave the group (after committing with enable.auto.commit and
        revoking through the listener) or drop the assignment.

        Application calls the engine queued before (listener calls, commit callbacks)
        run first, in order, so the listener sees the assignment before the revocation.

        Example::

            consumer.subscribe(["orders"])
            await consumer.unsubscribe()
            assert consumer.subscription() == set()
        """
        core = self._open_core()
        if core.group is not None and core.subs.has_auto_assignment:
            owned = core.subs.assigned_partitions()
            if core.auto_commit and owned:
                try:
                    await self.commit_sync(core.subs.all_consumed())
                except Exception:
                    pass
            if core.app_calls:
                await self._drain_callbacks()
            if owned:
                await self._revoke(core, owned)
            await self._run(core.group.leave("the consumer unsubscribed"), self._timeout(None), "unsubscribe()")
        core.subs.unsubscribe()
        core.buffer.drop()

    def assignment(self) -> set[TopicPartition]:
        """Partitions currently assigned to this consumer.

        Example::

            consumer.assign([TopicPartition("orders", 1)])
            assert consumer.assignment() == {TopicPartition("orders", 1)}
        """
        return self._open_core().subs.assigned_partitions()

    def subscription(self) -> set[str]:
        """Topics subscribed to (for a pattern, those it currently matches).

        Example::

            consumer.subscribe(["orders"])
            assert consumer.subscription() == {"orders"}
        """
        return self._open_core().subs.subscription()

    # ------------------------------------------------------------ polling

    async def poll(self, timeout: float | None = None, max_records: int | None = None) -> ConsumerRecords:
        """Return fetched records, waiting up to ``timeout`` seconds (None: until some arrive).

        At most ``max_records`` (default ``max.poll.records``). Runs pending rebalance
        and commit callbacks, commits automatically when due (what earlier polls
        returned), and raises errors of the partitions it reads (e.g.
        OffsetOutOfRangeError with auto.offset.reset=none, CorruptRecordsError).

        Example::

            consumer.subscribe(["orders"])
            for record in await consumer.poll(timeout=1.0):
                print(record.partition, record.offset, record.value)
        """
        core = self._open_core()
        records = await self._poll(core, core.collect, max_records or core.max_poll_records, timeout, "poll()")
        interceptors = core.interceptors
        if records and interceptors is not None:
            records = interceptors.on_consume(records)
        return records

    async def poll_batches(self, timeout: float | None = None, max_bytes: int = 8 * 1024 * 1024
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
            for tp, batches in await consumer.poll_batches(timeout=1.0):
                for batch in batches:
                    cols = batch.columns()   # offsets, timestamps, key/value positions ...
        """
        core = self._open_core()
        return await self._poll(core, core.collect_batches, max_bytes, timeout, "poll_batches()")

    async def _poll(self, core: ConsumerCore, collect: Callable[[int], R], limit: int, timeout: float | None,
                    what: str) -> R:
        """The loop of poll() and poll_batches(): callbacks, errors, then ``collect(limit)``
        until it returns something or ``timeout`` passes (None: no limit)."""
        subs = core.subs
        if not subs.assignment and not subs.has_auto_assignment:
            raise IllegalStateError("the consumer is not subscribed to any topic and has no assigned partitions")
        deadline = None if timeout is None else time.monotonic() + timeout
        event = self._event
        try:
            core.poll_begin()
            while True:
                event.clear()
                if self._wakeup:
                    self._wakeup = False
                    raise WakeupError(f"{what} was interrupted by wakeup()")
                if core.app_calls:
                    await self._drain_callbacks()
                core.raise_errors()
                out = collect(limit)
                if out:
                    return out
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    return out
                # Sleeps until the engine has news (records, an error, a callback to run,
                # wakeup()) or the deadline: no periodic look (issue 27: an idle poll loop
                # woke ten times a second).
                await self._wait_event(None if deadline is None else deadline - now)
        finally:
            core.poll_end()

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        """Records forever (poll in a loop); stop with wakeup(), close() or Ctrl-C."""
        return self._records()

    async def _records(self) -> AsyncIterator[ConsumerRecord]:
        while not self._closed:
            try:
                records = await self.poll(1.0)
            except ClientClosedError:
                return
            for record in records:
                yield record

    def wakeup(self) -> None:
        """Make the current (or next) blocking call (poll(), commit_sync(), position(),
        committed(), unsubscribe() ...) raise WakeupError. Thread-safe: the one method
        another thread may call.

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            consumer.wakeup()                       # e.g. from a signal handler or another thread
            try:
                await consumer.poll(timeout=10.0)
            except WakeupError:
                print("poll() was woken up")
        """
        self._wakeup = True
        self._wake_waiters()

    # ------------------------------------------------------------ positions

    async def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record poll() returns for ``partition`` (looked up if needed).

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            assert await consumer.position(tp) == 0    # nothing committed: auto.offset.reset=earliest
        """
        core = self._open_core()
        (tp,) = fe.partitions_arg([partition])
        pos = core.subs.valid_position(tp)
        if pos is not None:
            return pos
        t = self._timeout(timeout)
        return await self._run(core.wait_for_position(tp, t), t, f"position({tp})")

    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """Make the next poll() return ``partition`` from ``offset``.

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            consumer.seek(TopicPartition("orders", 0), 42)   # the next record read is offset 42
        """
        core = self._open_core()
        (tp,) = fe.partitions_arg([partition])
        epoch: int | None = None
        if isinstance(offset, OffsetAndMetadata):
            value, epoch = offset.offset, offset.leader_epoch
        else:
            value = offset
        core.subs.seek(tp, value, epoch)
        self._call_soon(core.fetcher.wake)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Start from the earliest offset (all assigned partitions if none given); lazy, as Java.

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            consumer.seek_to_beginning([tp])
            assert await consumer.position(tp) == 0
        """
        self._seek_to("earliest", partitions)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Start from the end of the log (only new records); lazy, as Java.

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            consumer.seek_to_end([tp])
            assert await consumer.position(tp) == 1    # after the partition's one record
        """
        self._seek_to("latest", partitions)

    def _seek_to(self, where: str, partitions: Iterable[TopicPartition] | None) -> None:
        core = self._open_core()
        subs = core.subs
        tps = fe.partitions_arg(partitions) if partitions is not None else sorted(subs.assigned_partitions())
        for tp in tps:
            subs.state(tp)
        subs.request_reset(tps, where)
        self._call_soon(core.wake_positions)

    async def committed(self, partitions: Iterable[TopicPartition] | TopicPartition, timeout: float | None = None
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where nothing is committed).

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            await consumer.commit({tp: 1})
            assert (await consumer.committed([tp]))[tp].offset == 1
        """
        core = self._open_core()
        fe.require_group(self.config, "committed()")
        tps = fe.partitions_arg(partitions)
        t = self._timeout(timeout)
        return await self._run(core.offsets.fetch_committed(tps, t, core.generation_for_fetch()), t, "committed()")

    async def beginning_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                                ) -> dict[TopicPartition, int]:
        """The first offset of each partition.

        Example::

            tp = TopicPartition("orders", 0)
            assert await consumer.beginning_offsets([tp]) == {tp: 0}
        """
        return await self._list(partitions, EARLIEST_TIMESTAMP, timeout)

    async def end_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                          ) -> dict[TopicPartition, int]:
        """The offset after the last record (the last stable offset with read_committed).

        Example::

            tp = TopicPartition("orders", 0)
            assert await consumer.end_offsets([tp]) == {tp: 1}
        """
        return await self._list(partitions, LATEST_TIMESTAMP, timeout)

    async def _list(self, partitions: Iterable[TopicPartition], stamp: int, timeout: float | None
                    ) -> dict[TopicPartition, int]:
        core = self._open_core()
        tps = fe.partitions_arg(partitions)
        t = self._timeout(timeout)
        found = await self._run(core.offsets.list_offsets({tp: stamp for tp in tps}, t), t, "listing offsets")
        return {tp: (v.offset if v is not None else -1) for tp, v in found.items()}

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
                                ) -> dict[TopicPartition, ListedOffset | None]:
        """For each partition, the earliest offset whose timestamp is >= the given one
        (ms), as ``ListedOffset(offset, timestamp, leader_epoch)``; None if there is none.

        Example::

            tp = TopicPartition("orders", 0)
            found = await consumer.offsets_for_times({tp: 0})     # the first record at or after the epoch
            assert found[tp].offset == 0
        """
        core = self._open_core()
        stamps = {}
        for tp, ts in timestamps.items():
            (tp2,) = fe.partitions_arg([tp])
            if not isinstance(ts, int) or ts < 0:
                raise IllegalStateError(f"timestamp for {tp2} must be >= 0, got {ts!r}",
                                        topic=tp2.topic, partition=tp2.partition)
            stamps[tp2] = ts
        t = self._timeout(timeout)
        return await self._run(core.offsets.list_offsets(stamps, t), t, "offsets_for_times()")

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop returning records of these partitions (the group membership stays).

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            consumer.pause([tp])
            assert len(await consumer.poll(timeout=0.5)) == 0      # nothing from a paused partition
        """
        core = self._open_core()
        tps = fe.partitions_arg(partitions)
        core.subs.pause(tps)
        paused = set(tps)
        core.buffer.drop(lambda f: f.tp not in paused)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Return records of these paused partitions again.

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            consumer.pause([tp])
            consumer.resume([tp])
            assert [r.value for r in await consumer.poll(timeout=10.0)] == [b"v0"]
        """
        core = self._open_core()
        core.subs.resume(fe.partitions_arg(partitions))
        self._call_soon(core.fetcher.wake)

    def paused(self) -> set[TopicPartition]:
        """The partitions paused with pause().

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            consumer.pause([tp])
            assert consumer.paused() == {tp}
        """
        return self._open_core().subs.paused_partitions()

    def lag(self, partition: TopicPartition) -> int | None:
        """Records between the position and the end of the partition as of the last fetch
        (the last stable offset with read_committed); None if unknown yet.

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            await consumer.poll(timeout=10.0)       # reads the partition's one record
            assert consumer.lag(tp) == 0
        """
        core = self._open_core()
        (tp,) = fe.partitions_arg([partition])
        return core.subs.lag(tp, core.read_committed)

    current_lag = lag

    async def partitions_for(self, topic: str, timeout: float | None = None) -> set[TopicPartition]:
        """The partitions of ``topic``, asked of the cluster as Java's ``partitionsFor``: an
        empty set at once when the topic does not exist (and ``allow.auto.create.topics``
        did not create it), its typed error when it is unauthorized or invalid.

        Example::

            assert await consumer.partitions_for("orders") == {TopicPartition("orders", p) for p in range(3)}
        """
        core = self._open_core()
        t = self._timeout(timeout)
        found = await self._run(core.client.partitions_of(topic, timeout_s=t), t, "partitions_for()")
        return {TopicPartition(topic, p.partition) for p in found}

    async def list_topics(self, timeout: float | None = None) -> dict[str, set[TopicPartition]]:
        """Every topic the client may see, with its partitions.

        Example::

            topics = await consumer.list_topics()
            assert len(topics["orders"]) == 3
        """
        core = self._open_core()
        t = self._timeout(timeout)
        meta = await self._run(core.client.refresh_metadata(all_topics=True, timeout_s=t), t, "list_topics()")
        return {name: {TopicPartition(name, p) for p in topic.partitions} for name, topic in meta.topics.items()}

    # ------------------------------------------------------------ commits

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, *,
                     asynchronous: bool = False, callback: CommitCallback | None = None,
                     timeout: float | None = None) -> None:
        """Commit ``offsets`` (default: the positions of everything poll() returned).

        The committed offset is the NEXT offset to read. Synchronous commits retry
        retriable errors until ``timeout`` (default.api.timeout.ms); asynchronous ones
        never retry and call ``callback(offsets, error_or_None)`` from a later poll().

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            records = await consumer.poll(timeout=10.0)
            await consumer.commit()                                     # what poll() returned
            await consumer.commit({TopicPartition("orders", 0): 1})    # or explicit next offsets
        """
        if asynchronous:
            self.commit_async(offsets, callback)
        else:
            await self.commit_sync(offsets, timeout)

    async def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
                          timeout: float | None = None) -> None:
        """Commit ``offsets`` (default: the positions of everything poll() returned) and
        wait for the broker, retrying retriable errors until ``timeout``
        (default.api.timeout.ms). Pending commit callbacks run first, as Java's.

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            await consumer.poll(timeout=10.0)
            await consumer.commit_sync()                # the positions of what poll() returned
            assert (await consumer.committed([tp]))[tp].offset == 1
        """
        core = self._open_core()
        values = core.subs.all_consumed() if offsets is None else fe.offsets_arg(offsets)
        core.check_commit(values)
        if core.app_calls:
            await self._drain_callbacks()
        if not values:
            return
        t = self._timeout(timeout)
        await self._run(core.commit(values, t), t, "commit")
        if core.app_calls:  # interceptors' on_commit: right after the commit, as Java
            await self._drain_callbacks()

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Start a commit that never retries; ``callback(offsets, error)`` runs in a later
        poll() (or commit).

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            outcomes = []
            consumer.commit_async({tp: 1}, callback=lambda offsets, error: outcomes.append(error))
            while not outcomes:                         # the callback runs in a later poll()
                await consumer.poll(timeout=0.1)
            assert outcomes == [None]
        """
        core = self._open_core()
        values = core.subs.all_consumed() if offsets is None else fe.offsets_arg(offsets)
        core.check_commit(values)
        self._call_soon(core.commit_async_from_poll, values, callback)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group identity, for ``Producer.send_offsets_to_transaction``.

        Example::

            consumer.subscribe(["orders"])
            meta = consumer.group_metadata()            # for producer.send_offsets_to_transaction()
            assert meta.group_id == consumer.config["group.id"]
        """
        return self._open_core().group_metadata()

    # ------------------------------------------------------------ metrics and closing

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``; ``metrics()["records-lag-max"]`` reads
        one by its Java name.

        Example::

            consumer.assign([TopicPartition("orders", 0)])
            await consumer.poll(timeout=10.0)
            print(consumer.metrics()["records-lag-max"])
        """
        core = self._core if self._core is not None else self._open_core()
        return core.registry.snapshot()

    async def close(self, timeout: float = 30.0) -> None:
        """Commit (with enable.auto.commit), revoke through the listener, leave the group
        (unless static member), and stop. Never takes longer than ``timeout`` seconds.
        A wakeup() does not interrupt it.

        Example::

            consumer.subscribe(["orders"])
            await consumer.poll(timeout=1.0)
            await consumer.close(timeout=10.0)        # commits (enable.auto.commit), leaves the group
        """
        if self._closed:
            return
        core = self._core
        if core is None:  # never used (asyncio): nothing started
            self._closed = True
            return
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            if core.group is not None and core.subs.has_auto_assignment:
                owned = core.subs.assigned_partitions()
                if core.auto_commit and owned:
                    left = max(0.01, deadline - time.monotonic())
                    try:
                        await self._run(core.commit(core.subs.all_consumed(), left), left, "commit on close",
                                        wakeable=False)
                    except Exception:
                        pass
                try:
                    await self._run_callbacks()
                    if owned:
                        await self._revoke(core, owned)
                except Exception:
                    pass
            try:
                # Static members do not leave (classic: no LeaveGroup; KIP-848: epoch -2).
                # The core gets a little less than what is left, so that it ends (cancelling
                # what still runs) before this wait gives up on it.
                await self._run(core.close(max(0.01, deadline - time.monotonic() - 0.2), commit=False, leave=True),
                                max(0.05, deadline - time.monotonic() - 0.05), "close", wakeable=False)
            except Exception:
                pass
        finally:
            self._closed = True
            self._stop_engine(deadline)
            if core.interceptors is not None:
                core.interceptors.close()
