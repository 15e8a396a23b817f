"""The topics a producer sends to, kept in line with the cluster's metadata.

``send()`` reads a topic's partition count and available partitions from the
accumulator's :class:`~kafkalite.producer.accumulator.TopicState` without a call to
the engine. :class:`TopicMetadata` fills those in: :meth:`~TopicMetadata.sync`
applies every metadata update to the known topics (the sender calls it when the
metadata changed), and :meth:`~TopicMetadata.wait_for_topic` is the wait of a
``send()`` or ``partitions_for()`` for a topic not known yet (at most
``max.block.ms``; final errors such as authorization at once). It is also the
:class:`~kafkalite.producer.partitioner.ClusterView` custom partitioners see.

Example (on the engine loop)::

    topics = TopicMetadata(client, acc, backoff)
    state = await topics.wait_for_topic("orders", None, timeout_s=60.0)
    state.num_partitions
"""

from __future__ import annotations

import asyncio
import time

from kafkalite.backoff import ExponentialBackoff
from kafkalite.errors import (
    AuthenticationError,
    KafkaError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kafkalite.net.client import NetworkClient
from kafkalite.producer.accumulator import RecordAccumulator, TopicState

__all__ = ["TopicMetadata"]

_UNKNOWN_TOPIC = UnknownTopicOrPartitionError.code
# Topic errors that will not go away by waiting (authorization, invalid name).
_FINAL_TOPIC_ERRORS = {17, 29}


class TopicMetadata:
    """The producer's topics from the cluster metadata (see the module doc)."""

    def __init__(self, client: NetworkClient, acc: RecordAccumulator, backoff: ExponentialBackoff) -> None:
        self.client = client
        self.acc = acc
        self.backoff = backoff

    def sync(self) -> None:
        """Apply new metadata to the topics send() knows (partition counts, leaders)."""
        metadata = self.client.metadata
        for topic in list(self.acc.topics):
            meta = metadata.topics.get(topic)
            if meta is not None and meta.partitions:
                self.acc.update_topic(topic, meta.partition_count, metadata.available_partitions(topic))

    def partitions_cached(self, topic: str) -> list[int] | None:
        """The partition ids of ``topic`` if send() knows it already, else None."""
        state = self.acc.topics.get(topic)
        return list(range(state.num_partitions)) if state is not None else None

    # -------------------------------------------------------------- ClusterView

    def partition_count(self, topic: str) -> int:
        state = self.acc.topics.get(topic)
        return state.num_partitions if state else 0

    def available_partitions(self, topic: str) -> list[int]:
        state = self.acc.topics.get(topic)
        return list(state.available) if state else []

    # -------------------------------------------------------------- waiting (engine loop)

    async def wait_for_topic(self, topic: str, partition: int | None, timeout_s: float) -> TopicState:
        """Metadata for ``topic`` (with ``partition``), waiting up to ``timeout_s`` (max.block.ms)."""
        if not isinstance(topic, str) or not topic:
            raise UnknownTopicOrPartitionError(f"invalid topic name {topic!r}")
        deadline = time.monotonic() + timeout_s
        self.client.track_topics([topic])
        metadata = self.client.metadata
        refreshed = False
        attempt = 0
        last_error: BaseException | None = None
        while True:
            meta = metadata.topics.get(topic)
            if meta is not None and meta.partitions:
                state = self.acc.update_topic(topic, meta.partition_count, metadata.available_partitions(topic))
                if partition is None or partition < state.num_partitions:
                    return state
                if refreshed:
                    raise UnknownTopicOrPartitionError(
                        f"partition {partition} of topic '{topic}' does not exist (the topic has "
                        f"{state.num_partitions} partitions)", topic=topic, partition=partition)
            code = metadata.topic_errors.get(topic)
            if refreshed and code in _FINAL_TOPIC_ERRORS:
                raise error_for_code(code, f"cannot produce to topic '{topic}'", topic=topic)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if code == _UNKNOWN_TOPIC:
                    raise UnknownTopicOrPartitionError(
                        f"topic '{topic}' not present in metadata after {timeout_s * 1000:.0f} ms "
                        "(it does not exist and the broker does not create topics automatically?)",
                        topic=topic)
                raise KafkaTimeoutError(
                    f"topic '{topic}' not present in metadata after {timeout_s * 1000:.0f} ms"
                    + (f": {last_error}" if last_error else ""), topic=topic)
            if refreshed:
                await asyncio.sleep(min(remaining, self.backoff.delay_s(attempt)))
                attempt += 1
            try:
                await self.client.refresh_metadata({topic}, timeout_s=max(0.001, deadline - time.monotonic()))
                last_error = None
            except AuthenticationError:
                raise  # a refused login: waiting out max.block.ms will not fix it (Java raises too)
            except KafkaError as exc:
                last_error = exc
            refreshed = True
