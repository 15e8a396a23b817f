#!/usr/bin/env bash
# kafkalite on every CPython this machine has, beside the full suite on 3.11
# (scripts/test.sh): for each of 3.10, 3.12 and 3.13, a venv with kafkalite[dev] (the C
# kernels built with -Wall -Wextra, and any compiler warning fails the run), the unit
# suite and the short integration set below; then the pure-Python build
# (KAFKALITE_NO_EXTENSIONS=1, what pip gives a user without a C compiler) on 3.11
# running the short set. Each part's time and each pytest summary are printed; the last
# line adds them up in pytest's form, and the exit status is 1 if any part failed.
# docs/platforms.md has the measured times.
#
#   bash scripts/ci/pythons.sh                  # all of it
#   bash scripts/ci/pythons.sh 3.13             # one Python (3.10, 3.12, 3.13, or "pure")
#   KAFKALITE_PYTHONS_UNIT_ON="3.10 3.13" bash scripts/ci/pythons.sh   # the unit suite on these only
#
# The venvs live in .venv-py310, .venv-py312, .venv-py313 and .venv-pure (reused when
# present). The interpreters come from $PYTHON310 / $PYTHON312 / $PYTHON313 /
# $PYTHON311, else pyenv's versions, else python3.X on PATH.
set -uo pipefail
cd "$(dirname "$0")/../.."

# The short integration set: produce, consume, groups, transactions, admin, serdes with
# a Schema Registry, OIDC sign-in, the asyncio clients, and the non-Linux code paths
# (tests/integration/test_other_platforms.py). No Spark: that is scripts/test.sh's.
SHORT_SET=(
    "tests/integration/test_producer_basic.py::test_send_result_callbacks_in_order_and_read_back"
    "tests/integration/test_producer_basic.py::test_compressed_batches_are_read_back"
    "tests/integration/test_producer_basic.py::test_many_threads_share_one_producer"
    "tests/integration/test_consumer_basic.py::test_assign_poll_in_order_with_positions_and_offsets"
    "tests/integration/test_consumer_basic.py::test_compressed_batches"
    "tests/integration/test_consumer_basic.py::test_commits_are_the_next_offset_and_async_never_goes_backwards"
    "tests/integration/test_consumer_groups.py::test_members_join_leave_and_die"
    "tests/integration/test_producer_transactions.py::test_aborted_records_never_reach_read_committed_consumers"
    "tests/integration/test_producer_transactions.py::test_consume_transform_produce_copies_exactly_once"
    "tests/integration/test_admin_topics.py"
    "tests/integration/test_serdes_end_to_end.py"
    "tests/integration/test_signin_oidc.py::test_client_credentials_produce_and_consume"
    "tests/integration/test_producer_async.py::test_send_appends_and_returns_an_awaitable_send_and_wait_acknowledges"
    "tests/integration/test_consumer_async.py::test_group_with_coroutine_listener_and_commits"
    "tests/integration/test_other_platforms.py"
)
# The Pythons that run the whole unit suite (all three unless told otherwise; each runs
# the short integration set either way).
UNIT_ON=${KAFKALITE_PYTHONS_UNIT_ON:-3.10 3.12 3.13}
# The pure-Python build's extras: what the short set imports (no Spark, no Kerberos);
# tests/conftest.py also imports hypothesis.
PURE_EXTRAS="testing,avro,protobuf,jsonschema,oauth,pkcs12"

find_python() {  # find_python 3.12 -> a path, or nothing
    local version=$1 var="PYTHON${1/./}" candidate
    if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
    if command -v pyenv >/dev/null 2>&1; then
        candidate=$(ls -d "$(pyenv root)/versions/$version".*/bin/python 2>/dev/null | sort -V | tail -1)
        if [ -n "$candidate" ]; then echo "$candidate"; return; fi
    fi
    command -v "python$version" 2>/dev/null || true
}

failed=()
timings=()
summaries=()  # each pytest session's summary line
totals=()

run_part() {  # run_part <label> <command...>: time it, remember a failure; its exit status
    local label=$1 started=$SECONDS status=0
    shift
    echo "==> $label"
    "$@" || status=$?
    timings+=("$label: $((SECONDS - started)) s (exit $status)")
    [ "$status" -eq 0 ] || failed+=("$label")
    return "$status"
}

run_pytest() {  # run_pytest <label> <python> <pytest arguments...>: its summary line kept
    local label=$1 python=$2 out status=0 line
    shift 2
    out=$(mktemp -t kafkalite-pythons.XXXXXX.log)
    run_part "$label" bash -c '"$@" 2>&1 | tee "$0"; exit "${PIPESTATUS[0]}"' \
        "$out" "$python" -m pytest -p no:cacheprovider -q --durations=10 "$@" || status=$?
    line=$(grep -E '^=* ?[0-9]+ (passed|failed|errors?|skipped)|^=* ?no tests ran' "$out" | tail -1)
    summaries+=("$label: ${line:-no pytest summary (exit $status)}")
    [ -n "$line" ] || totals+=("1 errors")
    totals+=("$line")
    rm -f "$out"
    return "$status"
}

