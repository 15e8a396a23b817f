"""The serialization examples run against the session's broker and registry (the one
that runs Spark, spark_schema_columns.py, is tests/spark/test_spark_examples.py's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

EXPECTED = {
    "serialization_avro_events.py": ["ada placed o-1 for 25.00", "o-1 shipped with ups", "o-2 cancelled (out of stock)",
                                     "'currency': 'EUR'"],
    "serialization_protobuf_events.py": ["grace placed o-1 (40.00)", "o-1 shipped with dhl", "o-3 cancelled: duplicate"],
    "serialization_json_schema.py": ["refused before sending: field 'seats'", "received {'email': 'ada@example.com'"],
    "serialization_arrow.py": ["referrer: string", "'referrer': None", "'referrer': '/'"],
}


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_example_runs(example: str, kafka_broker: Any, schema_registry: Any) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example), "--bootstrap", kafka_broker.bootstrap,
         "--registry", schema_registry.url],
        capture_output=True, text=True, timeout=150, cwd=EXAMPLES)
    assert done.returncode == 0, done.stdout + done.stderr
    for line in EXPECTED[example]:
        assert line in done.stdout, done.stdout
