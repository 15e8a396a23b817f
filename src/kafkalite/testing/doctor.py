"""``python -m kafkalite.testing doctor``: what this installation of kafkalite has.

Prints the Python and the platform, kafkalite's version and where it is imported from,
which kernels are active (the C extension or pure Python, and why), which of the
package's extras are installed (with the versions of what they bring) and the Java
runtime the test harness would run Kafka with. It is what to paste into a bug report.

Example::

    $ python -m kafkalite.testing doctor
    kafkalite 0.1.0 (/home/me/.venv/lib/python3.12/site-packages/kafkalite)
    Python 3.12.1 (CPython, /home/me/.venv/bin/python)
    platform Linux-6.1.0-x86_64-with-glibc2.36 (linux, x86_64)
    kernels: c (record codec c, producer append c; kafkalite/_speedups.cpython-312-x86_64-linux-gnu.so)
    extras:
      avro        installed: fastavro 1.10.0
      gssapi      not installed (missing: gssapi)
      ...
    Java: 17 (/usr/bin/java, from PATH)
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from kafkalite.testing.java import JavaNotFoundError, find_java

# Extras that only gather others for development (their requirements name kafkalite
# itself) say nothing about what a user can do.
_AGGREGATE_EXTRAS = frozenset({"dev"})
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def extras_of(dist: metadata.Distribution) -> dict[str, list[str]]:
    """Each extra of ``dist`` and the distributions it requires, from its metadata."""
    extras: dict[str, list[str]] = {
        name: [] for name in dist.metadata.get_all("Provides-Extra") or []
    }
    for requirement in dist.requires or []:
        marker = _EXTRA_MARKER.search(requirement)
        name = _NAME.match(requirement)
        if marker is None or name is None or marker.group(1) not in extras:
            continue
        extras[marker.group(1)].append(name.group(1))
    return extras


def _version_of(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def extras_lines(dist: metadata.Distribution) -> list[str]:
    """One line per extra: installed (with each requirement's version) or what is missing."""
    lines = []
    extras = {k: v for k, v in extras_of(dist).items() if k not in _AGGREGATE_EXTRAS}
    width = max((len(name) for name in extras), default=0)
    for extra, names in extras.items():
        versions = {name: _version_of(name) for name in dict.fromkeys(names)}
        missing = [name for name, version in versions.items() if version is None]
        if missing:
            lines.append(f"  {extra:<{width}}  not installed (missing: {', '.join(missing)})")
        else:
            found = ", ".join(f"{name} {version}" for name, version in versions.items())
            lines.append(f"  {extra:<{width}}  installed: {found}")
    return lines


def kernels_line() -> str:
    """Which kernels run, and why pure Python when it is."""
    from kafkalite.producer import append_kernel
    from kafkalite.protocol import record_codec

    active = (f"record codec {record_codec.IMPLEMENTATION}, "
              f"producer append {append_kernel.IMPLEMENTATION}")
    overall = "c" if record_codec.IMPLEMENTATION == append_kernel.IMPLEMENTATION == "c" else "python"
    if record_codec.c_impl is None:
        why = f"the C extension is not installed: {record_codec.c_import_error}"
    elif record_codec.IMPLEMENTATION == "python":
        why = "KAFKALITE_PURE_PYTHON chose the pure-Python kernels"
    else:
        where = Path(record_codec.c_impl.__file__ or "?")
        why = f"kafkalite/{where.name}"
    return f"kernels: {overall} ({active}; {why})"


def java_line(env: Mapping[str, str] | None = None) -> str:
    """The Java the harness would run Kafka with, or why there is none."""
    try:
        runtime = find_java(env=env)
    except JavaNotFoundError as exc:
        return f"Java: not found ({exc})"
    return f"Java: {runtime.version} ({runtime.executable}, from {runtime.source})"


def report(env: Mapping[str, str] | None = None) -> list[str]:
    """The doctor's lines, as printed."""
    import kafkalite

    env = os.environ if env is None else env
    dist = metadata.distribution("kafkalite")
    location = Path(kafkalite.__file__ or "?").parent
    lines = [
        f"kafkalite {kafkalite.__version__} ({location})",
        f"Python {platform.python_version()} ({platform.python_implementation()}, {sys.executable})",
        f"platform {platform.platform()} ({sys.platform}, {platform.machine()})",
        kernels_line(),
        "extras:",
        *extras_lines(dist),
        java_line(env),
    ]
    if env.get("KAFKALITE_PURE_PYTHON"):
        lines.append(f"KAFKALITE_PURE_PYTHON={env['KAFKALITE_PURE_PYTHON']}")
    return lines
