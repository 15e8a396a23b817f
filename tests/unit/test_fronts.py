"""The blocking and asyncio fronts: one API, with no difference but the ones listed here.

``kafkalite.Producer`` / ``Consumer`` / ``ShareConsumer`` / ``AdminClient`` are
generated from their asyncio definitions by ``tools/generate_fronts.py``. These tests
fail when a generated file is stale, when a public method exists on one front only,
or when the two fronts' signatures (parameter names, kinds, defaults, annotations,
return type) or docstrings differ, except for the intended differences listed below
with their reason. What is written by hand in the fronts' base classes (``__init__``,
``close``, ...) is held to the same rule.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import kafkalite
from kafkalite import aio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import generate_fronts as gen  # noqa: E402

PAIRS = {name: (getattr(kafkalite, name), getattr(aio, name))
         for name in ("Producer", "Consumer", "ShareConsumer", "AdminClient")}

#: Public methods only the asyncio front has, and why.
ONLY_ASYNC = {
    ("Producer", "start"): "an asyncio producer starts on the caller's running loop, at first use or "
                           "here; the blocking one starts its engine thread in the constructor",
    ("Producer", "send_and_wait"): "aiokafka's one-await send; blocking code writes send(...).result()",
    ("Consumer", "getmany"): "aiokafka's name and shape (records by partition, timeout in ms) for code "
                             "coming from aiokafka; the blocking consumer has poll(...).by_partition()",
}

#: Public methods only the blocking front has, and why.
ONLY_BLOCKING: dict[tuple[str, str], str] = {}

#: The same role under each front's protocol name: ``with`` / ``async with``,
#: ``for`` / ``async for``.
PROTOCOL = {"__enter__": "__aenter__", "__exit__": "__aexit__", "__iter__": "__aiter__"}

#: (client, method) whose signatures differ on purpose, and why. Coroutine versus
#: plain method is not listed: that is the difference between the fronts.
DIFFERENT_SIGNATURES: dict[tuple[str, str], str] = {}

_DUNDERS = ("__init__", "__repr__", *PROTOCOL, *PROTOCOL.values())


def surface(cls: type) -> dict[str, Any]:
    """Public attributes (methods, properties, aliases) and the protocol dunders, as defined."""
    names = {n for n in dir(cls) if not n.startswith("_")}
    names |= {n for n in _DUNDERS if any(n in vars(c) for c in cls.__mro__ if c is not object)}
    return {n: inspect.getattr_static(cls, n) for n in names}


def renames_for(blocking: type, asynchronous: type) -> dict[str, str]:
    out = dict(gen.RENAMES)
    out[asynchronous.__name__] = blocking.__name__
    return out


def _function(attr: Any) -> Any:
    return attr.fget if isinstance(attr, property) else getattr(attr, "__func__", attr)


def _describe(fn: Any, renames: dict[str, str] | None) -> list[tuple[str, str, str, str]]:
    sig = inspect.signature(fn)
    def text(annotation: Any) -> str:
        value = annotation if isinstance(annotation, str) else repr(annotation)
        return gen.blocking_text(value, renames) if renames is not None else value
    params = [(p.name, p.kind.name, repr(p.default), text(p.annotation)) for p in sig.parameters.values()]
    return [*params, ("return", "", "", text(sig.return_annotation))]


def differences(name: str, blocking: type, asynchronous: type) -> list[str]:
    """Every way the two fronts differ that the lists above do not allow."""
    renames = renames_for(blocking, asynchronous)
    sync_api, async_api = surface(blocking), surface(asynchronous)
    found: list[str] = []
    for attr in sorted(set(sync_api) | {PROTOCOL.get(n, n) for n in sync_api} | set(async_api)):
        if attr in PROTOCOL.values():
            continue
        other = PROTOCOL.get(attr, attr)
        mine, theirs = sync_api.get(attr), async_api.get(other)
        if mine is None and theirs is None:
            continue
        if mine is None:
            if (name, attr) not in ONLY_ASYNC:
                found.append(f"{name}.{attr}: only on the asyncio front")
            continue
        if theirs is None:
            if (name, attr) not in ONLY_BLOCKING:
                found.append(f"{name}.{attr}: only on the blocking front")
            continue
        if isinstance(mine, property) != isinstance(theirs, property):
            found.append(f"{name}.{attr}: a property on one front only")
            continue
        fn_sync, fn_async = _function(mine), _function(theirs)
        if inspect.iscoroutinefunction(fn_sync) or inspect.isasyncgenfunction(fn_sync):
            found.append(f"{name}.{attr}: a coroutine on the blocking front")
        if (name, attr) not in DIFFERENT_SIGNATURES:
            sig_sync, sig_async = _describe(fn_sync, None), _describe(fn_async, renames)
            if sig_sync != sig_async:
                found.append(f"{name}.{attr}: signatures differ: blocking {sig_sync} asyncio {sig_async}")
        doc_sync, doc_async = fn_sync.__doc__, fn_async.__doc__
        public = not attr.startswith("_")
        if public and not (doc_sync and doc_sync.strip()):
            found.append(f"{name}.{attr}: no docstring")
        if (doc_sync or doc_async) and doc_sync != gen.blocking_text(doc_async or "", renames):
            found.append(f"{name}.{attr}: docstrings differ")
    return found


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_both_fronts_have_the_same_api(name: str) -> None:
    blocking, asynchronous = PAIRS[name]
    assert differences(name, blocking, asynchronous) == []


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_class_docstrings_are_the_same(name: str) -> None:
    blocking, asynchronous = PAIRS[name]
    assert blocking.__doc__ and blocking.__doc__ == gen.blocking_text(asynchronous.__doc__ or "",
                                                                      renames_for(blocking, asynchronous))


def test_the_allowed_differences_are_real() -> None:
    """An allowance that no longer applies must go: the lists say what the fronts are."""
    for (name, attr) in ONLY_ASYNC:
        blocking, asynchronous = PAIRS[name]
        assert attr in surface(asynchronous) and attr not in surface(blocking), (name, attr)
    for (name, attr) in ONLY_BLOCKING:
        blocking, asynchronous = PAIRS[name]
        assert attr in surface(blocking) and attr not in surface(asynchronous), (name, attr)


def test_generated_fronts_are_fresh() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "generate_fronts.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------- the checker and the generator


class _AsyncDrifted:
    """Doc."""

    async def send(self, topic: str, *, key: bytes | None = None) -> AsyncRecordFuture:  # noqa: F821
        """Send."""

    async def only_async(self) -> None:
        """Only here."""

    def local(self, a: int) -> int:
        """Local."""
        return a

    def undocumented(self) -> None:
        pass

    async def documented(self) -> None:
        """Once."""


class _Drifted:
    """Doc."""

    def send(self, topic: str, key: bytes | None = None) -> RecordFuture:  # noqa: F821
        """Send."""

    def local(self, a: int, b: int = 1) -> int:
        """Local."""
        return a + b

    async def only_blocking(self) -> None:
        """Only here."""

    def undocumented(self) -> None:
        pass

    def documented(self) -> None:
        """Twice."""


def test_the_comparison_reports_every_kind_of_drift() -> None:
    found = differences("X", _Drifted, _AsyncDrifted)
    assert any(f.startswith("X.send: signatures differ") and "KEYWORD_ONLY" in f for f in found)
    assert any(f.startswith("X.local: signatures differ") and "'b'" in f for f in found)
    assert "X.only_async: only on the asyncio front" in found
    assert "X.only_blocking: only on the blocking front" in found
    assert "X.undocumented: no docstring" in found
    assert "X.documented: docstrings differ" in found
    assert len(found) == 6, found


def test_renamed_types_and_awaits_are_the_same_api() -> None:
    """AsyncRecordFuture vs RecordFuture and await in an example are not drift."""

    class A:
        async def send(self) -> AsyncRecordFuture:  # noqa: F821
            """Example: ``f = await p.send()``; ``async with p:``."""

    class B:
        def send(self) -> RecordFuture:  # noqa: F821
            """Example: ``f = p.send()``; ``with p:``."""

    assert differences("X", B, A) == []


@pytest.mark.parametrize(("body", "message"), [
    ("async def flush(self):\n        await self._core.flush()", "awaits only methods of self"),
    ("async def nap(self):\n        await self._run(asyncio.sleep(1))", "asyncio is used in the definition"),
    ("async def rows(self):\n        async for r in self._core.rows():\n            yield r", "async for"),
    ("def helper_user(self):\n        return _helper()", "'_helper' is defined in the definition's module"),
])
def test_the_generator_refuses_what_has_no_blocking_meaning(body: str, message: str) -> None:
    module = ast.parse(f"def _helper():\n    return 1\n\n\nclass AsyncThing(AsyncThingFront):\n    {body}\n")
    cls = next(n for n in module.body if isinstance(n, ast.ClassDef))
    with pytest.raises(gen.DefinitionError, match=message) as info:
        gen.check_definition(cls, module, "thing.py")
    assert str(info.value).startswith("thing.py:")  # names the place


def test_the_translation_keeps_the_text_and_removes_async() -> None:
    source = textwrap.dedent('''
        class AsyncThing(AsyncThingFront):
            """Use it: ``async with AsyncThing() as t: await t.go()``."""

            async def go(self, a: int,
                         b: int) -> AsyncIterator[int]:
                # comments stay
                return await self._run(work(a,
                                            b))

            async def __aenter__(self) -> AsyncThing:
                return self
        ''')
    module = ast.parse(source)
    cls = next(n for n in module.body if isinstance(n, ast.ClassDef))
    text = gen.translate_class(source, cls, {**gen.RENAMES, "AsyncThing": "Thing", "AsyncThingFront": "ThingFront"})
    assert text == textwrap.dedent('''\
        class Thing(ThingFront):
            """Use it: ``with Thing() as t: t.go()``."""

            def go(self, a: int,
                   b: int) -> Iterator[int]:
                # comments stay
                return self._run(work(a,
                                      b))

            def __enter__(self) -> Thing:
                return self
        ''')


def test_blocking_docstrings_drop_the_parentheses_that_only_grouped_an_await() -> None:
    text = 'assert (await admin.describe_topics(["o"]))["o"].ok and f(await x) and (await a(b)).c'
    assert gen.blocking_text(text, {}) == 'assert admin.describe_topics(["o"])["o"].ok and f(x) and a(b).c'
