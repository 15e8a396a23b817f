"""Run the fault scenarios and print their figures as the table of tests/faults/README.md.

    python -m tests.faults.run            # the short scale (what CI runs), ~10 min
    python -m tests.faults.run --full     # the long run (minutes per scenario)
    python -m tests.faults.run --full -k churn    # extra arguments go to pytest

Each scenario appends one JSON line of figures to a results file (see
scenario_support.Figures); the table is built from those lines at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLUMNS = ("records", "faults", "lost", "duplicated", "reordered", "aborted_visible", "ambiguous",
           "longest_stall_s", "recovery_s", "seconds")


def table(rows: list[dict[str, object]]) -> str:
    header = ["scenario", *COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [str(row["scenario"])]
        for col in COLUMNS:
            value = row.get(col)
            cells.append(f"{value:.1f}" if isinstance(value, float) else ("-" if value is None else str(value)))
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"- {row['scenario']}: {json.dumps(row['notes'])}" for row in rows if row.get("notes")]
    return "\n".join(lines + (["", *notes] if notes else []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the long run")
    args, pytest_args = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "figures.jsonl"
        env = dict(os.environ, KAFKALITE_FAULT_SCALE="full" if args.full else "short",
                   KAFKALITE_FAULT_RESULTS=str(results))
        scenarios = sorted(str(p) for p in HERE.glob("test_scenario_*.py"))
        code = subprocess.call([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                                "-o", "timeout=3600", *scenarios, *pytest_args], env=env)
        rows = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    print(f"\nfault scenarios ({'full' if args.full else 'short'} scale), pytest exit {code}:\n")
    print(table(rows))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
