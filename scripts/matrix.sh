#!/usr/bin/env bash
# The broker version matrix: tests/matrix against every kept Kafka release (2.1.1 to
# 4.4.0, ZooKeeper and KRaft), then the leader-kill and group-churn fault scenarios on a
# 3-node ZooKeeper cluster of the oldest release; records the figures and regenerates
# docs/compatibility.md. About 25 minutes on 2 cores. CI runs the oldest release and
# 4.4.0 only (scripts/test.sh).
#   bash scripts/matrix.sh                  # everything
#   bash scripts/matrix.sh 2.8.2 --no-faults   # arguments go to tools/run_matrix.py
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m kafkalite.testing fetch --all
status=0
.venv/bin/python tools/run_matrix.py "$@" || status=$?
.venv/bin/python tools/gen_compatibility.py
exit "$status"
