"""The public API, listed once: what the API reference shows and what must be documented.

Each :class:`ApiPage` is one page of the site's API reference; its entries name public
modules and the names they export. :func:`uncovered` proves the pages show every name of
every public module's ``__all__``, and :func:`undocumented` that every public class,
function and public method (inherited ones from kafkalite's own bases included) has a
docstring. The docs build (``tools/docs/hooks.py``) fails on either, and
``tests/unit/test_public_api_docs.py`` runs both without building the site.

    from tools.docs.public_api import undocumented, uncovered
    assert not uncovered() and not undocumented()
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Packages whose code is ours: their bases' public methods must be documented too.
OWN_PACKAGES = ("kafkalite", "pyspark_kafkalite")

#: Modules whose ``__all__`` is public API (the admin types are exported by
#: ``kafkalite.admin``'s lazy ``__getattr__`` from these modules).
PUBLIC_MODULES = (
    "kafkalite", "kafkalite.aio", "kafkalite.errors", "kafkalite.types", "kafkalite.admin.types",
    "kafkalite.admin.group_types", "kafkalite.admin.security_types", "kafkalite.admin.ops_types",
    "kafkalite.admin.results", "kafkalite.producer.futures", "kafkalite.serialization", "kafkalite.testing",
    "kafkalite.testing.checker", "kafkalite.otel", "pyspark_kafkalite",
)


@dataclass(frozen=True)
class Entry:
    """Names of one module shown on a page (``names=None``: the module's whole ``__all__``)."""

    module: str
    names: tuple[str, ...] | None = None
    #: names of the module's ``__all__`` documented elsewhere (the generated error classes
    #: are listed by the errors reference, each with its code)
    exclude: tuple[str, ...] = ()

    def resolved(self) -> list[tuple[str, Any]]:
        """``(public name, object)`` of each name, in order."""
        mod = importlib.import_module(self.module)
        names = self.names if self.names is not None else tuple(public_names(self.module))
        return [(n, getattr(mod, n)) for n in names if n not in self.exclude]


@dataclass(frozen=True)
class ApiPage:
    """One page of the API reference."""

    slug: str
    title: str
    intro: str
    entries: tuple[Entry, ...]


def _generated_errors() -> tuple[str, ...]:
    from kafkalite import _errors_gen

    return tuple(_errors_gen.__all__)


PAGES = (
    ApiPage("producer", "Producer",
            "The blocking `kafkalite.Producer` and the asyncio `kafkalite.aio.Producer` (the same methods, "
            "awaited), and the futures `send()` returns. Guide: [Producer](../../producer.md).",
            (Entry("kafkalite", ("Producer",)), Entry("kafkalite.aio", ("Producer",)),
             Entry("kafkalite.producer.futures", ("RecordFuture", "AsyncRecordFuture", "SendManyResult",
                                                 "AsyncSendManyResult", "DoneSignal")))),
    ApiPage("consumer", "Consumer",
            "The blocking `kafkalite.Consumer`, the asyncio `kafkalite.aio.Consumer` and the rebalance "
            "listener. Guide: [Consumer](../../consumer.md).",
            (Entry("kafkalite", ("Consumer", "ConsumerRebalanceListener")), Entry("kafkalite.aio", ("Consumer",)))),
    ApiPage("share-consumer", "ShareConsumer",
            "Share groups (KIP-932). Guide: [Share groups](../../share_consumer.md).",
            (Entry("kafkalite", ("ShareConsumer", "ShareConsumerRecord", "AcknowledgeType")),
             Entry("kafkalite.aio", ("ShareConsumer",)))),
    ApiPage("admin", "AdminClient",
            "The blocking and asyncio admin clients and every type they take and return (all importable "
            "from `kafkalite.admin`). Guide: [Admin client](../../admin.md).",
            (Entry("kafkalite", ("AdminClient",)), Entry("kafkalite.aio", ("AdminClient",)),
             Entry("kafkalite.admin.types"), Entry("kafkalite.admin.group_types"),
             Entry("kafkalite.admin.security_types"), Entry("kafkalite.admin.ops_types"),
             Entry("kafkalite.admin.results"))),
    ApiPage("types", "Records and types",
            "The value types every client shares (`kafkalite.types`, all exported by `kafkalite`).",
            (Entry("kafkalite.types"), Entry("kafkalite", ("__version__", "Header")))),
    ApiPage("errors", "Errors",
            "The exception tree. Every error kafkalite raises is a `KafkaError`; the classes for each "
            "Kafka error code are listed, with what to do, in the [errors reference](../errors.md).",
            (Entry("kafkalite.errors", exclude=_generated_errors()),)),
    ApiPage("serialization", "Serializers and Schema Registry",
            "Serializers, deserializers and the Schema Registry client. "
            "Guide: [Serialization](../../serialization.md).",
            (Entry("kafkalite.serialization"),)),
    ApiPage("testing", "Testing harness",
            "Real brokers, clusters, network faults and the delivery checker for your own tests; the "
            "pytest fixtures are listed under `kafkalite.testing.pytest_plugin`. "
            "Guide: [Testing](../../testing.md).",
            (Entry("kafkalite.testing"), Entry("kafkalite.testing.checker", ("ID_HEADER", "PartitionCounts",
                                                                               "ProducerHistory", "make_id",
                                                                               "parse_id")))),
    ApiPage("otel", "OpenTelemetry",
            "OpenTelemetry conventions used by the tracing and metrics export. "
            "Guide: [Observability](../../observability.md).",
            (Entry("kafkalite.otel"),)),
    ApiPage("spark", "PySpark data source",
            "`pyspark_kafkalite`: `format(\"kafkalite\")`. Guide: [Spark](../../spark.md).",
            (Entry("pyspark_kafkalite"),)),
)

#: The pytest fixtures (``kafkalite.testing.pytest_plugin``), shown on the testing page.
FIXTURES_MODULE = "kafkalite.testing.pytest_plugin"


def public_names(module: str) -> list[str]:
    """The module's ``__all__``; for ``kafkalite.types`` and the admin type modules (which
    ``kafkalite.admin`` exports by name), every public class and function they define."""
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is not None:
        return list(names)
    if not module.startswith("kafkalite.admin.") and module != "kafkalite.types":
        raise AssertionError(f"public module {module} has no __all__")
    return [n for n, v in vars(mod).items() if not n.startswith("_") and not _is_constant(v)
            and getattr(v, "__module__", None) == module]


def fixtures() -> list[tuple[str, Any]]:
    """``(name, function)`` of each pytest fixture the plugin registers."""
    mod = importlib.import_module(FIXTURES_MODULE)
    out = []
    for name, value in vars(mod).items():
        if name.startswith("_"):
            continue
        fn = _fixture_function(value)
        if fn is not None:
            out.append((name, fn))
    return out


def _fixture_function(value: Any) -> Any:
    # pytest >= 8.4 wraps a fixture in FixtureFunctionDefinition (the function is
    # _get_wrapped_function()); older ones mark the function with _pytestfixturefunction.
    getter = getattr(value, "_get_wrapped_function", None)
    if callable(getter) and type(value).__name__ == "FixtureFunctionDefinition":
        return getter()
    if getattr(value, "_pytestfixturefunction", None) is not None:
        return value
    return None


def uncovered() -> list[str]:
    """Names of public modules' ``__all__`` that no API page (nor the errors reference) shows."""
    shown = {(e.module, n) for p in PAGES for e in p.entries for n, _ in e.resolved()}
    shown |= {("kafkalite.errors", n) for n in _generated_errors()}
    objects = {id(obj) for p in PAGES for e in p.entries for _, obj in e.resolved()}
    out = []
    for module in PUBLIC_MODULES:
        mod = importlib.import_module(module)
        for name in public_names(module):
            if (module, name) in shown or (id(getattr(mod, name)) in objects and not _is_constant(getattr(mod, name))):
                continue
            if name == "errors" and module == "kafkalite":
                continue  # the module itself: its page is the errors page
            out.append(f"{module}.{name}")
    return out


def _is_constant(obj: Any) -> bool:
    if isinstance(obj, types.GenericAlias):
        # A type alias (``Header = tuple[str, bytes | None]``), documented by the docstring
        # under its assignment; CPython 3.10's inspect.isclass() calls it a class.
        return True
    return not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj))


