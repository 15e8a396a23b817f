"""Producer interceptors (Java's ``ProducerInterceptor``), e.g. for tracing.

An interceptor is an object with (all optional except one of the two hooks):

* ``on_send(record: ProducerRecord) -> ProducerRecord | None``: called in ``send()``
  before serialization; may return a replaced record (another topic, value, headers
  — e.g. a trace context header), or None to keep it;
* ``on_acknowledgement(metadata: RecordMetadata, error: Exception | None)``: called
  when the record is acknowledged or fails, on the producer's I/O thread, before the
  send's callback; keep it quick;
* ``configure(config)`` and ``close()``.

``interceptor.classes`` takes objects, classes (instantiated without arguments) or
``"module:Class"`` strings. As in the Java client, an exception from an interceptor is
logged and does not fail the send: the next interceptor gets the last good record.

Example::

    class AddTrace:
        def on_send(self, record):
            return record._replace(headers=[*(record.headers or []), ("trace", new_id())])
        def on_acknowledgement(self, metadata, error):
            ...

    Producer({"bootstrap.servers": ..., "interceptor.classes": [AddTrace()]})
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from kafkalite.errors import ConfigError
from kafkalite.plugins import close_each, configure_each, load
from kafkalite.types import Header, RecordMetadata

log = logging.getLogger("kafkalite.producer")

__all__ = ["ProducerInterceptors", "ProducerRecord", "load_interceptors"]


class ProducerRecord(NamedTuple):
    """A record as given to ``send()``, before serialization (what ``on_send`` sees)."""

    topic: str
    value: Any = None
    key: Any = None
    partition: int | None = None
    timestamp: int | None = None
    headers: list[Header] | None = None


class ProducerInterceptors:
    """The chain of configured interceptors."""

    def __init__(self, interceptors: Sequence[Any]) -> None:
        self.interceptors = list(interceptors)
        self._on_send = [i for i in self.interceptors if callable(getattr(i, "on_send", None))]
        self._on_ack = [i for i in self.interceptors if callable(getattr(i, "on_acknowledgement", None))]

    @property
    def wants_acks(self) -> bool:
        return bool(self._on_ack)

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        for interceptor in self._on_send:
            try:
                replaced = interceptor.on_send(record)
            except Exception:
                log.exception("interceptor %r raised in on_send; the record goes on unchanged", interceptor)
                continue
            if replaced is not None:
                if not isinstance(replaced, ProducerRecord):
                    log.error("interceptor %r returned %r from on_send, not a ProducerRecord; ignored",
                              interceptor, type(replaced).__name__)
                    continue
                record = replaced
        return record

    def on_acknowledgement(self, metadata: RecordMetadata, error: BaseException | None) -> None:
        for interceptor in self._on_ack:
            try:
                interceptor.on_acknowledgement(metadata, error)
            except Exception:
                log.exception("interceptor %r raised in on_acknowledgement", interceptor)

    def close(self) -> None:
        close_each(self.interceptors, "interceptor", log)


def _load(spec: Any) -> Any:
    interceptor = load("interceptor.classes", spec)
    if not (callable(getattr(interceptor, "on_send", None))
            or callable(getattr(interceptor, "on_acknowledgement", None))):
        raise ConfigError(
            f"setting 'interceptor.classes': {interceptor!r} has neither on_send nor on_acknowledgement"
        )
    return interceptor


def load_interceptors(specs: Sequence[Any], config: Mapping[str, Any]) -> ProducerInterceptors | None:
    """Instantiate and configure ``interceptor.classes`` (None when there are none)."""
    if not specs:
        return None
    interceptors = [_load(s) for s in specs]
    configure_each(interceptors, config)
    return ProducerInterceptors(interceptors)
