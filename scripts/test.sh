#!/usr/bin/env bash
# Set up everything and run the whole test suite against real Kafka brokers that the
# test session starts itself (kafkalite.testing): lint, types, then pytest.
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -k producer   # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "==> fetching Kafka's jars (cached after the first run)"
.venv/bin/python -m kafkalite.testing fetch
echo "==> ruff"
.venv/bin/ruff check src tests tools benchmarks examples spark_connector
echo "==> mypy"
.venv/bin/mypy
echo "==> pytest"
exec .venv/bin/python -m pytest "$@"
