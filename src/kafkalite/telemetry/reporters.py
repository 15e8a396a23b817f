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

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafkalite.errors import ConfigError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.plugins import close_each, configure_each, load

log = logging.getLogger("kafkalite.metrics")

__all__ = ["Reporter", "load_reporters"]

Reporter = Callable[[MetricsSnapshot], Any]


def _load(spec: Any) -> Any:
    if isinstance(spec, str) and ":" not in spec:
        raise ConfigError(f"setting 'metric.reporters': cannot load {spec!r}: give a Python callable, object "
                          "or 'module:attr' (Java classes such as JmxReporter cannot be loaded)")
    # A reporter class may fail in any way when built: every failure refuses the setting.
    reporter = load("metric.reporters", spec, dotted=False, failures=(Exception,))
    if not (callable(getattr(reporter, "report", None)) or callable(reporter)):
        raise ConfigError(f"setting 'metric.reporters': {reporter!r} is neither callable nor has report()")
    return reporter


def load_reporters(specs: Sequence[Any], config: Mapping[str, Any]) -> list[Any]:
    """Instantiate and configure ``metric.reporters``."""
    reporters = [_load(spec) for spec in specs]
    configure_each(reporters, config)
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
    close_each(reporters, "metric reporter", log)
