"""Every error kafkalite raises is a KafkaError (docs/architecture.md, "Conventions").

An AST scan of the library (``src/kafkalite`` without the test harness ``testing/``, and
the Spark connector) fails on any ``raise`` of a builtin exception that is not in
:data:`ALLOWED` with its reason, and on any exception class that does not derive from
KafkaError unless :data:`ALLOWED_CLASSES` says why. The allowed builtins are the ones
Python's own protocols require. Then a few of the converted raises, called for real.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Producer
from kafkalite.admin.core import AdminCore
from kafkalite.config import parse
from kafkalite.consumer.assignors.sticky import decode_sticky_user_data
from kafkalite.errors import (
    ConfigError,
    IllegalStateError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    KafkaError,
    KafkaTimeoutError,
    SerializationError,
)
from kafkalite.protocol.record_builder import RecordBatchBuilder
from kafkalite.settings import ClientRules
from kafkalite.share.types import AcknowledgeType
from tests.helpers.settings import resolve

ROOT = Path(__file__).resolve().parents[2]
SCANNED = (ROOT / "src" / "kafkalite", ROOT / "spark_connector" / "pyspark_kafkalite")
EXCLUDED = (ROOT / "src" / "kafkalite" / "testing",)  # the harness, not the library

BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}

_GETATTR = "PEP 562: a module's __getattr__ must raise AttributeError (hasattr, from-import)"
_ABSTRACT = "an abstract method: NotImplementedError is Python's convention"

#: (path relative to the repository, enclosing function, builtin raised) -> why.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("src/kafkalite/__init__.py", "__getattr__", "AttributeError"): _GETATTR,
    ("src/kafkalite/admin/__init__.py", "__getattr__", "AttributeError"): _GETATTR,
    ("src/kafkalite/aio/__init__.py", "__getattr__", "AttributeError"): _GETATTR,
    ("src/kafkalite/serialization/__init__.py", "__getattr__", "AttributeError"): _GETATTR,
    ("spark_connector/pyspark_kafkalite/__init__.py", "__getattr__", "AttributeError"): _GETATTR,
    ("spark_connector/pyspark_kafkalite/__init__.py", "__getattr__", "ImportError"):
        "`from pyspark_kafkalite import DefaultSource` (Spark's data-source lookup) on a Spark without the "
        "Python Data Source API: an import statement reports a name that cannot be imported with ImportError",
    ("src/kafkalite/config.py", "Config.__getitem__", "KeyError"):
        "the mapping protocol: `in` and .get() rely on KeyError",
    ("src/kafkalite/config.py", "Config.__getattr__", "AttributeError"):
        "getattr(cfg, alias, default) and hasattr() rely on AttributeError",
    ("src/kafkalite/metrics.py", "MetricsSnapshot.__getitem__", "KeyError"):
        "the mapping protocol: `in` and .get() rely on KeyError",
    ("src/kafkalite/consumer/assignors/sticky.py", "AbstractStickyAssignor.member_data",
     "NotImplementedError"): _ABSTRACT,
    ("src/kafkalite/net/sasl.py", "SaslMechanism.first_token", "NotImplementedError"): _ABSTRACT,
    ("src/kafkalite/serialization/base.py", "_Base.serialize", "NotImplementedError"): _ABSTRACT,
    ("src/kafkalite/serialization/deserializers.py", "_Base.deserialize", "NotImplementedError"): _ABSTRACT,
    ("src/kafkalite/net/oauth.py", "post_form", "OSError"):
        "joins the socket's OSErrors: TokenEndpoint.fetch() retries it as 'unreachable' and "
        "reports a SaslAuthenticationError; it never reaches the caller",
    ("spark_connector/pyspark_kafkalite/shipping.py", "load_in_task", "ModuleNotFoundError"):
        "runs in an executor's Python that cannot import kafkalite (that is what it reports), "
        "so no KafkaError class is there to raise",
    ("spark_connector/pyspark_kafkalite/shipping.py", "load_in_task", "ImportError"):
        "another kafkalite version in an executor's Python than the driver's: raised before "
        "that version's classes are trusted with the driver's pickled state",
    ("spark_connector/pyspark_kafkalite/pack.py", "<module>", "SystemExit"):
        "the exit status of `python -m pyspark_kafkalite.pack`",
}

#: Exception classes that are not KafkaErrors, with the reason. Besides these, a module may
#: define one for its own control flow if it also catches it (``except _Retry:``).
ALLOWED_CLASSES: dict[tuple[str, str], str] = {
    ("src/kafkalite/cli/common.py", "UsageError"):
        "console-tool control flow: cli.main turns it into one line on stderr and exit code 2",
    ("src/kafkalite/cli/common.py", "ItemsFailed"):
        "console-tool control flow: cli.main turns it into exit code 1 (items already reported)",
}


def _library_files() -> Iterator[Path]:
    for root in SCANNED:
        for path in sorted(root.rglob("*.py")):
            if not any(path.is_relative_to(excluded) for excluded in EXCLUDED):
                yield path


def _name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "builtins":
        return node.attr
    return None


class _Scan(ast.NodeVisitor):
    """Builtin raises (with the qualified name of the function around them) and
    exception classes of one module."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.raises: list[tuple[str, str, int]] = []  # (function, builtin, line)
        self.classes: list[tuple[str, list[str], int]] = []  # (class, base names, line)
        self.caught: set[str] = set()  # class names in ``except`` clauses

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _scoped

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                 for b in node.bases]
        self.classes.append((node.name, bases, node.lineno))
        self._scoped(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        types = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        self.caught.update(t.id for t in types if isinstance(t, ast.Name))
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        name = _name(node.exc)
        if name in BUILTIN_EXCEPTIONS:
            self.raises.append((".".join(self.scope) or "<module>", name, node.lineno))
        self.generic_visit(node)


Classes = dict[tuple[str, str], tuple[list[str], int, bool]]  # (path, class) -> (bases, line, caught there)


def _scan_all() -> tuple[dict[tuple[str, str, str], int], Classes]:
    raises: dict[tuple[str, str, str], int] = {}
    classes: Classes = {}
    for path in _library_files():
        scan = _Scan()
        scan.visit(ast.parse(path.read_text(), str(path)))
        rel = path.relative_to(ROOT).as_posix()
        for function, name, line in scan.raises:
            raises.setdefault((rel, function, name), line)
        for cls, bases, line in scan.classes:
            classes[(rel, cls)] = (bases, line, cls in scan.caught)
    return raises, classes


RAISES, CLASSES = _scan_all()


def test_the_scan_sees_the_library() -> None:
    # Guards against a scan that silently finds nothing (a moved directory, a bad path).
    assert sum(1 for _ in _library_files()) > 150
    assert ("src/kafkalite/config.py", "Config.__getitem__", "KeyError") in RAISES


def test_no_bare_builtin_is_raised_outside_the_allowlist() -> None:
    unexpected = {f"{path}:{line} raises {name} in {function}()": (path, function, name)
                  for (path, function, name), line in RAISES.items() if (path, function, name) not in ALLOWED}
    assert not unexpected, (
        "raise a kafkalite.errors.KafkaError subclass naming the problem (InvalidArgumentError, "
        "ConfigError, IllegalStateError, ...), or add the place to ALLOWED with the reason Python "
        f"requires the builtin: {sorted(unexpected)}")


def test_every_allowed_raise_still_exists() -> None:
    stale = sorted(set(ALLOWED) - set(RAISES))
    assert not stale, f"allowlist entries with no such raise any more (remove them): {stale}"


def test_exception_classes_are_kafka_errors() -> None:
    known = {"KafkaError"}
    changed = True
    while changed:  # the closure of "derives from KafkaError" over every class in the library
        changed = False
        for (_, cls), (bases, _, _) in CLASSES.items():
            if cls not in known and any(b in known for b in bases):
                known.add(cls)
                changed = True
    exceptions = {key: line for key, (bases, line, caught_there) in CLASSES.items()
                  if any(b in BUILTIN_EXCEPTIONS for b in bases) and key[1] not in known and not caught_there}
    unexpected = sorted(f"{path}:{line} class {cls}" for (path, cls), line in exceptions.items()
                        if (path, cls) not in ALLOWED_CLASSES)
    assert not unexpected, f"exception classes that are not KafkaErrors: {unexpected}"
    assert not sorted(set(ALLOWED_CLASSES) - set(exceptions)), "stale ALLOWED_CLASSES entries"


def test_builtin_compatible_bases() -> None:
    assert issubclass(InvalidArgumentError, KafkaError) and issubclass(InvalidArgumentError, ValueError)
    assert issubclass(InvalidArgumentTypeError, InvalidArgumentError) and issubclass(InvalidArgumentTypeError,
                                                                                    TypeError)
    assert issubclass(ConfigError, ValueError) and issubclass(SerializationError, ValueError)
    assert issubclass(IllegalStateError, RuntimeError) and issubclass(KafkaTimeoutError, TimeoutError)


# ---------------------------------------------------------------- the converted raises, for real


def test_send_many_with_keys_and_values_of_different_lengths() -> None:
    with (Producer({"bootstrap.servers": "127.0.0.1:1"}) as producer,  # never connects
          pytest.raises(InvalidArgumentError, match=r"send_many\(\): 1 keys for 2 values")):
        producer.send_many("events", [b"a", b"b"], keys=[b"1"])


def test_unknown_client_kind_names_the_known_ones() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown client kind 'brokerr' \\(one of admin, consumer"):
        parse("brokerr", {"bootstrap.servers": "h:1"})
    with pytest.raises(InvalidArgumentError, match="unknown client kind 'brokerr' \\(one of admin, consumer"):
        ClientRules("brokerr")


def test_negative_admin_timeout() -> None:
    core = AdminCore(resolve("admin", {"bootstrap.servers": "127.0.0.1:1"}))
    with pytest.raises(InvalidArgumentError, match="timeout must be >= 0, got -1"):
        core.deadline(-1)


def test_unknown_acknowledge_type_lists_the_valid_ones() -> None:
    with pytest.raises(InvalidArgumentError, match=r"unknown acknowledge type 'later' \(use ACCEPT, RELEASE or REJECT\)"):
        AcknowledgeType.parse("later")


def test_record_batch_builder_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="timestamp_type must be 0 \\(create\\) or 1 \\(log append\\), got 7"):
        RecordBatchBuilder(timestamp_type=7)
    with pytest.raises(InvalidArgumentError, match="needs log_append_time"):
        RecordBatchBuilder(timestamp_type=1)


def test_garbled_sticky_user_data_means_no_previous_assignment() -> None:
    # A negative topic count, then a topic name longer than the data: Java's rule is
    # "no previous assignment, default generation", never an error from the assignor.
    for data in (b"\xff\xff\xff\xff", b"\x00\x00\x00\x01\x00\x09ab"):
        member = decode_sticky_user_data(data)
        assert member.partitions == [] and member.generation == -1
