"""docs/architecture.md's module map stays true: every module of the library and the
Spark connector is named in it, and every module it names exists.

The map's first column holds paths relative to ``src/kafkalite/`` (the connector's to
``spark_connector/``), with ``{a,b}`` for several modules of one folder and ``*`` for the
generated messages. Package ``__init__.py`` files that hold only a docstring need no row.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "kafkalite"
CONNECTOR = ROOT / "spark_connector"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SOURCE_SUFFIXES = (".py", ".c", ".h")


def _expand(path: str) -> list[str]:
    """``admin/{topics,acls}.py`` -> ``admin/topics.py``, ``admin/acls.py``."""
    match = re.search(r"\{([^{}]*)\}", path)
    if match is None:
        return [path]
    return [expanded for part in match.group(1).split(",")
            for expanded in _expand(path[:match.start()] + part.strip() + path[match.end():])]


def listed_paths(text: str) -> list[str]:
    """The paths in the first column of every table row of the "Module map" section."""
    section = text.split("\n## Module map", 1)[1].split("\n## ", 1)[0]
    paths = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        for token in re.findall(r"`([^`]+)`", first_cell):
            paths += [p for p in _expand(token) if p.endswith(SOURCE_SUFFIXES)]
    return paths


def _docstring_only(path: Path) -> bool:
    body = ast.parse(path.read_text()).body
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def modules() -> set[str]:
    """Every source module, as the map names it."""
    found = set()
    for base, top in ((PACKAGE, PACKAGE), (CONNECTOR, CONNECTOR / "pyspark_kafkalite")):
        for path in top.rglob("*"):
            if path.suffix not in SOURCE_SUFFIXES or "__pycache__" in path.parts:
                continue
            if path.name == "__init__.py" and path.parent != PACKAGE and _docstring_only(path):
                continue
            found.add(path.relative_to(base).as_posix())
    return found


def _exists(listed: str) -> bool:
    base = CONNECTOR if listed.startswith("pyspark_kafkalite/") else PACKAGE
    return any(base.glob(listed)) if "*" in listed else (base / listed).is_file()


def test_every_module_is_in_the_map_and_every_listed_module_exists() -> None:
    listed = listed_paths(ARCHITECTURE.read_text())
    patterns = [p for p in listed if "*" in p]
    missing = sorted(m for m in modules() if m not in listed and not any(fnmatch.fnmatch(m, p) for p in patterns))
    gone = sorted(p for p in listed if not _exists(p))
    assert not missing, f"modules without a row in docs/architecture.md's module map: {missing}"
    assert not gone, f"docs/architecture.md's module map names modules that do not exist: {gone}"


def test_the_check_reads_the_map_as_written() -> None:
    """Braces, globs and several paths per row are read; rows outside the map are not."""
    text = ("## Layers\n| `net/ignored.py` | x |\n## Module map\n### a\n| module | job |\n|---|---|\n"
            "| `admin/{topics,acls}.py`, `cli/main.py` `Name` | x |\n| `protocol/messages/*.py` | y |\n"
            "## Data paths\n| `consumer/ignored.py` | z |\n")
    assert listed_paths(text) == ["admin/topics.py", "admin/acls.py", "cli/main.py", "protocol/messages/*.py"]
    assert "clients_common/membership.py" in modules() and "pyspark_kafkalite/arrow.py" in modules()
    assert "consumer/__init__.py" not in modules() and "__init__.py" in modules()
