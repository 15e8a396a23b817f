"""Generate the blocking clients from their asyncio definitions.

Each client's API is written once, for asyncio: ``AsyncProducer``, ``AsyncConsumer``,
``AsyncShareConsumer`` and ``AsyncAdminClient`` (the *definitions*). The blocking class
(``kafkalite.Producer`` ...) is that class with ``async`` and ``await`` taken away, over
a different base class: the definition's base runs the API on the caller's event loop,
the blocking base on the client's engine thread. Both bases offer the same private
primitives (``_run`` a coroutine on the engine, wait for records, run the
application's callbacks ...), so the same method body is correct on both fronts.

    python tools/generate_fronts.py            # regenerate in place
    python tools/generate_fronts.py --check    # exit 1 if a committed file differs

The output keeps the definition's text (comments, layout, docstrings); only these
change:

* ``async def`` / ``async with`` / ``async for`` lose ``async``; ``await x`` becomes ``x``;
* names in :data:`RENAMES` (``__aenter__`` -> ``__enter__``, ``AsyncIterator`` ->
  ``Iterator``, ``AsyncRecordFuture`` -> ``RecordFuture`` ...) and the class and base
  names of each :class:`Front`, in code and docstrings;
* the imports: the definition module's, renamed, keeping those the class uses, plus
  the blocking base.

So that the text means the same thing without ``await``, a definition may only await
methods of ``self`` (the bases' primitives, or other methods of the API), and may not
use ``asyncio`` itself: what differs between the fronts belongs in the bases. The
generator refuses anything else, naming the line. Generated files are never edited
by hand; ``tests/unit/test_fronts.py`` runs ``--check`` and compares both fronts'
public methods (names, signatures, docstrings), allowing only the differences it lists.

To add a method to a client:

1. write it once in the asyncio definition (e.g. ``AsyncConsumer`` in
   ``consumer/async_consumer.py``), with its docstring: ``async def`` when it waits
   for the engine, through ``await self._run(core.something(...), timeout, "what()")``;
   a plain ``def`` when it only reads or changes local state (hand engine work to
   ``self._call_soon(fn, ...)``). Docstring examples are written for asyncio
   (``await consumer.x()``); the blocking docstring drops the ``await``;
2. if the fronts must really differ (a wait in the caller's thread, a callback that may
   be a coroutine), add a private primitive with the same name and parameters to both
   base classes in ``<client>/fronts.py`` and call it from the definition;
3. run ``python tools/generate_fronts.py`` and commit both files; a method meant for
   one front only goes in that front's base class and in the allowed list of
   ``tests/unit/test_fronts.py``, with the reason.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

#: asyncio name -> blocking name, wherever it appears as a name (code and docstrings).
RENAMES = {
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__aiter__": "__iter__",
    "__anext__": "__next__",
    "AsyncIterator": "Iterator",
    "AsyncIterable": "Iterable",
    "AsyncGenerator": "Generator",
    "asynccontextmanager": "contextmanager",
    "StopAsyncIteration": "StopIteration",
    "AsyncRecordFuture": "RecordFuture",
    "AsyncSendManyResult": "SendManyResult",
}

#: Where a renamed name is imported from when the asyncio one lives elsewhere.
HOMES = {"SendManyResult": "kafkalite.producer.futures"}


@dataclass(frozen=True)
class Front:
    """One client: its asyncio definition, the blocking base, and the blocking class made."""

    definition: str  # "package.module:Class", the API written for asyncio
    blocking_base: str  # "package.module:Class", how the blocking front runs it
    blocking: str  # "package.module:Class", the generated class
    public: str  # the blocking class's public name, for the module docstring

    @staticmethod
    def split(ref: str) -> tuple[str, str]:
        module, name = ref.split(":")
        return module, name

    def path(self, ref: str) -> Path:
        return SRC / (self.split(ref)[0].replace(".", "/") + ".py")

    def renames(self, async_base: str) -> dict[str, str]:
        out = dict(RENAMES)
        out[self.split(self.definition)[1]] = self.split(self.blocking)[1]
        out[async_base] = self.split(self.blocking_base)[1]
        return out


FRONTS = (
    Front("kafkalite.producer.async_producer:AsyncProducer", "kafkalite.producer.fronts:BlockingProducerFront",
          "kafkalite.producer.producer:Producer", "kafkalite.Producer"),
    Front("kafkalite.consumer.async_consumer:AsyncConsumer", "kafkalite.consumer.fronts:BlockingConsumerFront",
          "kafkalite.consumer.consumer:Consumer", "kafkalite.Consumer"),
    Front("kafkalite.share.async_consumer:AsyncShareConsumer", "kafkalite.share.fronts:BlockingShareConsumerFront",
          "kafkalite.share.consumer:ShareConsumer", "kafkalite.ShareConsumer"),
    Front("kafkalite.admin.async_admin:AsyncAdminClient", "kafkalite.admin.fronts:BlockingAdminFront",
          "kafkalite.admin.admin:AdminClient", "kafkalite.AdminClient"),
)


class DefinitionError(Exception):
    """A definition the generator cannot turn into blocking code, with the place and the fix."""


# ---------------------------------------------------------------- checks


def _is_self_call(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "self")


def check_definition(cls: ast.ClassDef, module: ast.Module, where: str) -> None:
    """Refuse what would not mean the same without ``await`` (see the module doc)."""
    local_names = {n.name for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                 ast.ClassDef))}
    local_names.discard(cls.name)
    for node in ast.walk(cls):
        line = f"{where}:{getattr(node, 'lineno', cls.lineno)}"
        if isinstance(node, ast.Await) and not _is_self_call(node.value):
            raise DefinitionError(
                f"{line}: 'await {ast.unparse(node.value)}': a definition awaits only methods of self; run "
                "engine work through the front's primitive (await self._run(...)) so the blocking front "
                "runs it on its engine thread")
        if isinstance(node, (ast.AsyncWith, ast.AsyncFor)):
            items = ([i.context_expr for i in node.items] if isinstance(node, ast.AsyncWith) else [node.iter])
            if not all(_is_self_call(e) for e in items):
                raise DefinitionError(f"{line}: 'async with' / 'async for' over something other than a method "
                                      "of self has no blocking meaning")
        if isinstance(node, ast.Name) and node.id == "asyncio":
            raise DefinitionError(f"{line}: asyncio is used in the definition; what only the asyncio front "
                                  "does belongs in its base class (a primitive both bases provide)")
        if isinstance(node, ast.Name) and node.id in local_names:
            raise DefinitionError(f"{line}: '{node.id}' is defined in the definition's module; the blocking "
                                  "module cannot import it from there: move it to the fronts module (module "
                                  "level assignments such as a logger are copied)")


# ---------------------------------------------------------------- text


def _drop_await_groups(text: str) -> str:
    """``(await x).all()`` -> ``x.all()``: the parentheses only grouped the await (a call's
    parentheses, ``f(await x)``, stay)."""
    out, i = [], 0
    while (start := text.find("(await ", i)) != -1:
        before = text[start - 1] if start else " "
        depth, end = 0, start
        for end in range(start, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        if before.isalnum() or before in "_)]" or depth:
            out.append(text[i:start + 1])
            i = start + 1
            continue
        out.append(text[i:start] + text[start + 1:end])
        i = end + 1
    return "".join(out) + text[i:]


def blocking_text(text: str, renames: dict[str, str]) -> str:
    """A docstring as the blocking front reads it: examples without await, blocking names."""
    text = _drop_await_groups(text)
    text = re.sub(r"\bawait\s+", "", text)
    text = re.sub(r"\basync\s+(def|with|for)\b", r"\1", text)
    if renames:
        pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(renames, key=len, reverse=True)) + r")\b")
        text = pattern.sub(lambda m: renames[m.group(1)], text)
    return text


def _docstring_positions(cls: ast.ClassDef) -> set[tuple[int, int]]:
    out = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.add((first.value.lineno, first.value.col_offset))
    return out


def translate_class(source: str, cls: ast.ClassDef, renames: dict[str, str]) -> str:
    """The class's source text with async/await removed and names renamed."""
    lines = source.splitlines(keepends=True)
    start, end = cls.lineno, cls.end_lineno or cls.lineno
    text = "".join(lines[start - 1:end])
    docstrings = {(row - start + 1, col) for row, col in _docstring_positions(cls)}
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    edits: list[tuple[int, int, str]] = []
    # Continuation lines aligned past a removed "async " / "await " move left with it.
    dedent: dict[int, int] = {}
    inside_strings: set[int] = set()

    def at(pos: tuple[int, int]) -> int:
        return offsets[pos[0] - 1] + pos[1]

    def logical_end(i: int) -> int:
        while tokens[i].type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
            i += 1
        return tokens[i].start[0]

    for i, tok in enumerate(tokens):
        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            inside_strings.update(range(tok.start[0] + 1, tok.end[0] + 1))
        if tok.type == tokenize.NAME and tok.string in ("async", "await"):
            nxt = tokens[i + 1]
            if tok.string == "async" and nxt.string not in ("def", "with", "for"):
                continue
            edits.append((at(tok.start), at(nxt.start), ""))  # the keyword and the space after it
            row, col, width = tok.start[0], tok.start[1], nxt.start[1] - tok.start[1]
            for later in range(row + 1, logical_end(i) + 1):
                line = text.splitlines()[later - 1]
                indent = len(line) - len(line.lstrip(" "))
                if line.strip() and indent > col:
                    dedent[later] = dedent.get(later, 0) + width
        elif tok.type == tokenize.NAME and tok.string in renames:
            edits.append((at(tok.start), at(tok.end), renames[tok.string]))
        elif tok.type == tokenize.STRING and tok.start in docstrings:
            edits.append((at(tok.start), at(tok.end), blocking_text(tok.string, renames)))
    for row, width in dedent.items():
        if row not in inside_strings:
            edits.append((offsets[row - 1], offsets[row - 1] + width, ""))
    for begin, stop, replacement in sorted(edits, reverse=True):
        text = text[:begin] + replacement + text[stop:]
    return text


