"""The asyncio consumer: ``kafkalite.aio.Consumer``.

The same core as the blocking :class:`kafkalite.Consumer`, run on the caller's event
loop (no thread). Methods that talk to brokers are coroutines; rebalance listener
methods and commit callbacks run in the task that awaits ``poll()`` and may be
coroutines themselves.

Example::

    from kafkalite.aio import Consumer

    async with Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing",
                         "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe(["orders"])
        async for record in consumer:
            await handle(record)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from typing import Any, TypeVar

from kafkalite.consumer import _frontend as fe
from kafkalite.consumer.core import CommitCallback, ConsumerCore
from kafkalite.consumer.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListedOffset
from kafkalite.consumer.records import ConsumerRecords
from kafkalite.errors import ClientClosedError, IllegalStateError, KafkaTimeoutError, WakeupError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.otel.tracing import install_consumer_tracing, tracing_for
from kafkalite.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

T = TypeVar("T")


class AsyncConsumer:
    """A Kafka consumer for asyncio (see the module doc). Create it inside a running loop
    (or call any coroutine method first)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = fe.resolve_settings(config, kwargs)
        self._core: ConsumerCore | None = None
        self._event: asyncio.Event | None = None
        self._wakeup = False
        self._closed = False
        tracing = tracing_for(self.config, self.config["group.id"])
        if tracing is not None:
            install_consumer_tracing(self, tracing, asynchronous=True)

    # ------------------------------------------------------------ plumbing

    @property
    def core(self) -> ConsumerCore:
        if self._closed:
            raise ClientClosedError("the consumer is closed")
        if self._core is None:
            loop = asyncio.get_running_loop()
            self._event = asyncio.Event()
            self._core = ConsumerCore(self.config, loop, self._event.set, _call_soon(loop))
            self._core.start()
        return self._core

    async def _run(self, aw: Awaitable[T], timeout: float | None, what: str) -> T:
        try:
            return await asyncio.wait_for(aw, timeout)
        except asyncio.TimeoutError:
            raise KafkaTimeoutError(f"{what} did not complete within {timeout:.3f}s") from None

    def _timeout(self, timeout: float | None) -> float:
        return self.config["default.api.timeout.ms"] / 1000.0 if timeout is None else timeout

    async def _drain_callbacks(self) -> None:
        err = await self.core.app_calls.run_async()
        if err is not None:
            raise err

    # ------------------------------------------------------------ subscribing

    def subscribe(self, topics: Iterable[str] | str | Any = None, listener: Any = None, *,
                  pattern: Any = None) -> None:
        """As :meth:`kafkalite.Consumer.subscribe`; listener methods may be coroutines."""
        core = self.core
        names, regex = fe.parse_subscription(topics, pattern)
        if names is not None and not names:
            core.subs.unsubscribe()
            return
        fe.require_group(self.config, "subscribe()")
        if names is not None:
            core.subs.subscribe(names, listener)
        else:
            core.subs.subscribe_pattern(regex, listener)
        core.ensure_group()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        core = self.core
        core.subs.assign_from_user(fe.partitions_arg(partitions))
        core.wake_positions()

    async def unsubscribe(self) -> None:
        core = self.core
        if core.group is not None and core.subs.has_auto_assignment:
            owned = core.subs.assigned_partitions()
            if core.auto_commit and owned:
                try:
                    await self.commit(core.subs.all_consumed())
                except Exception:
                    pass
            await self._drain_callbacks()
            if owned:
                result = core.revoke_now(owned)
                if asyncio.iscoroutine(result):
                    await result
            await self._run(core.group.leave("the consumer unsubscribed"), self._timeout(None), "unsubscribe()")
        core.subs.unsubscribe()
        core.buffer.drop()

    def assignment(self) -> set[TopicPartition]:
        return self.core.subs.assigned_partitions()

    def subscription(self) -> set[str]:
        return self.core.subs.subscription()

    # ------------------------------------------------------------ polling

    async def poll(self, timeout: float | None = None, max_records: int | None = None) -> ConsumerRecords:
        """As :meth:`kafkalite.Consumer.poll` (a coroutine)."""
        core = self.core
        subs = core.subs
        if not subs.assignment and not subs.has_auto_assignment:
            raise IllegalStateError("the consumer is not subscribed to any topic and has no assigned partitions")
        assert self._event is not None
        event = self._event
        limit = max_records or core.max_poll_records
        deadline = None if timeout is None else time.monotonic() + timeout
        core.poll_begin()
        while True:
            event.clear()
            if self._wakeup:
                self._wakeup = False
                raise WakeupError("poll() was interrupted by wakeup()")
            if core.app_calls:
                await self._drain_callbacks()
            core.raise_errors()
            records = core.collect(limit)
            if records:
                if core.interceptors is not None:
                    records = core.interceptors.on_consume(records)
                return records
            now = time.monotonic()
            core.last_poll = now
            if deadline is not None and now >= deadline:
                return records
            try:
                await asyncio.wait_for(event.wait(), 0.1 if deadline is None else min(0.1, deadline - now))
            except asyncio.TimeoutError:
                pass

    # aiokafka-style name
    async def getmany(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[TopicPartition, list[Any]]:
        """Records grouped by partition (aiokafka's shape)."""
        records = await self.poll(timeout_ms / 1000.0, max_records)
        return records.by_partition()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        while not self._closed:
            try:
                records = await self.poll(1.0)
            except ClientClosedError:
                return
            for record in records:
                yield record

    def wakeup(self) -> None:
        """Make the current (or next) poll() raise WakeupError (callable from any thread
        through ``loop.call_soon_threadsafe``)."""
        self._wakeup = True
        if self._event is not None:
            self._event.set()

    # ------------------------------------------------------------ positions

    async def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        core = self.core
        (tp,) = fe.partitions_arg([partition])
        pos = core.subs.valid_position(tp)
        if pos is not None:
            return pos
        t = self._timeout(timeout)
        return await self._run(core.wait_for_position(tp, t), t, f"position({tp})")

    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        core = self.core
        (tp,) = fe.partitions_arg([partition])
        epoch: int | None = None
        if isinstance(offset, OffsetAndMetadata):
            value, epoch = offset.offset, offset.leader_epoch
        else:
            value = offset
        core.subs.seek(tp, value, epoch)
        core.fetcher.wake()

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to("earliest", partitions)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to("latest", partitions)

    def _seek_to(self, where: str, partitions: Iterable[TopicPartition] | None) -> None:
        core = self.core
        tps = fe.partitions_arg(partitions) if partitions is not None else sorted(core.subs.assigned_partitions())
        for tp in tps:
            core.subs.state(tp)
        core.subs.request_reset(tps, where)
        core.wake_positions()

    async def committed(self, partitions: Iterable[TopicPartition] | TopicPartition, timeout: float | None = None
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        core = self.core
        fe.require_group(self.config, "committed()")
        t = self._timeout(timeout)
        return await self._run(core.offsets.fetch_committed(fe.partitions_arg(partitions), t,
                                                            core._generation_for_fetch()), t, "committed()")

    async def beginning_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                                ) -> dict[TopicPartition, int]:
        return await self._list(partitions, EARLIEST_TIMESTAMP, timeout)

    async def end_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                          ) -> dict[TopicPartition, int]:
        return await self._list(partitions, LATEST_TIMESTAMP, timeout)

    async def _list(self, partitions: Iterable[TopicPartition], stamp: int, timeout: float | None
                    ) -> dict[TopicPartition, int]:
        t = self._timeout(timeout)
        tps = fe.partitions_arg(partitions)
        found = await self._run(self.core.offsets.list_offsets({tp: stamp for tp in tps}, t), t, "listing offsets")
        return {tp: (v.offset if v is not None else -1) for tp, v in found.items()}

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
                                ) -> dict[TopicPartition, ListedOffset | None]:
        stamps = {}
        for tp, ts in timestamps.items():
            (tp2,) = fe.partitions_arg([tp])
            if not isinstance(ts, int) or ts < 0:
                raise IllegalStateError(f"timestamp for {tp2} must be >= 0, got {ts!r}",
                                        topic=tp2.topic, partition=tp2.partition)
            stamps[tp2] = ts
        t = self._timeout(timeout)
        return await self._run(self.core.offsets.list_offsets(stamps, t), t, "offsets_for_times()")

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        core = self.core
        tps = fe.partitions_arg(partitions)
        core.subs.pause(tps)
        core.buffer.drop(lambda f: f.tp not in set(tps))

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        core = self.core
        core.subs.resume(fe.partitions_arg(partitions))
        core.fetcher.wake()

    def paused(self) -> set[TopicPartition]:
        return self.core.subs.paused_partitions()

    def lag(self, partition: TopicPartition) -> int | None:
        (tp,) = fe.partitions_arg([partition])
        return self.core.subs.lag(tp, self.core.read_committed)

    current_lag = lag

    async def partitions_for(self, topic: str, timeout: float | None = None) -> set[TopicPartition]:
        t = self._timeout(timeout)
        found = await self._run(self.core.client.partitions_of(topic, timeout_s=t), t, "partitions_for()")
        return {TopicPartition(topic, p.partition) for p in found}

    # ------------------------------------------------------------ commits

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, *,
                     timeout: float | None = None) -> None:
        """Commit synchronously (awaits the broker; retries retriable errors until ``timeout``)."""
        core = self.core
        values = core.subs.all_consumed() if offsets is None else fe.offsets_arg(offsets)
        core.check_commit(values)
        if core.app_calls:
            await self._drain_callbacks()
        if values:
            t = self._timeout(timeout)
            await self._run(core.commit(values, t), t, "commit")
            if core.app_calls:  # interceptors' on_commit: right after the commit, as Java
                await self._drain_callbacks()

    commit_sync = commit

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Start a commit that never retries; ``callback(offsets, error)`` runs in a later poll()."""
        core = self.core
        values = core.subs.all_consumed() if offsets is None else fe.offsets_arg(offsets)
        core.check_commit(values)
        core.commit_async_from_poll(values, callback)

    def group_metadata(self) -> ConsumerGroupMetadata:
        return self.core.group_metadata()

    def metrics(self) -> MetricsSnapshot:
        return self.core.registry.snapshot()

    # ------------------------------------------------------------ closing

    async def close(self, timeout: float = 30.0) -> None:
        """As :meth:`kafkalite.Consumer.close`."""
        if self._closed:
            return
        if self._core is None:
            self._closed = True
            return
        core = self._core
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            if core.group is not None and core.subs.has_auto_assignment:
                owned = core.subs.assigned_partitions()
                if core.auto_commit and owned:
                    try:
                        await self._run(core.commit(core.subs.all_consumed(), max(0.01, deadline - time.monotonic())),
                                        max(0.01, deadline - time.monotonic()), "commit on close")
                    except Exception:
                        pass
                try:
                    await core.app_calls.run_async()
                    if owned:
                        result = core.revoke_now(owned)
                        if asyncio.iscoroutine(result):
                            await result
                except Exception:
                    pass
            try:
                await asyncio.wait_for(core.close(max(0.01, deadline - time.monotonic() - 0.2), commit=False),
                                       max(0.05, deadline - time.monotonic() - 0.05))
            except Exception:
                pass
        finally:
            self._closed = True
            if core.interceptors is not None:
                core.interceptors.close()

    async def __aenter__(self) -> AsyncConsumer:
        _ = self.core
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<kafkalite.aio.Consumer group={self.config['group.id']!r}>"


def _call_soon(loop: asyncio.AbstractEventLoop) -> Any:
    def call(fn: Any, *args: Any) -> None:
        loop.call_soon(fn, *args)
    return call
