"""benchmarks/partitions.py reports the read-ahead of the broker's disk (issue 15).

At this machine's 8 MiB read-ahead the broker faulted in 8 MiB per partition index and
the 10,000-partition figures measured the broker's page faults, not the clients, so the
benchmark prints the value and warns when it is large.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture()
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import common
    import partitions

    yield common, partitions
    for name in ("partitions", "common"):
        sys.modules.pop(name, None)


def test_read_ahead_of_a_block_device_is_read_from_sysfs(bench, tmp_path) -> None:
    common, _ = bench
    kib = common.read_ahead_kib(tmp_path)
    dev = os.stat(tmp_path).st_dev
    sysfs = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if (sysfs / "queue" / "read_ahead_kb").exists():
        assert kib == int((sysfs / "queue" / "read_ahead_kb").read_text())
    elif (sysfs.resolve().parent / "queue" / "read_ahead_kb").exists():  # a partition of a disk
        assert kib == int((sysfs.resolve().parent / "queue" / "read_ahead_kb").read_text())
    else:  # tmpfs, overlay: no block device
        assert kib is None


def test_a_large_read_ahead_is_warned_about_and_a_small_one_is_not(bench, monkeypatch, tmp_path) -> None:
    _, partitions = bench
    monkeypatch.setattr(partitions, "read_ahead_kib", lambda path: 8192)
    line = partitions.describe_read_ahead(tmp_path)
    assert line.startswith("broker's disk read-ahead: 8192 KiB -- WARNING")
    assert "read_ahead_kb" in line
    monkeypatch.setattr(partitions, "read_ahead_kib", lambda path: 128)
    assert partitions.describe_read_ahead(tmp_path) == "broker's disk read-ahead: 128 KiB"
    monkeypatch.setattr(partitions, "read_ahead_kib", lambda path: None)
    assert partitions.describe_read_ahead(tmp_path) == "broker's disk read-ahead: unknown"
    assert partitions.describe_read_ahead(None) == "broker's disk read-ahead: unknown (an external broker)"
