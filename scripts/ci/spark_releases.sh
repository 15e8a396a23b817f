#!/usr/bin/env bash
# Spark releases beside the project's own (newest) PySpark, outside the main suite:
# Spark 3.5 (the DataFrame functions, in the version matrix's 3.5 venvs, and read_kafka
# against Spark 3.5.7's JVM connector) and the pure Spark Connect client (pyspark-client,
# in a venv of its own, against a Connect server). Self-contained: it makes the venvs
# it needs (.venv-pyspark/, cached) and starts its own broker and Spark JVMs.
#
#   bash scripts/ci/spark_releases.sh            # what CI runs
#   bash scripts/ci/spark_releases.sh -k client  # extra pytest arguments
set -euo pipefail
cd "$(dirname "$0")/../.."
exec .venv/bin/python -m pytest -p no:cacheprovider --durations=10 "$@" tests/spark_releases
