"""Lock parsing, checksum verification and the jar cache (no network: a file:// repo)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from kafkalite.testing.distribution import (
    COMPAT_KAFKA_VERSION,
    DEFAULT_KAFKA_VERSION,
    Artifact,
    ChecksumMismatchError,
    DistributionError,
    KafkaDistribution,
    KafkaLock,
    available_versions,
)
from kafkalite.testing.paths import cache_dir, state_dir

REQUIRED_TOOLS = {
    "kafka-server-start", "kafka-storage", "kafka-topics", "kafka-configs",
    "kafka-console-consumer", "kafka-console-producer", "kafka-consumer-groups",
    "kafka-acls", "kafka-producer-perf-test", "kafka-consumer-perf-test",
}


def _fake_repo(root: Path, jars: dict[str, bytes]) -> tuple[str, KafkaLock]:
    """A Maven-layout folder with the given jars and a lock that matches them."""
    artifacts = []
    for name, content in jars.items():
        a = Artifact("org.example", name, "1.0", hashlib.sha256(content).hexdigest(), len(content))
        path = root / a.repository_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        artifacts.append(a)
    lock = KafkaLock("9.9.9", "2.13", tuple(artifacts), {"kafka-topics": "x.TopicCommand"})
    return root.as_uri(), lock


@pytest.mark.parametrize("version", [DEFAULT_KAFKA_VERSION, COMPAT_KAFKA_VERSION])
def test_shipped_locks_are_complete(version: str) -> None:
    lock = KafkaLock.load(version)
    assert lock.kafka_version == version
    names = {a.artifact for a in lock.artifacts}
    assert {"kafka_2.13", "kafka-clients", "kafka-tools", "kafka-server", "kafka-storage"} <= names
    assert set(lock.tools) >= REQUIRED_TOOLS
    assert lock.tools["kafka-server-start"] == "kafka.Kafka"
    logging = {"log4j-slf4j-impl", "log4j-core"} if version.startswith("4.") else {"slf4j-reload4j", "reload4j"}
    assert logging <= names
    assert len({a.filename for a in lock.artifacts}) == len(lock.artifacts)  # flat cache


def test_available_versions_lists_the_pins() -> None:
    assert {DEFAULT_KAFKA_VERSION, COMPAT_KAFKA_VERSION} <= set(available_versions())


def test_unknown_version_names_the_available_ones() -> None:
    with pytest.raises(DistributionError, match=r"no lock for Kafka 0\.0\.1.*4\.3\.1"):
        KafkaLock.load("0.0.1")


def test_artifact_paths() -> None:
    a = Artifact("com.github.luben", "zstd-jni", "1.5.6-10", "0" * 64, 1, classifier="linux")
    assert a.filename == "zstd-jni-1.5.6-10-linux.jar"
    assert a.repository_path == "com/github/luben/zstd-jni/1.5.6-10/zstd-jni-1.5.6-10-linux.jar"
    assert a.coordinate == "com.github.luben:zstd-jni:1.5.6-10:linux"


@pytest.mark.parametrize(
    "document, message",
    [
        ({"kafka_version": "1"}, "malformed"),
        ({"kafka_version": "1", "artifacts": []}, "no artifacts"),
        ({"kafka_version": "1", "artifacts": [{"group": "g", "artifact": "a", "version": "1",
                                               "sha256": "abc", "size": 1}]}, "malformed sha256"),
        ({"kafka_version": "1", "artifacts": [{"group": "g", "artifact": "a", "version": "1",
                                               "sha256": "0" * 64, "size": "big"}]}, "malformed"),
    ],
)
def test_malformed_locks_are_refused(document: dict, message: str) -> None:
    with pytest.raises(DistributionError, match=message):
        KafkaLock.parse(document)


def test_download_verifies_and_caches(tmp_path: Path) -> None:
    repo, lock = _fake_repo(tmp_path / "repo", {"one": b"first jar", "two": b"second jar" * 100})
    dist = KafkaDistribution(cache=tmp_path / "cache", repository=repo, lock=lock)
    assert not dist.is_complete()
    seen = []
    assert dist.ensure(progress=seen.append) is dist
    assert dist.is_complete()
    assert sorted(a.artifact for a in seen) == ["one", "two"]
    assert [p.read_bytes()[:5] for p in dist.classpath()] == [b"first", b"secon"]
    assert dist.directory == tmp_path / "cache" / "kafka" / "9.9.9"
    assert not list(dist.libs.glob(".*part"))
    # A second ensure() is a no-op (nothing downloaded again).
    seen.clear()
    dist.ensure(progress=seen.append)
    assert seen == []


def test_corrupted_jar_raises_naming_the_artifact(tmp_path: Path) -> None:
    repo, lock = _fake_repo(tmp_path / "repo", {"good": b"good", "evil": b"original"})
    (tmp_path / "repo" / lock.artifacts[1].repository_path).write_bytes(b"tampered")
    dist = KafkaDistribution(cache=tmp_path / "cache", repository=repo, lock=lock)
    with pytest.raises(ChecksumMismatchError) as info:
        dist.ensure()
    assert info.value.artifact.artifact == "evil"
    assert "org.example:evil:1.0" in str(info.value)
    assert lock.artifacts[1].sha256 in str(info.value)
    assert not (dist.libs / "evil-1.0.jar").exists()  # never renamed into place
    assert not list(dist.libs.glob(".*part"))
    assert not dist.is_complete()


def test_corrupted_cache_file_is_fetched_again(tmp_path: Path) -> None:
    repo, lock = _fake_repo(tmp_path / "repo", {"one": b"0123456789"})
    dist = KafkaDistribution(cache=tmp_path / "cache", repository=repo, lock=lock).ensure()
    (dist.libs / "one-1.0.jar").write_bytes(b"9876543210")  # same size, wrong bytes
    (dist.directory / ".verified").unlink()
    dist.ensure()
    assert (dist.libs / "one-1.0.jar").read_bytes() == b"0123456789"


def test_missing_artifact_names_the_url(tmp_path: Path) -> None:
    repo, lock = _fake_repo(tmp_path / "repo", {"one": b"x"})
    (tmp_path / "repo" / lock.artifacts[0].repository_path).unlink()
    dist = KafkaDistribution(cache=tmp_path / "cache", repository=repo, lock=lock)
    with pytest.raises(DistributionError, match="org.example:one:1.0"):
        dist.ensure()


def test_concurrent_ensure_shares_one_download(tmp_path: Path) -> None:
    repo, lock = _fake_repo(tmp_path / "repo", {f"jar{i}": bytes([i]) * 1000 for i in range(20)})
    downloads = []
    errors = []

    def worker() -> None:
        try:
            KafkaDistribution(cache=tmp_path / "cache", repository=repo, lock=lock).ensure(
                progress=downloads.append
            )
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(downloads) == 20  # each jar fetched once across all workers


def test_mirror_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKALITE_MAVEN_REPO", "https://mirror.example/maven2/")
    monkeypatch.setenv("KAFKALITE_CACHE_DIR", str(tmp_path))
    dist = KafkaDistribution(DEFAULT_KAFKA_VERSION)
    clients = next(a for a in dist.lock.artifacts if a.artifact == "kafka-clients")
    assert dist.url(clients) == (
        f"https://mirror.example/maven2/org/apache/kafka/kafka-clients/{DEFAULT_KAFKA_VERSION}/"
        f"kafka-clients-{DEFAULT_KAFKA_VERSION}.jar"
    )
    assert dist.directory == tmp_path / "kafka" / DEFAULT_KAFKA_VERSION


def test_main_class_lookup() -> None:
    dist = KafkaDistribution(COMPAT_KAFKA_VERSION)
    assert dist.main_class("kafka-console-producer.sh") == "kafka.tools.ConsoleProducer"
    with pytest.raises(DistributionError, match="no tool 'kafka-nope'"):
        dist.main_class("kafka-nope")


def test_cache_and_state_dirs_follow_xdg(tmp_path: Path) -> None:
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "kafkalite"
    assert cache_dir({"KAFKALITE_CACHE_DIR": str(tmp_path / "x")}) == tmp_path / "x"
    assert state_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "kafkalite"
    assert state_dir({"KAFKALITE_STATE_DIR": str(tmp_path / "s")}) == tmp_path / "s"
    assert cache_dir({}).parts[-2:] == (".cache", "kafkalite")
