"""OTLP ``MetricsData`` (opentelemetry/proto/metrics/v1) encoded by hand, for KIP-714.

A KIP-714 push carries the client's metrics as an OpenTelemetry ``MetricsData``
protobuf message. Its subset used here (resource attributes, one scope, gauges and
monotonic sums of number data points with string attributes) is small enough to write
directly in the protobuf wire format, which keeps ``protobuf`` and
``opentelemetry-proto`` out of kafkalite's dependencies: metrics push works in every
installation. The tests decode what this writes with ``opentelemetry-proto``.

Field numbers (metrics.proto / common.proto / resource.proto, v1)::

    MetricsData      1: repeated ResourceMetrics
    ResourceMetrics  1: Resource            2: repeated ScopeMetrics
    Resource         1: repeated KeyValue
    ScopeMetrics     1: InstrumentationScope 2: repeated Metric
    InstrumentationScope 1: name  2: version
    Metric           1: name  2: description  5: Gauge  7: Sum
    Gauge            1: repeated NumberDataPoint
    Sum              1: repeated NumberDataPoint  2: temporality (1 delta, 2 cumulative)  3: is_monotonic
    NumberDataPoint  2: start_time_unix_nano (fixed64)  3: time_unix_nano (fixed64)
                     4: as_double (double)  7: repeated KeyValue attributes
    KeyValue         1: key  2: AnyValue (1: string_value)

Example::

    metric = encode_metric(Point("org.apache.kafka.producer.record.send.total", 5.0, kind=SUM),
                           CUMULATIVE, time.time_ns())
    payload = encode_metrics_data([metric], {"client_rack": "r1"}, "kafkalite", "0.1.0")
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkalite.metrics import GAUGE, SUM, MetricKind

__all__ = ["CUMULATIVE", "DELTA", "Point", "encode_metric", "encode_metrics_data"]

DELTA = 1
CUMULATIVE = 2


@dataclass(frozen=True)
class Point:
    """One metric with one data point."""

    name: str
    value: float
    attributes: Mapping[str, str] = field(default_factory=dict)
    kind: MetricKind = GAUGE  # or SUM (monotonic)
    description: str = ""
    start_ns: int = 0


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field_number: int, wire_type: int) -> bytes:
    return _varint(field_number << 3 | wire_type)


def _bytes(field_number: int, data: bytes) -> bytes:
    return _key(field_number, 2) + _varint(len(data)) + data


def _string(field_number: int, text: str) -> bytes:
    return _bytes(field_number, text.encode("utf-8"))


def _fixed64(field_number: int, value: int) -> bytes:
    return _key(field_number, 1) + struct.pack("<Q", value)


def _double(field_number: int, value: float) -> bytes:
    return _key(field_number, 1) + struct.pack("<d", value)


def _key_value(key: str, value: str) -> bytes:
    return _string(1, key) + _bytes(2, _string(1, value))


def _attributes(field_number: int, attributes: Mapping[str, str]) -> bytes:
    return b"".join(_bytes(field_number, _key_value(k, v)) for k, v in sorted(attributes.items()))


def encode_metric(point: Point, temporality: int, now_ns: int) -> bytes:
    """One ``Metric`` message (bytes, without its field key in ScopeMetrics)."""
    data_point = _attributes(7, point.attributes)
    if point.kind is SUM and point.start_ns:
        data_point += _fixed64(2, point.start_ns)
    data_point += _fixed64(3, now_ns) + _double(4, float(point.value))
    body = _string(1, point.name)
    if point.description:
        body += _string(2, point.description)
    if point.kind is SUM:
        body += _bytes(7, _bytes(1, data_point) + _key(2, 0) + _varint(temporality) + _key(3, 0) + _varint(1))
    else:
        body += _bytes(5, _bytes(1, data_point))
    return body


def encode_metrics_data(metrics: Iterable[bytes], resource: Mapping[str, str], scope: str,
                        scope_version: str) -> bytes:
    """``MetricsData`` with one resource and one scope holding the encoded ``metrics``."""
    scope_metrics = _bytes(1, _string(1, scope) + _string(2, scope_version))
    scope_metrics += b"".join(_bytes(2, m) for m in metrics)
    resource_metrics = _bytes(1, _attributes(1, resource)) + _bytes(2, scope_metrics)
    return _bytes(1, resource_metrics)
