"""The asyncio share consumer: ``kafkalite.aio.ShareConsumer``.

The same core as the blocking :class:`kafkalite.ShareConsumer`, run on the caller's
event loop (no thread). Methods that talk to brokers are coroutines; the
acknowledgement commit callback runs in the task that awaits ``poll()`` / commits and
may be a coroutine.

Example::

    from kafkalite import AcknowledgeType
    from kafkalite.aio import ShareConsumer

    async with ShareConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "workers",
                              "share.acknowledgement.mode": "explicit"}) as consumer:
        consumer.subscribe(["jobs"])
        async for record in consumer:
            ok = await run_job(record.value)
            consumer.acknowledge(record, AcknowledgeType.ACCEPT if ok else AcknowledgeType.RELEASE)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from typing import Any, TypeVar

from kafkalite.errors import ClientClosedError, IllegalStateError, KafkaTimeoutError, WakeupError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.share import settings as st
from kafkalite.share.consumer import _acknowledge, _take_for_commit
from kafkalite.share.core import AckCallback, ShareConsumerCore
from kafkalite.share.in_flight import InFlight
from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord
from kafkalite.types import TopicPartition

T = TypeVar("T")


class AsyncShareConsumer:
    """A share group member for asyncio (see the module doc). Create it inside a running
    loop (or call any coroutine method first)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = st.resolve_settings(config, kwargs)
        self._core: ShareConsumerCore | None = None
        self._event: asyncio.Event | None = None
        self._wakeup = False
        self._closed = False

    @property
    def core(self) -> ShareConsumerCore:
        if self._closed:
            raise ClientClosedError("the share consumer is closed")
        if self._core is None:
            loop = asyncio.get_running_loop()
            self._event = asyncio.Event()
            def call_soon(fn: Any, *args: Any) -> None:
                loop.call_soon(fn, *args)

            self._core = ShareConsumerCore(self.config, loop, self._event.set, call_soon)
            self._core.start()
        return self._core

    async def _run(self, aw: Awaitable[T], timeout: float | None, what: str) -> T:
        try:
            return await asyncio.wait_for(aw, timeout)
        except asyncio.TimeoutError:
            raise KafkaTimeoutError(f"{what} did not complete within {timeout:.3f}s") from None

    def _timeout(self, timeout: float | None) -> float:
        return self.config["default.api.timeout.ms"] / 1000.0 if timeout is None else timeout

    async def _callbacks(self) -> None:
        core = self.core
        callback = core.ack_callback
        while core.ack_results:
            outcome = core.ack_results.popleft()
            if callback is not None:
                result = callback({outcome.partition: set(outcome.offsets)}, outcome.error)
                if asyncio.iscoroutine(result):
                    await result

    # ------------------------------------------------------------ subscribing

    def subscribe(self, topics: Iterable[str] | str) -> None:
        """As :meth:`kafkalite.ShareConsumer.subscribe` (an empty list: call unsubscribe())."""
        core = self.core
        names = st.topics_arg(topics)
        if not names:
            raise IllegalStateError("subscribe([]) on the asyncio share consumer: await unsubscribe() instead")
        core.set_subscription(names)

    async def unsubscribe(self) -> None:
        core = self.core
        if not core.explicit:
            core.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
        acks = core.in_flight.take_acknowledged()
        core.in_flight = InFlight()
        t = self._timeout(None)
        await self._run(core.unsubscribe(acks, t), t + 1.0, "unsubscribe()")
        await self._callbacks()

    def subscription(self) -> set[str]:
        return set(self.core.subscription)

    def assignment(self) -> set[TopicPartition]:
        return set(self.core.member.assignment)

    # ------------------------------------------------------------ polling

    async def poll(self, timeout: float | None = None) -> list[ShareConsumerRecord]:
        """As :meth:`kafkalite.ShareConsumer.poll` (a coroutine)."""
        core = self.core
        if not core.subscription:
            raise IllegalStateError("the share consumer is not subscribed to any topic")
        assert self._event is not None
        event = self._event
        deadline = None if timeout is None else time.monotonic() + timeout
        await self._callbacks()
        core.poll_begin()
        while True:
            event.clear()
            if self._wakeup:
                self._wakeup = False
                raise WakeupError("poll() was interrupted by wakeup()")
            core.raise_errors()
            if core.ack_results:
                await self._callbacks()
            records = core.collect()
            if records:
                return records
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return records
            try:
                await asyncio.wait_for(event.wait(), 0.1 if deadline is None else min(0.1, deadline - now))
            except asyncio.TimeoutError:
                pass

    def __aiter__(self) -> AsyncIterator[ShareConsumerRecord]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ShareConsumerRecord]:
        while not self._closed:
            try:
                records = await self.poll(1.0)
            except ClientClosedError:
                return
            for record in records:
                yield record

    def wakeup(self) -> None:
        """Make the current (or next) poll() raise WakeupError (from another thread, call
        it through ``loop.call_soon_threadsafe``)."""
        self._wakeup = True
        if self._event is not None:
            self._event.set()

    # ------------------------------------------------------------ acknowledging

    def acknowledge(self, record: ShareConsumerRecord | str, ack_type: AcknowledgeType | str = AcknowledgeType.ACCEPT,
                    *, partition: int | None = None, offset: int | None = None) -> None:
        """As :meth:`kafkalite.ShareConsumer.acknowledge` (not a coroutine: it only records)."""
        _acknowledge(self.core, record, ack_type, partition, offset)

    async def commit_sync(self, timeout: float | None = None) -> dict[TopicPartition, BaseException | None]:
        """As :meth:`kafkalite.ShareConsumer.commit_sync`."""
        core = self.core
        await self._callbacks()
        acks = _take_for_commit(core)
        if not acks:
            return {}
        t = self._timeout(timeout)
        result = await self._run(core.commit(acks, t), t + 1.0, "commit_sync()")
        await self._callbacks()
        return result

    def commit_async(self) -> None:
        """As :meth:`kafkalite.ShareConsumer.commit_async`."""
        core = self.core
        acks = _take_for_commit(core)
        if acks:
            core.commit_async(acks)

    def set_acknowledgement_commit_callback(self, callback: AckCallback | None) -> None:
        """As :meth:`kafkalite.ShareConsumer.set_acknowledgement_commit_callback`; the
        callback may be a coroutine function."""
        self.core.ack_callback = callback

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        return self.core.fetcher.acquisition_lock_timeout_ms

    @property
    def member_id(self) -> str:
        return self.core.member.member_id

    def metrics(self) -> MetricsSnapshot:
        return self.core.registry.snapshot()

    async def close(self, timeout: float = 30.0) -> None:
        """As :meth:`kafkalite.ShareConsumer.close`."""
        if self._closed:
            return
        if self._core is None:
            self._closed = True
            return
        core = self._core
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            if not core.explicit:
                core.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
            acks = core.in_flight.take_acknowledged()
            try:
                await asyncio.wait_for(core.close(acks, max(0.01, deadline - time.monotonic() - 0.2)),
                                       max(0.05, deadline - time.monotonic()))
            except Exception:
                pass
            try:
                await self._callbacks()
            except Exception:
                pass
        finally:
            self._closed = True

    async def __aenter__(self) -> AsyncShareConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed or self._core is None else f"{len(self._core.member.assignment)} partitions"
        return f"<kafkalite.aio.ShareConsumer group={self.config['group.id']!r} {state}>"
