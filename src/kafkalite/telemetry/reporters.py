"""``metric.reporters``: plain callbacks that receive ``metrics()`` periodically.

For applications that use neither OpenTelemetry nor JMX-style tooling: each reporter is
called every ``metrics.report.interval.ms`` with the client's
:class:`~kafkalite.metrics.MetricsSnapshot` (the same ``{MetricName: value}`` that
``metrics()`` returns), and once more when the client closes. A reporter is

* a callable ``reporter(snapshot)``, or
* an object with ``report(snapshot)`` and, optionally, ``configure(config)`` (called once
  with the client's settings) and ``close()`` (called after the last report), like
  Java's ``MetricsReporter``, or
* a class of such objects (instantiated without arguments), or a ``"module:attr"``
  string naming one.

Reporters run in a worker thread (``loop.run_in_executor``), never on the client's I/O
thread, so a slow one delays only itself; an exception is logged and the next report
happens as planned. Java class names (``org.apache.kafka.common.metrics.JmxReporter``)
cannot be loaded and are refused with a ``ConfigError``.

Example::

    def log_lag(snapshot):
        print(snapshot.get("records-lag-max"))

    Consumer({..., "metric.reporters": [log_lag], "metrics.report.interval.ms": 10000})
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafkalite.errors import ConfigError
from kafkalite.metrics import MetricsSnapshot

log = logging.getLogger("kafkalite.metrics")

__all__ = ["Reporter", "load_reporters"]

Reporter = Callable[[MetricsSnapshot], Any]


def _load(spec: Any) -> Any:
    if isinstance(spec, str):
        module_name, sep, attr = spec.partition(":")
        if not sep:
            raise ConfigError(f"setting 'metric.reporters': cannot load {spec!r}: give a Python callable, object "
                              "or 'module:attr' (Java classes such as JmxReporter cannot be loaded)")
        try:
            spec = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"setting 'metric.reporters': cannot load {spec!r}: {exc}") from None
    if isinstance(spec, type):
        try:
            spec = spec()
        except Exception as exc:
            raise ConfigError(f"setting 'metric.reporters': cannot instantiate {spec.__name__}: {exc}") from None
    if not (callable(getattr(spec, "report", None)) or callable(spec)):
        raise ConfigError(f"setting 'metric.reporters': {spec!r} is neither callable nor has report()")
    return spec


def load_reporters(specs: Sequence[Any], config: Mapping[str, Any]) -> list[Any]:
    """Instantiate and configure ``metric.reporters``."""
    reporters = [_load(spec) for spec in specs]
    for reporter in reporters:
        configure = getattr(reporter, "configure", None)
        if callable(configure):
            configure(config)
    return reporters


def call_reporters(reporters: Sequence[Any], snapshot: MetricsSnapshot) -> None:
    """Give ``snapshot`` to every reporter; a failing reporter is logged, not raised."""
    for reporter in reporters:
        report = getattr(reporter, "report", None)
        try:
            (report if callable(report) else reporter)(snapshot)
        except Exception:
            log.exception("metric reporter %r failed", reporter)


def close_reporters(reporters: Sequence[Any]) -> None:
    for reporter in reporters:
        close = getattr(reporter, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                log.exception("closing metric reporter %r failed", reporter)
