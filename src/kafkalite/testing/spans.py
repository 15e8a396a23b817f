"""Finished spans as JSON lines in files: for tests whose spans are made in other processes.

An in-memory exporter cannot see spans recorded in a Spark executor's Python worker or a
child process. :func:`tracer_provider` builds a ``TracerProvider`` (with a
``BatchSpanProcessor``, as production setups use) that appends every finished span as one
JSON line to ``$KAFKALITE_SPAN_DIR/spans-<pid>.jsonl``; :func:`read_spans` reads them
all back in the test. Name it where a setting takes ``"module:attr"``, and set the
variable before the other processes start (for Spark in local mode: before the
SparkSession, whose Python workers inherit the environment)::

    os.environ["KAFKALITE_SPAN_DIR"] = str(tmp_path)
    ...option("kafka.otel.tracer.provider", "kafkalite.testing.spans:tracer_provider")
    spans = read_spans(tmp_path)   # [{"name": ..., "kind": "PRODUCER", "links": [...], ...}]

Needs ``opentelemetry-sdk`` (in kafkalite's ``dev`` extra).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from kafkalite.errors import ConfigError

__all__ = ["SPAN_DIR_ENV", "JsonLinesSpanExporter", "read_spans", "span_record", "tracer_provider"]

SPAN_DIR_ENV = "KAFKALITE_SPAN_DIR"


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """A finished SDK span as plain JSON-able data (ids as lower-case hex, as in traceparent)."""
    ctx = span.context
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{ctx.trace_id:032x}",
        "span_id": f"{ctx.span_id:016x}",
        "parent_span_id": f"{span.parent.span_id:016x}" if span.parent is not None else None,
        "status": span.status.status_code.name,
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "attributes": dict(span.attributes or {}),
        "links": [{"trace_id": f"{link.context.trace_id:032x}", "span_id": f"{link.context.span_id:016x}"}
                  for link in span.links],
        "pid": os.getpid(),
    }


class JsonLinesSpanExporter(SpanExporter):
    """Appends spans to one file, a JSON object per line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(span_record(s), default=str) + "\n" for s in spans)
        with self._lock, open(self.path, "a", encoding="utf-8") as out:
            out.write(lines)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def tracer_provider() -> TracerProvider:
    """A TracerProvider writing to ``$KAFKALITE_SPAN_DIR/spans-<pid>.jsonl`` (see the module doc)."""
    directory = os.environ.get(SPAN_DIR_ENV)
    if not directory:
        raise ConfigError(f"kafkalite.testing.spans needs the environment variable {SPAN_DIR_ENV} "
                          "(the directory to write spans to) in this process")
    Path(directory).mkdir(parents=True, exist_ok=True)
    exporter = JsonLinesSpanExporter(Path(directory) / f"spans-{os.getpid()}.jsonl")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def read_spans(directory: str | Path) -> list[dict[str, Any]]:
    """Every span written under ``directory`` so far (complete lines only)."""
    spans: list[dict[str, Any]] = []
    for path in sorted(Path(directory).glob("spans-*.jsonl")):
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines(keepends=True):
            if line.endswith("\n"):
                spans.append(json.loads(line))
    return spans
