"""What pip and PyPI read about kafkalite agrees with itself: the Pythons that
``requires-python`` admits are the ones the classifiers name and cibuildwheel builds
wheels for, and the free-threaded builds are not claimed (docs/free-threading.md)."""

from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest brings tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NEWEST_MINOR = 14  # CPython 3.14: the newest release the wheels are built for


def test_requires_python_classifiers_and_wheel_builds_name_the_same_pythons():
    floor = re.fullmatch(r">=3\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert floor, PYPROJECT["project"]["requires-python"]
    minors = list(range(int(floor.group(1)), NEWEST_MINOR + 1))
    classified = sorted(int(m.group(1)) for c in PYPROJECT["project"]["classifiers"]
                        if (m := re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c)))
    assert classified == minors
    assert PYPROJECT["tool"]["cibuildwheel"]["build"] == [f"cp3{m}-*" for m in minors]


def test_the_wheel_matrix_is_linux_macos_and_windows_on_64_bit_cpus_only():
    cibw = PYPROJECT["tool"]["cibuildwheel"]
    assert cibw["linux"]["archs"] == ["x86_64", "aarch64"]
    assert cibw["macos"]["archs"] == ["x86_64", "arm64"]
    assert cibw["windows"]["archs"] == ["AMD64"]
    assert cibw["manylinux-x86_64-image"] == cibw["manylinux-aarch64-image"] == "manylinux_2_28"
    # "cp314-*" does not select "cp314t-*": no free-threaded wheel is built or claimed
    assert not any("t-" in selector or "freethreading" in selector
                   for selector in [*cibw["build"], *cibw.get("enable", [])])


def test_each_wheel_is_tested_as_installed_with_its_c_kernels():
    cibw = PYPROJECT["tool"]["cibuildwheel"]
    commands = [cibw["test-command"], *(o["test-command"] for o in cibw["overrides"])]
    for command in commands:
        assert command.startswith("python {project}/scripts/ci/installed_wheel.py unit {project}")
    assert (ROOT / "scripts/ci/installed_wheel.py").is_file()