make_venv() {  # make_venv <python> <dir> <pip install arguments...>
    local python=$1 dir=$2
    shift 2
    [ -x "$dir/bin/python" ] || "$python" -m venv "$dir" || return 1
    "$dir/bin/python" -m pip install --quiet --upgrade pip setuptools wheel || return 1
    "$dir/bin/python" -m pip install --quiet "$@" || return 1
    "$dir/bin/python" -m kafkalite.testing fetch >/dev/null  # Kafka's jars, cached and shared
}

kernels_without_warnings() {  # <venv dir>: the C kernels, compiled again, without a warning
    local dir=$1 log status=0
    log=$(mktemp -t kafkalite-build.XXXXXX.log)
    # setup.py's flags (-Wall -Wextra); the editable install's build hides gcc's output.
    "$dir/bin/python" setup.py -q build_ext --inplace --force >"$log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
        cat "$log"
    elif grep -E "warning:" "$log"; then
        echo "the C kernels compiled with warnings on $("$dir/bin/python" -V)" >&2
        status=1
    fi
    rm -f "$log"
    [ "$status" -eq 0 ] || return "$status"
    "$dir/bin/python" -c 'from kafkalite.protocol import record_codec as r; assert r.IMPLEMENTATION == "c", r.IMPLEMENTATION'
}

one_python() {  # one_python 3.12
    local version=$1 python dir
    python=$(find_python "$version")
    if [ -z "$python" ]; then
        echo "no CPython $version here (set PYTHON${version/./})" >&2
        failed+=("CPython $version: not found"); return 0
    fi
    dir=.venv-py${version/./}
    run_part "CPython $version: venv with kafkalite[dev]" make_venv "$python" "$dir" -e ".[dev]" || return 0
    run_part "CPython $version: C kernels without warnings" kernels_without_warnings "$dir" || true
    if [[ " $UNIT_ON " == *" $version "* ]]; then
        run_pytest "CPython $version: unit suite" "$dir/bin/python" tests/unit || true
    fi
    run_pytest "CPython $version: short integration set" "$dir/bin/python" "${SHORT_SET[@]}" || true
}

pure_install() {  # <python> <dir>: kafkalite built without its C kernels, and the extras
    # Not editable: an editable install would import the kernels another venv compiled
    # into src/. The tests import the installed copy (pytest puts the checkout's root on
    # sys.path, not src/). --force-reinstall: a kafkalite built with kernels may be there.
    KAFKALITE_NO_EXTENSIONS=1 make_venv "$1" "$2" ".[$PURE_EXTRAS]" "hypothesis>=6.100" &&
        KAFKALITE_NO_EXTENSIONS=1 "$2/bin/python" -m pip install --quiet --force-reinstall --no-deps .
}

pure_python() {
    local python dir=.venv-pure
    python=$(find_python 3.11)
    if [ -z "$python" ]; then failed+=("CPython 3.11 (pure): not found"); return 0; fi
    run_part "pure Python (3.11): venv with kafkalite[$PURE_EXTRAS], no C kernels" \
        pure_install "$python" "$dir" || return 0
    run_part "pure Python (3.11): the kernels are Python's" "$dir/bin/python" -c '
import importlib.util, kafkalite
from kafkalite.protocol import record_codec
assert record_codec.IMPLEMENTATION == "python", record_codec.IMPLEMENTATION
assert importlib.util.find_spec("kafkalite._speedups") is None, "a compiled kernel was installed"
assert "site-packages" in kafkalite.__file__, kafkalite.__file__' || return 0
    run_pytest "pure Python (3.11): short integration set" "$dir/bin/python" "${SHORT_SET[@]}" || true
}

which=${1:-all}
started=$SECONDS
for version in 3.10 3.12 3.13; do
    if [ "$which" = all ] || [ "$which" = "$version" ]; then one_python "$version"; fi
done
if [ "$which" = all ] || [ "$which" = pure ]; then pure_python; fi

echo "==> timings"
printf '  %s\n' "${timings[@]}"
echo "  total: $((SECONDS - started)) s"
echo "==> pytest sessions"
printf '  %s\n' "${summaries[@]}"
[ "${#failed[@]}" -eq 0 ] || echo "==> FAILED: ${failed[*]}"
# The last line, in pytest's form: every session's counts added up.
printf '%s\n' "${totals[@]}" | grep -oE '[0-9]+ (passed|failed|errors?|skipped|xfailed|xpassed)' |
    awk -v secs=$((SECONDS - started)) -v parts=${#failed[@]} '
        { sub(/errors?$/, "errors", $2); n[$2] += $1 }
        END {
            if (parts > 0 && n["failed"] + n["errors"] == 0) n["errors"] = parts  # a part outside pytest failed
            line = ""
            split("failed passed skipped xfailed xpassed errors", order, " ")
            for (i = 1; i <= 6; i++) if (n[order[i]]) {
                word = (order[i] == "errors" && n[order[i]] == 1) ? "error" : order[i]
                line = line (line ? ", " : "") n[order[i]] " " word
            }
            printf "========== %s in %d s (scripts/ci/pythons.sh) ==========\n", (line ? line : "no tests ran"), secs
        }'
[ "${#failed[@]}" -eq 0 ]
