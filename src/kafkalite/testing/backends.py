"""Which Kafka the fixtures use, and the handle for a cluster someone else runs.

Selection, from the environment (see :func:`select_backend`):

==========================  ===============================================
``KAFKALITE_BROKER``        backend
==========================  ===============================================
unset / ``auto``            ``external`` if ``KAFKALITE_BOOTSTRAP`` is set,
                            else ``local``
``local``                   start brokers from the cached jars (default)
``external``                use ``KAFKALITE_BOOTSTRAP`` (required)
``docker``                  testcontainers (needs a Docker engine and the
                            ``testcontainers`` package); never chosen unasked
==========================  ===============================================

Only ``kafka_broker`` follows this choice. Fault tests (``kafka_cluster``) need to
kill and pause processes, and compatibility tests (``kafka_broker_39``) need a
specific release, so those fixtures always run local brokers.
"""

from __future__ import annotations

import enum
import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from kafkalite.testing import topics
from kafkalite.testing.distribution import DEFAULT_KAFKA_VERSION, KafkaDistribution
from kafkalite.testing.java import find_java_for
from kafkalite.testing.tools import JavaTools
from kafkalite.testing.wire import KafkaSocket, WireError


class Backend(enum.Enum):
    """Where the test brokers come from: started here, an external cluster (``KAFKALITE_BOOTSTRAP``), or Docker.

    Example::

        select_backend()   # Backend.LOCAL unless the environment says otherwise
    """

    LOCAL = "local"
    EXTERNAL = "external"
    DOCKER = "docker"


def select_backend(env: Mapping[str, str] | None = None) -> Backend:
    """The backend the environment asks for.

    >>> select_backend({})
    <Backend.LOCAL: 'local'>
    >>> select_backend({"KAFKALITE_BOOTSTRAP": "k1:9092"})
    <Backend.EXTERNAL: 'external'>
    >>> select_backend({"KAFKALITE_BROKER": "docker"})
    <Backend.DOCKER: 'docker'>

    Example::

        assert select_backend({}) is Backend.LOCAL
        assert select_backend({"KAFKALITE_BOOTSTRAP": "host:9092"}) is Backend.EXTERNAL
    """
    env = os.environ if env is None else env
    kind = env.get("KAFKALITE_BROKER", "").strip().lower()
    bootstrap = env.get("KAFKALITE_BOOTSTRAP", "").strip()
    if kind in ("", "auto"):
        return Backend.EXTERNAL if bootstrap else Backend.LOCAL
    try:
        backend = Backend(kind)
    except ValueError:
        choices = ", ".join(b.value for b in Backend)
        raise ValueError(f"KAFKALITE_BROKER={kind!r} is not one of: auto, {choices}") from None
    if backend is Backend.EXTERNAL and not bootstrap:
        raise ValueError("KAFKALITE_BROKER=external needs KAFKALITE_BOOTSTRAP=host:port[,...]")
    return backend


@runtime_checkable
class KafkaService(Protocol):
    """What every fixture value offers, whatever runs the broker.

    Example::

        def describe(service: KafkaService) -> str:     # LocalBroker, LocalCluster, ExternalKafka, DockerKafka
            return service.bootstrap

        assert describe(kafka_broker) == kafka_broker.bootstrap
    """

    @property
    def bootstrap(self) -> str:
        """``host:port[,host:port...]`` of the PLAINTEXT listener.

        Example::

            def test_reads_back(kafka_broker: KafkaService) -> None:     # any backend's fixture value
                with AdminClient({"bootstrap.servers": kafka_broker.bootstrap}) as a:
                    assert "orders" in a.list_topics()

            test_reads_back(kafka_broker)
        """
        ...

    version: str

    def bootstrap_for(self, listener: str) -> str:
        """The bootstrap address of a named listener (``"SASL_PLAINTEXT"`` ...).

        Example::

            assert kafka_broker.bootstrap_for("PLAINTEXT") == kafka_broker.bootstrap
        """
        ...

    def run_tool(
        self,
        tool: str,
        args: Sequence[str] = (),
        *,
        input: str | None = None,
        timeout: float = 120.0,
        check: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's command-line tools (``kafka-topics`` ...) against this service.

        Example::

            kafka_broker.run_tool("kafka-topics", ["--list"])
        """
        ...

    def java_tool_command(self, tool: str, args: Sequence[str] = ()) -> list[str]:
        """The command line that runs one of Kafka's Java tools against this service.

        Example::

            argv = kafka_broker.java_tool_command("kafka-consumer-groups", ["--bootstrap-server", kafka_broker.bootstrap, "--list"])
            assert argv[0].endswith("java")                 # for subprocess.Popen
        """
        ...

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
    ) -> str:
        """Create a topic and wait until its partitions have leaders; returns its name.

        Example::

            assert kafka_broker.create_topic("invoices", partitions=3) == "invoices"
        """
        ...

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` of the broker logs, for a test's failure message.

        Example::

            print(kafka_broker.log_tail(lines=3))
        """
        ...


class ToolsMixin:
    """What every Kafka handle offers on top of its addresses: Kafka's Java tools of its
    release (``run_tool``, ``java_tool_command``) and ``create_topic``. By default the
    tools come from the local jar cache (services that run Kafka elsewhere); a local
    broker overrides :attr:`tools` with its own, a cluster with its first node's, and a
    handle whose topics must be created elsewhere overrides :meth:`_topic_bootstrap`."""

    version: str
    _tools: JavaTools | None = None

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the PLAINTEXT listener (every handle defines it)."""
        raise NotImplementedError

    @property
    def tools(self) -> JavaTools:
        """Kafka's Java tools of this release.

        Example::

            assert kafka_broker.tools.version == DEFAULT_KAFKA_VERSION
        """
        if self._tools is None:
            self._tools = JavaTools(KafkaDistribution(self.version).ensure(), find_java_for(self.version))
        return self._tools

    def run_tool(
        self,
        tool: str,
        args: Sequence[str] = (),
        *,
        input: str | None = None,
        timeout: float = 120.0,
        check: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a Kafka Java tool of this release; see :meth:`JavaTools.run`.

        >>> broker.run_tool("kafka-topics", ["--bootstrap-server", broker.bootstrap, "--list"])  # doctest: +SKIP

        Example::

            done = kafka_broker.run_tool("kafka-topics", ["--bootstrap-server", kafka_broker.bootstrap, "--list"])
            assert "orders" in done.stdout
        """
        return self.tools.run(tool, args, input=input, timeout=timeout, check=check, env=env)

    def java_tool_command(self, tool: str, args: Sequence[str] = ()) -> list[str]:
        """argv of a Kafka Java tool, for ``subprocess.Popen`` (long-running tools).

        Example::

            argv = kafka_broker.java_tool_command("kafka-console-consumer", ["--bootstrap-server", kafka_broker.bootstrap,
                                                                             "--topic", "orders", "--from-beginning"])
            assert argv[0].endswith("java")                 # for subprocess.Popen: it runs until stopped
        """
        return self.tools.command(tool, args)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
    ) -> str:
        """Create a topic and wait until it has leaders; return its name.

        ``replication_factor=-1`` takes the handle's own default where it knows one (a
        local broker or cluster): brokers before 2.4 cannot apply theirs (KIP-464).

        Example::

            name = ExternalKafka(bootstrap).create_topic("made-by-the-harness", partitions=2)
            assert name == "made-by-the-harness"
        """
        if replication_factor == -1:
            replication_factor = self._default_replication_factor()
        return topics.create_topic(self._topic_bootstrap(), name, partitions, replication_factor, configs)

    def _default_replication_factor(self) -> int:
        return -1  # the broker's own default.replication.factor

    def _topic_bootstrap(self) -> str:
        return self.bootstrap


