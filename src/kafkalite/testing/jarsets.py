"""Java programs the harness runs next to the broker, by a committed lock of their jars.

A *jar set* is a Java program from Maven Central that is not Kafka itself: Kafka's
``MiniKdc`` (a KDC for Kerberos tests, whose jars sit on top of the Kafka release's
class path) or ``mock-oauth2-server`` (an OIDC provider). Its lock
(``locks/<name>-<version>.json``, written by ``tools/lock_jarset.py`` from the POMs on
Maven Central) lists every jar with its size, our sha256 and Maven Central's published
sha1, plus the main class and the JVM options the program needs. :class:`JarSet`
downloads the jars into ``<cache>/<name>/<version>/libs/`` with the same verified,
lock-protected download as Kafka's jars.

>>> lock = JarSetLock.load("mock-oauth2-server", "6.0.2")
>>> lock.main_class
'no.nav.security.mock.oauth2.StandaloneMockOAuth2ServerKt'
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kafkalite.testing.distribution import (
    MAVEN_CENTRAL,
    Artifact,
    DistributionError,
    KafkaDistribution,
    _sha256_file,
    download_artifact,
    file_lock,
)
from kafkalite.testing.paths import cache_dir


@dataclass(frozen=True)
class JarSetLock:
    """The pinned jars of one Java program.

    Attributes:
        name / version: e.g. ``"minikdc"`` / ``"4.3.1"``.
        main_class: what ``java -cp ... MAIN`` runs.
        artifacts: the jars, in class-path order.
        kafka_version: when set, the program runs on top of that Kafka release's class
            path (MiniKdc uses Kafka's own utility classes); its jars come first.
        jvm_options: options the program needs (e.g. ``--add-exports``).
        java: the lowest Java feature release the jars run on.
    """

    name: str
    version: str
    main_class: str
    artifacts: tuple[Artifact, ...]
    kafka_version: str | None = None
    jvm_options: tuple[str, ...] = ()
    java: int = 17

    @property
    def digest(self) -> str:
        import hashlib

        h = hashlib.sha256()
        for a in self.artifacts:
            h.update(f"{a.repository_path} {a.sha256}\n".encode())
        return h.hexdigest()[:16]

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> JarSetLock:
        try:
            artifacts = tuple(
                Artifact(group=a["group"], artifact=a["artifact"], version=a["version"],
                         sha256=a["sha256"].lower(), size=int(a["size"]), classifier=a.get("classifier"),
                         sha1=a["sha1"].lower())
                for a in data["artifacts"]
            )
            lock = cls(name=data["name"], version=data["version"], main_class=data["main_class"],
                       artifacts=artifacts, kafka_version=data.get("kafka_version"),
                       jvm_options=tuple(data.get("jvm_options", ())), java=int(data.get("java", 17)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DistributionError(f"malformed jar set lock: {exc!r}") from exc
        for a in artifacts:
            if len(a.sha256) != 64 or len(a.sha1 or "") != 40:
                raise DistributionError(f"malformed checksum for {a.coordinate} in the {lock.name} lock")
        if not artifacts:
            raise DistributionError(f"the {lock.name} lock lists no artifacts")
        return lock

    @classmethod
    def load(cls, name: str, version: str) -> JarSetLock:
        """The lock shipped with kafkalite (``locks/<name>-<version>.json``)."""
        filename = f"{name}-{version}.json"
        try:
            text = resources.files("kafkalite.testing").joinpath("locks").joinpath(filename).read_text()
        except FileNotFoundError:
            raise DistributionError(
                f"no lock {filename} shipped with kafkalite; maintainers add one with "
                f"`python tools/lock_jarset.py {name}`"
            ) from None
        return cls.parse(json.loads(text))


class JarSet:
    """The jars of one :class:`JarSetLock` in the local cache, fetched on demand.

    >>> JarSet(JarSetLock.load("minikdc", "4.3.1")).libs.parts[-3:]     # doctest: +SKIP
    ('minikdc', '4.3.1', 'libs')
    """

    def __init__(self, lock: JarSetLock, *, cache: Path | None = None, repository: str | None = None) -> None:
        self.lock = lock
        self.directory = (cache or cache_dir()) / lock.name / lock.version
        self.libs = self.directory / "libs"
        repo = repository or os.environ.get("KAFKALITE_MAVEN_REPO") or MAVEN_CENTRAL
        self.repository = repo.rstrip("/")
        self._cache = cache

    def __repr__(self) -> str:
        return f"JarSet({self.lock.name!r}, {self.lock.version!r})"

    @property
    def _marker(self) -> Path:
        return self.directory / ".verified"

    def is_complete(self) -> bool:
        try:
            if self._marker.read_text().strip() != self.lock.digest:
                return False
        except OSError:
            return False
        return all(_size(self.libs / a.filename) == a.size for a in self.lock.artifacts)

    def ensure(self) -> JarSet:
        """Download and verify what is missing (and the Kafka release it builds on)."""
        if self.lock.kafka_version:
            KafkaDistribution(self.lock.kafka_version, cache=self._cache).ensure()
        if self.is_complete():
            return self
        self.libs.mkdir(parents=True, exist_ok=True)
        with file_lock(self.directory / ".lock"):
            if self.is_complete():
                return self
            self._marker.unlink(missing_ok=True)
            todo = [a for a in self.lock.artifacts if not self._verified(a)]
            with ThreadPoolExecutor(8, thread_name_prefix=f"{self.lock.name}-jar") as pool:
                list(pool.map(lambda a: download_artifact(
                    a, f"{self.repository}/{a.repository_path}", self.libs / a.filename), todo))
            self._marker.write_text(self.lock.digest + "\n")
        return self

    def classpath(self) -> list[Path]:
        """Kafka's jars first (when the program builds on them), then the lock's."""
        base: list[Path] = []
        if self.lock.kafka_version:
            base = KafkaDistribution(self.lock.kafka_version, cache=self._cache).classpath()
        return base + [self.libs / a.filename for a in self.lock.artifacts]

    def _verified(self, artifact: Artifact) -> bool:
        path = self.libs / artifact.filename
        return _size(path) == artifact.size and _sha256_file(path) == artifact.sha256


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
