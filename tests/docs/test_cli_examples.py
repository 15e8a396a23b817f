"""The console tool examples the guides mark, run as written with bash, output checked.

A ```sh block of ``docs/*.md`` runs when the line before it says so:

    <!-- example: sh, needs schema_registry -->
    <!-- example: sh, output shown, needs schema_registry -->

The marked blocks of a page run in order, in one new directory (so files an earlier
block writes are there), with ``kafkalite`` on the PATH, ``B`` and ``R`` set to the
session's broker and Schema Registry (``127.0.0.1:9092`` and ``http://127.0.0.1:8081`` in
the text are replaced by them too), on a broker without topics. Every command must
succeed. With ``output shown``, the ``# `` lines after a command are the first lines it
prints (``...`` stands for any text): the command runs until it has printed that many
lines, and is then stopped with Ctrl-C (SIGINT), as a reader stops ``kafkalite consume``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkalite import AdminClient
from tests.docs.conftest import delete_topics, user_topics

ROOT = Path(__file__).resolve().parents[2]
ADDRESS = "127.0.0.1:9092"
REGISTRY = "http://127.0.0.1:8081"
_MARKER = re.compile(r"^<!--\s*example:\s*sh\b(?P<flags>[^>]*)-->\s*$")
SERVICES = ("schema_registry",)


@dataclass(frozen=True)
class ShBlock:
    """One marked ```sh block."""

    path: Path
    line: int
    text: str
    output_shown: bool
    needs: tuple[str, ...]


def sh_blocks(path: Path) -> list[ShBlock]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        m = _MARKER.match(line.strip())
        if m is None:
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() != "```sh":
            raise AssertionError(f"{path}:{i + 1}: an 'example: sh' marker must be followed by a ```sh block")
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        flags = [f.strip() for f in m.group("flags").split(",") if f.strip()]
        needs: tuple[str, ...] = ()
        for flag in flags:
            if flag.startswith("needs"):
                needs = tuple(flag[len("needs"):].split())
            elif flag != "output shown":
                raise AssertionError(f"{path}:{i + 1}: unknown flag {flag!r} (output shown, needs <service>)")
        unknown = set(needs) - set(SERVICES)
        if unknown:
            raise AssertionError(f"{path}:{i + 1}: unknown service {sorted(unknown)} (known: {SERVICES})")
        out.append(ShBlock(path, i + 3, "\n".join(lines[i + 2:end]) + "\n", "output shown" in flags, needs))
    return out


PAGES = sorted(p for p in (ROOT / "docs").glob("*.md") if sh_blocks(p))


def commands(text: str) -> list[tuple[str, list[str]]]:
    """``(command, the '# ' lines right after it)``; a command ends at a line without a
    trailing backslash (a heredoc runs to its end marker)."""
    out: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].strip() or lines[i].startswith("#"):
            if lines[i].startswith("# ") and out:
                out[-1][1].append(lines[i][2:])
            i += 1
            continue
        start = i
        heredoc = re.search(r"<<'?(\w+)'?", lines[i])
        while lines[i].rstrip().endswith(("\\", "|")):
            i += 1
        if heredoc:
            while lines[i].strip() != heredoc.group(1):
                i += 1
        out.append(("\n".join(lines[start:i + 1]), []))
        i += 1
    return out


def matches(expected: str, printed: str) -> bool:
    """``...`` in a shown line stands for any text."""
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, printed) is not None


def run_shown(command: str, expected: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """Run until the command printed ``len(expected)`` lines (or ended), then Ctrl-C."""
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None
    printed: list[str] = []
    deadline = time.monotonic() + 90
    try:
        while len(printed) < len(expected):
            line = proc.stdout.readline()
            if not line:
                break
            printed.append(line.rstrip("\n"))
            assert time.monotonic() < deadline, f"{command!r} printed {printed} in 90 s"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        _, errors = proc.communicate(timeout=60)
    assert proc.returncode in (0, -signal.SIGINT, 130), f"{command!r} failed ({proc.returncode}): {errors}"
    return printed


@pytest.mark.broker
@pytest.mark.timeout(300)
@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_marked_shell_examples_run_as_written(page: Path, guide_broker: str, request: pytest.FixtureRequest,
                                              tmp_path: Path) -> None:
    blocks = sh_blocks(page)
    registry = request.getfixturevalue("schema_registry").url if any(b.needs for b in blocks) else REGISTRY
    with AdminClient({"bootstrap.servers": guide_broker}) as admin:
        delete_topics(admin, user_topics(admin))
    env = dict(os.environ, B=guide_broker, R=registry,
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for block in blocks:
        text = block.text.replace(ADDRESS, guide_broker).replace(REGISTRY, registry)
        where = f"{block.path.relative_to(ROOT)}:{block.line}"
        if not block.output_shown:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=180)
            assert done.returncode == 0, f"{where} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
            continue
        for command, expected in commands(text):
            if not expected:
                done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                                      text=True, timeout=180)
                assert done.returncode == 0, f"{where}: {command!r} failed:\n{done.stderr}"
                continue
            printed = run_shown(command, expected, tmp_path, env)
            assert len(printed) == len(expected) and all(matches(e, p) for e, p in zip(expected, printed)), \
                f"{where}: {command!r} printed:\n" + "\n".join(printed) + "\nthe page shows:\n" + "\n".join(expected)


def test_the_cli_avro_example_is_marked() -> None:
    # the Avro example's output (keys: null, null, then the Avro key) is checked
    shown = [b for b in sh_blocks(ROOT / "docs" / "cli.md") if b.output_shown]
    assert shown and "--key-deserializer avro" in shown[0].text