class ExternalKafka(ToolsMixin):
    """A cluster that is already running, e.g. ``KAFKALITE_BOOTSTRAP=host:9092``.

    Args:
        bootstrap: ``host:port[,host:port...]`` of its PLAINTEXT listener.
        version: the release it runs, for choosing Java tools; default
            ``$KAFKALITE_BROKER_VERSION`` or the pinned release.
        listeners: other listener name -> bootstrap, e.g. from
            ``$KAFKALITE_BOOTSTRAP_SASL_PLAINTEXT``.

    Example::

        external = ExternalKafka(bootstrap)             # e.g. KAFKALITE_BOOTSTRAP=host:9092
        external.wait_ready(timeout=30)
        assert external.bootstrap == bootstrap
    """

    def __init__(
        self,
        bootstrap: str,
        version: str | None = None,
        listeners: Mapping[str, str] | None = None,
    ) -> None:
        self._bootstrap = bootstrap
        self.version = version or os.environ.get("KAFKALITE_BROKER_VERSION", DEFAULT_KAFKA_VERSION)
        self.listeners = dict(listeners or {})

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ExternalKafka:
        """The cluster named by ``KAFKALITE_BOOTSTRAP`` (and ``KAFKALITE_BOOTSTRAP_<LISTENER>``, ``KAFKALITE_BROKER_VERSION``).

        Example::

            ExternalKafka.from_env({"KAFKALITE_BOOTSTRAP": "10.0.0.5:9092"})
        """
        env = os.environ if env is None else env
        prefix = "KAFKALITE_BOOTSTRAP_"
        listeners = {k[len(prefix) :]: v for k, v in env.items() if k.startswith(prefix)}
        return cls(env["KAFKALITE_BOOTSTRAP"], env.get("KAFKALITE_BROKER_VERSION"), listeners)

    def __repr__(self) -> str:
        return f"<ExternalKafka {self.bootstrap}>"

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the PLAINTEXT listener.

        Example::

            assert ExternalKafka(bootstrap).bootstrap == bootstrap
        """

        return self._bootstrap

    def bootstrap_for(self, listener: str) -> str:
        """The bootstrap address of a listener (``KAFKALITE_BOOTSTRAP_<LISTENER>``).

        Example::

            external = ExternalKafka(bootstrap, listeners={"SASL_PLAINTEXT": "127.0.0.1:19093"})
            assert external.bootstrap_for("SASL_PLAINTEXT") == "127.0.0.1:19093"
        """
        if listener == "PLAINTEXT":
            return self.bootstrap
        try:
            return self.listeners[listener]
        except KeyError:
            raise KeyError(
                f"no {listener} address for the external cluster; set KAFKALITE_BOOTSTRAP_{listener}"
            ) from None

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Check that the cluster answers (ApiVersions + Metadata).

        Example::

            ExternalKafka(bootstrap).wait_ready(timeout=30)  # ApiVersions and Metadata answer
        """
        try:
            with KafkaSocket.to(self.bootstrap, timeout=timeout) as conn:
                conn.api_versions()
                conn.metadata([])
        except (OSError, WireError) as exc:
            raise ConnectionError(f"external Kafka at {self.bootstrap} does not answer: {exc}") from exc

    def log_tail(self, lines: int = 40) -> str:
        """A note that an external cluster's logs are not visible here.

        Example::

            print(ExternalKafka(bootstrap).log_tail())      # a note: its logs are elsewhere
        """
        return f"(external cluster at {self.bootstrap}: its logs are not visible from here)"

    def close(self) -> None:
        """Nothing to stop: someone else runs it.

        Example::

            ExternalKafka(bootstrap).close()                # nothing happens: someone else runs it
        """
