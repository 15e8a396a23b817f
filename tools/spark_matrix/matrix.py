"""The PySpark version matrix: one venv per PySpark release, the Spark tests run in each.

``format("kafkalite")`` needs Spark's Python Data Source API (``pyspark>=4.0``), and
what PySpark calls on a Python data source differs from release to release (admission
control and Trigger.AvailableNow arrived in 4.2, filter pushdown in 4.1, the order of
``initialOffset``/``latestOffset`` calls in between); ``read_kafka`` / ``write_kafka`` /
``read_kafka_incremental`` run on 3.5 too. So every release from 3.5.0 on is checked:
the list comes from ``pip index versions pyspark`` at run time (final releases
``>= 3.5.0``), so a new release joins the matrix without an edit here. A release
without the Python Data Source API (3.5) runs :data:`EVERY_RELEASE_TESTS`, the tests of
what works there; the others run all of ``tests/spark``.

Each version gets ``.venv-pyspark/<version>`` (or ``$KAFKALITE_PYSPARK_VENVS/<version>``)
with ``pyspark==<version>``, the test dependencies and a regular (non-editable) install
of this checkout, reinstalled when the sources change (a digest in the venv says which
sources it holds). In it, ``pytest tests/spark`` runs against one broker: the one named
by ``$KAFKALITE_BOOTSTRAP``, or one this tool starts for the whole matrix.

Usage::

    python tools/spark_matrix/matrix.py                  # every release >= 3.5.0
    python tools/spark_matrix/matrix.py --minors         # the newest patch of each minor: 3.5, 4.0, 4.1, ...
    python tools/spark_matrix/matrix.py 3.5.9 4.3.0      # just these
    python tools/spark_matrix/matrix.py --list           # the releases it would run
    python tools/spark_matrix/matrix.py --setup-only     # make the venvs, run nothing
    python tools/spark_matrix/matrix.py 4.1.4 -- -k stream   # extra pytest arguments
    python tools/spark_matrix/matrix.py 4.0.0 -- tests/spark/test_spark_batch.py   # other tests

It prints one line per version (passed/failed, counts, seconds) and exits non-zero if
any version failed. ``tests/spark/test_spark_versions.py`` runs the oldest release's
and the newest 3.5's entries in CI against the session broker (the newest release is the
project's own ``.venv``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import venv
from pathlib import Path

from kafkalite.testing.distribution import file_lock

ROOT = Path(__file__).resolve().parents[2]
OLDEST = "3.5.0"
#: The first release with Spark's Python Data Source API (format("kafkalite")).
DATASOURCE_API = "4.0.0"
#: What a release without the Python Data Source API runs (the DataFrame functions).
EVERY_RELEASE_TESTS = ("tests/spark/test_spark_frames.py", "tests/spark/test_spark_incremental.py",
                       "tests/spark/test_spark_examples.py::test_spark35_incremental_example")
#: kafkalite's extras that tests/spark needs: the Protobuf and JSON Schema column helpers,
#: tracing and the GSSAPI sign-in (``dev`` is not used: it would pull in the project's
#: own PySpark).
KAFKALITE_EXTRAS = "testing,avro,protobuf,jsonschema,otel,gssapi,spark"
#: What the tests need next to pyspark and those extras: the committed generated Protobuf
#: test classes need protobuf >= 7.35.1 (as ``dev`` says), the tracing test the OTel SDK.
TEST_REQUIREMENTS = ["pyarrow>=16", "numpy>=1.23", "pandas>=2.2,<3", "pytest>=8", "pytest-timeout>=2.2",
                     "pytest-asyncio>=0.23", "hypothesis>=6.100", "protobuf>=7.35.1", "opentelemetry-sdk>=1.27,<2"]
#: Tests that only make sense in the outer run (they start matrix venvs themselves).
OUTER_ONLY = ("tests/spark/test_spark_versions.py", "tests/spark/test_spark_jvm_parity.py")


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def released_versions(minimum: str = OLDEST) -> list[str]:
    """Final PySpark releases on the package index, oldest first, from ``minimum`` on."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "pyspark"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    match = re.search(r"Available versions:\s*(.+)", out)
    if not match:
        raise RuntimeError(f"unexpected output of 'pip index versions pyspark':\n{out}")
    found = [v.strip() for v in match.group(1).split(",")]
    finals = [v for v in found if re.fullmatch(r"\d+\.\d+\.\d+", v)]
    return sorted((v for v in finals if version_key(v) >= version_key(minimum)), key=version_key)


def newest_of_each_minor(versions: list[str]) -> list[str]:
    """The newest patch release of each minor release in ``versions`` (sorted oldest first)."""
    newest: dict[tuple[int, ...], str] = {}
    for v in sorted(versions, key=version_key):
        newest[version_key(v)[:2]] = v
    return [newest[k] for k in sorted(newest)]


def venvs_root() -> Path:
    return Path(os.environ.get("KAFKALITE_PYSPARK_VENVS") or ROOT / ".venv-pyspark")


def venv_python(version: str) -> Path:
    return venvs_root() / version / "bin" / "python"


