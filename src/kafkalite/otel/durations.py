"""The messaging conventions' duration histograms (``otel.meter.provider``).

What a producer or consumer with a meter provider records, per operation, in seconds:

| operation | current conventions (``messaging``) | v1.24 (default) |
|---|---|---|
| ``send()``: from the call to the broker's acknowledgement (or the failure) | ``messaging.client.operation.duration``, ``messaging.operation.name`` = send | ``messaging.publish.duration`` |
| ``send_many()``: from the call to the last record's acknowledgement (one operation) | the same | the same |
| ``poll()`` that returned records or raised: from the call to its return | ``messaging.client.operation.duration``, ``messaging.operation.name`` = poll | ``messaging.receive.duration`` |
| :func:`~kafkalite.otel.tracing.process_span` block | ``messaging.process.duration`` | ``messaging.process.duration`` |

``messaging/dup`` records both sets (``messaging.process.duration`` once, with both
attribute sets). Attributes are kept low in cardinality, as the conventions ask of
metrics: ``messaging.system``, ``messaging.destination.name`` (when one topic),
the operation (current conventions), the consumer group, and ``error.type`` when the
operation failed. Buckets: the conventions' advice (5 ms ... 10 s).

The measurements come from the same wrappers as tracing (:mod:`kafkalite.otel.tracing`).
A consumer with a meter provider and no tracer provider gets its ``poll`` wrapper with a
no-op tracer (no span; one measurement per poll, not per record). A producer records
send durations only when it is traced as well: without a span per record there is no
per-record hook, and adding one (a Python wrapper, a completion callback and an SDK
histogram record per record) measured 18 µs of CPU per record, 45 times the plain C
``send()``. A client with neither setting keeps the plain C ``send`` and ``poll``.

Example::

    provider = MeterProvider(metric_readers=[PrometheusMetricReader()])
    producer = Producer({..., "otel.meter.provider": provider, "otel.tracer.provider": tracer_provider})
    producer.send("orders", b"...")      # messaging.publish.duration, once acknowledged
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafkalite._version import __version__
from kafkalite.otel.semconv import Conventions, Operation, error_type

__all__ = ["BUCKETS", "OperationDurations"]

#: The conventions' advice for messaging.client.operation.duration / process.duration (seconds).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)

# operation -> (v1.24 histogram, current histogram)
_NAMES: dict[Operation, tuple[str, str]] = {
    "send": ("messaging.publish.duration", "messaging.client.operation.duration"),
    "receive": ("messaging.receive.duration", "messaging.client.operation.duration"),
    "process": ("messaging.process.duration", "messaging.process.duration"),
}
_OPERATION = {"send": ("publish", "send", "send"), "receive": ("receive", "poll", "receive"),
              "process": ("process", "process", "process")}


class OperationDurations:
    """The duration histograms of one client.

    Args:
        provider: the ``otel.meter.provider`` value (a MeterProvider, ``"global"`` or
            ``"module:attr"``).
        group_id: the consumer group, or None.
        conventions: which conventions (default: ``OTEL_SEMCONV_STABILITY_OPT_IN``).
    """

    def __init__(self, provider: Any, group_id: str | None = None, conventions: Conventions | None = None) -> None:
        from kafkalite.otel.metrics import resolve_meter_provider

        self.conventions = conv = conventions or Conventions()
        meter = resolve_meter_provider(provider).get_meter("kafkalite", __version__, schema_url=conv.schema_url)
        self.group_id = group_id
        # operation -> [(histogram, old attributes?, new attributes?)]
        self._instruments: dict[str, list[tuple[Any, bool, bool]]] = {}
        made: dict[str, Any] = {}
        for operation, (old_name, new_name) in _NAMES.items():
            wanted: dict[str, tuple[bool, bool]] = {}
            if conv.old:
                wanted[old_name] = (True, False)
            if conv.new:
                old, _ = wanted.get(new_name, (False, False))
                wanted[new_name] = (old, True)
            entries = []
            for name, (old, new) in wanted.items():
                if name not in made:
                    made[name] = _histogram(meter, name)
                entries.append((made[name], old, new))
            self._instruments[operation] = entries

    def attributes(self, operation: Operation, topic: str | None, error: BaseException | None,
                   old: bool, new: bool) -> dict[str, Any]:
        """The attributes of one measurement (``old`` / ``new``: which conventions' keys)."""
        old_op, new_op, new_type = _OPERATION[operation]
        attrs: dict[str, Any] = {"messaging.system": "kafka"}
        if topic:
            attrs["messaging.destination.name"] = topic
        if error is not None:
            attrs["error.type"] = error_type(error)
        if old:
            attrs["messaging.operation"] = old_op
            if self.group_id and operation != "send":
                attrs["messaging.kafka.consumer.group"] = self.group_id
        if new:
            attrs["messaging.operation.name"] = new_op
            attrs["messaging.operation.type"] = new_type
            if self.group_id and operation != "send":
                attrs["messaging.consumer.group.name"] = self.group_id
        return attrs

    def record(self, operation: Operation, seconds: float, topic: str | None = None,
               error: BaseException | None = None) -> None:
        """One finished operation."""
        for histogram, old, new in self._instruments[operation]:
            histogram.record(seconds, self.attributes(operation, topic, error, old, new))

    def polled(self, records: Sequence[Any], seconds: float, error: BaseException | None = None) -> None:
        """One poll() that returned ``records`` (or raised ``error``)."""
        topics = {r[6] for r in records}
        self.record("receive", seconds, next(iter(topics)) if len(topics) == 1 else None, error)


def _histogram(meter: Any, name: str) -> Any:
    description = ("Duration of processing operation" if name == "messaging.process.duration"
                   else "Duration of messaging operation initiated by a producer or consumer client")
    try:
        return meter.create_histogram(name, unit="s", description=description,
                                      explicit_bucket_boundaries_advisory=BUCKETS)
    except TypeError:  # opentelemetry-api before the bucket advisory: the SDK's default buckets
        return meter.create_histogram(name, unit="s", description=description)
