"""Helpers shared by the benchmarks: a broker for the run, Java tools, topics, tables.

``Broker()`` uses ``KAFKALITE_BOOTSTRAP`` when set, else starts a one-node Kafka from
:mod:`kafkalite.testing` for the run (closed by ``close()``). ``run_clients`` runs each
client (best of ``repeat``), isolating failures so one broken peer does not hide the
others; ``print_table`` prints msg/s, MB/s and the ratio kafkalite / each peer.
"""

from __future__ import annotations

import gc
import os
import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


class Broker:
    """KAFKALITE_BOOTSTRAP, or a LocalBroker from kafkalite.testing for the run."""

    def __init__(self, heap: str = "1g") -> None:
        from kafkalite.testing.broker import LocalBroker
        from kafkalite.testing.distribution import KafkaDistribution
        from kafkalite.testing.java import find_java
        from kafkalite.testing.tools import JavaTools

        self.local = None
        self.bootstrap = os.environ.get("KAFKALITE_BOOTSTRAP", "")
        if not self.bootstrap:
            self.local = LocalBroker(run_dir=Path(tempfile.mkdtemp(prefix="kafkalite-bench-")), heap=heap).start()
            self.bootstrap = self.local.bootstrap
            self.tools = self.local.tools
        else:
            self.tools = JavaTools(KafkaDistribution().ensure(), find_java())

    def create_topic(self, name: str, partitions: int) -> str:
        from kafkalite.testing.topics import create_topic

        return create_topic(self.bootstrap, name, partitions, exist_ok=True)

    def run_tool(self, tool: str, args: Sequence[str], timeout: float = 900.0) -> str:
        done = self.tools.run(tool, list(args), timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed:\n{done.stderr[-2000:]}")
        return str(done.stdout)

    def close(self) -> None:
        if self.local is not None:
            self.local.close()


def payload(size: int, seed: int = 7) -> bytes:
    """Random upper-case letters, as Kafka's ProducerPerformance makes its payload."""
    rng = random.Random(seed)
    return bytes(rng.randrange(65, 91) for _ in range(size))


@dataclass
class Row:
    case: str  # e.g. "100 B lz4"
    client: str
    messages: int
    seconds: float
    size: int

    @property
    def rate(self) -> float:
        return self.messages / self.seconds

    @property
    def mbs(self) -> float:
        return self.messages * self.size / self.seconds / 1e6


def run_clients(case: str, clients: dict[str, Callable[[], float]], messages: int, size: int,
                repeat: int = 1, baseline: str = "kafkalite") -> list[Row]:
    """Run each client ``repeat`` times (it returns elapsed seconds); keep the best."""
    rows = []
    for name, fn in clients.items():
        best = None
        for _ in range(repeat):
            gc.collect()
            try:
                elapsed = fn()
            except ImportError as exc:
                print(f"  {name}: not installed ({exc}); pip install 'kafkalite[bench]'", flush=True)
                break
            except Exception as exc:  # one broken peer must not hide the others
                print(f"  {name}: failed: {exc!r}", flush=True)
                break
            best = elapsed if best is None else min(best, elapsed)
        if best is None:
            continue
        row = Row(case, name, messages, best, size)
        rows.append(row)
        print(f"  {name:16s} {row.rate:12,.0f} msg/s {row.mbs:9.1f} MB/s", flush=True)
    return rows


def print_table(rows: Sequence[Row], baseline: str = "kafkalite") -> None:
    """The summary: msg/s, MB/s and baseline / client (above 1: the baseline is faster)."""
    print()
    print(f"{'case':>12} {'client':16s} {'msg/s':>12} {'MB/s':>8} {baseline + ' / it':>16}")
    for row in rows:
        ours = next((r.rate for r in rows if r.case == row.case and r.client == baseline), None)
        ratio = f"{ours / row.rate:15.2f}x" if ours else ""
        print(f"{row.case:>12} {row.client:16s} {row.rate:12,.0f} {row.mbs:8.1f} {ratio:>16}")
