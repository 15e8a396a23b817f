"""The layering rules of docs/architecture.md ("Layers"), checked on the import graph.

Every ``import`` and ``from ... import`` of every module under ``src/kafkalite`` (and the
Spark connector) counts, at module level or inside a function, so that a lazy import
cannot hide a dependency. A failure names the importing file, its line and the rule.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import kafkalite

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = SRC / "kafkalite"
CONNECTOR = ROOT / "spark_connector" / "pyspark_kafkalite"


@dataclass(frozen=True)
class Edge:
    """``importer`` (a module) imports ``target`` (a module), naming ``name`` from it
    (``from target import name``; None for ``import target`` or when ``name`` is itself a
    module)."""

    importer: str
    path: Path
    line: int
    target: str
    name: str | None

    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of kafkalite (C extensions included)."""
    parts = dotted.split(".")
    if parts[0] != "kafkalite":
        return False
    base = PACKAGE.joinpath(*parts[1:])
    return (base.with_suffix(".py").exists() or (base / "__init__.py").exists()
            or base.with_suffix(".c").exists())


def _edges_of(path: Path, base: Path) -> Iterator[Edge]:
    module = _module_name(path, base)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Edge(module, path, node.lineno, alias.name, None)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                package = module.split(".")[: -1 if path.name != "__init__.py" else None]
                package = package[: len(package) - (node.level - 1)]
                target = ".".join([*package, target] if target else package)
            for alias in node.names:
                if _is_module(f"{target}.{alias.name}"):
                    yield Edge(module, path, node.lineno, f"{target}.{alias.name}", None)
                else:
                    yield Edge(module, path, node.lineno, target, alias.name)


@cache
def _kafkalite_edges(path: Path, base: Path) -> tuple[Edge, ...]:
    return tuple(e for e in _edges_of(path, base) if e.target == "kafkalite" or e.target.startswith("kafkalite."))


def _graph() -> list[Edge]:
    """Every import of kafkalite in the library and the connector (files parsed once)."""
    return [e for base, top in ((SRC, PACKAGE), (CONNECTOR.parent, CONNECTOR))
            for p in sorted(top.rglob("*.py")) for e in _kafkalite_edges(p, base)]


