"""The pytest plugin's bookkeeping: failure reports, log retention, lazy start."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kafkalite.testing import pytest_plugin
from kafkalite.testing.pytest_plugin import KafkaTestSession


class StubService:
    """Looks like a broker fixture value (satisfies KafkaService)."""

    bootstrap = "127.0.0.1:1"
    version = "4.3.1"
    run_dir = Path("/runs/x/broker")
    closed = False

    def bootstrap_for(self, listener: str) -> str:
        return self.bootstrap

    def run_tool(self, tool: str, args: Any = (), **kwargs: object) -> subprocess.CompletedProcess[str]:
        raise NotImplementedError

    def java_tool_command(self, tool: str, args: Any = ()) -> list[str]:
        return []

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = -1,
                     configs: Any = None) -> str:
        return name

    def log_tail(self, lines: int = 40) -> str:
        return "BROKER-LOG-TAIL"

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def private_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKALITE_STATE_DIR", str(tmp_path / "state"))


def _report(item: Any, failed: bool) -> Any:
    report = SimpleNamespace(failed=failed, sections=[])
    gen = pytest_plugin.pytest_runtest_makereport(item, None)  # a hook wrapper: a generator
    next(gen)
    with pytest.raises(StopIteration) as done:
        gen.send(report)
    return done.value.value


def _item(session: KafkaTestSession, **funcargs: Any) -> Any:
    stash = pytest.Stash()
    stash[pytest_plugin._SESSION_KEY] = session
    return SimpleNamespace(funcargs=funcargs, config=SimpleNamespace(stash=stash))


def test_failed_test_gets_the_broker_log_tail(tmp_path: Path) -> None:
    session = KafkaTestSession(tmp_path / "runs")
    report = _report(_item(session, kafka_broker=StubService(), other=42), failed=True)
    ((title, text),) = report.sections
    assert "kafka logs" in title and "/runs/x/broker" in title
    assert text == "BROKER-LOG-TAIL"
    assert session.keep_logs


def test_passed_test_or_test_without_broker_adds_nothing(tmp_path: Path) -> None:
    session = KafkaTestSession(tmp_path / "runs")
    assert _report(_item(session, kafka_broker=StubService()), failed=False).sections == []
    assert _report(_item(session, x=1), failed=True).sections == []
    assert not session.keep_logs


def test_session_dir_removed_when_all_passed_kept_otherwise(tmp_path: Path) -> None:
    ok = KafkaTestSession(tmp_path / "runs")
    stub = ok.service("broker", lambda d: (d.mkdir(parents=True), StubService())[1])
    assert ok.service("broker", lambda d: pytest.fail("started twice")) is stub
    assert ok.dir.exists()
    ok.close()
    assert stub.closed and not ok.dir.exists()

    failed = KafkaTestSession(tmp_path / "runs2")
    failed.service("broker", lambda d: (d.mkdir(parents=True), StubService())[1])
    failed.keep_logs = True
    failed.close()
    assert failed.dir.exists()


def test_a_failed_start_is_not_retried_by_every_test(tmp_path: Path) -> None:
    session = KafkaTestSession(tmp_path / "runs")
    calls = []

    def broken(run_dir: Path) -> Any:
        calls.append(run_dir)
        raise RuntimeError("no broker today")

    for _ in range(3):
        with pytest.raises(RuntimeError):
            session.service("broker", broken)
    assert len(calls) == 1 and session.keep_logs


def test_old_session_dirs_are_pruned(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    for i in range(8):
        (root / f"20250101-00000{i}-999999999").mkdir(parents=True)
    live = root / f"20240101-000000-{os.getpid()}"  # oldest, but its session still runs
    live.mkdir()
    pytest_plugin._prune(root, keep=5)
    left = sorted(p.name for p in root.iterdir())
    assert live.name in left
    assert len(left) == 6 and left[-1] == "20250101-000007-999999999"


def test_run_root_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = SimpleNamespace(rootpath=tmp_path)
    assert pytest_plugin._run_root(config) == tmp_path / ".kafkalite" / "runs"  # type: ignore[arg-type]
    monkeypatch.setenv("KAFKALITE_RUN_DIR", str(tmp_path / "elsewhere"))
    assert pytest_plugin._run_root(config) == tmp_path / "elsewhere"  # type: ignore[arg-type]


def test_fixtures_are_registered(pytestconfig: pytest.Config) -> None:
    """The plugin is active (entry point) and offers the documented fixtures."""
    assert pytestconfig.pluginmanager.has_plugin("kafkalite") or pytestconfig.pluginmanager.has_plugin(
        "kafkalite.testing.pytest_plugin"
    )
    for name in ("kafka_broker", "kafka_cluster", "kafka_broker_39", "kafka_broker_sasl",
                 "unique_topic", "topic_factory"):
        assert callable(getattr(pytest_plugin, name))
