"""A real Schema Registry for tests and demos: Apicurio Registry on loopback.

Apicurio Registry serves the Confluent-compatible REST API under
``/apis/ccompat/v7``, so kafkalite's serdes (and confluent-kafka's) talk to it as to
Confluent's Schema Registry. Like Kafka's jars, its release bundle comes from Maven
Central (``io.apicurio:apicurio-registry-app:<version>:all@tar.gz``) by a committed
lock (``locks/apicurio-registry-<version>.json``: size, Maven Central's published
sha1 and our sha256), is verified while it streams, unpacked once into
``<cache>/apicurio-registry/<version>/`` and run with the same Java as the broker
(``java -jar ...-runner.jar``, Java >= 17, in-memory storage). Maven itself cannot
resolve the artifact (its parent POM is not on Maven Central), hence the direct
download.

>>> with ApicurioRegistry() as registry:                        # doctest: +SKIP
...     registry.url
'http://127.0.0.1:40555/apis/ccompat/v7'

The process is tied to the test run like a broker (killed if the test process
dies); ``python -m kafkalite.testing registry up`` starts a detached one for demos.
``KAFKALITE_SCHEMA_REGISTRY_URL`` makes the pytest fixture use an existing registry
instead (a Confluent Schema Registry, for instance).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

from kafkalite.testing import processes
from kafkalite.testing.broker_process import tail
from kafkalite.testing.distribution import (
    MAVEN_CENTRAL,
    Artifact,
    DistributionError,
    download_artifact,
    file_lock,
)
from kafkalite.testing.java import JavaRuntime, find_java
from kafkalite.testing.paths import cache_dir
from kafkalite.testing.ports import free_port

DEFAULT_REGISTRY_VERSION = "3.0.9"
"""The Apicurio Registry release the harness runs (Java 17+; 3.3.x needs Java 21+)."""

CCOMPAT_PATH = "/apis/ccompat/v7"
"""Where Apicurio serves the Confluent-compatible API."""

SCHEMA_REGISTRY_URL_ENV = "KAFKALITE_SCHEMA_REGISTRY_URL"


class RegistryStartError(RuntimeError):
    """The Schema Registry did not become ready; the message carries its log tail.

    Example (not run: starts, stops or breaks a Schema Registry of its own; tests/integration/test_schema_registry_server.py runs these)::

        try:
            ApicurioRegistry(port=kafka_broker.port).start(timeout=60)   # the port is taken
        except RegistryStartError as exc:
            print(exc)                                # carries the registry's log tail
    """


@dataclass(frozen=True)
class RegistryLock:
    """The pinned bundle of one Apicurio Registry release."""

    artifact: Artifact
    runner: str
    java: int

    @classmethod
    def load(cls, version: str = DEFAULT_REGISTRY_VERSION) -> RegistryLock:
        name = f"apicurio-registry-{version}.json"
        try:
            text = resources.files("kafkalite.testing").joinpath("locks").joinpath(name).read_text()
        except FileNotFoundError:
            raise DistributionError(
                f"no lock for Apicurio Registry {version}; available: {', '.join(registry_versions())}"
            ) from None
        try:
            data = json.loads(text)
            artifact = Artifact(
                group=data["group"],
                artifact=data["artifact"],
                version=data["version"],
                sha256=data["sha256"].lower(),
                size=int(data["size"]),
                classifier=data.get("classifier"),
                extension=data["extension"],
                sha1=data["sha1"].lower(),
            )
            return cls(artifact, data["runner"], int(data.get("java", 17)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DistributionError(f"malformed Apicurio Registry lock {name}: {exc!r}") from exc


def registry_versions() -> list[str]:
    """Apicurio Registry versions with a lock shipped in this kafkalite."""
    folder = resources.files("kafkalite.testing").joinpath("locks")
    prefix = "apicurio-registry-"
    return sorted(p.name[len(prefix) : -len(".json")] for p in folder.iterdir() if p.name.startswith(prefix))


class RegistryDistribution:
    """The unpacked Apicurio Registry bundle in the local cache, fetched on demand.

    >>> RegistryDistribution().directory.name
    '3.0.9'
    """

    def __init__(
        self,
        version: str = DEFAULT_REGISTRY_VERSION,
        *,
        cache: Path | None = None,
        repository: str | None = None,
        lock: RegistryLock | None = None,
    ) -> None:
        self.lock = lock or RegistryLock.load(version)
        self.version = self.lock.artifact.version
        self.directory = (cache or cache_dir()) / "apicurio-registry" / self.version
        self.app = self.directory / "app"
        repo = repository or os.environ.get("KAFKALITE_MAVEN_REPO") or MAVEN_CENTRAL
        self.url = f"{repo.rstrip('/')}/{self.lock.artifact.repository_path}"

    def __repr__(self) -> str:
        return f"RegistryDistribution({self.version!r}, directory={str(self.directory)!r})"

    @property
    def runner(self) -> Path:
        """The Quarkus runner jar (``java -jar`` it)."""
        return self.app / self.lock.runner

    @property
    def _marker(self) -> Path:
        return self.directory / ".verified"

    def is_complete(self) -> bool:
        """True once the verified bundle was unpacked (cheap: a marker and the jar)."""
        try:
            marker = self._marker.read_text().strip()
        except OSError:
            return False
        return marker == self.lock.artifact.sha256 and self.runner.is_file()

    def ensure(self) -> RegistryDistribution:
        """Download, verify and unpack the bundle unless the cache has it; return ``self``.

        Several processes may call it at once: one downloads under a file lock, the
        others wait and find it done.
        """
        if self.is_complete():
            return self
        self.directory.mkdir(parents=True, exist_ok=True)
        with file_lock(self.directory / ".lock"):
            if self.is_complete():
                return self
            self._marker.unlink(missing_ok=True)
            archive = self.directory / self.lock.artifact.filename
            download_artifact(self.lock.artifact, self.url, archive)
            staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=self.directory))
            try:
                with tarfile.open(archive, "r:gz") as tar:
                    # The "data" filter refuses absolute paths, links out of the tree
                    # and device files (Python >= 3.10.12 / 3.11.4 have it).
                    if hasattr(tarfile, "data_filter"):
                        tar.extractall(staging, filter="data")
                    else:  # pragma: no cover - old patch releases
                        tar.extractall(staging)  # the archive was verified
                if not (staging / self.lock.runner).is_file():
                    raise DistributionError(f"{archive.name} holds no {self.lock.runner}")
                shutil.rmtree(self.app, ignore_errors=True)
                os.replace(staging, self.app)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
                archive.unlink(missing_ok=True)
            self._marker.write_text(self.lock.artifact.sha256 + "\n")
        return self


class ApicurioRegistry:
    """An Apicurio Registry process on a loopback port (in-memory storage).

    Args:
        version: release with a shipped lock (:func:`registry_versions`).
        run_dir: where its log goes; default a temp directory deleted by :meth:`close`.
        port: HTTP port; default a free one.
        compatibility: the global compatibility rule (``BACKWARD`` like Confluent's
            default; ``NONE`` to switch the check off).
        heap: the JVM's ``-Xmx`` (it needs about 220 MB).
        tied: die with the current process (tests); False detaches it (the CLI).

    Attributes:
        url: the Confluent-compatible API root, the value of ``schema.registry.url``.
        base_url: ``http://127.0.0.1:PORT`` (Apicurio's own API and UI paths below it).

    Example (not run: starts, stops or breaks a Schema Registry of its own; tests/integration/test_schema_registry_server.py runs these)::

        with ApicurioRegistry() as registry:          # in memory, on a free loopback port
            print(registry.url)
    """

    def __init__(
        self,
        version: str = DEFAULT_REGISTRY_VERSION,
        *,
        run_dir: Path | None = None,
        port: int | None = None,
        compatibility: str = "BACKWARD",
        heap: str = "384m",
        tied: bool = True,
        distribution: RegistryDistribution | None = None,
        java: JavaRuntime | None = None,
    ) -> None:
        self.version = version
        self.compatibility = compatibility.upper()
        self.heap = heap
        self.tied = tied
        self._owns_run_dir = run_dir is None
        self.run_dir = Path(run_dir or tempfile.mkdtemp(prefix="kafkalite-registry-"))
        self._auto_port = port is None
        self.port = port or free_port()
        self._distribution = distribution
        self._java = java
        self.process: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"<ApicurioRegistry {self.version} {self.url} {state}>"

    @property
    def host(self) -> str:
        """The address it listens on (loopback).

        Example (needs schema_registry)::

            assert schema_registry.host == "127.0.0.1"
        """
        return "127.0.0.1"

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the registry.

        Example (needs schema_registry)::

            assert schema_registry.url.startswith(schema_registry.base_url)
        """
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/apis/ccompat/v7``: give it as ``schema.registry.url``.

        Example (needs schema_registry)::

            assert SchemaRegistryClient(schema_registry.url).get_schema_types()
        """
        return self.base_url + CCOMPAT_PATH

    def client_config(self) -> dict[str, str]:
        """``{"schema.registry.url": url}``, ready to merge into a serde's config.

        Example (needs schema_registry)::

            serializer = AvroSerializer('"string"', schema_registry.client_config())
            assert serializer.serialize("names", "ada")[0] == 0
        """
        return {"schema.registry.url": self.url}

    @property
    def log_path(self) -> Path:
        """The registry's log file.

        Example (needs schema_registry)::

            assert schema_registry.log_path.exists()
        """
        return self.run_dir / "logs" / "registry.log"

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` of its log, for a test's failure message.

        Example (needs schema_registry)::

            print(schema_registry.log_tail(5))
        """
        return f"--- {self.log_path} ---\n{tail(self.log_path, lines)}"

    @property
    def distribution(self) -> RegistryDistribution:
        """The registry's jars (downloaded and checksummed on first use).

        Example (needs schema_registry)::

            print(schema_registry.distribution)           # the registry's jars, cached
        """
        if self._distribution is None:
            self._distribution = RegistryDistribution(self.version)
        return self._distribution.ensure()

    @property
    def java(self) -> JavaRuntime:
        """The Java runtime that runs it.

        Example (needs schema_registry)::

            assert schema_registry.java.version >= 17
        """
        if self._java is None:
            self._java = find_java(RegistryLock.load(self.version).java)
        return self._java

    def command(self) -> list[str]:
        """The registry's java command line.

        Example (needs schema_registry)::

            assert "java" in schema_registry.command()[0]
        """
        options = [
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",  # one small heap; no GC threads competing for 2 cores
            "-XX:TieredStopAtLevel=1",  # starts faster; plenty fast for tests
            "-Djava.awt.headless=true",
            f"-Dquarkus.http.host={self.host}",
            f"-Dquarkus.http.port={self.port}",
            f"-Dapicurio.rules.global.compatibility={self.compatibility}",
            "-Dquarkus.log.console.color=false",
            # Access and audit lines for every request would bury the errors.
            "-Dquarkus.log.level=WARN",
        ]
        if self.java.version >= 24:
            options.append("--enable-native-access=ALL-UNNAMED")
        return [str(self.java.executable), *options, "-jar", str(self.distribution.runner)]

    @property
    def is_running(self) -> bool:
        """True while its process runs.

        Example (needs schema_registry)::

            assert schema_registry.is_running
        """
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        """The process id, or None before ``start()``.

        Example (needs schema_registry)::

            assert schema_registry.pid
        """
        return self.process.pid if self.process is not None else None

    def start(self, *, timeout: float = 120.0) -> ApicurioRegistry:
        """Start the JVM and wait until the ccompat API answers.

        A registry whose port was chosen automatically retries on a fresh port if
        another process took it in the meantime.

        Example (not run: starts, stops or breaks a Schema Registry of its own; tests/integration/test_schema_registry_server.py runs these)::

            registry = ApicurioRegistry().start(timeout=120)
            SchemaRegistryClient(registry.url).get_subjects()
            registry.close()
        """
        for attempt in range(3):
            self.launch()
            try:
                self.wait_ready(timeout)
                return self
            except RegistryStartError as exc:
                if not (self._auto_port and attempt < 2 and "in use" in str(exc)):
                    raise
                self.port = free_port()
        return self

    def launch(self) -> None:
        """Start the JVM without waiting.

        Example (not run: starts, stops or breaks a Schema Registry of its own; tests/integration/test_schema_registry_server.py runs these)::

            registry = ApicurioRegistry()
            registry.launch()                             # no waiting: start other things meanwhile
            registry.wait_ready(timeout=120)
            registry.close()
        """
        if self.is_running:
            return
        command = self.command()  # fetches the bundle first, outside the timing
        self.process = processes.spawn(
            command,
            log_path=self.log_path,
            cwd=self.run_dir,
            tied=self.tied,
            description=f"apicurio-registry {self.version} {self.base_url}",
        )

    def probe(self) -> bool:
        """One readiness check: ``GET <url>/subjects`` answers 200.

        Example (needs schema_registry)::

            assert schema_registry.probe()                # GET /subjects answers 200
        """
        try:
            with urllib.request.urlopen(self.url + "/subjects", timeout=2.0) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait until the registry answers, for at most ``timeout`` seconds (RegistryStartError with its log if not).

        Example (needs schema_registry)::

            schema_registry.wait_ready(timeout=30)        # returns at once: it answers
        """
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                self._fail(f"exited with code {self.process.returncode}")
            if self.probe():
                return
            if time.monotonic() > deadline:
                self._fail(f"not ready after {timeout:.0f} s")
            time.sleep(0.1)

    def _fail(self, what: str) -> None:
        text = self.log_tail(60)
        if self.is_running:
            self.kill()
        hint = " (port in use)" if "in use" in text.lower() else ""
        raise RegistryStartError(f"Apicurio Registry {self.version} at {self.base_url} {what}{hint}.\n{text}")

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``.

        Example (not run: starts, stops or breaks a Schema Registry of its own; tests/integration/test_schema_registry_server.py runs these)::

            registry = ApicurioRegistry().start()
            registry.stop(timeout=20)
        """
        return processes.stop_spawned(self.process, timeout)

    def kill(self) -> int | None:
        """Kill the process at once; its exit code, or None if it was not started.

        Example (not run: starts, stops or breaks a Schema Registry of its own; tests/integration/test_schema_registry_server.py runs these)::

            registry = ApicurioRegistry().start()
            registry.kill()
        """
        return processes.kill_spawned(self.process)

    def close(self, *, remove: bool | None = None) -> None:
        """Stop (the in-memory schemas are gone) and delete an owned run dir.

        Example (not run: starts, stops or breaks a Schema Registry of its own; tests/integration/test_schema_registry_server.py runs these)::

            registry = ApicurioRegistry().start()
            registry.close()                              # the schemas are gone with it
        """
        self.stop(timeout=5.0)
        if remove if remove is not None else self._owns_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> ApicurioRegistry:
        if not self.is_running:
            self.start()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class ExternalSchemaRegistry:
    """A registry someone else runs (``KAFKALITE_SCHEMA_REGISTRY_URL``).

    Example (needs schema_registry)::

        external = ExternalSchemaRegistry(registry_url).wait_ready()   # e.g. $KAFKALITE_SCHEMA_REGISTRY_URL
        assert external.client_config() == {"schema.registry.url": registry_url}
    """

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def __repr__(self) -> str:
        return f"<ExternalSchemaRegistry {self.url}>"

    def client_config(self) -> dict[str, str]:
        """``{"schema.registry.url": url}`` for a serializer.

        Example (needs schema_registry)::

            config = ExternalSchemaRegistry(registry_url).client_config()
            assert SchemaRegistryClient(config).get_schema_types()
        """
        return {"schema.registry.url": self.url}

    def log_tail(self, lines: int = 40) -> str:
        """A note that an external registry's logs are not visible here.

        Example (needs schema_registry)::

            print(ExternalSchemaRegistry(registry_url).log_tail())
        """
        return f"(external registry at {self.url}: no logs here)"

    def wait_ready(self, timeout: float = 30.0) -> ExternalSchemaRegistry:
        """Wait until the registry answers ``/subjects``, for at most ``timeout`` seconds.

        Example (needs schema_registry)::

            ExternalSchemaRegistry(registry_url).wait_ready(timeout=30)
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.url + "/subjects", timeout=2.0):
                    return self
            except (OSError, urllib.error.URLError) as exc:
                if time.monotonic() > deadline:
                    raise RegistryStartError(f"{SCHEMA_REGISTRY_URL_ENV}={self.url} does not answer: {exc}") from exc
                time.sleep(0.2)

    def close(self) -> None:
        """Nothing to stop: the registry is not ours.

        Example (needs schema_registry)::

            ExternalSchemaRegistry(registry_url).close()  # nothing happens: someone else runs it
        """
        pass


SchemaRegistryService = ApicurioRegistry | ExternalSchemaRegistry


def start_default_registry(run_dir: Path, env: Mapping[str, str] | None = None) -> SchemaRegistryService:
    """The ``schema_registry`` fixture's service: ``$KAFKALITE_SCHEMA_REGISTRY_URL`` or
    a fresh Apicurio Registry, ready to use."""
    env = os.environ if env is None else env
    if env.get(SCHEMA_REGISTRY_URL_ENV):
        return ExternalSchemaRegistry(env[SCHEMA_REGISTRY_URL_ENV]).wait_ready()
    return ApicurioRegistry(run_dir=run_dir).start()


# -- command line: python -m kafkalite.testing registry up|down|status -----------------


def _state_file() -> Path:
    from kafkalite.testing.paths import state_dir

    return state_dir() / "cli" / "registry.json"


def _read_state() -> dict[str, Any] | None:
    try:
        return dict(json.loads(_state_file().read_text()))
    except (OSError, ValueError):
        return None


def _stop_recorded(state: dict[str, Any]) -> None:
    processes.terminate(state["pid"], state.get("start_time"), timeout=20.0)
    shutil.rmtree(state["run_dir"], ignore_errors=True)
    _state_file().unlink(missing_ok=True)


def registry_command(action: str, *, version: str = DEFAULT_REGISTRY_VERSION, port: int = 8081,
                     compatibility: str = "BACKWARD", timeout: float = 120.0) -> int:
    """``registry up`` (prints the ``schema.registry.url``), ``down`` or ``status``."""
    import sys

    from kafkalite.testing.ports import port_is_free

    state = _read_state()
    alive = state is not None and processes.is_alive(state["pid"], state.get("start_time"))
    if action == "status":
        if state is None:
            print("schema registry not running")
            return 1
        health = "ready" if alive and ApicurioRegistry(port=state["port"], run_dir=Path(state["run_dir"])).probe() else (
            "not ready" if alive else "dead")
        print(f"Apicurio Registry {state['version']} at {state['url']}: pid {state['pid']}, {health}, "
              f"log {state['run_dir']}/logs/registry.log")
        return 0 if alive else 1
    if action == "down":
        if state is None:
            print("schema registry not running")
            return 0
        _stop_recorded(state)
        print(f"stopped Apicurio Registry {state['version']} at {state['url']}")
        return 0
    if action != "up":
        raise ValueError(f"unknown registry action {action!r}")
    if state is not None:
        if alive and ApicurioRegistry(port=state["port"], run_dir=Path(state["run_dir"])).probe():
            print(state["url"])
            return 0
        print("kafkalite: the recorded schema registry is not healthy; restarting it", file=sys.stderr)
        _stop_recorded(state)
    if not port_is_free(port):
        print(f"kafkalite: port {port} is taken; using a free port", file=sys.stderr)
        port = free_port()
    from kafkalite.testing.paths import state_dir

    run_dir = state_dir() / "cli" / f"registry-{time.strftime('%Y%m%d-%H%M%S')}"
    registry = ApicurioRegistry(version, run_dir=run_dir, port=port, compatibility=compatibility, tied=False)
    try:
        registry.start(timeout=timeout)
    except BaseException:
        registry.kill()
        raise
    pid = registry.pid or 0
    record = {"version": version, "url": registry.url, "port": registry.port, "pid": pid,
              "start_time": processes.process_start_time(pid), "run_dir": str(run_dir)}
    _state_file().parent.mkdir(parents=True, exist_ok=True)
    _state_file().write_text(json.dumps(record, indent=1))
    print(registry.url)
    return 0
