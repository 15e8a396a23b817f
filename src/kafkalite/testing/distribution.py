"""Apache Kafka's release jars: the lock file, the download and the local cache.

A lock (``locks/kafka-<version>.json``, written by ``tools/lock_kafka.py``) lists
every jar a release needs to run its broker and its Java tools, with size and
sha256. :class:`KafkaDistribution` fetches them from Maven Central (or the mirror
named by ``KAFKALITE_MAVEN_REPO``) into ``<cache>/kafka/<version>/libs/``, checks each
checksum while it streams, and renames a jar into place only once it is verified,
so a half-written or tampered file is never used. A file lock makes concurrent
processes (pytest-xdist workers, two terminals) share one download.

>>> dist = KafkaDistribution("4.3.1").ensure()     # doctest: +SKIP
>>> dist.classpath()[0].name                       # doctest: +SKIP
'lz4-java-1.10.2.jar'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from kafkalite.testing.paths import cache_dir

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; concurrent first downloads may race
    fcntl = None  # type: ignore[assignment]  # the module or None: checked before each use

DEFAULT_KAFKA_VERSION = "4.4.0"
"""The release the harness runs unless told otherwise."""

COMPAT_KAFKA_VERSION = "3.9.1"
"""The 3.x release kept for compatibility tests."""

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"

_DOWNLOAD_THREADS = 8
_ATTEMPTS = 3
_CHUNK = 1 << 16


class DistributionError(RuntimeError):
    """The Kafka jars could not be found, fetched or verified.

    Example::

        try:
            KafkaDistribution("0.0.1")                # no lock ships for this version
        except DistributionError as exc:
            print(exc)                                # no lock for Kafka 0.0.1; available: ...
    """


class ChecksumMismatchError(DistributionError):
    """A downloaded jar does not match the checksum recorded in the lock.

    Example::

        jar = Artifact("org.apache.kafka", "kafka-clients", "4.0.0", sha256="0" * 64, size=1)
        error = ChecksumMismatchError(jar, "https://repo.example/kafka-clients-4.0.0.jar", "f" * 64)
        assert isinstance(error, DistributionError)
        print(error)
    """

    def __init__(self, artifact: Artifact, url: str, actual: str, algorithm: str = "sha256") -> None:
        self.artifact = artifact
        self.url = url
        self.actual = actual
        expected = artifact.sha1 if algorithm == "sha1" else artifact.sha256
        super().__init__(
            f"checksum mismatch for {artifact.coordinate} from {url}: "
            f"expected {algorithm} {expected}, got {actual}. The file was not used; "
            "if KAFKALITE_MAVEN_REPO points at a mirror, check that it serves the "
            "original Maven Central artifacts."
        )


@dataclass(frozen=True)
class Artifact:
    """One file of a Maven repository (a jar of a Kafka release, or another bundle).

    ``extension`` is ``"jar"`` for Kafka's jars; ``sha1``, when recorded, is Maven
    Central's published checksum and is verified too (the Schema Registry bundle).

    >>> a = Artifact("org.apache.kafka", "kafka-clients", "4.3.1", sha256="00", size=1)
    >>> a.repository_path
    'org/apache/kafka/kafka-clients/4.3.1/kafka-clients-4.3.1.jar'

    Example::

        jar = KafkaLock.load(DEFAULT_KAFKA_VERSION).artifacts[0]
        print(jar.coordinate, jar.size, jar.sha256[:12])
    """

    group: str
    artifact: str
    version: str
    sha256: str
    size: int
    classifier: str | None = None
    extension: str = "jar"
    sha1: str | None = None

    @property
    def filename(self) -> str:
        """The jar's file name (``artifact-version[-classifier].extension``).

        Example::

            jar = Artifact("org.apache.kafka", "kafka_2.13", "4.0.0", sha256="0" * 64, size=1, classifier="test")
            assert jar.filename == "kafka_2.13-4.0.0-test.jar"
        """
        suffix = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{suffix}.{self.extension}"

    @property
    def repository_path(self) -> str:
        """The path of the jar below a Maven repository's root.

        Example::

            jar = Artifact("org.apache.kafka", "kafka-clients", "4.0.0", sha256="0" * 64, size=1)
            assert jar.repository_path == "org/apache/kafka/kafka-clients/4.0.0/kafka-clients-4.0.0.jar"
        """
        group = self.group.replace(".", "/")
        return f"{group}/{self.artifact}/{self.version}/{self.filename}"

    @property
    def coordinate(self) -> str:
        """``group:artifact:version[:classifier]``, the name Maven users know it by.

        Example::

            jar = Artifact("org.apache.kafka", "kafka-clients", "4.0.0", sha256="0" * 64, size=1)
            assert jar.coordinate == "org.apache.kafka:kafka-clients:4.0.0"
        """
        tail = f":{self.classifier}" if self.classifier else ""
        return f"{self.group}:{self.artifact}:{self.version}{tail}"


@dataclass(frozen=True)
class KafkaLock:
    """The parsed lock of one Kafka release.

    Attributes:
        kafka_version: e.g. ``"4.3.1"``.
        artifacts: every jar of the runtime class path.
        tools: Kafka ``bin/`` script name -> main class (``"kafka-topics"`` ->
            ``"org.apache.kafka.tools.TopicCommand"``), verified against the jars when
            the lock was written.

    Example::

        lock = KafkaLock.load(DEFAULT_KAFKA_VERSION)
        print(lock.kafka_version, lock.scala_version, len(lock.artifacts))
    """

    kafka_version: str
    scala_version: str
    artifacts: tuple[Artifact, ...]
    tools: Mapping[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """A short fingerprint of the jar set; it marks a cache as verified.

        Example::

            assert KafkaLock.load(DEFAULT_KAFKA_VERSION).digest == KafkaLock.load(DEFAULT_KAFKA_VERSION).digest
        """
        h = hashlib.sha256()
        for a in self.artifacts:
            h.update(f"{a.repository_path} {a.sha256}\n".encode())
        return h.hexdigest()[:16]

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> KafkaLock:
        """Build a lock from its JSON document, refusing malformed entries.

        Example::

            try:
                KafkaLock.parse({"kafka_version": "4.0.0"})      # no artifacts
            except DistributionError as exc:
                print(exc)                                # malformed Kafka lock: ...
        """
        try:
            artifacts = tuple(
                Artifact(
                    group=a["group"],
                    artifact=a["artifact"],
                    version=a["version"],
                    sha256=a["sha256"].lower(),
                    size=int(a["size"]),
                    classifier=a.get("classifier"),
                )
                for a in data["artifacts"]
            )
            lock = cls(
                kafka_version=data["kafka_version"],
                scala_version=data.get("scala_version", "2.13"),
                artifacts=artifacts,
                tools=dict(data.get("tools", {})),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DistributionError(f"malformed Kafka lock: {exc!r}") from exc
        for a in artifacts:
            if len(a.sha256) != 64 or any(c not in "0123456789abcdef" for c in a.sha256):
                raise DistributionError(f"malformed sha256 for {a.coordinate} in the Kafka lock")
        if not artifacts:
            raise DistributionError("the Kafka lock lists no artifacts")
        return lock

    @classmethod
    def load(cls, version: str) -> KafkaLock:
        """The lock shipped with kafkalite for ``version``.

        Example::

            assert KafkaLock.load(DEFAULT_KAFKA_VERSION).kafka_version == DEFAULT_KAFKA_VERSION
        """
        name = f"kafka-{version}.json"
        try:
            text = resources.files("kafkalite.testing").joinpath("locks").joinpath(name).read_text()
        except FileNotFoundError:
            raise DistributionError(
                f"no lock for Kafka {version}; available: {', '.join(available_versions())}. "
                "Maintainers add one with `python tools/lock_kafka.py VERSION`."
            ) from None
        return cls.parse(json.loads(text))


def available_versions() -> list[str]:
    """Kafka versions with a lock shipped in this kafkalite.

    Example::

        assert DEFAULT_KAFKA_VERSION in available_versions()
    """
    folder = resources.files("kafkalite.testing").joinpath("locks")
    names = [p.name for p in folder.iterdir() if p.name.startswith("kafka-")]
    versions = (n[len("kafka-") : -len(".json")] for n in names)
    return sorted(versions, key=lambda v: tuple(int(x) for x in v.split(".")))


ProgressCallback = Callable[[Artifact], None]


class KafkaDistribution:
    """The jars of one Kafka release in the local cache, fetched on demand.

    Args:
        version: Kafka release with a shipped lock (``available_versions()``).
        cache: cache root; default :func:`kafkalite.testing.paths.cache_dir`.
        repository: Maven repository root URL; default ``$KAFKALITE_MAVEN_REPO`` or
            Maven Central.
        lock: use this lock instead of the shipped one (tests, mirrors).

    >>> dist = KafkaDistribution("3.9.1")
    >>> dist.directory.name
    '3.9.1'

    Example::

        jars = KafkaDistribution(DEFAULT_KAFKA_VERSION).ensure()    # downloads what the cache lacks
        assert jars.is_complete()
    """

    def __init__(
        self,
        version: str = DEFAULT_KAFKA_VERSION,
        *,
        cache: Path | None = None,
        repository: str | None = None,
        lock: KafkaLock | None = None,
    ) -> None:
        self.lock = lock or KafkaLock.load(version)
        self.version = self.lock.kafka_version
        self.directory = (cache or cache_dir()) / "kafka" / self.version
        self.libs = self.directory / "libs"
        repo = repository or os.environ.get("KAFKALITE_MAVEN_REPO") or MAVEN_CENTRAL
        self.repository = repo.rstrip("/")

    def __repr__(self) -> str:
        return f"KafkaDistribution({self.version!r}, directory={str(self.directory)!r})"

    @property
    def _marker(self) -> Path:
        return self.directory / ".verified"

    def is_complete(self) -> bool:
        """True if every jar is in the cache and the set was verified before.

        Cheap (no hashing): the marker holds the lock digest written after a full
        verification, and sizes catch truncated files.

        Example::

            assert KafkaDistribution(DEFAULT_KAFKA_VERSION).is_complete()
        """
        try:
            if self._marker.read_text().strip() != self.lock.digest:
                return False
        except OSError:
            return False
        return all(self._size(self.libs / a.filename) == a.size for a in self.lock.artifacts)

    def ensure(self, progress: ProgressCallback | None = None) -> KafkaDistribution:
        """Download and verify whatever is missing; return ``self``.

        Safe to call from several processes at once: the first holds a file lock
        while it downloads, the others wait and then find a complete cache.

        Example::

            KafkaDistribution(DEFAULT_KAFKA_VERSION).ensure(progress=None)   # verified: nothing to do
        """
        if self.is_complete():
            return self
        self.libs.mkdir(parents=True, exist_ok=True)
        with self._file_lock():
            if self.is_complete():
                return self
            self._marker.unlink(missing_ok=True)
            todo = [a for a in self.lock.artifacts if not self._verified(a)]
            if todo:
                with ThreadPoolExecutor(_DOWNLOAD_THREADS, thread_name_prefix="kafka-jar") as pool:
                    # list() re-raises the first download error here.
                    list(pool.map(lambda a: self._download(a, progress), todo))
            self._marker.write_text(self.lock.digest + "\n")
        return self

    def classpath(self) -> list[Path]:
        """The jars, in lock order; call :meth:`ensure` first.

        Example::

            jars = KafkaDistribution(DEFAULT_KAFKA_VERSION).ensure().classpath()
            assert all(path.suffix == ".jar" for path in jars)
        """
        return [self.libs / a.filename for a in self.lock.artifacts]

    def main_class(self, tool: str) -> str:
        """Main class of a Kafka ``bin/`` script in this release (``"kafka-topics"``).

        Example::

            assert KafkaDistribution(DEFAULT_KAFKA_VERSION).main_class("kafka-topics") == "org.apache.kafka.tools.TopicCommand"
        """
        name = tool.removesuffix(".sh")
        try:
            return self.lock.tools[name]
        except KeyError:
            raise DistributionError(
                f"Kafka {self.version} has no tool {tool!r}; known: {', '.join(sorted(self.lock.tools))}"
            ) from None

    def url(self, artifact: Artifact) -> str:
        """Where an artifact is downloaded from (Maven Central).

        Example::

            dist = KafkaDistribution(DEFAULT_KAFKA_VERSION)
            assert dist.url(KafkaLock.load(DEFAULT_KAFKA_VERSION).artifacts[0]).startswith("https://")
        """
        return f"{self.repository}/{artifact.repository_path}"

    # -- internals ---------------------------------------------------------------

    @staticmethod
    def _size(path: Path) -> int:
        try:
            return path.stat().st_size
        except OSError:
            return -1

    def _verified(self, artifact: Artifact) -> bool:
        path = self.libs / artifact.filename
        if self._size(path) != artifact.size:
            return False
        return _sha256_file(path) == artifact.sha256

    def _file_lock(self) -> contextlib.AbstractContextManager[None]:
        return file_lock(self.directory / ".lock")

    def _download(self, artifact: Artifact, progress: ProgressCallback | None) -> None:
        download_artifact(artifact, self.url(artifact), self.libs / artifact.filename)
        if progress is not None:
            progress(artifact)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block.

    Without ``fcntl`` (Windows) the block runs unlocked: two processes may then download
    the same file at once, each verified and renamed into place atomically.
    """
    with path.open("a") as handle:
        if fcntl is None:
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def download_artifact(artifact: Artifact, url: str, target: Path) -> None:
    """Fetch ``url`` to ``target``, verified against the artifact's checksums.

    Retries transient failures; streams into a temp file in the same folder and
    renames it into place only once its sha256 (and sha1, if recorded) match, so a
    half-written or tampered file is never used.
    """
    # Unique temp name in the same folder: os.replace is then an atomic rename.
    tmp = target.with_name(f".{artifact.filename}.{os.getpid()}.part")
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            sha256, sha1 = _fetch(url, tmp)
            break
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            tmp.unlink(missing_ok=True)
            if isinstance(exc, urllib.error.HTTPError) and exc.code == 404:
                raise DistributionError(f"{artifact.coordinate} not found at {url}") from exc
            if attempt == _ATTEMPTS:
                raise DistributionError(
                    f"could not download {artifact.coordinate} from {url}: {exc}"
                ) from exc
            time.sleep(0.5 * 2**attempt)
    if sha256 != artifact.sha256:
        tmp.unlink(missing_ok=True)
        raise ChecksumMismatchError(artifact, url, sha256)
    if artifact.sha1 is not None and sha1 != artifact.sha1:
        tmp.unlink(missing_ok=True)
        raise ChecksumMismatchError(artifact, url, sha1, "sha1")
    os.replace(tmp, target)


def _fetch(url: str, dest: Path) -> tuple[str, str]:
    """Stream ``url`` into ``dest``; return the sha256 and sha1 of what was written."""
    digest = hashlib.sha256()
    digest1 = hashlib.sha1()
    request = urllib.request.Request(url, headers={"User-Agent": "kafkalite-testing"})
    with urllib.request.urlopen(request, timeout=60) as response, dest.open("wb") as out:
        for chunk in iter(lambda: response.read(_CHUNK), b""):
            digest.update(chunk)
            digest1.update(chunk)
            out.write(chunk)
    return digest.hexdigest(), digest1.hexdigest()


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
