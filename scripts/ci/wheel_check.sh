#!/usr/bin/env bash
# CI: kafkalite as a user installs it, from the wheel and from the sdist.
#
#   bash scripts/ci/wheel_check.sh          # what CI runs (unit subset from the sdist)
#   KAFKALITE_SDIST_UNIT=all bash scripts/ci/wheel_check.sh   # the whole unit suite
#
# 1. scripts/wheel.sh builds the sdist and this machine's manylinux wheel (Zig targeting
#    glibc 2.28, auditwheel, twine check) into a scratch directory.
# 2. The wheel goes into a fresh venv with no C compiler on PATH and pip refusing to
#    build anything (--only-binary :all:); from outside the checkout, the installed
#    package must have its C kernels active (record_codec.IMPLEMENTATION == "c") and
#    make a produce/consume round trip against a broker the harness starts
#    (`python -m kafkalite.testing up`, in a state directory of this run's own).
# 3. The sdist alone: unpacked, installed into another fresh venv (built by pip from the
#    sdist, with a compiler, as a user without a wheel does), and its own unit tests run
#    against that install. CI runs the short set of scripts/ci/installed_wheel.py (the
#    kernels, the codecs, the layout checks that read the docs and tools the sdist must
#    carry: ~900 tests); KAFKALITE_SDIST_UNIT=all installs the dev extra and runs all of
#    tests/unit.
#
# Needs scripts/setup.sh's .venv (its harness starts the broker) and Kafka's jars
# (`python -m kafkalite.testing fetch`). Each step prints PASSED/FAILED; the last line
# is "N passed, N failed", the exit code 1 if anything failed.
#
# Measured on the shared 2-core machine: 100 s at load ~10, 249 s at load 14-20 (build
# 38, install 25, tags 15, broker 16, round trip 2, sdist install 76, the sdist's short
# set 75: ~900 tests); about a minute more on a fresh clone (the tools venv,
# .wheel-tools/). KAFKALITE_SDIST_UNIT=all: 1031 s (the dev extra's install 387 s,
# tests/unit 387 s).
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/python ] || { echo "wheel_check: run scripts/setup.sh first (its .venv starts the broker)" >&2; exit 2; }
started=$SECONDS
work=$(mktemp -d -t kafkalite-wheel-check.XXXXXX)
export KAFKALITE_STATE_DIR="$work/state"  # `up`/`down` see only this run's broker
cleanup() {
    .venv/bin/python -m kafkalite.testing down >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
step() {  # step NAME COMMAND...: runs it, prints PASSED/FAILED with its time
    local name=$1 t0=$SECONDS
    shift
    echo "==> $name"
    if "$@"; then
        passed=$((passed + 1)); echo "PASSED wheel_check::$name ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1)); echo "FAILED wheel_check::$name ($((SECONDS - t0)) s)"
        return 1
    fi
}
finish() {
    echo "==> wheel_check took $((SECONDS - started)) s"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}

base_python=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')

build() {
    KAFKALITE_DIST_DIR="$work/dist" PYTHON="$base_python" bash scripts/wheel.sh
}
step wheel_sh_builds_sdist_and_manylinux_wheel build || finish
wheel=$(ls "$work"/dist/kafkalite-*.whl)
sdist=$(ls "$work"/dist/kafkalite-*.tar.gz)

# A PATH with the venv and nothing else: no gcc, cc, clang or zig can be found.
user_venv="$work/user-venv"
no_compiler_path="$user_venv/bin"
install_wheel() {
    "$base_python" -m venv "$user_venv" || return 1
    for compiler in gcc cc clang zig; do
        if PATH=$no_compiler_path command -v "$compiler" >/dev/null; then
            echo "a C compiler ($compiler) is on the wheel venv's PATH" >&2; return 1
        fi
    done
    PATH=$no_compiler_path "$user_venv/bin/python" -m pip install --quiet \
        --only-binary :all: "$wheel"
}
step wheel_installs_without_a_compiler install_wheel || finish

# pip is the judge of the tags: the wheel installs where its tags say (this CPython,
# Linux x86-64 with glibc >= the manylinux tag's) and is refused everywhere else: another
# CPython, an older glibc, another CPU, musl, macOS, Windows.
pip_takes() {  # pip_takes PYTHON_VERSION PLATFORM: does pip accept the wheel there?
    "$user_venv/bin/python" -m pip install --quiet --dry-run --no-deps --ignore-installed \
        --target "$work/pip-target" --only-binary :all: --implementation cp \
        --python-version "$1" --platform "$2" "$wheel" >/dev/null 2>"$work/pip-refusal"
}
tags_are_right() {
    local here glibc_tag ok=0
    here=$("$user_venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    glibc_tag=$(basename "$wheel" | grep -o 'manylinux_2_[0-9]*_x86_64' | head -1)
    # (pip's --platform names exact tags: a glibc 2.28 system also accepts every older
    # manylinux tag, which scripts/wheel.sh checked the wheel has.)
    for platform in "$glibc_tag" manylinux2014_x86_64; do
        if pip_takes "$here" "$platform"; then echo "accepted: CPython $here on $platform"
        else echo "REFUSED (wrong): CPython $here on $platform: $(cat "$work/pip-refusal")"; ok=1; fi
    done
    local other
    other=$("$user_venv/bin/python" -c 'import sys; print("3.12" if sys.version_info[:2] != (3, 12) else "3.11")')
    for target in "$other manylinux_2_28_x86_64" "3.9 manylinux_2_28_x86_64" \
                  "$here manylinux_2_12_x86_64" "$here manylinux_2_28_aarch64" \
                  "$here musllinux_1_2_x86_64" "$here macosx_11_0_arm64" \
                  "$here macosx_10_9_x86_64" "$here win_amd64"; do
        # shellcheck disable=SC2086
        if pip_takes $target; then echo "ACCEPTED (wrong): CPython $target"; ok=1
        elif grep -q "is not a supported wheel on this platform" "$work/pip-refusal"; then
            echo "refused: CPython $target"
        else echo "refused for another reason: CPython $target: $(cat "$work/pip-refusal")"; ok=1; fi
    done
    return $ok
}
step pip_refuses_the_wheel_off_its_tags tags_are_right

start_broker() {
    bootstrap=$(nice -n 10 .venv/bin/python -m kafkalite.testing up --timeout 180 | tail -1)
    [ -n "$bootstrap" ] && echo "broker at $bootstrap"
}
step harness_broker_up start_broker || finish

round_trip() {
    cp scripts/ci/installed_wheel.py "$work/"
    # From the scratch directory (not the checkout) and with the compiler-free PATH.
    (cd "$work" && env -i HOME="$HOME" PATH="$no_compiler_path" \
        "$user_venv/bin/python" installed_wheel.py round-trip "$bootstrap")
}
step wheel_kernels_active_and_round_trip round_trip
.venv/bin/python -m kafkalite.testing down >/dev/null 2>&1 || true

sdist_venv="$work/sdist-venv"
sdist_tree=""
unit_set=${KAFKALITE_SDIST_UNIT:-short}
install_sdist() {
    mkdir -p "$work/sdist" && tar -xzf "$sdist" -C "$work/sdist" || return 1
    sdist_tree=$(ls -d "$work"/sdist/kafkalite-*)
    "$base_python" -m venv "$sdist_venv" || return 1
    "$sdist_venv/bin/python" -m pip install --quiet --upgrade pip || return 1
    # pip builds kafkalite from the sdist (its setup.py, with this machine's compiler).
    # The short unit set needs pytest and hypothesis only; all of tests/unit, the dev extra.
    if [ "$unit_set" = "all" ]; then
        nice -n 10 "$sdist_venv/bin/python" -m pip install --quiet "$sdist[dev]"
    else
        nice -n 10 "$sdist_venv/bin/python" -m pip install --quiet "$sdist" "pytest>=8" \
            "pytest-timeout>=2.2" "pytest-asyncio>=0.23" "hypothesis>=6.100"
    fi
}
step sdist_builds_and_installs install_sdist || finish

# The unpacked sdist's own tests and docs against what pip built from it, run from
# outside the tree (its src/kafkalite is never on sys.path): scripts/ci/installed_wheel.py
# checks that kafkalite and its C kernels come from the venv, then runs the short set
# (the kernels, the codecs, the checks that read the docs, tools and C sources the sdist
# must carry) or, with KAFKALITE_SDIST_UNIT=all, tests/unit.
unit_from_sdist() {
    (cd "$work" && nice -n 10 "$sdist_venv/bin/python" "$sdist_tree/scripts/ci/installed_wheel.py" \
        unit "$sdist_tree" --set "$unit_set")
}
step sdist_unit_suite unit_from_sdist
finish
