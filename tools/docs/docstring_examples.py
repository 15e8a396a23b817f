"""The examples in the public API's docstrings: found, checked for, and listed for running.

The convention (CONTRIBUTING.md, "Docstring examples"): an example is a line
``Example::`` (or ``Examples::``) followed by an indented block of Python, as the
existing docstrings write it and as mkdocstrings shows it (a code block). The line may
say what the example needs:

* ``Example::`` runs against the documented preamble (:data:`PREAMBLE_NAMES`): a
  broker, the topic ``orders`` with three records, and fresh clients named
  ``producer``, ``consumer`` and ``admin`` (the asyncio front's own on
  ``kafkalite.aio`` pages, where the example is written with ``await``);
* ``Example (needs schema_registry)::`` also gets ``registry_url`` (the test starts a
  Schema Registry) and ``registry``, a ``SchemaRegistryClient`` of it;
* ``Example (needs secured_broker)::`` gets an ``admin`` of the harness's secured broker
  (SASL, ACLs on: ``kafka_broker_sasl``), signed in as its super user, for what a
  broker without an authorizer refuses (the ACL calls);
* ``Example (not run: <reason>)::`` is shown but not run, and must say why (a Spark
  session, an OIDC provider ...: a service the example runner cannot start);
* any other words in the parentheses are a caption (``Example (explicit acknowledgement)::``).

Every public class, function, method and property shown by the API reference must have
one (:func:`without_example`): the docs build (``tools/docs/hooks.py``) and
``tests/unit/test_public_api_docs.py`` fail on a public name without one.

    from tools.docs.docstring_examples import collect, without_example
    for example in collect():
        print(example.id, example.front, example.needs)
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Any

from tools.docs.public_api import docstring_of, documented_objects

#: ``Example::`` / ``Examples::`` / ``Example (needs schema_registry)::`` / ``Example (not run: why)::``
_HEADER = re.compile(r"^(?P<indent>\s*)Examples?(?:\s*\((?P<marker>[^)]*)\))?::\s*$")
#: Services a docstring example may ask for (the runner starts them).
SERVICES = ("schema_registry", "secured_broker")
#: The names the example runner binds before each example (documented in CONTRIBUTING.md).
PREAMBLE_NAMES = ("bootstrap", "topic", "producer", "consumer", "admin")


@dataclass(frozen=True)
class DocExample:
    """One example block of one public object's docstring."""

    where: str  # the dotted public name it was found under (the first, when shared)
    index: int  # its position among the docstring's examples
    code: str
    front: str  # "asyncio" (defined by an Async* class: kafkalite.aio, AsyncRecordFuture ...) or "blocking"
    needs: tuple[str, ...]
    skip: str | None  # the reason given by "not run: ..."

    @property
    def id(self) -> str:
        return f"{self.where}#{self.index}" if self.index else self.where


def parse(doc: str, where: str = "?") -> list[tuple[str, tuple[str, ...], str | None]]:
    """``(code, needs, skip reason)`` of each example block of ``doc``."""
    lines = doc.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m is None:
            continue
        indent = len(m.group("indent"))
        body: list[str] = []
        for nxt in lines[i + 1:]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break
            body.append(nxt)
        code = textwrap.dedent("\n".join(body)).strip("\n")
        if not code:
            raise ValueError(f"{where}: an 'Example::' line without an indented block after it")
        needs: tuple[str, ...] = ()
        skip = None
        marker = (m.group("marker") or "").strip()
        if marker.startswith("needs"):
            needs = tuple(marker[len("needs"):].split())
            unknown = set(needs) - set(SERVICES)
            if unknown:
                raise ValueError(f"{where}: unknown service {sorted(unknown)} (known: {SERVICES})")
        elif marker.startswith("not run"):
            skip = marker[len("not run"):].lstrip(":").strip()
            if not skip:
                raise ValueError(f"{where}: 'Example (not run: ...)' must say why")
        out.append((code + "\n", needs, skip))
    return out


def _front(obj: Any) -> str:
    """``asyncio`` for what an asyncio class defines (``AsyncProducer.send``, ``AsyncRecordFuture``,
    ``AsyncProducerFront.close``), else ``blocking``: an inherited method's example is
    written for the class that defines it."""
    target = obj.fget if isinstance(obj, property) else obj
    qualname = str(getattr(target, "__qualname__", ""))
    return "asyncio" if qualname.split(".")[0].startswith("Async") else "blocking"


def required() -> list[tuple[str, Any]]:
    """``(dotted name, object)`` of every public name that needs an example."""
    return list(documented_objects())


def has_example(obj: Any) -> bool:
    return bool(parse(docstring_of(obj)))


def without_example() -> list[str]:
    """Public names whose docstring has no example."""
    return sorted(where for where, obj in required() if not has_example(obj))


def example_problems() -> list[str]:
    """What fails the build: a public name without an example."""
    return [f"public API without an example (an Example:: block): {n}" for n in without_example()]


def collect() -> list[DocExample]:
    """Every example of the public API, once per front (a method shared by several
    classes, such as an error's, is collected where it is first shown)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for where, obj in required():
        front = _front(obj)
        for index, (code, needs, skip) in enumerate(parse(docstring_of(obj), where)):
            if (front, code) in seen:
                continue
            seen.add((front, code))
            out.append(DocExample(where, index, code, front, needs, skip))
    return out

