"""Every ```python example of the guides runs as written, against the session's broker.

Each block of the README and docs/*.md runs in a fresh namespace, as a script would,
with the address the guides use (127.0.0.1:9092) replaced by that of a broker started
as the guides start theirs (``python -m kafkalite.testing up``: topics are created on
first use). The examples of one page run in order, as a reader runs them, and every
page starts on a broker without topics. Where the guide shows the output (a ```text
block after the line "It prints:"), the printed text must be exactly that.

A block that cannot run as a script says so in an HTML comment on the line before it,
with the reason, which the reader sees in the page's source:

    <!-- example: skip, runs until the process is stopped -->

and one that needs another service names it (the test starts it):

    <!-- example: needs schema_registry -->
"""

from __future__ import annotations

import contextlib
import io
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkalite import AdminClient
from tests.docs.conftest import delete_topics, user_topics

ROOT = Path(__file__).resolve().parents[2]
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ADDRESS = "127.0.0.1:9092"
REGISTRY = "http://127.0.0.1:8081"

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*example:\s*(skip|needs)\b[,:]?\s*(.*?)\s*-->\s*$")
SERVICES = ("schema_registry",)


@dataclass(frozen=True)
class Example:
    """One ```python block."""

    path: Path
    line: int
    code: str
    skip: str | None  # the reason given by the marker
    needs: tuple[str, ...]
    output: str | None  # the ```text block shown after "It prints:", if any

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def examples_of(path: Path) -> list[Example]:
    """The python blocks of one markdown file, with their markers and shown output."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[tuple[int, str, list[str]]] = []  # (first line, language, text)
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, lang, body = i, m.group(1), []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        blocks.append((start, lang, body))
        i += 1
    out = []
    for n, (start, lang, body) in enumerate(blocks):
        if lang != "python":
            continue
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = _MARKER.match(before.strip())
        skip = marker.group(2) if marker and marker.group(1) == "skip" else None
        if marker and marker.group(1) == "skip" and not skip:
            raise AssertionError(f"{path}:{start + 1}: a skipped example must say why")
        needs = tuple(marker.group(2).split()) if marker and marker.group(1) == "needs" else ()
        unknown = set(needs) - set(SERVICES)
        if unknown:
            raise AssertionError(f"{path}:{start + 1}: unknown service {sorted(unknown)} (known: {SERVICES})")
        output = None
        if n + 1 < len(blocks) and blocks[n + 1][1] == "text":
            between = "\n".join(lines[start + len(body) + 2:blocks[n + 1][0]]).strip()
            if between.endswith("It prints:"):
                output = "\n".join(blocks[n + 1][2]) + "\n"
        out.append(Example(path, start + 1, "\n".join(body) + "\n", skip, needs, output))
    return out


EXAMPLES = [e for path in GUIDES for e in examples_of(path)]
RUNNABLE = [e for e in EXAMPLES if e.skip is None]


def test_examples_are_found() -> None:
    # every guide's examples are seen (a changed fence would hide them all), and those
    # that run include each client
    assert len(EXAMPLES) > 50
    ran = "".join(e.code for e in RUNNABLE)
    for name in ("Producer(", "Consumer(", "AdminClient(", "asyncio.run("):
        assert name in ran, name


_clean_for: list[Path] = []


def fresh_page(example: Example, bootstrap: str) -> None:
    """Before a page's first example: delete every topic the examples made before."""
    if _clean_for and _clean_for[-1] == example.path:
        return
    _clean_for.append(example.path)
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        delete_topics(admin, user_topics(admin))


def run_example(example: Example, bootstrap: str, registry: str | None) -> str:
    """Run the block as a script would; what it printed."""
    code = example.code.replace(ADDRESS, bootstrap)
    if registry is not None:
        code = code.replace(REGISTRY, registry)
    printed = io.StringIO()
    namespace = {"__name__": "__main__", "__file__": str(example.path)}
    before = set(threading.enumerate())
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, example.id, "exec"), namespace)
    finally:
        # A script's clients end with its process: close those the example left open
        # (as the interpreter's exit would), so the next example starts alone.
        for value in list(namespace.values()):
            if type(value).__module__.startswith("kafkalite.") and callable(getattr(value, "close", None)) \
                    and type(value).__name__ in ("Producer", "Consumer", "ShareConsumer", "AdminClient"):
                value.close()
    leaked = [t for t in set(threading.enumerate()) - before if t.is_alive() and not t.daemon]
    assert not leaked, f"{example.id} left threads running: {leaked}"
    return printed.getvalue()


@pytest.mark.broker
@pytest.mark.timeout(90)
@pytest.mark.parametrize("example", RUNNABLE, ids=[e.id for e in RUNNABLE])
def test_example_runs_as_written(example: Example, guide_broker: str, request: pytest.FixtureRequest) -> None:
    registry = request.getfixturevalue("schema_registry").url if "schema_registry" in example.needs else None
    fresh_page(example, guide_broker)
    printed = run_example(example, guide_broker, registry)
    if example.output is not None:
        assert printed == example.output, f"{example.id} printed:\n{printed}\nthe guide shows:\n{example.output}"
