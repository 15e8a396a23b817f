"""The oldest supported PySpark with format("kafkalite") (4.0.0) runs the Spark tests too,
against the session broker.

The project's own ``.venv`` has the newest PySpark; what PySpark calls on a Python data
source changed between 4.0 and 4.3 (admission control and Trigger.AvailableNow in 4.2,
the order of ``initialOffset``/``latestOffset`` calls, filter pushdown in 4.1), and
a bug of that kind passed the newest and broke the oldest. So CI runs ``tests/spark`` a
second time in the version matrix's PySpark 4.0.0 venv (``tools/spark_matrix/matrix.py``
makes it on first use; ``python tools/spark_matrix/matrix.py`` runs every release).

Within CI's time budget it runs the tests of what differs between releases: streaming
(the restart test that caught the 4.0 bug, AvailableNow), filter pushdown (4.1+) and
save modes; the whole of ``tests/spark`` under 4.0.0 took about 6 minutes on the busy
development machine, and the full matrix runs it for every release.

Spark 3.5 (no Python Data Source API; the DataFrame functions) runs in
tests/spark_releases/test_spark35.py, outside the main suite (scripts/ci/spark_releases.sh).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]
OLDEST = "4.0.0"
#: The version-sensitive tests (see the module docstring).
CI_TESTS = [
    "tests/spark/test_spark_stream_restarts.py",
    "tests/spark/test_spark_stream.py",
    "tests/spark/test_spark_batch.py::test_offsets_timestamps_splitting_and_pushed_filters",
    "tests/spark/test_spark_write.py::test_save_modes_the_default_is_refused_by_spark_overwrite_by_kafkalite_append_writes",
]


def run_matrix(version: str, tests: list[str], bootstrap: str) -> dict[str, Any]:
    env = dict(os.environ, KAFKALITE_BOOTSTRAP=bootstrap)
    run = subprocess.run([sys.executable, str(ROOT / "tools/spark_matrix/matrix.py"), version, "--json", "--",
                          *tests, "--durations=0"],
                         capture_output=True, text=True, env=env, timeout=1400, cwd=str(ROOT))
    assert run.stdout.strip(), f"matrix.py printed nothing; stderr:\n{run.stderr[-4000:]}"
    [result] = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["installed"].startswith(f"{version} "), result["installed"]
    assert "site-packages" in result["installed"]  # the installed connector, not the checkout's
    assert result["ok"], f"PySpark {version}: {result['summary']}\n{result['output']}"
    assert run.returncode == 0
    return dict(result)


def test_version_sensitive_spark_tests_pass_on_the_oldest_supported_pyspark(kafka_broker: Any) -> None:
    result = run_matrix(OLDEST, CI_TESTS, kafka_broker.bootstrap)
    assert f"{len(CI_TESTS)} passed" in result["summary"], result["summary"]
