"""The OpenTelemetry Java agent, for tests that trace Kafka's own Java clients.

Kafka's console producer and consumer run with ``-javaagent:<agent jar>`` produce and
read W3C trace context in record headers, which is what kafkalite's tracing must join.
The jar comes from Maven Central by a committed lock
(``locks/opentelemetry-javaagent-<version>.json``: size, Maven Central's published sha1
and a sha256), is verified while it streams (``distribution.download_artifact``) and
cached under ``<cache>/otel/``.

:func:`agent_options` gives JVM flags that print finished spans as OTLP JSON lines
(``otel.traces.exporter=logging-otlp``) and export them within ~50 ms, so a test can
read a span from the tool's output while the tool still runs (the agent's exporter logs
through java.util.logging, whose shutdown hook may drop what is exported at exit).

>>> path = ensure_java_agent()                                # doctest: +SKIP
>>> JavaTools(...).run("kafka-console-consumer", args, jvm_options=agent_options(path))  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from kafkalite.testing.distribution import (
    MAVEN_CENTRAL,
    Artifact,
    DistributionError,
    _sha256_file,
    download_artifact,
    file_lock,
)
from kafkalite.testing.paths import cache_dir

DEFAULT_AGENT_VERSION = "2.33.1"

__all__ = ["DEFAULT_AGENT_VERSION", "agent_options", "ensure_java_agent", "java_agent_cached", "spans_in"]


def agent_artifact(version: str = DEFAULT_AGENT_VERSION) -> Artifact:
    """The agent jar's coordinates and checksums from the shipped lock."""
    name = f"opentelemetry-javaagent-{version}.json"
    try:
        data = json.loads(resources.files("kafkalite.testing").joinpath("locks").joinpath(name).read_text())
        return Artifact(group=data["group"], artifact=data["artifact"], version=data["version"],
                        sha256=data["sha256"].lower(), size=int(data["size"]), extension=data["extension"],
                        sha1=data["sha1"].lower())
    except FileNotFoundError:
        raise DistributionError(f"no lock for the OpenTelemetry Java agent {version}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise DistributionError(f"malformed OpenTelemetry Java agent lock {name}: {exc!r}") from exc


def java_agent_cached(version: str = DEFAULT_AGENT_VERSION) -> bool:
    """True if the agent jar of ``version`` is in the cache with its locked size (cheap: no hashing)."""
    artifact = agent_artifact(version)
    target = cache_dir() / "otel" / artifact.filename
    return target.is_file() and target.stat().st_size == artifact.size


def ensure_java_agent(version: str = DEFAULT_AGENT_VERSION, repository: str | None = None,
                      verify: bool = False) -> Path:
    """The verified agent jar in the cache (downloaded on first use).

    A download is verified while it streams; a jar already cached is trusted by its size,
    unless ``verify`` (what ``python -m kafkalite.testing fetch`` asks for) hashes it
    against the lock, replacing a corrupted one.
    """
    import os

    artifact = agent_artifact(version)
    folder = cache_dir() / "otel"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / artifact.filename
    if java_agent_cached(version) and not verify:
        return target
    repo = (repository or os.environ.get("KAFKALITE_MAVEN_REPO") or MAVEN_CENTRAL).rstrip("/")
    with file_lock(folder / ".lock"):
        if java_agent_cached(version) and verify and _sha256_file(target) != artifact.sha256:
            target.unlink()  # corrupted in the cache: fetch it again
        if not java_agent_cached(version):
            download_artifact(artifact, f"{repo}/{artifact.repository_path}", target)  # verifies as it streams
    return target


def agent_options(agent: Path, service_name: str) -> list[str]:
    """JVM flags: the agent, spans as OTLP JSON on the log, nothing else exported."""
    return [
        f"-javaagent:{agent}",
        f"-Dotel.service.name={service_name}",
        "-Dotel.traces.exporter=logging-otlp",
        "-Dotel.metrics.exporter=none",
        "-Dotel.logs.exporter=none",
        "-Dotel.bsp.schedule.delay=50",
    ]


def spans_in(lines: Iterable[str]) -> list[dict[str, Any]]:
    """Every span in the agent's OTLP JSON log lines (with ``traceId``, ``spanId``,
    ``parentSpanId``, ``name``, ``kind``, ``attributes`` as a plain dict)."""
    spans = []
    for line in lines:
        start = line.find("{")
        if "LoggingSpanExporter" not in line or start < 0:
            continue
        doc = json.loads(line[start:])
        for scope in doc.get("scopeSpans", []):
            for span in scope.get("spans", []):
                span = dict(span)
                span["attributes"] = {a["key"]: next(iter(a["value"].values()), None)
                                      for a in span.get("attributes", [])}
                spans.append(span)
    return spans
