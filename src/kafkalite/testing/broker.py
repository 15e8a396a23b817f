"""One Kafka node running from the cached jars: broker and controller in one JVM (KRaft),
or a broker with a ZooKeeper server of its own (releases before 4.0, see
:mod:`kafkalite.testing.releases`).

:class:`LocalBroker` owns a run directory (config, data, logs) and one process. It
can be formatted, started, stopped gracefully (SIGTERM), killed (SIGKILL), paused
(SIGSTOP) and resumed, and restarted on the same ports and data, which is what
fault tests need. :class:`~kafkalite.testing.cluster.LocalCluster` builds several.
Its process (launch, signals, exit, logs) is a :class:`~kafkalite.testing.broker_process.BrokerProcess`;
this module decides what runs, when, and whether the node is ready.

>>> with LocalBroker() as broker:                        # doctest: +SKIP
...     broker.bootstrap
'127.0.0.1:40123'

Layout of ``run_dir``::

    server.properties  log4j2.properties (or log4j.properties for 3.x and older)
    data/              Kafka's log.dirs (KRaft metadata + partitions)
    zookeeper/         the ZooKeeper server's config, data and log (ZooKeeper mode)
    logs/server.log    the broker's log4j output
    logs/stdout.log    the JVM's stdout and stderr (crashes, GC warnings)
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from kafkalite.config import lookup
from kafkalite.testing.backends import ToolsMixin
from kafkalite.testing.broker_process import BrokerProcess
from kafkalite.testing.broker_process import tail as tail  # importable from here as before
from kafkalite.testing.certs import TestPki, make_test_pki
from kafkalite.testing.distribution import DEFAULT_KAFKA_VERSION, KafkaDistribution
from kafkalite.testing.java import JavaRuntime, find_java_for
from kafkalite.testing.netfaults import FaultyProxy, NetworkFaults
from kafkalite.testing.ports import free_port
from kafkalite.testing.properties import (
    CLIENT_LISTENER,
    PROXIED_LISTENER,
    BrokerSignIn,
    NodeConfig,
    SecurityPreset,
    broker_log_config,
    kafka_major,
    render_properties,
    server_properties,
)
from kafkalite.testing.releases import ZOOKEEPER, mode_for
from kafkalite.testing.tools import JavaTools, common_jvm_options, write_if_changed
from kafkalite.testing.wire import KafkaSocket, WireError
from kafkalite.testing.zookeeper import LocalZooKeeper


class BrokerStartError(RuntimeError):
    """A broker did not become ready; the message carries the tail of its log.

    Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

        try:
            LocalBroker(extra_properties={"num.network.threads": "0"}).start(timeout=60)
        except BrokerStartError as exc:
            print(exc)                                # carries the tail of the broker's log
    """


class PortInUseError(BrokerStartError):
    """A broker could not bind one of its ports.

    Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

        try:
            LocalBroker(port=kafka_broker.port).start()
        except PortInUseError as exc:
            print(exc)
    """


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding.

    Like Kafka's ``Uuid.randomUuid()``, never one starting with ``-`` (it would look
    like a command-line flag).

    Example::

        cluster_id = random_cluster_id()
        assert len(cluster_id) == 22                  # 16 bytes, URL-safe base64, no padding
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class LocalBroker(ToolsMixin):
    """A Kafka node in combined mode on loopback ports.

    Args:
        version: Kafka release (a shipped lock).
        run_dir: where config, data and logs go; default a fresh temp directory,
            deleted by :meth:`close` (a given ``run_dir`` is kept).
        port: PLAINTEXT client port; default a free one.
        controller_port: KRaft controller port; default a free one.
        node_id: the node's id (``node.id``).
        voters: node id -> controller port of every quorum member; default just
            this node. Set by :class:`LocalCluster`.
        cluster_id: KRaft cluster id used at format time; default random.
        security: e.g. :data:`SASL_PRESET`: adds a SASL_PLAINTEXT listener, SCRAM
            users and the StandardAuthorizer; :data:`SECURE_PRESET` adds TLS
            listeners too (certificates made under ``tls_dir``).
        tls_dir: where the test certificates go (default ``run_dir/tls``); the
            nodes of a cluster share one.
        auto_create_topics: ``auto.create.topics.enable`` (default False).
        replication_factor: default replication factor of topics and internal topics
            (1 for one node; the cluster uses 3).
        min_insync_replicas: default ``min.insync.replicas`` (1 for one node; the
            cluster uses 2).
        extra_properties: more ``server.properties`` entries; they win.
        extra_classpath: jars or class directories added to the broker's class path
            (broker plugins such as a test ``metric.reporters`` class).
        signin: the KDC and OIDC provider of GSSAPI / OIDC listeners (e.g. of
            :data:`~kafkalite.testing.properties.SIGNIN_PRESET`); also sets the JVM's
            ``java.security.krb5.conf`` and Kafka's allowed OAuth URLs.
        heap: the JVM's ``-Xmx``.
        tied: die with the current process (tests); False leaves it running
            detached (the CLI's ``up``).
        network_faults: add a ``PROXIED`` listener advertised at the port of a
            TCP proxy whose faults tests switch (:attr:`faults`, see
            :mod:`kafkalite.testing.netfaults`).
        mode: ``"kraft"`` or ``"zookeeper"``; default the release's own
            (:func:`kafkalite.testing.releases.mode_for`).
        zookeeper: in ZooKeeper mode, the server to register with (a cluster's
            shared one); default a server of this broker's own, started and stopped
            with it.

    Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

        with LocalBroker() as broker:                 # the pinned release, free loopback ports
            with Producer({"bootstrap.servers": broker.bootstrap}) as p:
                p.send("orders", b"v").result(timeout=30)
    """

    def __init__(
        self,
        version: str = DEFAULT_KAFKA_VERSION,
        *,
        run_dir: Path | None = None,
        port: int | None = None,
        controller_port: int | None = None,
        node_id: int = 1,
        voters: Mapping[int, int] | None = None,
        cluster_id: str | None = None,
        security: SecurityPreset | None = None,
        tls_dir: Path | None = None,
        auto_create_topics: bool = False,
        replication_factor: int = 1,
        min_insync_replicas: int = 1,
        extra_properties: Mapping[str, object] | None = None,
        extra_classpath: Sequence[Path | str] = (),
        signin: BrokerSignIn | None = None,
        heap: str = "512m",
        tied: bool = True,
        network_faults: bool = False,
        distribution: KafkaDistribution | None = None,
        java: JavaRuntime | None = None,
        mode: str | None = None,
        zookeeper: LocalZooKeeper | None = None,
    ) -> None:
        self.version = version
        self.mode = mode_for(version, mode)
        if self.mode == ZOOKEEPER and security is not None:
            raise ValueError(
                f"the harness runs security presets in KRaft mode only (Kafka {version} in ZooKeeper mode "
                "would need its SCRAM users and ACLs written to ZooKeeper); use Kafka 3.3+ in KRaft mode")
        self.node_id = node_id
        self.cluster_id = cluster_id or random_cluster_id()
        self.security = security
        self.signin = signin
        self.heap = heap
        self.tied = tied
        self._owns_run_dir = run_dir is None
        self.run_dir = Path(run_dir or tempfile.mkdtemp(prefix=f"kafkalite-node{node_id}-"))
        self._auto_ports = port is None and controller_port is None and voters is None
        self.auto_create_topics = auto_create_topics
        self.replication_factor = replication_factor
        self.min_insync_replicas = min_insync_replicas
        self.extra_properties = {k: str(v) for k, v in (extra_properties or {}).items()}
        self.extra_classpath = [str(p) for p in extra_classpath]
        self.controller_port = controller_port or free_port()
        self.listeners: dict[str, int] = {CLIENT_LISTENER: port or free_port()}
        if security is not None:
            for name in security.listeners:
                self.listeners[name] = free_port()
        # The proxy's port is chosen now (it is advertised); the proxy starts on demand.
        self.proxy_port: int | None = None
        self._proxy: FaultyProxy | None = None
        if network_faults:
            self.listeners[PROXIED_LISTENER] = free_port()
            self.proxy_port = free_port()
        self.tls_dir = Path(tls_dir) if tls_dir is not None else self.run_dir / "tls"
        self._pki: TestPki | None = None
        self.voters = dict(voters) if voters else {node_id: self.controller_port}
        self._distribution = distribution
        self._java = java
        self._tools: JavaTools | None = None
        self._jvm = BrokerProcess(f"node {node_id}", server_log=self.server_log, stdout_log=self.stdout_log)
        # The JVM of the latest start (the Popen the process control holds), as before.
        self.process: subprocess.Popen[bytes] | None = None
        self._zookeeper = zookeeper
        self._owns_zookeeper = zookeeper is None and self.mode == ZOOKEEPER

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"<LocalBroker {self.version} node {self.node_id} {self.bootstrap} {state}>"

    # -- addresses and files -----------------------------------------------------

    @property
    def host(self) -> str:
        """The address it listens on (loopback).

        Example::

            assert kafka_broker.host == "127.0.0.1"
        """
        return "127.0.0.1"

    @property
    def port(self) -> int:
        """The port of the PLAINTEXT client listener.

        Example::

            assert kafka_broker.bootstrap == f"127.0.0.1:{kafka_broker.port}"
        """
        return self.listeners[CLIENT_LISTENER]

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"`` of the PLAINTEXT listener.

        Example::

            with AdminClient({"bootstrap.servers": kafka_broker.bootstrap}) as a:
                assert "orders" in a.list_topics()
        """
        return f"{self.host}:{self.port}"

    def bootstrap_for(self, listener: str) -> str:
        """The address of a named listener, e.g. ``bootstrap_for("SASL_PLAINTEXT")``.

        Example::

            assert kafka_broker.bootstrap_for("PLAINTEXT") == kafka_broker.bootstrap
        """
        try:
            return f"{self.host}:{self.listeners[listener]}"
        except KeyError:
            raise KeyError(f"no listener {listener!r}; have {sorted(self.listeners)}") from None

    @property
    def tls(self) -> TestPki | None:
        """The test certificates (CA, client certificate and keys) of TLS listeners.

        Example::

            assert kafka_broker.tls is None               # no TLS listener on this broker
        """
        if self._pki is None and self.security is not None and self.security.needs_tls:
            self._pki = make_test_pki(self.tls_dir, (self.host, "localhost"))
        return self._pki

    def protocol_of(self, listener: str) -> str:
        """The security protocol of a client listener (``"SSL"`` for ``"MTLS"``).

        Example::

            assert kafka_broker.protocol_of("PLAINTEXT") == "PLAINTEXT"
        """
        if listener not in self.listeners:
            raise KeyError(f"no listener {listener!r}; have {sorted(self.listeners)}")
        if self.security is not None and listener in self.security.listeners:
            return self.security.listeners[listener]
        return listener

    def client_config(self, listener: str = CLIENT_LISTENER, **settings: object) -> dict[str, object]:
        """kafkalite client settings for ``listener``: bootstrap address, security
        protocol, the test CA for TLS and the client certificate where the listener
        requires one; ``settings`` are added (Java names or snake_case aliases).

        >>> broker.client_config("SASL_SSL", sasl_mechanism="SCRAM-SHA-256",  # doctest: +SKIP
        ...                      sasl_username="alice", sasl_password="alice-secret")

        Example::

            with AdminClient(kafka_broker.client_config(request_timeout_ms=10000)) as a:
                assert a.describe_cluster().nodes
        """
        protocol = self.protocol_of(listener)
        cfg: dict[str, object] = {"bootstrap.servers": self.bootstrap_for(listener), "security.protocol": protocol}
        pki = self.tls
        if protocol.endswith("SSL") and pki is not None:
            cfg["ssl.ca.location"] = str(pki.ca)
            if self.security is not None and listener in self.security.client_auth_listeners:
                cfg["ssl.certificate.location"] = str(pki.client_cert)
                cfg["ssl.key.location"] = str(pki.client_key)
        for key, value in settings.items():
            setting = lookup(key)  # snake_case aliases override the Java names above
            cfg[setting.name if setting is not None else key] = value
        return cfg

    @property
    def data_dir(self) -> Path:
        """The broker's log (data) directory.

        Example::

            assert kafka_broker.data_dir.is_dir()
        """
        return self.run_dir / "data"

    @property
    def log_dir(self) -> Path:
        """Where its server and stdout logs are.

        Example::

            assert kafka_broker.server_log.parent == kafka_broker.log_dir
        """
        return self.run_dir / "logs"

    @property
    def server_log(self) -> Path:
        """Kafka's ``server.log``.

        Example::

            assert "started" in kafka_broker.server_log.read_text()
        """
        return self.log_dir / "server.log"

    @property
    def stdout_log(self) -> Path:
        """The process's standard output and error.

        Example::

            assert kafka_broker.stdout_log.exists()
        """
        return self.log_dir / "stdout.log"

    def log_tail(self, lines: int = 40) -> str:
        """The end of ``server.log`` and of the JVM's stdout/stderr, for reports.

        Example::

            print(kafka_broker.log_tail(5))               # for a failing test's message
        """
        return self._jvm.log_tail(lines)

    # -- runtime -----------------------------------------------------------------

    @property
    def distribution(self) -> KafkaDistribution:
        """Kafka's jars (downloaded and checksummed on first use).

        Example::

            assert kafka_broker.distribution.is_complete()    # the jars are cached and verified
        """
        if self._distribution is None:
            self._distribution = KafkaDistribution(self.version)
        return self._distribution.ensure()

    @property
    def java(self) -> JavaRuntime:
        """The Java runtime that runs it.

        Example::

            assert kafka_broker.java.version >= 17
        """
        if self._java is None:
            self._java = find_java_for(self.version)
        return self._java

    @property
    def tools(self) -> JavaTools:
        """Kafka's Java tools for this broker's release.

        Example::

            out = kafka_broker.tools.run("kafka-topics", ["--bootstrap-server", kafka_broker.bootstrap, "--list"])
            assert "orders" in out.stdout
        """
        if self._tools is None:
            self._tools = JavaTools(self.distribution, self.java)
        return self._tools

    def config(self) -> NodeConfig:
        """What :meth:`write_config` renders (ports as currently assigned).

        Example::

            node = kafka_broker.config()
            assert node.node_id == 1 and node.listeners["PLAINTEXT"] == kafka_broker.port
        """
        return NodeConfig(
            node_id=self.node_id,
            version=self.version,
            data_dir=self.data_dir,
            listeners=dict(self.listeners),
            controller_port=self.controller_port,
            voters=dict(self.voters),
            host=self.host,
            replication_factor=self.replication_factor,
            min_insync_replicas=self.min_insync_replicas,
            auto_create_topics=self.auto_create_topics,
            security=self.security,
            extra=self.extra_properties,
            tls=self.tls,
            signin=self.signin,
            advertised_ports={PROXIED_LISTENER: self.proxy_port} if self.proxy_port is not None else {},
            zookeeper_connect=self.zookeeper.connect if self.mode == ZOOKEEPER else None,
        )

    @property
    def zookeeper(self) -> LocalZooKeeper:
        """The ZooKeeper server this broker registers with (ZooKeeper mode only).

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            old = LocalBroker("2.8.2").start()            # ZooKeeper mode
            print(old.zookeeper.connect)
            old.close()
        """
        if self.mode != ZOOKEEPER:
            raise RuntimeError(f"node {self.node_id} runs Kafka {self.version} in KRaft mode: no ZooKeeper")
        if self._zookeeper is None:
            self._zookeeper = LocalZooKeeper(self.distribution, self.java, self.run_dir / "zookeeper",
                                             tied=self.tied)
        return self._zookeeper

    def write_config(self) -> Path:
        """(Re)write ``server.properties`` and the log config; return the former.

        Example::

            path = kafka_broker.write_config()
            assert path.name == "server.properties"
        """
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = broker_log_config(self.version)
        write_if_changed(self.run_dir / log.filename, log.text)
        return write_if_changed(
            self.run_dir / "server.properties", render_properties(server_properties(self.config()))
        )

    @property
    def is_formatted(self) -> bool:
        """True once its storage is formatted (KRaft ``meta.properties`` exists); always
        in ZooKeeper mode, which has no storage to format.

        Example::

            assert kafka_broker.is_formatted
        """
        return self.mode == ZOOKEEPER or (self.data_dir / "meta.properties").exists()

    def format(self) -> None:
        """Format the KRaft storage (once; a formatted data dir is left as it is). In
        ZooKeeper mode there is nothing to format: the broker registers itself.

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            broker = LocalBroker()
            broker.format()                               # kafka-storage format, once
            assert broker.is_formatted
        """
        props = self.write_config()
        if self.is_formatted:
            return
        args = ["format", "--config", str(props), "--cluster-id", self.cluster_id]
        if self.security is not None:
            args += self.security.scram_arguments()
        done = self.tools.run("kafka-storage", args, timeout=120)
        if done.returncode != 0:
            raise BrokerStartError(
                f"kafka-storage format failed for node {self.node_id} "
                f"(exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
            )

    def command(self) -> list[str]:
        """The broker's java command line.

        Example::

            argv = kafka_broker.command()
            assert argv[0].endswith("java") and "kafka.Kafka" in argv
        """
        log = broker_log_config(self.version)
        gc = ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35"]
        return [
            str(self.java.executable),
            f"-Xmx{self.heap}",
            "-Xms128m",
            *gc,
            "-XX:+ExplicitGCInvokesConcurrent",
            *common_jvm_options(self.java),
            *(self.signin.jvm_options() if self.signin is not None else []),
            f"-Dkafka.logs.dir={self.log_dir}",
            log.jvm_flag(self.run_dir / log.filename),
            "-cp",
            os.pathsep.join([self.tools.classpath(), *self.extra_classpath]),
            self.distribution.main_class("kafka-server-start"),
            str(self.run_dir / "server.properties"),
        ]

    # -- lifecycle ---------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        """True while its process runs (paused included).

        Example::

            assert kafka_broker.is_running
        """
        return self._jvm.is_running

    @property
    def pid(self) -> int | None:
        """The process id, or None before ``start()``.

        Example::

            assert kafka_broker.pid and kafka_broker.pid > 1
        """
        return self._jvm.pid

    def start(self, *, wait: bool = True, timeout: float = 120.0) -> LocalBroker:
        """Format if needed, start the JVM and (by default) wait until it is ready.

        A single broker whose ports were chosen automatically retries on fresh
        ports if another process grabbed one in the meantime.

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            broker = LocalBroker(auto_create_topics=True).start(timeout=180)
            print(broker.bootstrap)
            broker.close()
        """
        for attempt in range(3):
            self.format()
            self.launch()
            if not wait:
                return self
            try:
                self.wait_ready(timeout=timeout)
                return self
            except PortInUseError:
                if not self._auto_ports or attempt == 2:
                    raise
                self.controller_port = free_port()
                self.voters = {self.node_id: self.controller_port}
                self.listeners = {name: free_port() for name in self.listeners}
        return self

    def launch(self) -> None:
        """Start the JVM without waiting (the node must be formatted; in ZooKeeper
        mode, its own ZooKeeper server is started first and waited for).

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            broker = LocalBroker()
            broker.format()
            broker.launch()                               # the JVM starts; nothing waits for it
            broker.wait_ready(timeout=120)
        """
        if self.is_running:
            return
        if self._owns_zookeeper:
            self.zookeeper.start()
        self.write_config()
        self.process = self._jvm.launch(self.command(), cwd=self.run_dir, tied=self.tied,
                                        description=f"kafka {self.version} node {self.node_id} {self.bootstrap}")

    def probe(self, expected_nodes: Sequence[int] = ()) -> bool:
        """One readiness check: ApiVersions answers and Metadata lists this node.

        Metadata lists only registered, unfenced brokers, so this also means the
        node has joined the quorum and caught up with the cluster's metadata.

        Example::

            assert kafka_broker.probe()                   # ApiVersions and Metadata answer
        """
        try:
            with KafkaSocket(self.host, self.port, timeout=2.0) as conn:
                conn.api_versions()
                live = conn.metadata([]).brokers
        except (OSError, WireError):
            return False
        return self.node_id in live and all(n in live for n in expected_nodes)

    def wait_ready(self, timeout: float = 120.0, expected_nodes: Sequence[int] = ()) -> None:
        """Block until :meth:`probe` succeeds; raise with the log tail if it does not.

        Example::

            kafka_broker.wait_ready(timeout=30)           # returns at once: it is ready
        """
        deadline = time.monotonic() + timeout
        while True:
            exit_code = self._jvm.exit_code
            if exit_code is not None:
                if self._registration_still_held() and time.monotonic() < deadline:
                    # ZooKeeper mode, just after a kill: the dead JVM's session keeps
                    # /brokers/ids/<id> until it expires (zookeeper.session.timeout.ms), and a
                    # broker that finds it exits at once (2.1.1 does). Start again until the
                    # session has expired.
                    time.sleep(0.5)
                    self.launch()
                    continue
                self._raise_start_error(f"exited with code {exit_code}")
            if self.probe(expected_nodes):
                return
            if time.monotonic() > deadline:
                self._raise_start_error(f"not ready after {timeout:.0f} s")
            time.sleep(0.05)

    def _registration_still_held(self) -> bool:
        """ZooKeeper mode: did the last start fail because this broker id is still
        registered by the session of a process that was killed?"""
        return self.mode == ZOOKEEPER and b"NodeExistsException" in self._jvm.logged_since_launch()

    def _raise_start_error(self, what: str) -> None:
        text = self.log_tail(60)
        cls = PortInUseError if "Address already in use" in text else BrokerStartError
        if cls is PortInUseError and self.is_running:
            self.kill()
        raise cls(f"Kafka {self.version} node {self.node_id} ({self.bootstrap}) {what}.\n{text}")

    def pause(self) -> None:
        """SIGSTOP: the JVM freezes (no heartbeats, sockets stay open).

        Example::

            kafka_broker.pause()                          # SIGSTOP: requests now time out
            kafka_broker.resume()
        """
        self._jvm.pause()

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`.

        Example::

            kafka_broker.pause()
            kafka_broker.resume()                         # SIGCONT
            assert not kafka_broker.is_paused
        """
        self._jvm.resume()

    @property
    def is_paused(self) -> bool:
        """True while the process is stopped with ``pause()`` (SIGSTOP).

        Example::

            kafka_broker.pause()
            assert kafka_broker.is_paused
            kafka_broker.resume()
        """
        return self._jvm.is_paused

    def stop(self, timeout: float = 30.0) -> int | None:
        """Graceful shutdown (SIGTERM); SIGKILL if it takes longer than ``timeout``.

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            broker = LocalBroker().start()
            broker.stop(timeout=30)                       # SIGTERM: a controlled shutdown
        """
        return self._jvm.stop(timeout)

    def kill(self) -> int | None:
        """SIGKILL: an abrupt crash (no controlled shutdown, no flush).

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            broker = LocalBroker().start()
            broker.kill()                                 # SIGKILL: no controlled shutdown
            assert not broker.is_running
        """
        return self._jvm.kill()

    def restart(self, *, wait: bool = True, timeout: float = 120.0, graceful: bool = True) -> None:
        """Stop (or kill) if running, then start again with the same id, ports and data.

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            broker = LocalBroker().start()
            broker.restart(graceful=False)                # a crash and a recovery, same id and data
            broker.close()
        """
        if self.is_running:
            if graceful:
                self.stop()
            else:
                self.kill()
        self.launch()
        if wait:
            self.wait_ready(timeout=timeout)

    @property
    def proxy(self) -> FaultyProxy:
        """The network-fault proxy in front of this node's ``PROXIED`` listener (started
        on first use); needs ``network_faults=True``.

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            broker = LocalBroker(network_faults=True).start()
            with broker.proxy.black_hole():              # the node looks dead to its clients
                pass
            broker.close()
        """
        if self.proxy_port is None:
            raise RuntimeError(f"node {self.node_id} was not created with network_faults=True")
        if self._proxy is None:
            self._proxy = FaultyProxy(self.host, self.listeners[PROXIED_LISTENER], self.proxy_port).start()
        return self._proxy

    @property
    def faults(self) -> NetworkFaults:
        """Network faults between clients and this broker: bootstrap clients with
        ``faults.bootstrap`` and switch faults on ``faults`` (see
        :mod:`kafkalite.testing.netfaults`).

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            broker = LocalBroker(network_faults=True).start()
            with broker.faults.latency(100):             # clients bootstrapped with broker.faults.bootstrap see it
                AdminClient({"bootstrap.servers": broker.faults.bootstrap}).close()
            broker.close()
        """
        return NetworkFaults({self.node_id: self.proxy})

    def close(self, *, remove: bool | None = None) -> None:
        """Stop quickly (the data is thrown away) and delete an owned run dir.

        Example (not run: starts, stops or breaks a broker of its own; tests/integration/test_harness.py runs these)::

            broker = LocalBroker().start()
            broker.close()                                # stops at once; an owned run dir is deleted
        """
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None
        self.stop(timeout=5.0)
        if self._owns_zookeeper and self._zookeeper is not None:
            self._zookeeper.stop()
        if remove if remove is not None else self._owns_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> LocalBroker:
        if not self.is_running:
            self.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- conveniences ------------------------------------------------------------

    def _default_replication_factor(self) -> int:
        return self.replication_factor  # what this harness set as default.replication.factor

    @property
    def major_version(self) -> int:
        """The Kafka major version (2, 3 or 4).

        Example::

            assert kafka_broker.major_version == 4
        """
        return kafka_major(self.version)