def _source_stamp(requirements: list[str]) -> str:
    """A digest of everything that goes into the venv's kafkalite install."""
    digest = hashlib.sha256(" ".join(requirements).encode())
    files = [ROOT / "pyproject.toml", ROOT / "setup.py"]
    for top in ("src/kafkalite", "spark_connector/pyspark_kafkalite"):
        files += sorted(p for p in (ROOT / top).rglob("*") if p.suffix in (".py", ".c", ".h", ".json"))
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def ensure_venv(version: str, *, quiet: bool = True) -> Path:
    """Create or update the venv of one PySpark release; return its python."""
    target = venvs_root() / version
    python = target / "bin" / "python"
    q = ["--quiet"] if quiet else []
    requirements = [f"pyspark=={version}", *TEST_REQUIREMENTS]
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.with_name(target.name + ".lock")):
        if not python.exists():
            venv.EnvBuilder(with_pip=True, clear=True).create(target)
            subprocess.run([str(python), "-m", "pip", "install", *q, "--upgrade", "pip", "setuptools", "wheel"],
                           check=True)
        stamp_file = target / "kafkalite-source.sha256"
        stamp = _source_stamp([*requirements, f"kafkalite[{KAFKALITE_EXTRAS}]"])  # new extras: reinstall
        if not stamp_file.exists() or stamp_file.read_text() != stamp:
            subprocess.run([str(python), "-m", "pip", "install", *q, *requirements], check=True)
            # A regular install with the extras the tests import: pyspark_kafkalite lands
            # in site-packages, where PySpark's own lookup finds it (this also checks the
            # packaging of the connector).
            subprocess.run([str(python), "-m", "pip", "install", *q, "--force-reinstall", "--no-deps",
                            "--no-build-isolation", str(ROOT)], check=True, cwd=str(target))
            subprocess.run([str(python), "-m", "pip", "install", *q, f"{ROOT}[{KAFKALITE_EXTRAS}]"],
                           check=True, cwd=str(target))
            stamp_file.write_text(stamp)
    return python


def pytest_command(python: Path, extra: list[str], version: str = DATASOURCE_API) -> list[str]:
    """pytest over tests/spark (:data:`EVERY_RELEASE_TESTS` on a release without the Python
    Data Source API), or over the test paths in ``extra`` when it names any."""
    default = ["tests/spark"] if version_key(version) >= version_key(DATASOURCE_API) else list(EVERY_RELEASE_TESTS)
    paths = [] if any(a.startswith("tests/") for a in extra) else default
    cmd = [str(python), "-m", "pytest", *paths, "-p", "no:cacheprovider"]
    for path in OUTER_ONLY:
        cmd += ["--ignore", path]
    return cmd + extra


def run_version(version: str, bootstrap: str, extra: list[str]) -> dict[str, object]:
    """Run tests/spark in one release's venv; a summary of the outcome."""
    began = time.monotonic()
    python = ensure_venv(version)
    setup_s = time.monotonic() - began
    env = dict(os.environ, KAFKALITE_BOOTSTRAP=bootstrap)
    env.pop("PYTHONPATH", None)
    # The import check runs from outside the checkout: the installed package, not ROOT's.
    check = subprocess.run([str(python), "-c", "import pyspark, pyspark_kafkalite as p; "
                            "print(pyspark.__version__, p.__file__)"],
                           capture_output=True, text=True, cwd=str(python.parent))
    began_tests = time.monotonic()
    run = subprocess.run(pytest_command(python, extra, version), cwd=str(ROOT), env=env, capture_output=True, text=True)
    tests_s = time.monotonic() - began_tests
    lines = run.stdout.strip().splitlines()
    tail = lines[-1] if lines else run.stderr[-2000:]
    # The assertion lines of failures (Spark's stack traces would push them out of a tail).
    errors = [line for line in lines if line.startswith(("E   ", "FAILED", "ERROR"))][:60]
    output = "\n".join(errors) + "\n...\n" + run.stdout[-8000:] if run.returncode else run.stdout[-6000:]
    return {"version": version, "ok": run.returncode == 0, "summary": tail, "setup_s": round(setup_s, 1),
            "tests_s": round(tests_s, 1), "installed": check.stdout.strip(), "output": output}


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, extra = args_in[:cut], args_in[cut + 1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", help=f"PySpark releases (default: every release >= {OLDEST})")
    parser.add_argument("--minors", action="store_true", help="the newest patch of each minor release only")
    parser.add_argument("--list", action="store_true", help="print the releases and exit")
    parser.add_argument("--setup-only", action="store_true", help="create/update the venvs only")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line")
    args = parser.parse_args(args_in)
    versions = args.versions or released_versions()
    if args.minors:
        versions = newest_of_each_minor(versions)
    if args.list:
        print(" ".join(versions))
        return 0
    if args.setup_only:
        for version in versions:
            print(f"{version}: {ensure_venv(version, quiet=False)}", flush=True)
        return 0

    results = []
    with contextlib.ExitStack() as stack:
        bootstrap = os.environ.get("KAFKALITE_BOOTSTRAP", "").strip()
        if not bootstrap:
            from kafkalite.testing import LocalBroker

            bootstrap = stack.enter_context(LocalBroker()).bootstrap
        for version in versions:
            result = run_version(version, bootstrap, extra)
            results.append(result)
            if not args.json:
                state = "passed" if result["ok"] else "FAILED"
                print(f"pyspark {version}: {state} ({result['summary']}); setup {result['setup_s']} s, "
                      f"tests {result['tests_s']} s", flush=True)
                if not result["ok"]:
                    print(result["output"], flush=True)
    if args.json:
        print(json.dumps(results))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
