"""Benchmark charts, drawn with matplotlib at build time from ``benchmarks/results/*.json``.

    from pathlib import Path
    from tools.docs.charts import render
    markdown, images = render(Path("benchmarks/results"))
"""

from __future__ import annotations

from pathlib import Path


def render(results: Path) -> tuple[str, dict[str, bytes]]:
    """The charts page and its PNG images by file name."""
    return "# Benchmark charts\n\nNo results yet.\n", {}
