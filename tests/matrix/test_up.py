"""``python -m kafkalite.testing up --version V`` for the session's release, in each mode
the release has: it prints the address, ``status`` names the mode (and the ZooKeeper
server), a client produces and reads back, ``down`` stops every process it started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalite import Consumer, Producer
from kafkalite.testing import processes
from kafkalite.testing.ports import free_port
from kafkalite.testing.releases import ZOOKEEPER, modes_of

pytestmark = pytest.mark.broker


@pytest.mark.timeout(400)
def test_up_status_down_in_each_mode_of_the_release(kafka_broker, tmp_path: Path) -> None:
    env = dict(os.environ, KAFKALITE_STATE_DIR=str(tmp_path / "state"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kafkalite.testing", *args], env=env, capture_output=True,
                              text=True, timeout=200)

    for mode in modes_of(kafka_broker.version):
        up = run("up", "--version", kafka_broker.version, f"--{mode}", "--port", str(free_port()))
        assert up.returncode == 0, up.stderr
        bootstrap = up.stdout.strip().splitlines()[-1]
        state = json.loads((tmp_path / "state" / "cli" / "up.json").read_text())
        started = [n["pid"] for n in state["nodes"]] + ([state["zookeeper"]["pid"]] if state["zookeeper"] else [])
        try:
            assert state["mode"] == mode and bool(state["zookeeper"]) == (mode == ZOOKEEPER)
            status = run("status").stdout
            assert f"Kafka {kafka_broker.version} ({'ZooKeeper' if mode == ZOOKEEPER else 'KRaft'} mode)" in status
            assert ("ZooKeeper: 127.0.0.1:" in status) == (mode == ZOOKEEPER) and "other" not in status, status
            with Producer({"bootstrap.servers": bootstrap}) as producer:
                producer.send(f"up-{mode}", b"hello").result(60)  # auto-created topic
            with Consumer({"bootstrap.servers": bootstrap, "group.id": f"up-{mode}",
                           "auto.offset.reset": "earliest"}) as consumer:
                consumer.subscribe([f"up-{mode}"])
                deadline, values = time.monotonic() + 60, []
                while not values and time.monotonic() < deadline:
                    values = [r.value for r in consumer.poll(0.5)]
            assert values == [b"hello"]
        finally:
            down = run("down")
        assert down.returncode == 0, down.stderr
        deadline = time.monotonic() + 30
        while any(processes.is_alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(processes.is_alive(pid) for pid in started), "down left a process running"
