"""The share consumer's API, written once: ``kafkalite.aio.ShareConsumer``.

This class is the definition of the share consumer API (KIP-932 share groups,
"queues"): ``kafkalite.ShareConsumer`` (blocking) is generated from it by
``tools/generate_fronts.py`` over
:class:`~kafkalite.share.fronts.BlockingShareConsumerFront`; here it runs on the
caller's event loop (:class:`~kafkalite.share.fronts.AsyncShareConsumerFront`, no
thread). Methods that talk to brokers are coroutines; the acknowledgement commit
callback runs in the task that awaits ``poll()`` / commits and may be a coroutine.

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

import time
from collections.abc import AsyncIterator, Iterable

from kafkalite.errors import ClientClosedError, IllegalStateError, WakeupError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.share import settings as st
from kafkalite.share.core import AckCallback, ShareConsumerCore
from kafkalite.share.fronts import AsyncShareConsumerFront
from kafkalite.share.in_flight import AcksByNode, InFlight
from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord
from kafkalite.types import TopicPartition


class AsyncShareConsumer(AsyncShareConsumerFront):
    """A share group member.

    Members of a share group read the same partitions together, record by record: the
    broker hands each record to one member at a time, locks it for the acquisition lock
    time, and the member acknowledges it: ACCEPT (done), RELEASE (deliver it again, maybe
    to another member) or REJECT (archive it). A record whose lock runs out is delivered
    again; after ``share.delivery.count.limit`` deliveries it is archived.

    Args:
        config: settings with Java names (``{"group.id": "workers"}``); keyword arguments
            take snake_case aliases (``group_id="workers"``). See ``docs/share_consumer.md``.

    Not thread-safe, like Java's ``KafkaShareConsumer``: one consumer per thread (per
    task); only :meth:`wakeup` may be called from another thread.

    Example (implicit acknowledgement, the default: the next poll() accepts these)::

        async with ShareConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": share_group}) as consumer:
            consumer.subscribe(["orders"])
            for record in await consumer.poll(timeout=10.0):     # an application polls in a loop
                print(record.value, record.delivery_count)

    Example (explicit acknowledgement)::

        consumer = ShareConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": share_group,
                                  "share.acknowledgement.mode": "explicit"})
        consumer.subscribe(["orders"])
        for record in await consumer.poll(10.0):
            if record.key == b"k0":
                consumer.acknowledge(record)                           # ACCEPT: done
            elif record.key == b"k1":
                consumer.acknowledge(record, AcknowledgeType.RELEASE)  # deliver it again
            else:
                consumer.acknowledge(record, AcknowledgeType.REJECT)   # never again
        await consumer.commit_sync()
        await consumer.close()
    """

    async def __aenter__(self) -> AsyncShareConsumer:
        self._open_core()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        core = self._core
        state = "closed" if self._closed else "not started" if core is None else \
            f"{len(core.member.assignment)} partitions"
        return f"<{self._PUBLIC} group={self.config['group.id']!r} {state}>"

    # ------------------------------------------------------------ subscribing

    def subscribe(self, topics: Iterable[str] | str) -> None:
        """Join the share group (``group.id``) and read ``topics``.

        The broker assigns partitions; several members get the same partition and share
        its records. An empty list unsubscribes, as Java's (the asyncio consumer cannot
        wait for that inside a plain method: it raises IllegalStateError, ``await
        unsubscribe()`` instead).

        Example::

            share_consumer.subscribe(["orders"])
            records = await share_consumer.poll(timeout=10.0)      # joins the share group, then fetches
            assert records and share_consumer.subscription() == {"orders"}
        """
        core = self._open_core()
        names = st.topics_arg(topics)
        if not names:
            self._subscribe_to_nothing()
            return
        core.subscription = names  # seen by poll() at once; the engine joins the group
        self._call_soon(core.set_subscription, names)

    async def unsubscribe(self) -> None:
        """Acknowledge what is settled (implicit mode: accept the last poll's records), end
        the share sessions and leave the group.

        Example::

            share_consumer.subscribe(["orders"])
            await share_consumer.poll(timeout=10.0)
            await share_consumer.unsubscribe()        # accepts those records (implicit mode), leaves the group
            assert share_consumer.subscription() == set()
        """
        core = self._open_core()
        if not core.explicit:
            core.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
        acks = core.in_flight.take_acknowledged()
        core.in_flight = InFlight()
        t = self._timeout(None)
        await self._run(core.unsubscribe(acks, t), t + 1.0, "unsubscribe()")
        await self._run_ack_callbacks(core)

    def subscription(self) -> set[str]:
        """The topics subscribed to.

        Example::

            share_consumer.subscribe(["orders"])
            assert share_consumer.subscription() == {"orders"}
        """
        return set(self._open_core().subscription)

    def assignment(self) -> set[TopicPartition]:
        """The partitions the broker currently assigns to this member (shared with others).

        Example::

            share_consumer.subscribe(["orders"])
            await share_consumer.poll(timeout=10.0)
            assert {tp.topic for tp in share_consumer.assignment()} == {"orders"}
        """
        return set(self._open_core().member.assignment)

    # ------------------------------------------------------------ polling

    async def poll(self, timeout: float | None = None) -> list[ShareConsumerRecord]:
        """Return records acquired for this member, waiting up to ``timeout`` seconds
        (None: until some arrive); at most ``max.poll.records``.

        In implicit mode the records of the previous poll() are accepted first. In
        explicit mode every record of the previous poll() must have been acknowledged
        (IllegalStateError otherwise). Runs the acknowledgement commit callback for
        acknowledgements that completed. Each record has ``delivery_count``.

        Example::

            share_consumer.subscribe(["orders"])
            for record in await share_consumer.poll(timeout=10.0):
                print(record.partition, record.offset, record.value, record.delivery_count)
        """
        core = self._open_core()
        if not core.subscription:
            raise IllegalStateError("the share consumer is not subscribed to any topic")
        deadline = None if timeout is None else time.monotonic() + timeout
        event = self._event
        await self._run_ack_callbacks(core)
        core.poll_begin()
        while True:
            event.clear()
            if self._wakeup:
                self._wakeup = False
                raise WakeupError("poll() was interrupted by wakeup()")
            core.raise_errors()
            if core.ack_results:
                await self._run_ack_callbacks(core)
            records = core.collect()
            if records:
                return records
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return records
            # Sleeps until the engine has news (records, an error, acknowledgement
            # results, wakeup()) or the deadline: no periodic look (issue 27).
            await self._wait_event(None if deadline is None else deadline - now)

    def __aiter__(self) -> AsyncIterator[ShareConsumerRecord]:
        """Records forever (poll in a loop); stop with wakeup(), close() or Ctrl-C."""
        return self._records()

    async def _records(self) -> AsyncIterator[ShareConsumerRecord]:
        while not self._closed:
            try:
                records = await self.poll(1.0)
            except ClientClosedError:
                return
            for record in records:
                yield record

    def wakeup(self) -> None:
        """Make the current (or next) blocking call (poll(), commit_sync(), unsubscribe())
        raise WakeupError. Thread-safe: the one method another thread may call.

        Example::

            share_consumer.subscribe(["orders"])
            share_consumer.wakeup()                  # e.g. from a signal handler or another thread
            try:
                await share_consumer.poll(timeout=10.0)
            except WakeupError:
                print("poll() was woken up")
        """
        self._wakeup = True
        self._wake_waiters()

    # ------------------------------------------------------------ acknowledging

    def acknowledge(self, record: ShareConsumerRecord | str, ack_type: AcknowledgeType | str = AcknowledgeType.ACCEPT,
                    *, partition: int | None = None, offset: int | None = None) -> None:
        """Settle one record of the last poll(): ACCEPT (default), RELEASE or REJECT.

        Only with ``share.acknowledgement.mode=explicit``. Sent with the next poll(),
        commit_sync() or commit_async(). Also ``acknowledge("topic", "release",
        partition=0, offset=42)``.

        Example::

            async with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": share_group,
                                      "share.acknowledgement.mode": "explicit"}) as worker:
                worker.subscribe(["orders"])
                for record in await worker.poll(timeout=10.0):
                    worker.acknowledge(record, AcknowledgeType.RELEASE if record.key == b"k1" else AcknowledgeType.ACCEPT)
                await worker.commit_sync()
        """
        core = self._open_core()
        if not core.explicit:
            raise IllegalStateError("acknowledge() needs share.acknowledgement.mode=explicit; in implicit mode the "
                                    "next poll() or commit accepts every record", group_id=core.group_id)
        try:
            kind = AcknowledgeType.parse(ack_type)
        except ValueError as exc:
            raise IllegalStateError(str(exc)) from None
        if kind is AcknowledgeType.GAP:
            raise IllegalStateError("GAP is not an acknowledgement an application makes; use ACCEPT, RELEASE or "
                                    "REJECT")
        topic, part, off = st.record_position(record, partition, offset)
        core.in_flight.acknowledge(topic, part, off, kind)

    def _take_for_commit(self, core: ShareConsumerCore) -> AcksByNode:
        """The acknowledgements to send (implicit mode: every record of the last poll() accepted)."""
        if not core.explicit:
            core.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
        return core.in_flight.take_acknowledged()

    async def commit_sync(self, timeout: float | None = None) -> dict[TopicPartition, BaseException | None]:
        """Send the acknowledgements made so far and wait for the broker: per partition,
        None (applied) or the error (e.g. InvalidRecordStateError when a record's lock had
        expired). Retriable errors are retried until ``timeout`` (default.api.timeout.ms).
        In implicit mode everything the last poll() returned is accepted first.

        Example::

            share_consumer.subscribe(["orders"])
            await share_consumer.poll(timeout=10.0)
            outcome = await share_consumer.commit_sync()      # implicit mode: accepts what poll() returned
            assert outcome and all(error is None for error in outcome.values())
        """
        core = self._open_core()
        await self._run_ack_callbacks(core)
        acks = self._take_for_commit(core)
        if not acks:
            return {}
        t = self._timeout(timeout)
        result = await self._run(core.commit(acks, t), t + 1.0, "commit_sync()")
        await self._run_ack_callbacks(core)
        return result

    def commit_async(self) -> None:
        """Send the acknowledgements made so far without waiting; their outcome goes to
        the acknowledgement commit callback from a later poll() or commit (the outcomes
        already known go to it now, as Java's).

        Example::

            outcomes = []
            share_consumer.set_acknowledgement_commit_callback(lambda offsets, error: outcomes.append(error))
            share_consumer.subscribe(["orders"])
            await share_consumer.poll(timeout=10.0)
            share_consumer.commit_async()
            while not outcomes:                           # the callback runs in a later poll()
                await share_consumer.poll(timeout=0.5)
            assert outcomes[0] is None
        """
        core = self._open_core()
        self._ack_callbacks_now(core)
        acks = self._take_for_commit(core)
        if acks:
            self._call_soon(core.commit_async, acks)

    def set_acknowledgement_commit_callback(self, callback: AckCallback | None) -> None:
        """``callback({TopicPartition: {offsets}}, error_or_None)`` for every completed
        acknowledgement, run in the thread that calls poll() / commit / close (on the
        asyncio consumer it may be a coroutine function).

        Example::

            settled = []
            share_consumer.set_acknowledgement_commit_callback(lambda offsets, error: settled.append((offsets, error)))
            share_consumer.subscribe(["orders"])
            await share_consumer.poll(timeout=10.0)
            await share_consumer.commit_sync()
            assert settled and settled[0][1] is None      # ({TopicPartition: {offsets}}, None)
        """
        self._open_core().ack_callback = callback

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """How long the broker locks acquired records for this member (from the last
        ShareFetch answer), or None before the first one.

        Example::

            share_consumer.subscribe(["orders"])
            await share_consumer.poll(timeout=10.0)
            print(share_consumer.acquisition_lock_timeout_ms)     # the broker's share.record.lock.duration.ms
        """
        return self._open_core().fetcher.acquisition_lock_timeout_ms

    # ------------------------------------------------------------ metrics and closing

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``; ``metrics()["records-fetched-total"]``
        reads one by its Java name.

        Example::

            share_consumer.subscribe(["orders"])
            await share_consumer.poll(timeout=10.0)
            print(share_consumer.metrics()["records-fetched-total"])
        """
        core = self._core if self._core is not None else self._open_core()
        return core.registry.snapshot()

    @property
    def member_id(self) -> str:
        """This member's id in the share group (made by the client, as Java does).

        Example::

            assert share_consumer.member_id                 # a UUID made by the client
        """
        return self._open_core().member.member_id

    async def close(self, timeout: float = 30.0) -> None:
        """Acknowledge (implicit mode: accept the last poll's records), end the share
        sessions (the broker releases records still held), leave the group, stop.
        Never takes longer than ``timeout`` seconds. A wakeup() does not interrupt it.

        Example::

            share_consumer.subscribe(["orders"])
            await share_consumer.poll(timeout=10.0)
            await share_consumer.close(timeout=10.0)      # accepts those records, releases anything else held
        """
        if self._closed:
            return
        core = self._core
        if core is None:  # never used (asyncio): nothing started
            self._closed = True
            return
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            if not core.explicit:
                core.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
            acks = core.in_flight.take_acknowledged()
            try:
                await self._run(core.close(acks, max(0.01, deadline - time.monotonic() - 0.5)),
                                max(0.05, deadline - time.monotonic() - 0.05), "close", wakeable=False)
            except Exception:
                pass
            try:
                await self._run_ack_callbacks(core)
            except Exception:
                pass
        finally:
            self._closed = True
            self._stop_engine(deadline)
