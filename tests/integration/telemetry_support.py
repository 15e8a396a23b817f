"""A broker that records KIP-714 pushes: the Java plugin, compiled at test time, and helpers.

``TelemetryRecorder.java`` (beside this file, in ``java/``) is compiled with the JDK's
javac against the harness's cached Kafka jars and put on a dedicated broker's class path
as its ``metric.reporters``; it appends each push to a file the tests read and decode
with ``opentelemetry-proto``.
"""

from __future__ import annotations

import base64
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalite import AdminClient, Producer
from kafkalite.admin.types import AlterConfigOp, ConfigResource
from kafkalite.testing import KafkaDistribution
from kafkalite.testing.java import JavaNotFoundError, find_javac

SOURCE = Path(__file__).parent / "java" / "TelemetryRecorder.java"


def javac() -> str:
    """The JDK's javac (next to the harness's java, or on PATH)."""
    try:
        return str(find_javac())
    except JavaNotFoundError as exc:
        raise AssertionError(f"these tests need a JDK's javac: {exc}") from None


def compile_recorder(out: Path, version: str) -> Path:
    """Compile the plugin into ``out`` and return that class directory."""
    out.mkdir(parents=True, exist_ok=True)
    classpath = os.pathsep.join(str(p) for p in KafkaDistribution(version).ensure().classpath())
    subprocess.run([javac(), "-nowarn", "-cp", classpath, "-d", str(out), str(SOURCE)], check=True,
                   capture_output=True, text=True, timeout=180)
    return out


@dataclass
class Push:
    client_id: str
    instance_id: str
    terminating: bool
    content_type: str
    data: Any  # opentelemetry.proto.metrics.v1.metrics_pb2.MetricsData

    def metrics(self) -> dict[str, Any]:
        """{metric name: Metric} of the payload."""
        return {m.name: m for rm in self.data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}

    def resource(self) -> dict[str, str]:
        return {a.key: a.value.string_value for rm in self.data.resource_metrics for a in rm.resource.attributes}


def read_pushes(path: Path) -> list[Push]:
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    if not path.exists():
        return []
    pushes = []
    for line in path.read_text().splitlines():
        client_id, instance, terminating, content_type, data = line.split("\t")
        message = MetricsData()
        message.ParseFromString(base64.b64decode(data))
        pushes.append(Push(client_id, instance, terminating == "true", content_type, message))
    return pushes


def subscribe_client_metrics(bootstrap: str, name: str, metrics: str, interval_ms: int, match: str,
                             probe_client_id: str) -> None:
    """Create (or change) a client-metrics resource: which clients push what, how often.

    Returns once the broker serves it: the controller accepts the change before the
    broker applies it, and a client that asks in between is told "nothing wanted, ask
    again in 5 minutes" (the broker's default interval). A probe client whose id matches
    ``match`` asks until the answer requests metrics.
    """
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        ops = [AlterConfigOp("metrics", metrics), AlterConfigOp("interval.ms", str(interval_ms)),
               AlterConfigOp("match", match)]
        admin.incremental_alter_configs({ConfigResource("client-metrics", name): ops}).all()
    deadline = time.monotonic() + 30
    while True:
        # A fresh client asks at once; one that was told "nothing" would wait 5 minutes.
        with Producer({"bootstrap.servers": bootstrap, "client.id": probe_client_id}) as probe:
            state = probe._telemetry.pusher.state
            wait_for(lambda s=state: s.subscription is not None or not s.enabled, 30, "the probe's subscription")
            if state.subscription is not None and state.subscription.wants_anything:
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"the broker did not serve client-metrics resource {name!r} within 30 s")
        time.sleep(0.1)


def wait_for(condition: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def client_metrics_tool(broker: Any, *args: str) -> str:
    """Kafka's own ``kafka-client-metrics.sh`` against ``broker`` (its stdout; fails on errors)."""
    result = broker.run_tool("kafka-client-metrics", ["--bootstrap-server", broker.bootstrap, *args], timeout=90)
    if result.returncode != 0:
        raise AssertionError(f"kafka-client-metrics {' '.join(args)} failed: {result.stderr[-2000:]}")
    return str(result.stdout)


def described_client_metrics(broker: Any, name: str) -> dict[str, str]:
    """``kafka-client-metrics.sh --describe --name NAME`` as {config: value}."""
    out = client_metrics_tool(broker, "--describe", "--name", name)
    configs = {}
    for line in out.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key in ("metrics", "interval.ms", "match"):
            configs[key] = value
    return configs
