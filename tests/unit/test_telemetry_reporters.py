"""metric.reporters and ClientTelemetry without a broker: what a reporter may be, what
cannot be loaded, failures contained, and the periodic and final reports."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from kafkalite.config import PRODUCER
from kafkalite.errors import ConfigError
from kafkalite.metrics import Metrics, MetricsSnapshot
from kafkalite.telemetry.hub import ClientTelemetry
from kafkalite.telemetry.reporters import call_reporters, close_reporters, load_reporters
from tests.helpers.settings import resolve

HERE = __name__


class Recorder:
    """Like Java's MetricsReporter: configure(), report(), close()."""

    def __init__(self) -> None:
        self.config: Any = None
        self.reports: list[MetricsSnapshot] = []
        self.closed = False

    def configure(self, config: Any) -> None:
        self.config = config

    def report(self, snapshot: MetricsSnapshot) -> None:
        self.reports.append(snapshot)

    def close(self) -> None:
        self.closed = True


class NeedsArguments:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint


RECORDER = Recorder()
NOT_A_REPORTER = 42


def test_what_a_reporter_may_be() -> None:
    seen: list[Any] = []
    config = {"client.id": "c1"}
    reporters = load_reporters([seen.append, Recorder, RECORDER, f"{HERE}:RECORDER"], config)
    assert reporters[0] == seen.append
    assert isinstance(reporters[1], Recorder) and reporters[1] is not RECORDER
    assert reporters[2] is RECORDER and reporters[3] is RECORDER
    assert reporters[1].config is config and RECORDER.config is config
    snapshot = MetricsSnapshot({})
    call_reporters(reporters, snapshot)
    assert seen == [snapshot] and reporters[1].reports == [snapshot]
    close_reporters(reporters)
    assert reporters[1].closed and RECORDER.closed


@pytest.mark.parametrize(("spec", "message"), [
    ("org.apache.kafka.common.metrics.JmxReporter", "Java classes such as JmxReporter cannot be loaded"),
    ("kafkalite_no_such_module:reporter", "cannot load 'kafkalite_no_such_module:reporter'"),
    (f"{HERE}:missing", f"cannot load '{HERE}:missing'"),
    (f"{HERE}:NOT_A_REPORTER", "42 is neither callable nor has report()"),
    (NeedsArguments, "cannot instantiate NeedsArguments"),
])
def test_what_cannot_be_a_reporter(spec: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_reporters([spec], {})
    assert "setting 'metric.reporters'" in str(info.value) and message in str(info.value)


def test_a_failing_reporter_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="kafkalite.metrics")
    seen: list[Any] = []

    def broken(snapshot: Any) -> None:
        raise RuntimeError("statsd is down")

    class BadClose(Recorder):
        def close(self) -> None:
            raise RuntimeError("cannot flush")

    call_reporters([broken, seen.append], MetricsSnapshot({}))
    close_reporters([BadClose()])
    assert len(seen) == 1
    messages = [r.getMessage() for r in caplog.records]
    assert any("metric reporter" in m and "failed" in m for m in messages)
    assert any("closing metric reporter" in m for m in messages)


async def test_client_telemetry_reports_periodically_and_once_more_at_close() -> None:
    recorder = Recorder()
    cfg = resolve(PRODUCER, {"bootstrap.servers": "127.0.0.1:1", "enable.metrics.push": False,
                             "metric.reporters": [recorder], "metrics.report.interval.ms": 100})
    registry = Metrics()
    registry.gauge("buffer-available-bytes", "producer-metrics", lambda: 42.0)
    telemetry = ClientTelemetry(cfg, PRODUCER, None, registry)
    assert telemetry.pusher is None and telemetry.bridge is None
    telemetry.start(asyncio.get_running_loop())
    deadline = time.monotonic() + 30
    while len(recorder.reports) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(recorder.reports) >= 2 and recorder.reports[0]["buffer-available-bytes"] == 42.0
    await telemetry.close(1.0)
    reports = len(recorder.reports)
    assert recorder.closed and reports >= 3  # the last report at close
    await telemetry.close(1.0)  # idempotent: no further report
    await asyncio.sleep(0.25)   # more than two intervals: the periodic task is gone
    assert len(recorder.reports) == reports
