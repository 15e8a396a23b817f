"""The Schema Registry harness without starting it: lock, download, unpack, command line."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from kafkalite.testing.distribution import Artifact, ChecksumMismatchError
from kafkalite.testing.java import JavaRuntime
from kafkalite.testing.registry import (
    CCOMPAT_PATH,
    DEFAULT_REGISTRY_VERSION,
    ApicurioRegistry,
    RegistryDistribution,
    RegistryLock,
    registry_versions,
)


def test_shipped_lock_pins_the_bundle_and_its_published_sha1() -> None:
    assert DEFAULT_REGISTRY_VERSION in registry_versions()
    lock = RegistryLock.load()
    a = lock.artifact
    assert a.coordinate == f"io.apicurio:apicurio-registry-app:{DEFAULT_REGISTRY_VERSION}:all"
    assert a.filename == f"apicurio-registry-app-{DEFAULT_REGISTRY_VERSION}-all.tar.gz"
    assert a.repository_path.startswith("io/apicurio/apicurio-registry-app/")
    assert len(a.sha1 or "") == 40 and len(a.sha256) == 64
    assert a.size > 50_000_000
    assert lock.runner.endswith("-runner.jar") and lock.java == 17


def _bundle(root: Path, runner: str, *, extra: bytes = b"") -> tuple[str, RegistryLock]:
    """A Maven-layout folder holding a tiny tar.gz 'bundle' and a lock that matches it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content in ((runner, b"PK fake jar" + extra), ("lib/dep.jar", b"dep")):
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    data = buffer.getvalue()
    artifact = Artifact(
        "io.example", "registry", "1.0", hashlib.sha256(data).hexdigest(), len(data),
        classifier="all", extension="tar.gz", sha1=hashlib.sha1(data).hexdigest(),
    )
    path = root / artifact.repository_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return root.as_uri(), RegistryLock(artifact, runner, 17)


def test_bundle_is_downloaded_verified_and_unpacked_once(tmp_path: Path) -> None:
    repo, lock = _bundle(tmp_path / "repo", "registry-1.0-runner.jar")
    dist = RegistryDistribution(cache=tmp_path / "cache", repository=repo, lock=lock)
    assert not dist.is_complete()
    dist.ensure()
    assert dist.is_complete()
    assert dist.runner.read_bytes() == b"PK fake jar"
    assert (dist.app / "lib" / "dep.jar").read_bytes() == b"dep"
    assert not (dist.directory / lock.artifact.filename).exists()  # the archive is not kept
    # Once unpacked, the repository is not needed any more.
    (tmp_path / "repo" / lock.artifact.repository_path).unlink()
    assert RegistryDistribution(cache=tmp_path / "cache", repository=repo, lock=lock).ensure().is_complete()


def test_sha1_mismatch_is_refused_and_nothing_is_unpacked(tmp_path: Path) -> None:
    repo, lock = _bundle(tmp_path / "repo", "r-runner.jar")
    bad = RegistryLock(
        Artifact(**{**lock.artifact.__dict__, "sha1": "0" * 40}), lock.runner, lock.java
    )
    dist = RegistryDistribution(cache=tmp_path / "cache", repository=repo, lock=bad)
    with pytest.raises(ChecksumMismatchError, match="expected sha1 0000"):
        dist.ensure()
    assert not dist.app.exists() and not dist.is_complete()
    assert not list(dist.directory.glob(".*part"))


def test_command_line_binds_loopback_and_sets_the_compatibility_rule(tmp_path: Path) -> None:
    repo, lock = _bundle(tmp_path / "repo", "r-runner.jar")
    dist = RegistryDistribution(cache=tmp_path / "cache", repository=repo, lock=lock)
    java = JavaRuntime(Path("/opt/java/bin/java"), 25, "test")
    registry = ApicurioRegistry(run_dir=tmp_path / "run", port=18181, compatibility="full",
                                distribution=dist, java=java)
    argv = registry.command()
    assert argv[0] == "/opt/java/bin/java"
    assert argv[-2:] == ["-jar", str(dist.runner)]
    assert "-Dquarkus.http.host=127.0.0.1" in argv and "-Dquarkus.http.port=18181" in argv
    assert "-Dapicurio.rules.global.compatibility=FULL" in argv
    assert "--enable-native-access=ALL-UNNAMED" in argv  # Java 24+
    assert registry.url == f"http://127.0.0.1:18181{CCOMPAT_PATH}"
    assert registry.client_config() == {"schema.registry.url": registry.url}
    assert not registry.is_running and not registry.probe()