def is_own(obj: Any) -> bool:
    """Defined in kafkalite or its Spark connector (not a builtin, typing or a library)."""
    return str(getattr(obj, "__module__", "") or "").split(".")[0] in OWN_PACKAGES


def documented_objects() -> Iterator[tuple[str, Any]]:
    """``(dotted name, object)`` of every public class, function, method and property shown."""
    seen: set[int] = set()
    for page in PAGES:
        for entry in page.entries:
            for name, obj in entry.resolved():
                yield from _walk(f"{entry.module}.{name}", obj, seen)
    for name, fn in fixtures():
        yield f"{FIXTURES_MODULE}.{name}", fn


def _walk(where: str, obj: Any, seen: set[int]) -> Iterator[tuple[str, Any]]:
    if id(obj) in seen or _is_constant(obj) or inspect.ismodule(obj):
        return
    seen.add(id(obj))
    yield where, obj
    if not inspect.isclass(obj):
        return
    for name, member in public_members(obj):
        yield f"{where}.{name}", member


def public_members(cls: type) -> list[tuple[str, Any]]:
    """Public methods and properties of ``cls``, including those of kafkalite's own bases."""
    out: dict[str, Any] = {}
    if issubclass(cls, enum.Enum):
        return []
    for klass in reversed(cls.__mro__):
        if not is_own(klass):
            continue
        for name, raw in vars(klass).items():
            if name.startswith("_"):
                continue
            if isinstance(raw, (staticmethod, classmethod)):
                out[name] = raw.__func__
            elif isinstance(raw, property) or inspect.isfunction(raw):
                out[name] = raw
    return sorted(out.items())


def docstring_of(obj: Any) -> str:
    """The object's docstring: a class's own; a method's own or, for an override, that of
    the method it overrides (``inspect.getdoc``'s rule, which ``help()`` follows too)."""
    if inspect.isclass(obj):
        doc = str(obj.__dict__.get("__doc__") or "").strip()
        # a dataclass without a docstring gets its signature as __doc__ ("Node(id: int, ...)")
        if dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("):
            return ""
        return doc
    return (inspect.getdoc(obj) or "").strip()


def undocumented() -> list[str]:
    """Dotted names of public objects without a docstring of their own."""
    return sorted(where for where, obj in documented_objects() if not docstring_of(obj))