def _in(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


CLIENTS = ("kafkalite.producer", "kafkalite.consumer", "kafkalite.share", "kafkalite.admin")
FACES = ("kafkalite.aio",)  # and the package face kafkalite/__init__.py itself
NET_MAY_IMPORT = ("kafkalite.net", "kafkalite.protocol", "kafkalite.config", "kafkalite._config_keys", "kafkalite.errors",
                  "kafkalite._errors_base", "kafkalite._errors_gen", "kafkalite.types", "kafkalite.backoff",
                  "kafkalite.metrics", "kafkalite._version")


def _violations(importers: tuple[str, ...], allowed: tuple[str, ...] = (),
                forbidden: tuple[str, ...] = (), exempt: tuple[str, ...] = (),
                edges: list[Edge] | None = None) -> list[str]:
    """Edges from modules in ``importers`` (not ``exempt``) to a target outside
    ``allowed`` (when given) or inside ``forbidden``."""
    bad = []
    for e in _graph() if edges is None else edges:
        if not _in(e.importer, *importers) or _in(e.importer, *exempt):
            continue
        if (allowed and not _in(e.target, *allowed)) or (forbidden and _in(e.target, *forbidden)):
            bad.append(f"{e.where()}: {e.importer} imports {e.target}" + (f".{e.name}" if e.name else ""))
    return bad


def test_the_graph_sees_lazy_imports() -> None:
    """The walk finds imports inside functions (the kind a layering breach hides in)."""
    lazy = [e for e in _graph() if e.importer == "kafkalite.consumer.settings"
            and e.target == "kafkalite.consumer.assignors"]
    assert lazy and all(e.name == "assignors_from_config" for e in lazy)
    assert len(_graph()) > 1000


def test_protocol_imports_nothing_but_errors_and_types() -> None:
    """protocol/ knows no sockets and no clients: it imports itself, the errors, the
    public types and the C kernels."""
    allowed = ("kafkalite.protocol", "kafkalite.errors", "kafkalite._errors_base", "kafkalite._errors_gen",
               "kafkalite.types", "kafkalite._speedups")
    assert not _violations(("kafkalite.protocol",), allowed=allowed)


def test_net_imports_nothing_of_the_clients_nor_the_package_face() -> None:
    """net/ (the engine's connections) sits on protocol/, the schema and the base modules:
    no client, no console tool, no package face (the version comes from _version.py)."""
    assert not _violations(("kafkalite.net",), allowed=NET_MAY_IMPORT)


def test_config_imports_nothing_of_net_or_the_clients() -> None:
    """config.py is the declarative schema: it imports only the errors (the checks that
    load TLS stores or build SASL logins are registered in settings.py) and, for the type
    checker, the setting names generated from itself (_config_keys.py)."""
    allowed = ("kafkalite.errors", "kafkalite._errors_base", "kafkalite._errors_gen", "kafkalite._config_keys")
    assert not _violations(("kafkalite.config",), allowed=allowed)


def test_the_layer_check_catches_what_it_should(tmp_path: Path) -> None:
    """A net/ module and a producer module written to break the rules: each breach is
    reported, the lazy one included."""
    for name, text in (("net/probe.py", "from kafkalite import __version__\n"
                                        "def f():\n    from kafkalite.producer.core import ProducerCore\n"),
                       ("producer/probe.py", "from kafkalite.consumer.fetcher import Fetcher\n"
                                             "from kafkalite.testing import LocalBroker\n")):
        (tmp_path / "kafkalite" / name).parent.mkdir(parents=True)
        (tmp_path / "kafkalite" / name).write_text(text)
    edges = [e for p in sorted(tmp_path.rglob("*.py")) for e in _edges_of(p, tmp_path)]
    net = _violations(("kafkalite.net",), allowed=NET_MAY_IMPORT, edges=edges)
    assert [v.split(": ", 1)[1] for v in net] == ["kafkalite.net.probe imports kafkalite.__version__",
                                                  "kafkalite.net.probe imports kafkalite.producer.core.ProducerCore"]
    assert _violations(("kafkalite.producer",), forbidden=CLIENTS[1:], edges=edges)[0].endswith(
        "kafkalite.producer.probe imports kafkalite.consumer.fetcher.Fetcher")
    assert _violations(("kafkalite",), forbidden=("kafkalite.testing",), edges=edges)[0].endswith(
        "kafkalite.producer.probe imports kafkalite.testing.LocalBroker")


@pytest.mark.parametrize("client", CLIENTS)
def test_clients_do_not_import_each_other(client: str) -> None:
    others = tuple(c for c in CLIENTS if c != client)
    assert not _violations((client,), forbidden=others)


def test_settings_rules_import_only_the_schema() -> None:
    """A client's rules module must not import the client it belongs to, so that its
    rules load without the client's engine; the shared settings module imports no client
    at all (each client hands it its own rules)."""
    allowed = ("kafkalite.config", "kafkalite.errors", "kafkalite.settings", "kafkalite.consumer.assignors")
    assert not _violations(("kafkalite.producer.settings", "kafkalite.consumer.settings",
                            "kafkalite.admin.settings"), allowed=allowed)
    assert not _violations(("kafkalite.settings",), forbidden=(*CLIENTS, *FACES, "kafkalite.cli"))


def test_the_library_never_imports_its_test_harness() -> None:
    assert not _violations(("kafkalite", "pyspark_kafkalite"), forbidden=("kafkalite.testing",),
                           exempt=("kafkalite.testing",))


def test_only_the_fronts_import_from_the_package_face() -> None:
    """``from kafkalite import Producer`` is for users: inside the library only the faces,
    the console tools, the test harness and the Spark connector (users themselves) may
    write it; the engine imports the module that defines a name."""
    users = ("kafkalite.aio", "kafkalite.cli", "kafkalite.testing", "pyspark_kafkalite")
    bad = [f"{e.where()}: {e.importer} imports kafkalite.{e.name} from the package face"
           for e in _graph() if e.target == "kafkalite" and e.importer != "kafkalite" and not _in(e.importer, *users)]
    bad += _violations(("kafkalite",), forbidden=FACES, exempt=(*users, "kafkalite"))
    assert not bad


# ------------------------------------------------------------------ console tools

# The public faces a console tool may use, as any application would: the clients
# (kafkalite, kafkalite.aio, kafkalite.admin with its types), errors and types, the
# settings schema and the serialization library (serdes, registry client, wire format).
CLI_MAY_IMPORT = ("kafkalite.aio", "kafkalite.admin", "kafkalite.errors", "kafkalite.types", "kafkalite.config",
                  "kafkalite.serialization", "kafkalite.cli")


def _admin_public_names() -> set[str]:
    import kafkalite.admin as admin

    names = set(vars(admin).get("_LAZY", {}))
    for module in admin._TYPES_MODULES:
        names |= {n for n in vars(__import__(module, fromlist=["_"])) if not n.startswith("_")}
    return names


def _cli_breaches(edges: list[Edge]) -> list[str]:
    bad = []
    public_face = set(kafkalite.__all__)
    admin_names = _admin_public_names()
    for e in edges:
        if not _in(e.importer, "kafkalite.cli"):
            continue
        where = f"{e.where()}: {e.importer} imports {e.target}" + (f".{e.name}" if e.name else "")
        private = [p for p in [*e.target.split(".")[1:], e.name or ""] if p.startswith("_") and p != "__version__"]
        if private:
            bad.append(f"{where} (a private name)")
        elif e.target == "kafkalite":
            if e.name is not None and e.name not in public_face:
                bad.append(f"{where} (not in kafkalite.__all__)")
        elif not _in(e.target, *CLI_MAY_IMPORT):
            bad.append(f"{where} (not a public face: use kafkalite, kafkalite.aio or kafkalite.admin)")
        elif e.target == "kafkalite.admin" and e.name is not None and e.name not in admin_names:
            bad.append(f"{where} (not a public name of kafkalite.admin)")
        elif _in(e.target, "kafkalite.admin") and e.target != "kafkalite.admin":
            bad.append(f"{where} (import it from kafkalite.admin)")
    return bad


def test_console_tools_use_only_the_public_clients() -> None:
    """cli/ is built on the public API only: no net/, no protocol/, no client module
    reached past its face (``kafkalite.producer.producer``), no private name."""
    bad = _cli_breaches(_graph())
    assert not bad, "\n".join(bad)


def test_the_console_tool_check_catches_what_it_should(tmp_path: Path) -> None:
    """The rules above on a console tool written to break them: each breach is reported."""
    tool = tmp_path / "kafkalite" / "cli" / "probe.py"
    tool.parent.mkdir(parents=True)
    tool.write_text("from kafkalite.net.client import NetworkClient\n"
                    "from kafkalite.protocol.primitives import ZERO_UUID\n"
                    "from kafkalite.producer.producer import Producer\n"
                    "from kafkalite.admin.types import NewTopic\n"
                    "from kafkalite.admin import NoSuchType\n"
                    "from kafkalite.config import _suggest\n"
                    "from . import _private\n"
                    "def f():\n    from kafkalite import Producer, _LAZY\n")
    text = "\n".join(_cli_breaches(list(_edges_of(tool, tmp_path))))
    for expected in ("imports kafkalite.net.client.NetworkClient (not a public face",
                     "imports kafkalite.protocol.primitives.ZERO_UUID (not a public face",
                     "imports kafkalite.producer.producer.Producer (not a public face",
                     "imports kafkalite.admin.types.NewTopic (import it from kafkalite.admin)",
                     "imports kafkalite.admin.NoSuchType (not a public name of kafkalite.admin)",
                     "imports kafkalite.config._suggest (a private name)",
                     "imports kafkalite.cli._private (a private name)",
                     "imports kafkalite._LAZY (a private name)"):
        assert expected in text, expected
    assert "imports kafkalite.Producer" not in text


# ------------------------------------------------------------------ import cycles

#: Generated modules (tools/generate.py, tools/gen_errors.py, tools/gen_config_keys.py):
#: their imports are the generator's, so the cycle check leaves them out.
GENERATED = ("kafkalite.protocol.messages", "kafkalite._errors_gen", "kafkalite._config_keys")


def _modules(trees: tuple[tuple[Path, Path], ...]) -> set[str]:
    return {_module_name(p, base) for base, top in trees for p in top.rglob("*.py")}


def _import_graph(edges: list[Edge], modules: set[str]) -> dict[str, dict[str, Edge]]:
    """importer -> {imported module: the first edge}, between ``modules`` (generated ones
    left out). ``from package import name`` counts as importing the package, or the
    module ``name`` when it is one."""
    graph: dict[str, dict[str, Edge]] = {}
    for e in edges:
        target = f"{e.target}.{e.name}" if e.name and f"{e.target}.{e.name}" in modules else e.target
        if target not in modules or target == e.importer or _in(target, *GENERATED) or _in(e.importer, *GENERATED):
            continue
        graph.setdefault(e.importer, {}).setdefault(target, e)
    return graph


def _cycles(graph: dict[str, dict[str, Edge]]) -> list[list[str]]:
    """The import cycles: each group of modules that import each other, directly or not
    (a strongly connected component of more than one module), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for nxt in sorted(graph.get(module, {})):
            if nxt not in index:
                visit(nxt)
                low[module] = min(low[module], low[nxt])
            elif nxt in on_stack:
                low[module] = min(low[module], index[nxt])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def _describe(cycle: list[str], graph: dict[str, dict[str, Edge]]) -> str:
    inside = set(cycle)
    ties = [f"    {e.where()}: {a} imports {b}" for a in cycle for b, e in sorted(graph.get(a, {}).items())
            if b in inside]
    return f"{len(cycle)} modules import each other: {', '.join(cycle)}\n" + "\n".join(ties)


def test_no_module_imports_itself_through_others() -> None:
    """No import cycle in the library or the Spark connector: every import counts, lazy
    ones and those under ``if TYPE_CHECKING:`` too, since a collaborator that names its
    owner's type still knows its owner; a collaborator takes what it uses as arguments
    or small protocols instead (docs/architecture.md, "Layers")."""
    trees = ((SRC, PACKAGE), (CONNECTOR.parent, CONNECTOR))
    edges = [e for base, top in trees for p in sorted(top.rglob("*.py")) for e in _edges_of(p, base)]
    graph = _import_graph(edges, _modules(trees))
    assert len(graph) > 150
    cycles = _cycles(graph)
    assert not cycles, "\n".join(_describe(c, graph) for c in cycles)


def test_the_cycle_check_catches_what_it_should(tmp_path: Path) -> None:
    """A cycle through a lazy import and a TYPE_CHECKING one is reported with the lines
    that tie it; one through ``from package import module``, too; generated modules and
    a one-way chain are not."""
    files = {
        "kafkalite/__init__.py": "",
        "kafkalite/a.py": "from kafkalite.b import thing\n",
        "kafkalite/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kafkalite import c\n",
        "kafkalite/c.py": "def f():\n    import kafkalite.a\n",
        "kafkalite/pkg/__init__.py": "",
        "kafkalite/pkg/x.py": "from kafkalite.pkg import y\n",
        "kafkalite/pkg/y.py": "from . import x\n",
        "kafkalite/protocol/__init__.py": "",
        "kafkalite/protocol/messages/__init__.py": "",
        "kafkalite/protocol/messages/m.py": "from kafkalite.protocol import helper\n",
        "kafkalite/protocol/helper.py": "from kafkalite.protocol.messages.m import M\n",
        "kafkalite/d.py": "from kafkalite.a import thing\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = [e for p in sorted(tmp_path.rglob("*.py")) for e in _edges_of(p, tmp_path)]
    graph = _import_graph(edges, _modules(((tmp_path, tmp_path / "kafkalite"),)))
    cycles = _cycles(graph)
    assert cycles == [["kafkalite.a", "kafkalite.b", "kafkalite.c"], ["kafkalite.pkg.x", "kafkalite.pkg.y"]]
    text = _describe(cycles[0], graph)
    assert "b.py:3: kafkalite.b imports kafkalite.c" in text and "c.py:2: kafkalite.c imports kafkalite.a" in text


# ------------------------------------------------------------------ private names across modules

#: The public methods of named tuples, underscored so as not to clash with field names.
NAMEDTUPLE_API = frozenset({"_make", "_replace", "_asdict", "_fields", "_field_defaults"})


def _defined_here(tree: ast.Module) -> set[str]:
    """The names a module defines: functions, classes, their attributes (class-level,
    ``self.x = ...``, ``__slots__``). Setting ``other._x`` defines nothing."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("_"):
            names.add(node.value)  # __slots__ entries
    return names


def _private_reach(path: Path, base: Path) -> list[str]:
    """Each use of another module's private name: ``from m import _x``, or ``obj._x``
    where this module does not define ``_x`` (``self._x`` is always the module's own)."""
    tree = ast.parse(path.read_text(), str(path))
    own = _defined_here(tree)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.relative_to(base)
    found = [f"{where}:{e.line}: imports {e.name} from {e.target}" for e in _edges_of(path, base)
             if e.name is not None and e.name.startswith("_") and not e.name.startswith("__")]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and node.attr not in NAMEDTUPLE_API and node.attr not in own
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            found.append(f"{where}:{node.lineno}: uses {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("package", ["kafkalite.consumer", "kafkalite.share"])
def test_consumer_modules_use_no_private_name_of_another_module(package: str) -> None:
    """The consumer's and the share consumer's parts talk through public names: a
    collaborator is handed what it uses, and reads nothing underscored of another module
    (the producer's own check is tests/unit/test_producer_layering.py)."""
    top = PACKAGE.joinpath(*package.split(".")[1:])
    found = [f for p in sorted(top.rglob("*.py")) for f in _private_reach(p, SRC)]
    assert not found, "\n".join(found)


def test_the_private_name_check_catches_what_it_should(tmp_path: Path) -> None:
    probe = tmp_path / "kafkalite" / "consumer" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from kafkalite.consumer.core import _helper\n"
                     "class P:\n    __slots__ = ('_mine',)\n"
                     "    def f(self, core, rec):\n"
                     "        self._x = core._api_timeout\n"
                     "        rec._ranges = []\n"
                     "        return self._mine, rec._replace(offset=1), other._mine, self.core._after_metadata()\n")
    found = sorted(f.split(": ", 1)[1] for f in _private_reach(probe, tmp_path))
    assert found == ["imports _helper from kafkalite.consumer.core", "uses core._api_timeout", "uses rec._ranges",
                     "uses self.core._after_metadata"]
