"""``kafkalite --version`` and ``python -m kafkalite.testing doctor``, run as a user runs
them (the installed console script, a fresh interpreter)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from kafkalite import __version__
from kafkalite.protocol import record_codec
from kafkalite.testing.doctor import extras_lines, extras_of


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)


def test_the_console_tool_prints_its_version():
    tool = Path(sys.executable).parent / ("kafkalite.exe" if sys.platform == "win32" else "kafkalite")
    done = run(str(tool), "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"kafkalite {__version__}\n"


def test_doctor_names_python_platform_version_kernels_extras_and_java():
    done = run(sys.executable, "-m", "kafkalite.testing", "doctor")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"kafkalite {__version__} (")
    assert lines[1].startswith(f"Python {platform.python_version()} (CPython, ")
    assert lines[2].startswith("platform ") and sys.platform in lines[2]
    assert lines[3].startswith(f"kernels: {record_codec.IMPLEMENTATION} (record codec ")
    extras = lines[lines.index("extras:") + 1:-1]
    listed = {line.split()[0] for line in extras}
    declared = set(metadata.distribution("kafkalite").metadata.get_all("Provides-Extra") or [])
    assert listed == declared - {"dev"}
    assert lines[-1].startswith("Java: ")


@pytest.mark.skipif(record_codec.c_impl is None, reason="kafkalite._speedups is not built")
def test_doctor_says_when_the_pure_python_kernels_were_chosen():
    env = {**os.environ, "KAFKALITE_PURE_PYTHON": "1"}
    done = run(sys.executable, "-m", "kafkalite.testing", "doctor", env=env)
    assert "kernels: python (record codec python, producer append python; " \
           "KAFKALITE_PURE_PYTHON chose the pure-Python kernels)" in done.stdout.splitlines()


def test_doctor_says_why_the_c_kernels_are_missing():
    program = ("import sys, runpy; sys.modules['kafkalite._speedups'] = None; "
               "sys.argv = ['doctor', 'doctor']; runpy.run_module('kafkalite.testing', run_name='__main__')")
    done = run(sys.executable, "-c", program)
    [kernels] = [line for line in done.stdout.splitlines() if line.startswith("kernels: ")]
    assert kernels.startswith("kernels: python (record codec python, producer append python; "
                              "the C extension is not installed: ")
    assert "kafkalite._speedups" in kernels


def test_extras_are_read_from_the_metadata_with_versions_or_what_is_missing(tmp_path):
    info = tmp_path / "demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
        "Provides-Extra: fast\nProvides-Extra: odd\nProvides-Extra: dev\n"
        "Requires-Dist: pytest>=8; extra == \"fast\"\n"
        "Requires-Dist: no-such-package-anywhere<2,>=1; extra == 'odd'\n"
        "Requires-Dist: pytest; extra == \"odd\"\n"
        "Requires-Dist: demo[fast,odd]; extra == \"dev\"\n"
        "Requires-Dist: lz4>=4\n"
    )
    dist = metadata.PathDistribution(info)
    assert extras_of(dist) == {"fast": ["pytest"], "odd": ["no-such-package-anywhere", "pytest"],
                               "dev": ["demo"]}
    assert extras_lines(dist) == [
        f"  fast  installed: pytest {metadata.version('pytest')}",
        "  odd   not installed (missing: no-such-package-anywhere)",
    ]
