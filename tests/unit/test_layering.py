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
