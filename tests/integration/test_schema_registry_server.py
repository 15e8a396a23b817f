"""The harness's Schema Registry: the fixture's server answers the Confluent API, and
the command line starts, reports and stops a detached one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kafkalite.testing.registry import ApicurioRegistry, ExternalSchemaRegistry


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_fixture_serves_the_confluent_compatible_api(schema_registry: ApicurioRegistry) -> None:
    assert schema_registry.url.endswith("/apis/ccompat/v7")
    assert isinstance(_get(schema_registry.url + "/subjects"), list)
    assert set(_get(schema_registry.url + "/schemas/types")) >= {"AVRO", "PROTOBUF", "JSON"}  # type: ignore[arg-type]
    if isinstance(schema_registry, ExternalSchemaRegistry):
        return
    assert schema_registry.is_running
    assert schema_registry.pid is not None and schema_registry.log_path.exists()


@pytest.mark.timeout(240)
def test_cli_up_status_down(tmp_path: Path) -> None:
    env = {**os.environ, "KAFKALITE_STATE_DIR": str(tmp_path / "state")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kafkalite.testing", "registry", *args],
                              env=env, capture_output=True, text=True, timeout=200)

    up = cli("up", "--port", "0")
    assert up.returncode == 0, up.stderr
    url = up.stdout.strip().splitlines()[-1]
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/apis/ccompat/v7")
        assert _get(url + "/subjects") == []
        again = cli("up")  # already up: same address, no second server
        assert again.stdout.strip().splitlines()[-1] == url
        status = cli("status")
        assert status.returncode == 0 and "ready" in status.stdout and url in status.stdout
    finally:
        down = cli("down")
    assert down.returncode == 0 and "stopped" in down.stdout
    assert cli("status").returncode == 1
    with pytest.raises(OSError):
        _get(url + "/subjects")
