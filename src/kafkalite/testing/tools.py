"""Run Apache Kafka's own Java tools from the cached jars (no Kafka install needed).

Tools are named like the scripts in Kafka's ``bin/`` (``kafka-topics``,
``kafka-console-consumer``, ``kafka-producer-perf-test`` ...); the lock maps each to
its main class for that release, since classes moved between 3.x and 4.x.

Each run starts a JVM: about a second. Short-lived tools get JVM flags that favour
start-up (C1 only, serial GC); the perf tools keep the full JIT so that their numbers
mean something.

>>> tools = JavaTools(KafkaDistribution().ensure(), find_java())     # doctest: +SKIP
>>> tools.run("kafka-topics", ["--bootstrap-server", bootstrap, "--list"]).stdout  # doctest: +SKIP
'orders\\n'
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafkalite.testing import processes
from kafkalite.testing.distribution import KafkaDistribution
from kafkalite.testing.java import JavaRuntime
from kafkalite.testing.properties import LogConfig, tools_log_config

# Tools whose output is a measurement: never trade their steady-state speed for start-up.
_PERF_TOOLS = frozenset({"kafka-producer-perf-test", "kafka-consumer-perf-test"})
_FAST_START = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")


def common_jvm_options(java: JavaRuntime) -> list[str]:
    """Flags every Kafka JVM gets (mirrors what ``kafka-run-class.sh`` sets)."""
    options = ["-Djava.awt.headless=true"]
    if java.version >= 24:
        # zstd-jni, snappy and lz4 load native code; silence the JDK 24+ warning.
        options.append("--enable-native-access=ALL-UNNAMED")
    return options


def write_if_changed(path: Path, text: str) -> Path:
    """Write ``text`` atomically unless ``path`` already holds it; return ``path``."""
    try:
        if path.read_text() == text:
            return path
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name of its own per writer: test sessions, their threads and other processes
    # may write the same file at once (the last complete copy wins).
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


class JavaTools:
    """Builds and runs command lines for one Kafka release on one Java runtime.

    Args:
        distribution: the release's jars; :meth:`KafkaDistribution.ensure` must have run.
        java: the runtime to use.
        heap: ``-Xmx`` of each tool JVM.

    Example::

        tools = JavaTools(KafkaDistribution(DEFAULT_KAFKA_VERSION).ensure(), find_java())
        assert tools.version == DEFAULT_KAFKA_VERSION
    """

    def __init__(self, distribution: KafkaDistribution, java: JavaRuntime, heap: str = "512m") -> None:
        self.distribution = distribution
        self.java = java
        self.heap = heap
        self._log_config: LogConfig = tools_log_config(distribution.version)
        self._log_path: Path | None = None

    @property
    def version(self) -> str:
        """The Kafka version of the jars.

        Example::

            assert kafka_broker.tools.version == DEFAULT_KAFKA_VERSION
        """
        return self.distribution.version

    def classpath(self) -> str:
        """The classpath of Kafka's jars, for ``java -cp``.

        Example::

            assert kafka_broker.tools.classpath().count(".jar") > 10
        """
        return os.pathsep.join(str(p) for p in self.distribution.classpath())

    def _log_flag(self) -> str:
        if self._log_path is None:
            target = self.distribution.directory / "config" / self._log_config.filename
            self._log_path = write_if_changed(target, self._log_config.text)
        return self._log_config.jvm_flag(self._log_path)

    def command(
        self,
        tool: str,
        args: Sequence[str] = (),
        *,
        jvm_options: Sequence[str] = (),
    ) -> list[str]:
        """The argv that runs ``tool`` with ``args``, for ``subprocess.Popen``.

        >>> tools.command("kafka-topics", ["--version"])[-2:]      # doctest: +SKIP
        ['org.apache.kafka.tools.TopicCommand', '--version']

        Example::

            argv = kafka_broker.tools.command("kafka-topics", ["--version"])
            assert argv[0].endswith("java")
        """
        main_class = self.distribution.main_class(tool)
        name = tool.removesuffix(".sh")
        speed = () if name in _PERF_TOOLS else _FAST_START
        return [
            str(self.java.executable),
            f"-Xmx{self.heap}",
            *speed,
            *common_jvm_options(self.java),
            self._log_flag(),
            *jvm_options,
            "-cp",
            self.classpath(),
            main_class,
            *args,
        ]

    def run(
        self,
        tool: str,
        args: Sequence[str] = (),
        *,
        input: str | None = None,
        timeout: float = 120.0,
        check: bool = False,
        env: Mapping[str, str] | None = None,
        jvm_options: Sequence[str] = (),
    ) -> subprocess.CompletedProcess[str]:
        """Run ``tool`` to completion and capture its output (as text).

        Args:
            input: sent to the tool's stdin (e.g. records for kafka-console-producer);
                stdin is closed either way, so tools that read it terminate.
            check: raise :class:`ToolError` on a non-zero exit.

        Example::

            done = kafka_broker.tools.run("kafka-topics", ["--bootstrap-server", kafka_broker.bootstrap, "--describe",
                                                           "--topic", "orders"])
            assert "PartitionCount: 3" in done.stdout
        """
        argv = self.command(tool, args, jvm_options=jvm_options)
        # Tied like the brokers: a tool blocked on a dead broker must not outlive a
        # killed test run.
        done = subprocess.run(
            argv,
            **processes.tied_popen_kwargs(),
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(env) if env is not None else None,
            check=False,
        )
        if check and done.returncode != 0:
            raise ToolError(tool, done)
        return done


class ToolError(RuntimeError):
    """A Kafka Java tool exited with a non-zero status.

    Example::

        try:
            kafka_broker.tools.run("kafka-topics", ["--bootstrap-server", kafka_broker.bootstrap, "--describe",
                                                    "--topic", "missing"])
        except ToolError as exc:
            print(exc)                                # the tool, its exit code and its output
    """

    def __init__(self, tool: str, done: subprocess.CompletedProcess[str]) -> None:
        self.tool = tool
        self.result = done
        tail = "\n".join((done.stderr or done.stdout or "").strip().splitlines()[-20:])
        super().__init__(f"{tool} exited with {done.returncode}:\n{tail}")
