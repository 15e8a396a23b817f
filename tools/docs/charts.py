"""Benchmark charts, drawn with matplotlib at build time from ``benchmarks/results/*.json``.

Each results file (written by a benchmark's ``--json FILE``, or transcribed from a dated
table of benchmarks/README.md, which its ``source`` says) becomes a section of the
charts page: what was run, when and on what, a chart and the figures as a table.

* throughput (``produce``, ``consume``: ``msg_per_s``): kafkalite against each peer, per case;
* ``latency``: p50 / p99 / max per client, one panel per rate;
* ``memory``: peak RSS over the idle baseline per client, per case;
* ``spark``: rows/s of kafkalite and Spark's JVM connector in one Spark session, per
  operation and PySpark release, with kafkalite's ratio over the rounds (min / median / max).
* ``low_rate``: CPU per client at rest (% of a core) and at a low rate (µs per record),
  one panel per case.

    from pathlib import Path
    from tools.docs.charts import render
    markdown, images = render(Path("benchmarks/results"))
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: draw to PNG only
import matplotlib.pyplot as plt

HIGHLIGHT = "#3f51b5"  # kafkalite, in the site's primary colour
PEERS = ["#ff9800", "#4caf50", "#9c27b0", "#795548", "#009688", "#e91e63", "#607d8b"]


def _cases_clients(figures: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    cases = list(dict.fromkeys(f["case"] for f in figures))
    clients = list(dict.fromkeys(f["client"] for f in figures))
    return cases, clients


def _colour(client: str, i: int) -> str:
    return HIGHLIGHT if client == "kafkalite" else PEERS[i % len(PEERS)]


def _grouped(ax: Any, figures: list[dict[str, Any]], key: str, label: str) -> None:
    cases, clients = _cases_clients(figures)
    value = {(f["case"], f["client"]): f.get(key) for f in figures}
    width = 0.8 / len(clients)
    for i, client in enumerate(clients):
        xs = [c + (i - (len(clients) - 1) / 2) * width for c in range(len(cases))]
        ys = [value.get((case, client)) or 0 for case in cases]
        ax.bar(xs, ys, width, label=client, color=_colour(client, i), edgecolor="white", linewidth=0.5)
    ax.set_xticks(range(len(cases)), cases)
    ax.set_ylabel(label)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def throughput(data: dict[str, Any]) -> Any:
    """kafkalite against each peer, per case (msg/s)."""
    fig, ax = plt.subplots(figsize=(10, 4.8))
    _grouped(ax, data["figures"], "msg_per_s", "messages per second (higher is better)")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1e6:.1f}M" if v >= 1e6
                                                                  else f"{v / 1e3:.0f}k"))
    ax.legend(ncol=4, fontsize=8, frameon=False)
    ax.set_title(f"{data['benchmark']}: throughput per case ({data['date']})")
    return fig


def latency(data: dict[str, Any]) -> Any:
    """p50 / p99 / max end-to-end latency per client, one panel per rate."""
    cases, _ = _cases_clients(data["figures"])
    fig, axes = plt.subplots(1, len(cases), figsize=(10, 4.4), sharey=True, squeeze=False)
    for ax, case in zip(axes[0], cases):
        rows = [f for f in data["figures"] if f["case"] == case]
        marks = ("p50_ms", "p99_ms", "max_ms")
        width = 0.8 / len(marks)
        for j, mark in enumerate(marks):
            xs = [i + (j - 1) * width for i in range(len(rows))]
            ax.bar(xs, [r[mark] for r in rows], width, label=mark.replace("_ms", ""),
                   color=(HIGHLIGHT, "#7986cb", "#c5cae9")[j], edgecolor="white", linewidth=0.5)
        ax.set_xticks(range(len(rows)), [r["client"] for r in rows], rotation=20, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(case, fontsize=10)
        ax.grid(axis="y", alpha=0.3, which="both")
        ax.set_axisbelow(True)
    axes[0][0].set_ylabel("end-to-end latency, ms (log; lower is better)")
    axes[0][0].legend(fontsize=8, frameon=False)
    fig.suptitle(f"latency percentiles ({data['date']})")
    return fig


def memory(data: dict[str, Any]) -> Any:
    """Peak RSS over the idle baseline per client, per case."""
    fig, ax = plt.subplots(figsize=(10, 4.4))
    _grouped(ax, data["figures"], "peak_over_baseline_mb", "peak RSS over baseline, MB (lower is better)")
    ax.legend(ncol=4, fontsize=8, frameon=False)
    ax.set_title(f"memory: peak over baseline ({data['date']})")
    return fig


def spark(data: dict[str, Any]) -> Any:
    """kafkalite against the JVM connector per operation and PySpark release (median rows/s
    of the warm rounds, the bar's line from the slowest to the fastest round); above
    kafkalite's bar its ratio to the JVM connector, min / median / max over the rounds."""
    figures = data["figures"]
    fig, ax = plt.subplots(figsize=(10, 4.8))
    _grouped(ax, figures, "rows_per_s", "rows per second, median of the rounds (higher is better)")
    cases, clients = _cases_clients(figures)
    width = 0.8 / len(clients)
    for f in figures:
        x = cases.index(f["case"]) + (clients.index(f["client"]) - (len(clients) - 1) / 2) * width
        ax.vlines(x, f["rows_per_s_min"], f["rows_per_s_max"], color="black", linewidth=1)
        if "ratio_median" in f:
            ax.annotate(f"{f['ratio_min']:.2f} / {f['ratio_median']:.2f} / {f['ratio_max']:.2f}x",
                        (x, f["rows_per_s_max"]), textcoords="offset points", xytext=(0, 4),
                        ha="center", fontsize=8)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1e3:.0f}k"))
    ax.legend(fontsize=8, frameon=False)
    ax.set_title(f"Spark: kafkalite against the JVM connector, same session ({data['date']})")
    return fig


