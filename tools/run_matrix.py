#!/usr/bin/env python3
"""Run the broker version matrix and record its figures.

For each release (default: every kept release, ``kafkalite.testing.releases.KEPT``), run
``tests/matrix`` against a broker of that release in a pytest session of its own; then
(``--faults``) the fault suite's leader-kill and group-churn scenarios against a 3-node
ZooKeeper cluster of the oldest release. Each session's counts and time go to
``docs/data/matrix-results.json`` (the run's date, machine and Python beside them);
``tools/gen_compatibility.py`` renders them in ``docs/compatibility.md``.

Usage::

    python tools/run_matrix.py                      # every kept release, then the faults
    python tools/run_matrix.py 2.1.1 4.4.0 --no-faults
    python tools/run_matrix.py 3.6.2 --mode kraft   # a release in its other mode
    python tools/run_matrix.py 3.9.1 --no-faults --update   # rerun one release, keep the rest
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from kafkalite.testing.releases import KEPT, OLDEST_KAFKA_VERSION, mode_for

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "data" / "matrix-results.json"
FAULTS = ["tests/faults/test_scenario_producer.py::test_idempotent_producer_through_leader_kills",
          "tests/faults/test_scenario_group_churn.py::test_group_churn"]


def run_session(label: str, version: str, mode: str, args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "KAFKALITE_KAFKA_VERSION": version, "KAFKALITE_KAFKA_MODE": mode}
    with tempfile.TemporaryDirectory(prefix="kafkalite-matrix-") as tmp:
        junit = Path(tmp) / "junit.xml"
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               f"--junitxml={junit}", *args], cwd=ROOT, env=env, check=False)
        seconds = time.monotonic() - started
        suite = ET.parse(junit).getroot()
        suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
        assert suite is not None
        failed = [f"{c.get('classname')}::{c.get('name')}" for c in suite.iter("testcase")
                  if c.find("failure") is not None or c.find("error") is not None]
    total, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
    row = {"what": label, "version": version, "mode": mode, "passed": total - skipped - len(failed),
           "failed": failed, "skipped": skipped, "seconds": round(seconds), "exit": done.returncode}
    print(f"==> {label} on Kafka {version} ({mode}): {row['passed']} passed, {len(failed)} failed "
          f"in {seconds:.0f} s", flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="*", help="releases (default: every kept release)")
    parser.add_argument("--mode", choices=("kraft", "zookeeper"), help="for releases that have both")
    parser.add_argument("--no-faults", dest="faults", action="store_false",
                        help="leave out the fault scenarios on the oldest ZooKeeper cluster")
    parser.add_argument("--no-record", dest="record", action="store_false",
                        help=f"do not write {RESULTS.relative_to(ROOT)}")
    parser.add_argument("--update", action="store_true",
                        help="replace only the sessions run now in the recorded results (a rerun of some releases)")
    args = parser.parse_args(argv)
    versions = args.versions or [r.version for r in KEPT]
    rows = [run_session("functional suite (tests/matrix)", v, mode_for(v, args.mode), ["tests/matrix"])
            for v in versions]
    if args.faults:
        rows.append(run_session("leader kill and group churn (3 nodes)", OLDEST_KAFKA_VERSION, "zookeeper",
                                [*FAULTS, "-k", "not kip848"]))
    if args.record and args.update and RESULTS.exists():
        ran = {(r["what"], r["version"], r["mode"]) for r in rows}
        kept = [r for r in json.loads(RESULTS.read_text())["sessions"] if (r["what"], r["version"], r["mode"]) not in ran]
        order = {v: i for i, v in enumerate(r.version for r in KEPT)}
        rows = sorted(kept + rows, key=lambda r: (r["what"].startswith("leader"), order.get(r["version"], 99)))
    if args.record:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
            "python": platform.python_version(),
            "sessions": rows,
        }, indent=1) + "\n")
        print(f"wrote {RESULTS}; now: python tools/gen_compatibility.py")
    return 0 if all(not r["failed"] and r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
