#!/usr/bin/env bash
# Set up everything and run the whole test suite against real Kafka brokers that the
# test session starts itself (kafkalite.testing): lint, types, then pytest.
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -k producer   # extra arguments go to pytest (both sessions)
#   bash scripts/test.sh tests/unit    # named tests: one pytest session, as given
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
# Arguments naming tests (a path under tests/) run as one pytest session, as given.
for arg in "$@"; do
    case "$arg" in
        tests|tests/*|./tests/*) exec .venv/bin/python -m pytest "$@" ;;
    esac
done
# The whole suite runs as two pytest sessions at once, each with its own brokers: the
# Spark tests (JVMs that mostly wait on Spark's scheduling) beside everything else, so
# the suite takes about as long as its longer half instead of both (docs/testing.md).
# The short benchmark runs (about 2 minutes, a broker of the session's) go with the Spark
# half, the shorter one.
# Then, in the same background job, the broker version matrix against the oldest
# supported release (Kafka 2.1.1 in ZooKeeper mode; tests/matrix/README.md): the main
# session runs it against the default release (4.4.0).
# A third job runs what needs no shared broker: kafkalite installed from its wheel with
# no compiler and from its sdist, the other Spark releases (3.5, the pure Connect client)
# and the other CPythons (scripts/ci/*.sh). The documentation site (built with --strict,
# every guide and docstring example run, the pages checked in headless Chromium) ends the
# Spark job, which finishes first otherwise. Each part prints its time; docs/testing.md
# says how long each takes.
beside_spark=tests/integration/test_benchmarks_short.py
spark_log=$(mktemp -t kafkalite-spark-tests.XXXXXX.log)
others_log=$(mktemp -t kafkalite-other-checks.XXXXXX.log)
oldest=$(.venv/bin/python -c 'from kafkalite.testing.releases import OLDEST_KAFKA_VERSION as v; print(v)')
spark_job() {
    local status=0 t0=$SECONDS
    .venv/bin/python -m pytest -p no:cacheprovider --durations=15 "$@" tests/spark tests/spark_cluster "$beside_spark" \
        || status=$?
    echo "==> Spark tests and the short benchmarks took $((SECONDS - t0)) s"
    t0=$SECONDS
    KAFKALITE_KAFKA_VERSION=$oldest .venv/bin/python -m pytest -p no:cacheprovider "$@" tests/matrix \
        || { s=$?; [ "$s" -eq 5 ] || status=$s; }
    echo "==> the version matrix on Kafka $oldest took $((SECONDS - t0)) s"
    if [ "$with_checks" = 1 ]; then
        # The documentation's checks end this job, the shorter of the two background ones.
        t0=$SECONDS
        bash scripts/ci/docs.sh || status=1
        echo "==> scripts/ci/docs.sh took $((SECONDS - t0)) s"
    fi
    return "$status"
}
other_checks() {
    local status=0 t0
    for part in scripts/ci/wheel_check.sh scripts/ci/spark_releases.sh scripts/ci/pythons.sh; do
        [ -f "$part" ] || continue
        t0=$SECONDS
        bash "$part" || status=1
        echo "==> $part took $((SECONDS - t0)) s"
    done
    return "$status"
}
with_checks=1
case " $* " in
    *" -k "*) with_checks=0 ;;  # a selection of tests: only the pytest sessions
esac
spark_job "$@" >"$spark_log" 2>&1 &
spark_pid=$!
others_pid=
if [ "$with_checks" = 1 ]; then
    other_checks >"$others_log" 2>&1 & others_pid=$!
fi
trap 'kill $spark_pid $others_pid 2>/dev/null || true' EXIT
started=$SECONDS
rest=0
# --durations: the slowest tests, printed at the end, show where CI's time goes.
.venv/bin/python -m pytest --durations=25 "$@" --ignore="$beside_spark" tests/faults tests/integration tests/matrix tests/unit \
    || rest=$?
echo "==> the rest of the suite took $((SECONDS - started)) s (exit $rest); waiting for the Spark tests"
spark=0
wait "$spark_pid" || spark=$?
others=0
if [ -n "$others_pid" ]; then
    wait "$others_pid" || others=$?
fi
trap - EXIT
if [ -n "$others_pid" ]; then
    echo "==> the other checks (scripts/ci/), $((SECONDS - started)) s since the start (exit $others):"
    cat "$others_log"
fi
echo "==> Spark tests (tests/spark, tests/spark_cluster), $beside_spark, the matrix on Kafka $oldest and scripts/ci/docs.sh, $((SECONDS - started)) s since the start (exit $spark):"
cat "$spark_log"
rm -f "$spark_log" "$others_log"
# Exit code 5: "no tests collected" (a -k that selects tests of one half only).
if { [ "$rest" -ne 0 ] && [ "$rest" -ne 5 ]; } || { [ "$spark" -ne 0 ] && [ "$spark" -ne 5 ]; } || [ "$others" -ne 0 ]; then
    exit 1
fi
