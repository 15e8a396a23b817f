"""The compatibility table, rendered from ``docs/data/compatibility.yaml`` at build time.

The YAML file is the one place the tested Python versions, platforms, brokers and Spark
versions are written; each section becomes a table.

    from pathlib import Path
    from tools.docs.compat_page import render
    markdown = render(Path("docs/data/compatibility.yaml"))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SECTIONS = (("python", "Python"), ("platforms", "Platforms"), ("brokers", "Kafka brokers"), ("spark", "Spark"))


def render(path: Path) -> str:
    """The page as markdown; a section missing from the file is an error."""
    data: dict[str, list[dict[str, Any]]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = ["# Compatibility", "",
           "What kafkalite is tested with in CI (from `docs/data/compatibility.yaml`).", ""]
    for key, title in SECTIONS:
        rows = data.get(key)
        if not rows:
            raise ValueError(f"{path}: section '{key}' is missing or empty")
        columns = list(dict.fromkeys(k for row in rows for k in row))
        out += [f"## {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for row in rows:
            out.append("| " + " | ".join(str(row.get(c, "")).replace("|", "\\|") for c in columns) + " |")
        out.append("")
    return "\n".join(out)
