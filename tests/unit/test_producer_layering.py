"""The producer package's layering: no import cycles, no reaching into another module's privates.

Read from the source with ``ast`` (nothing imported): every import between
``kafkalite.producer`` modules counts, those under ``if TYPE_CHECKING:`` too, since
two modules that need each other's names are one module in two files whichever way
the import is written. A private name (``_x``) is its module's own: another module
may neither import it nor read it off an object (``other._x``), except the few
fields listed in ``SHARED_FIELDS``, which the C append kernel defines and the
package reads by design.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kafkalite.producer

PACKAGE = "kafkalite.producer"
SOURCES = Path(kafkalite.producer.__file__).parent

#: Underscored fields read across modules on purpose, with the reason.
SHARED_FIELDS = {
    # The per-record future's fields (FutureBase, and the C RecordFuture's struct
    # members): underscored so that they stay out of the future's public API; the
    # batch reads them to build a record's metadata, send_many() to record its runs.
    "_batch": "per-record future field",
    "_index": "per-record future field",
    "_timestamp": "per-record future field",
    "_key_size": "per-record future field",
    "_value_size": "per-record future field",
    # The record builder's buffer (BuilderBase): the pure-Python append kernel reads
    # its length as the C kernel reads the struct member.
    "_buf": "record builder buffer, read by the append kernel as in C",
}


def _imports(tree: ast.Module, modules: set[str]) -> set[str]:
    """The package modules ``tree`` imports (at any depth, TYPE_CHECKING included)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:
                out.update(a.name for a in node.names if a.name in modules)
            elif node.module.startswith(PACKAGE + "."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[2] for a in node.names if a.name.startswith(PACKAGE + "."))
    return out & modules


def find_cycles(sources: dict[str, str]) -> list[list[str]]:
    """Import cycles among ``sources`` ({module: source}), each as a path a -> ... -> a."""
    modules = set(sources)
    edges = {m: sorted(_imports(ast.parse(src), modules) - {m}) for m, src in sources.items()}
    cycles: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def walk(path: list[str]) -> None:
        for nxt in edges[path[-1]]:
            if nxt == path[0]:
                key = frozenset(path)
                if key not in seen:
                    seen.add(key)
                    cycles.append([*path, nxt])
            elif nxt not in path and nxt > path[0]:  # each cycle once, from its smallest module
                walk([*path, nxt])

    for module in sorted(modules):
        walk([module])
    return cycles


def find_private_access(sources: dict[str, str]) -> list[str]:
    """``module:line what`` for each private name used across modules."""
    modules = set(sources)
    found: list[str] = []
    for module, src in sorted(sources.items()):
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ImportFrom) and node.module and (
                    node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
                for alias in node.names:
                    # A private module (``from kafkalite.producer import _append_py``) is a
                    # module, not a name inside one.
                    is_module = node.module == PACKAGE and alias.name in modules
                    if alias.name.startswith("_") and not is_module:
                        found.append(f"{module}:{node.lineno} imports {alias.name} from {node.module}")
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                    continue
                if node.attr in SHARED_FIELDS:
                    continue
                found.append(f"{module}:{node.lineno} reads {ast.unparse(node)}")
    return found


def _package_sources() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(SOURCES.glob("*.py"))}


def test_producer_modules_import_no_cycle():
    sources = _package_sources()
    assert {"core", "sender", "txn_requests", "accumulator", "futures", "batch"} <= set(sources)
    assert find_cycles(sources) == []


def test_producer_modules_use_no_private_name_of_another_module():
    assert find_private_access(_package_sources()) == []


def test_the_checks_find_what_they_look_for():
    """A cycle through a TYPE_CHECKING import and each kind of private access are caught."""
    sources = {
        "a": "from kafkalite.producer.b import thing\n",
        "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kafkalite.producer import c\n",
        "c": "import kafkalite.producer.a\n",
        "d": ("from kafkalite.producer.a import _helper\n"
              "def f(sender, future):\n    sender._fail(1)\n    return future._batch, self_like._x\n"),
        "_e": "from kafkalite.producer import _e\n",
    }
    assert find_cycles(sources) == [["a", "b", "c", "a"]]
    assert find_private_access(sources) == [
        "d:1 imports _helper from kafkalite.producer.a",
        "d:3 reads sender._fail",
        "d:4 reads self_like._x",
    ]
