"""The blocking share consumer: ``kafkalite.ShareConsumer`` (KIP-932 share groups, "queues").

Members of a share group read the same partitions together, record by record: the
broker hands each record to one member at a time, locks it for the acquisition lock
time, and the member acknowledges it: ACCEPT (done), RELEASE (deliver it again, maybe
to another member) or REJECT (archive it). A record whose lock runs out is delivered
again; after ``share.delivery.count.limit`` deliveries it is archived.

The engine (heartbeats, fetches, acknowledgements) runs on a background thread;
``poll()`` decodes records in the calling thread. Not thread-safe, like Java's
``KafkaShareConsumer``: one consumer per thread; only :meth:`ShareConsumer.wakeup` may
be called from another thread.

Example (implicit acknowledgement, the default: the next poll() accepts these)::

    from kafkalite import ShareConsumer

    with ShareConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "workers"}) as consumer:
        consumer.subscribe(["jobs"])
        while True:
            for record in consumer.poll(timeout=1.0):
                run_job(record.value)

Example (explicit acknowledgement)::

    consumer = ShareConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "workers",
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe(["jobs"])
    for record in consumer.poll(1.0):
        try:
            run_job(record.value)
            consumer.acknowledge(record)                           # ACCEPT
        except TemporaryFailure:
            consumer.acknowledge(record, AcknowledgeType.RELEASE)  # try again later
        except BadJob:
            consumer.acknowledge(record, AcknowledgeType.REJECT)   # never again
    consumer.commit_sync()
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kafkalite.errors import ClientClosedError, IllegalStateError, WakeupError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.net.engine import EngineCalls, EngineThread
from kafkalite.share import settings as st
from kafkalite.share.core import AckCallback, ShareConsumerCore
from kafkalite.share.types import AcknowledgeType, ShareConsumerRecord
from kafkalite.types import TopicPartition

_SLICE = 0.1


class ShareConsumer(EngineCalls):
    """A share group member with a blocking API (see the module doc for examples).

    Args:
        config: settings with Java names (``{"group.id": "workers"}``); keyword arguments
            take snake_case aliases (``group_id="workers"``). See ``docs/share_consumer.md``.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._closed = True
        self.config = st.resolve_settings(config, kwargs)
        self._event = threading.Event()
        self._wakeup = False
        self._engine = EngineThread(name=f"kafkalite-share-consumer-{self.config['client.id'] or id(self)}").start()
        event, engine = self._event, self._engine

        async def make() -> ShareConsumerCore:
            return ShareConsumerCore(self.config, asyncio.get_running_loop(), event.set, engine.call_soon)

        try:
            self._core: ShareConsumerCore = engine.run(make(), timeout=30, what="starting the share consumer")
        except BaseException:
            engine.stop()
            raise
        self._closed = False
        engine.call_soon(self._core.start)

    # ------------------------------------------------------------ plumbing

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("the share consumer is closed")

    # ------------------------------------------------------------ subscribing

    def subscribe(self, topics: Iterable[str] | str) -> None:
        """Join the share group (``group.id``) and read ``topics``; an empty list unsubscribes.

        The broker assigns partitions; several members get the same partition and share
        its records.
        """
        self._check_open()
        names = st.topics_arg(topics)
        if not names:
            self.unsubscribe()
            return
        self._core.subscription = names  # seen by poll() at once; the engine joins the group
        self._engine.call_soon(self._core.set_subscription, names)

    def unsubscribe(self) -> None:
        """Acknowledge what is settled, end the share sessions and leave the group."""
        self._check_open()
        core = self._core
        if not core.explicit:
            core.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
        acks = core.in_flight.take_acknowledged()
        core.in_flight = type(core.in_flight)()
        t = self._timeout(None)
        self._run(core.unsubscribe(acks, t), t + 1.0, "unsubscribe()")
        core.run_ack_callbacks()

    def subscription(self) -> set[str]:
        """The topics subscribed to."""
        return set(self._core.subscription)

    def assignment(self) -> set[TopicPartition]:
        """The partitions the broker currently assigns to this member (shared with others)."""
        return set(self._core.member.assignment)

    # ------------------------------------------------------------ polling

    def poll(self, timeout: float | None = None) -> list[ShareConsumerRecord]:
        """Return records acquired for this member, waiting up to ``timeout`` seconds
        (None: until some arrive); at most ``max.poll.records``.

        In implicit mode the records of the previous poll() are accepted first. In
        explicit mode every record of the previous poll() must have been acknowledged
        (IllegalStateError otherwise). Runs the acknowledgement commit callback for
        acknowledgements that completed. Each record has ``delivery_count``.
        """
        self._check_open()
        core = self._core
        if not core.subscription:
            raise IllegalStateError("the share consumer is not subscribed to any topic")
        deadline = None if timeout is None else time.monotonic() + timeout
        event = self._event
        core.run_ack_callbacks()
        core.poll_begin()
        while True:
            event.clear()
            if self._wakeup:
                self._wakeup = False
                raise WakeupError("poll() was interrupted by wakeup()")
            core.raise_errors()
            if core.ack_results:
                core.run_ack_callbacks()
            records = core.collect()
            if records:
                return records
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return records
            event.wait(_SLICE if deadline is None else min(_SLICE, deadline - now))

    def __iter__(self) -> Iterator[ShareConsumerRecord]:
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

    # ------------------------------------------------------------ acknowledging

    def acknowledge(self, record: ShareConsumerRecord | str, ack_type: AcknowledgeType | str = AcknowledgeType.ACCEPT,
                    *, partition: int | None = None, offset: int | None = None) -> None:
        """Settle one record of the last poll(): ACCEPT (default), RELEASE or REJECT.

        Only with ``share.acknowledgement.mode=explicit``. Sent with the next poll(),
        commit_sync() or commit_async(). Also ``acknowledge("topic", "release",
        partition=0, offset=42)``.
        """
        self._check_open()
        _acknowledge(self._core, record, ack_type, partition, offset)

    def commit_sync(self, timeout: float | None = None) -> dict[TopicPartition, BaseException | None]:
        """Send the acknowledgements made so far and wait for the broker: per partition,
        None (applied) or the error (e.g. InvalidRecordStateError when a record's lock had
        expired). Retriable errors are retried until ``timeout`` (default.api.timeout.ms).
        In implicit mode everything the last poll() returned is accepted first."""
        self._check_open()
        core = self._core
        core.run_ack_callbacks()
        acks = _take_for_commit(core)
        if not acks:
            return {}
        t = self._timeout(timeout)
        result = self._run(core.commit(acks, t), t + 1.0, "commit_sync()")
        core.run_ack_callbacks()
        return result

    def commit_async(self) -> None:
        """Send the acknowledgements made so far without waiting; their outcome goes to
        the acknowledgement commit callback from a later poll() or commit."""
        self._check_open()
        core = self._core
        core.run_ack_callbacks()
        acks = _take_for_commit(core)
        if acks:
            self._engine.call_soon(core.commit_async, acks)

    def set_acknowledgement_commit_callback(self, callback: AckCallback | None) -> None:
        """``callback({TopicPartition: {offsets}}, error_or_None)`` for every completed
        acknowledgement, run in the thread that calls poll() / commit / close."""
        self._check_open()
        self._core.ack_callback = callback

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """How long the broker locks acquired records for this member (from the last
        ShareFetch answer), or None before the first one."""
        return self._core.fetcher.acquisition_lock_timeout_ms

    # ------------------------------------------------------------ metrics and closing

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``; ``metrics()["records-fetched-total"]``
        reads one by its Java name."""
        return self._core.registry.snapshot()

    @property
    def member_id(self) -> str:
        """This member's id in the share group (made by the client, as Java does)."""
        return self._core.member.member_id

    def close(self, timeout: float = 30.0) -> None:
        """Acknowledge (implicit mode: accept the last poll's records), end the share
        sessions (the broker releases records still held), leave the group, stop.
        Never takes longer than ``timeout`` seconds."""
        if self._closed:
            return
        deadline = time.monotonic() + max(0.0, timeout)
        core = self._core
        try:
            if not core.explicit:
                core.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
            acks = core.in_flight.take_acknowledged()
            try:
                self._run(core.close(acks, max(0.01, deadline - time.monotonic() - 0.5)),
                          max(0.05, deadline - time.monotonic() - 0.05), "close")
            except Exception:
                pass
            try:
                core.run_ack_callbacks()
            except Exception:
                pass
        finally:
            self._closed = True
            self._engine.stop(timeout=max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._core.member.assignment)} partitions"
        return f"<kafkalite.ShareConsumer group={self.config['group.id']!r} {state}>"


def _acknowledge(core: ShareConsumerCore, record: Any, ack_type: Any, partition: int | None,
                 offset: int | None) -> None:
    if not core.explicit:
        raise IllegalStateError("acknowledge() needs share.acknowledgement.mode=explicit; in implicit mode the "
                                "next poll() or commit accepts every record", group_id=core.group_id)
    try:
        kind = AcknowledgeType.parse(ack_type)
    except ValueError as exc:
        raise IllegalStateError(str(exc)) from None
    if kind is AcknowledgeType.GAP:
        raise IllegalStateError("GAP is not an acknowledgement an application makes; use ACCEPT, RELEASE or REJECT")
    topic, part, off = st.record_position(record, partition, offset)
    core.in_flight.acknowledge(topic, part, off, kind)


def _take_for_commit(core: ShareConsumerCore) -> Any:
    if not core.explicit:
        core.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
    return core.in_flight.take_acknowledged()