# ---------------------------------------------------------------- module level


def module_constants(source: str, module: ast.Module, body: str, renames: dict[str, str]) -> str:
    """The definition module's top-level assignments the class uses (a logger, a TypeVar), copied."""
    used = {n.id for n in ast.walk(ast.parse(body)) if isinstance(n, ast.Name)}
    lines = source.splitlines()
    out = []
    for node in module.body:
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        else:
            continue
        if "__all__" not in targets and used.intersection(targets):
            first = node.lineno
            while first > 1 and lines[first - 2].startswith("#"):  # its comment comes along
                first -= 1
            segment = "\n".join(lines[first - 1:node.end_lineno])
            out.append(blocking_text(segment, {k: v for k, v in renames.items() if k in RENAMES}))
    return "\n\n".join(out)


# ---------------------------------------------------------------- imports


def _section(module: str) -> int:
    """isort's sections: __future__, standard library, the rest (kafkalite)."""
    if module == "__future__":
        return 0
    return 1 if module.split(".")[0] in sys.stdlib_module_names else 2


def _member_key(name: str) -> tuple[int, str, str]:
    """isort's order-by-type inside ``from x import ...``: CONSTANTS, Classes, functions."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower(), name


@dataclass
class _Import:
    module: str
    names: list[tuple[str, str | None]]  # (name, asname); module imports use name=module
    is_from: bool

    def render(self) -> str:
        if not self.is_from:
            return "\n".join(f"import {n}" + (f" as {a}" if a else "") for n, a in self.names)
        members = [n + (f" as {a}" if a else "") for n, a in sorted(self.names, key=lambda na: _member_key(na[0]))]
        line = f"from {self.module} import {', '.join(members)}"
        if len(line) <= 100:
            return line
        return f"from {self.module} import (\n" + "".join(f"    {m},\n" for m in members) + ")"


def module_imports(module: ast.Module, renames: dict[str, str]) -> list[_Import]:
    out = []
    for node in module.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [(renames.get(a.name, a.name), a.asname) for a in node.names]
            moved = [(n, a) for n, a in names if HOMES.get(n, node.module) != node.module]
            out.append(_Import(node.module, [na for na in names if na not in moved], True))
            out.extend(_Import(HOMES[n], [(n, a)], True) for n, a in moved)
        elif isinstance(node, ast.Import):
            out.extend(_Import(a.name, [(a.name, a.asname)], False) for a in node.names)
    return out


def imports_for(body: str, imports: list[_Import], base_module: str, base_name: str) -> str:
    tree = ast.parse(body)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    kept: list[_Import] = [_Import("__future__", [("annotations", None)], True)]
    for imp in imports:
        if imp.module == "__future__":
            continue
        if imp.is_from:
            names = [(n, a) for n, a in imp.names if (a or n) in used]
        else:
            names = [(n, a) for n, a in imp.names if (a or n.split(".")[0]) in used]
        # isort keeps "import x as y" statements apart (combine-as-imports is off).
        plain = all(a is None for _, a in names)
        same = next((k for k in kept if plain and imp.is_from and k.is_from and k.module == imp.module
                     and all(a is None for _, a in k.names)), None)
        if same is not None:
            same.names.extend(na for na in names if na not in same.names)
        elif names:
            kept.append(_Import(imp.module, names, imp.is_from))
    merged = next((i for i in kept if i.is_from and i.module == base_module), None)
    if merged is not None:
        if (base_name, None) not in merged.names:
            merged.names.append((base_name, None))
    else:
        kept.append(_Import(base_module, [(base_name, None)], True))
    blocks: list[str] = []
    for section in (0, 1, 2):
        members = [i for i in kept if _section(i.module) == section]
        # isort: plain imports first, then from-imports, each sorted by module.
        members.sort(key=lambda i: (i.is_from, i.module))
        if members:
            blocks.append("\n".join(i.render() for i in members))
    return "\n\n".join(blocks)


# ---------------------------------------------------------------- modules


def generate(front: Front) -> str:
    """The blocking module's text for ``front``."""
    def_module, def_name = front.split(front.definition)
    base_module, base_name = front.split(front.blocking_base)
    _, name = front.split(front.blocking)
    path = front.path(front.definition)
    source = path.read_text()
    tree = ast.parse(source)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == def_name), None)
    if cls is None:
        raise DefinitionError(f"{path}: no class {def_name}")
    if len(cls.bases) != 1 or not isinstance(cls.bases[0], ast.Name):
        raise DefinitionError(f"{path}:{cls.lineno}: {def_name} must derive from exactly its asyncio front base")
    check_definition(cls, tree, str(path.relative_to(ROOT)))
    renames = front.renames(cls.bases[0].id)
    body = translate_class(source, cls, renames)
    constants = module_constants(source, tree, body, renames)
    imports = imports_for(body + "\n" + constants, module_imports(tree, renames), base_module, base_name)
    doc = (f'"""``{front.public}``: GENERATED by tools/generate_fronts.py, do not edit.\n\n'
           "The API is written once, for asyncio, in\n"
           f":class:`{def_module}.{def_name}`; this is that class\n"
           "without ``async``/``await``, over\n"
           f":class:`{base_module}.{base_name}`, which runs it on the\n"
           "client's engine thread. Change those and run ``python tools/generate_fronts.py``.\n"
           '"""\n')
    constants = f"{constants}\n\n" if constants else ""
    # An async generator cannot "yield from": its blocking text loops over what it yields.
    def yields_each(node: ast.AST) -> bool:  # for x in y: yield x
        return (isinstance(node, ast.For) and isinstance(node.target, ast.Name) and len(node.body) == 1
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Yield)
                and isinstance(node.body[0].value.value, ast.Name) and node.body[0].value.value.id == node.target.id)

    loops = any(yields_each(n) for f in cls.body if isinstance(f, ast.AsyncFunctionDef) for n in ast.walk(f))
    lint = "# ruff: noqa: UP028\n" if loops else ""
    return f'{doc}{lint}\n{imports}\n\n{constants}__all__ = ["{name}"]\n\n\n{body}'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file is not up to date")
    parser.add_argument("--only", action="append", default=[], metavar="MODULE",
                        help="only the front whose blocking module ends with MODULE (e.g. admin.admin)")
    args = parser.parse_args(argv)
    stale = []
    for front in FRONTS:
        if args.only and not any(front.split(front.blocking)[0].endswith(o) for o in args.only):
            continue
        try:
            text = generate(front)
        except DefinitionError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        target = front.path(front.blocking)
        if target.exists() and target.read_text() == text:
            continue
        if args.check:
            stale.append(str(target.relative_to(ROOT)))
        else:
            target.write_text(text)
            print(f"wrote {target.relative_to(ROOT)}")
    if stale:
        print("stale (run python tools/generate_fronts.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