def low_rate(data: dict[str, Any]) -> Any:
    """CPU per client: one panel per case (idle: % of a core; a rate: µs per record)."""
    cases, _ = _cases_clients(data["figures"])
    fig, axes = plt.subplots(1, len(cases), figsize=(10, 4.4), squeeze=False)
    for ax, case in zip(axes[0], cases):
        rows = [f for f in data["figures"] if f["case"] == case]
        key = next(k for k in rows[0] if k not in ("case", "client"))
        ax.bar(range(len(rows)), [r[key] for r in rows], 0.6,
               color=[_colour(r["client"], i) for i, r in enumerate(rows)], edgecolor="white", linewidth=0.5)
        ax.set_xticks(range(len(rows)), [r["client"] for r in rows], rotation=20, fontsize=8)
        ax.set_ylabel(("CPU, % of one core" if key.endswith("pct_of_core") else "CPU µs per record")
                      + " (lower is better)")
        ax.set_title(case, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    fig.suptitle(f"low-rate CPU, producer and consumer in one process ({data['date']})")
    return fig


CHARTS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "produce": throughput, "consume": throughput, "latency": latency, "memory": memory, "spark": spark,
    "low_rate": low_rate}
ORDER = ("produce", "consume", "latency", "memory", "low_rate", "spark")


def png(fig: Any) -> bytes:
    """The figure as PNG bytes (and the figure closed)."""
    out = io.BytesIO()
    fig.tight_layout()
    fig.savefig(out, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def _table(figures: list[dict[str, Any]]) -> list[str]:
    keys = [k for k in dict.fromkeys(k for f in figures for k in f) if k not in ("case", "client")]
    rows = ["| case | client | " + " | ".join(keys) + " |", "|---|---|" + "---|" * len(keys)]
    for f in figures:
        cells = [f"{f[k]:,}" if isinstance(f.get(k), (int, float)) else str(f.get(k, "")) for k in keys]
        rows.append(f"| {f['case']} | {f['client']} | " + " | ".join(cells) + " |")
    return rows


def _machine(machine: dict[str, Any]) -> str:
    if "description" in machine:
        return str(machine["description"])
    return ", ".join(f"{k} {v}" for k, v in machine.items() if v is not None)


def render(results: Path) -> tuple[str, dict[str, bytes]]:
    """The charts page and its PNG images by file name; an unknown benchmark is an error."""
    files = sorted(results.glob("*.json"))
    loaded = [(p, json.loads(p.read_text(encoding="utf-8"))) for p in files]
    loaded.sort(key=lambda item: (ORDER.index(item[1]["benchmark"]) if item[1]["benchmark"] in ORDER
                                  else len(ORDER), item[1]["date"]))
    out = ["# Benchmark charts", "",
           "Drawn when the site is built from the results in `benchmarks/results/` (each benchmark writes "
           "them with `--json FILE`). How each benchmark measures, and what the figures mean on a shared "
           "machine, is in [the benchmarks' README](index.md).", ""]
    images: dict[str, bytes] = {}
    for path, data in loaded:
        draw = CHARTS.get(data["benchmark"])
        if draw is None:
            raise ValueError(f"{path}: no chart for benchmark '{data['benchmark']}' (known: {sorted(CHARTS)})")
        name = f"{path.stem}.png"
        images[name] = png(draw(data))
        out += [f"## {data['benchmark']} ({data['date']})", "",
                f"- **machine**: {_machine(data['machine'])}",
                f"- **command**: `{data['command']}`"]
        if data.get("method"):
            out.append(f"- **method**: {data['method']}")
        if data.get("source"):
            out.append(f"- **source**: {data['source']}")
        out += [f"- **data**: `benchmarks/results/{path.name}`", "",
                f"![{data['benchmark']} chart, {data['date']}](charts/{name})", "", *_table(data["figures"]), ""]
    if not loaded:
        out.append("No results yet.")
    return "\n".join(out) + "\n", images
