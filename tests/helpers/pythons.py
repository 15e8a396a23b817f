"""A Python without kafkalite, made for the test instead of assumed.

The tests of what happens where kafkalite is missing (a Spark executor without it) used
the base interpreter and failed wherever that one had kafkalite installed (``pip install
-e .`` into the system Python, a wheel user's machine). A venv without system site
packages, made from the base interpreter, has the standard library and nothing else,
whatever the base Python has installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def python_without_kafkalite(where: Path) -> Path:
    """A new venv under ``where`` (no pip, no site packages); its ``bin/python``.

    Fails, naming the output, if that Python can import kafkalite after all."""
    env = where / "bare_python"
    # sys._base_executable: the interpreter the running venv was made from (the
    # environment's own bin/python would link the new venv to the same base anyway).
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120,
                   env={"PATH": os.environ.get("PATH", "")})
    python = env / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import kafkalite"], capture_output=True, text=True,
                           env={"PATH": os.environ.get("PATH", "")})
    assert probe.returncode != 0 and "No module named 'kafkalite'" in probe.stderr, probe.stderr
    return python
