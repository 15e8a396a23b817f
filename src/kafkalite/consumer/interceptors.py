"""Consumer interceptors (Java's ``ConsumerInterceptor``), e.g. for tracing or auditing.

An interceptor is an object with (at least one of the two hooks):

* ``on_consume(records: ConsumerRecords) -> ConsumerRecords | None``: called by
  ``poll()`` just before it returns, in the polling thread; may return other records
  (filtered, changed), or None to keep them;
* ``on_commit(offsets: dict[TopicPartition, OffsetAndMetadata])``: called once offsets
  were committed (``commit()``, ``commit_async()`` and auto-commit), in the polling
  thread: after a synchronous ``commit()`` returns its result, within a later ``poll()``
  for asynchronous and automatic commits;
* ``configure(config)`` and ``close()`` (called by ``Consumer.close()``).

``interceptor.classes`` takes objects, classes (instantiated without arguments) or
``"module:Class"`` strings; one that cannot be loaded, or has neither hook, fails the
consumer's construction with a :class:`~kafkalite.errors.ConfigError` (as it does the
producer's). As in the Java client, an exception raised by an interceptor is logged and
does not fail the poll or the commit; the next interceptor gets the last good records.

Example::

    class CountConsumed:
        def __init__(self):
            self.seen = 0
        def on_consume(self, records):
            self.seen += len(records)
            return records
        def on_commit(self, offsets):
            audit_log.info("committed %s", offsets)

    Consumer({"bootstrap.servers": ..., "group.id": "g", "interceptor.classes": [CountConsumed()]})
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kafkalite.consumer.records import ConsumerRecords
from kafkalite.errors import ConfigError
from kafkalite.plugins import close_each, configure_each, load
from kafkalite.types import OffsetAndMetadata, TopicPartition

log = logging.getLogger("kafkalite.consumer")

__all__ = ["ConsumerInterceptors", "load_consumer_interceptors"]


class ConsumerInterceptors:
    """The chain of configured consumer interceptors."""

    def __init__(self, interceptors: Sequence[Any]) -> None:
        self.interceptors = list(interceptors)
        self._on_consume = [i for i in self.interceptors if callable(getattr(i, "on_consume", None))]
        self._on_commit = [i for i in self.interceptors if callable(getattr(i, "on_commit", None))]

    @property
    def wants_commits(self) -> bool:
        return bool(self._on_commit)

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        for interceptor in self._on_consume:
            try:
                replaced = interceptor.on_consume(records)
            except Exception:
                log.exception("interceptor %r raised in on_consume; the records go on unchanged", interceptor)
                continue
            if replaced is not None:
                records = replaced
        return records

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        for interceptor in self._on_commit:
            try:
                interceptor.on_commit(dict(offsets))
            except Exception:
                log.exception("interceptor %r raised in on_commit", interceptor)

    def close(self) -> None:
        close_each(self.interceptors, "interceptor", log)


def _load(spec: Any) -> Any:
    interceptor = load("interceptor.classes", spec)
    if not (callable(getattr(interceptor, "on_consume", None)) or callable(getattr(interceptor, "on_commit", None))):
        raise ConfigError(
            f"setting 'interceptor.classes': {interceptor!r} has neither on_consume nor on_commit "
            "(a consumer interceptor; producer interceptors have on_send / on_acknowledgement)"
        )
    return interceptor


def load_consumer_interceptors(specs: Sequence[Any], config: Mapping[str, Any]) -> ConsumerInterceptors | None:
    """Instantiate and configure ``interceptor.classes`` (None when there are none)."""
    if not specs:
        return None
    interceptors = [_load(s) for s in specs]
    configure_each(interceptors, config)
    return ConsumerInterceptors(interceptors)
