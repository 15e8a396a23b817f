"""OpenTelemetry for kafkalite clients (the ``kafkalite[otel]`` extra).

* Tracing: ``otel.tracer.provider`` on a Producer / Consumer (see
  :mod:`kafkalite.otel.tracing`), and :func:`process_span` for the application's
  processing of a record.
* Metrics: ``otel.meter.provider`` on any client exports ``metrics()`` as OpenTelemetry
  observable instruments (see :mod:`kafkalite.otel.metrics`).

Nothing here is imported by a client that does not ask for it; the ``opentelemetry-api``
package is needed only then. See docs/observability.md.
"""

from __future__ import annotations

from kafkalite.otel.semconv import Conventions, parse_opt_in
from kafkalite.otel.tracing import process_span

__all__ = ["Conventions", "parse_opt_in", "process_span"]
