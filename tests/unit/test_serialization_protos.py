"""The committed *_pb2.py classes of the test and example .proto files are what
protoc makes of them today (tools/gen_test_protos.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_protobuf_classes_are_up_to_date() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_test_protos.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"run tools/gen_test_protos.py:\n{done.stdout}{done.stderr}"
