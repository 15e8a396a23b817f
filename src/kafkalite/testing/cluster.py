"""Several :class:`LocalBroker` nodes forming one cluster, for fault tests.

In KRaft mode every node is broker and controller, and the quorum is all of them, so
any single node can be killed, paused or restarted while the others keep a majority.
In ZooKeeper mode (releases before 4.0) the nodes share one ZooKeeper server that the
cluster owns: killing a broker leaves it running, as a production ensemble would. Topic
defaults follow production practice for three nodes: replication factor 3 and
``min.insync.replicas`` 2, so ``acks=all`` survives one node down.

>>> with LocalCluster(3) as cluster:                               # doctest: +SKIP
...     cluster.create_topic("orders", partitions=6)
...     victim = cluster.leader("orders", 0)
...     victim.kill()
...     victim.restart()
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

from kafkalite.testing.backends import ToolsMixin
from kafkalite.testing.broker import LocalBroker, random_cluster_id
from kafkalite.testing.distribution import DEFAULT_KAFKA_VERSION, KafkaDistribution
from kafkalite.testing.java import JavaRuntime, find_java_for
from kafkalite.testing.netfaults import NetworkFaults
from kafkalite.testing.ports import free_port
from kafkalite.testing.properties import SecurityPreset
from kafkalite.testing.releases import ZOOKEEPER, mode_for
from kafkalite.testing.tools import JavaTools
from kafkalite.testing.wire import KafkaSocket, WireError
from kafkalite.testing.zookeeper import LocalZooKeeper


class LocalCluster(ToolsMixin):
    """``nodes`` combined-mode Kafka nodes on loopback, ids ``1..nodes``.

    Args:
        nodes: how many (3 for fault tests; 1 works too).
        version: Kafka release.
        run_dir: parent of the ``node-<id>`` directories; default a temp dir that
            :meth:`close` deletes.
        replication_factor: the topics' default replication factor; default
            ``min(nodes, 3)``.
        min_insync_replicas: the topics' default ``min.insync.replicas``; default ``2``
            (``1`` for fewer than three nodes).
        first_port: PLAINTEXT port of node 1 (the next nodes take free ports);
            default a free port.
        security: as for :class:`LocalBroker`, applied to every node.
        auto_create_topics: as for :class:`LocalBroker`, applied to every node.
        extra_properties: as for :class:`LocalBroker`, applied to every node.
        heap: as for :class:`LocalBroker`, applied to every node.
        tied: as for :class:`LocalBroker`, applied to every node.
        network_faults: as for :class:`LocalBroker`, applied to every node
            (``cluster.faults`` switches the proxies of all nodes,
            ``cluster.faults[node_id]`` one).
        node_properties: more ``server.properties`` entries for single nodes, by node
            id; they win over ``extra_properties`` (e.g. a ``broker.rack`` per node
            for rack-aware tests: ``{1: {"broker.rack": "r1"}, 2: {...}}``).

    Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

        with LocalCluster(nodes=3) as cluster:
            create_topic(cluster.bootstrap, "replicated", partitions=3, replication_factor=3)
    """

    def __init__(
        self,
        nodes: int = 3,
        version: str = DEFAULT_KAFKA_VERSION,
        *,
        run_dir: Path | None = None,
        replication_factor: int | None = None,
        min_insync_replicas: int | None = None,
        first_port: int | None = None,
        security: SecurityPreset | None = None,
        auto_create_topics: bool = False,
        extra_properties: Mapping[str, object] | None = None,
        node_properties: Mapping[int, Mapping[str, object]] | None = None,
        heap: str = "512m",
        tied: bool = True,
        network_faults: bool = False,
        distribution: KafkaDistribution | None = None,
        java: JavaRuntime | None = None,
        mode: str | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError("a cluster needs at least one node")
        self.version = version
        self._owns_run_dir = run_dir is None
        self.run_dir = Path(run_dir or tempfile.mkdtemp(prefix="kafkalite-cluster-"))
        self.cluster_id = random_cluster_id()
        rf = replication_factor or min(nodes, 3)
        isr = min_insync_replicas or (2 if rf >= 3 else 1)
        self._distribution = distribution or KafkaDistribution(version)
        self._java = java
        ids = list(range(1, nodes + 1))
        unknown = sorted(set(node_properties or {}) - set(ids))
        if unknown:
            raise ValueError(f"node_properties names nodes {unknown}; ids are {ids}")
        voters = {node: free_port() for node in ids}
        self.mode = mode_for(version, mode)
        self._zookeeper = (LocalZooKeeper(self._distribution, java or find_java_for(version), self.run_dir / "zookeeper",
                                          tied=tied) if self.mode == ZOOKEEPER else None)
        self.brokers: list[LocalBroker] = [
            LocalBroker(
                version,
                run_dir=self.run_dir / f"node-{node}",
                port=first_port if node == 1 and first_port else free_port(),
                controller_port=voters[node],
                node_id=node,
                voters=voters,
                cluster_id=self.cluster_id,
                security=security,
                tls_dir=self.run_dir / "tls",
                auto_create_topics=auto_create_topics,
                replication_factor=rf,
                min_insync_replicas=isr,
                extra_properties={**(extra_properties or {}), **(node_properties or {}).get(node, {})},
                heap=heap,
                tied=tied,
                network_faults=network_faults,
                distribution=self._distribution,
                java=java,
                mode=self.mode,
                zookeeper=self._zookeeper,
            )
            for node in ids
        ]

    def __repr__(self) -> str:
        return f"<LocalCluster {self.version} {self.bootstrap}>"

    def __iter__(self) -> Iterator[LocalBroker]:
        return iter(self.brokers)

    def __len__(self) -> int:
        return len(self.brokers)

    def node(self, node_id: int) -> LocalBroker:
        """The broker with ``node.id == node_id``.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            kafka_cluster.node(3).restart(graceful=False)
        """
        for broker in self.brokers:
            if broker.node_id == node_id:
                return broker
        raise KeyError(f"no node {node_id}; ids are {[b.node_id for b in self.brokers]}")

    @property
    def node_ids(self) -> list[int]:
        """The node ids, in order.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            assert kafka_cluster.node_ids == [1, 2, 3]
        """
        return [b.node_id for b in self.brokers]

    @property
    def bootstrap(self) -> str:
        """All nodes' PLAINTEXT addresses, comma-separated.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})     # every node's address
        """
        return ",".join(b.bootstrap for b in self.brokers)

    def bootstrap_for(self, listener: str) -> str:
        """The addresses of a named listener on every node, comma-separated.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            print(kafka_cluster.bootstrap_for("PLAINTEXT"))
        """
        return ",".join(b.bootstrap_for(listener) for b in self.brokers)

    @property
    def zookeeper(self) -> LocalZooKeeper:
        """The ZooKeeper server the nodes share (ZooKeeper mode only).

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            cluster = LocalCluster(nodes=3, version="3.6.2").start()     # ZooKeeper mode before Kafka 4
            print(cluster.zookeeper.connect)
        """
        if self._zookeeper is None:
            raise RuntimeError(f"this cluster runs Kafka {self.version} in KRaft mode: no ZooKeeper")
        return self._zookeeper

    @property
    def java(self) -> JavaRuntime:
        """The Java runtime every node runs on.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            print(kafka_cluster.java.version)
        """
        if self._java is None:
            self._java = find_java_for(self.version)
            for broker in self.brokers:
                broker._java = self._java
        return self._java

    # -- lifecycle ---------------------------------------------------------------

    def start(self, timeout: float = 240.0) -> LocalCluster:
        """Format every node (in parallel), start them and wait until all are ready.

        The deadline is generous on purpose: three JVMs electing a KRaft quorum on a
        busy 2-core machine take far longer than on a quiet one, and a start that is
        merely slow must not fail a test run (a quiet start takes ~10 s).

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            cluster = LocalCluster(nodes=3, replication_factor=3).start(timeout=240)
        """
        self._distribution.ensure()
        self.java  # noqa: B018 -- resolve once, before the threads below
        if self._zookeeper is not None:
            self._zookeeper.start()
        with ThreadPoolExecutor(len(self.brokers)) as pool:
            list(pool.map(lambda b: b.format(), self.brokers))
        # Launch from this thread: tied processes die with the thread that forked them.
        for broker in self.brokers:
            broker.launch()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 240.0) -> None:
        """Block until every running node lists every running node as live.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            kafka_cluster.wait_ready(timeout=240)
        """
        running = [b for b in self.brokers if b.is_running and not b.is_paused]
        expected = [b.node_id for b in running]
        deadline = time.monotonic() + timeout
        for broker in running:
            broker.wait_ready(max(1.0, deadline - time.monotonic()), expected_nodes=expected)

    def heal(self, timeout: float = 240.0) -> None:
        """Resume paused nodes, start stopped ones, and wait for all to be ready.

        The ``kafka_cluster`` fixture calls this before each test, so a fault test
        that fails half-way does not leave the next test a broken cluster.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            kafka_cluster.node(2).kill()
            kafka_cluster.heal(timeout=240)                 # starts node 2 again, waits for all
        """
        for broker in self.brokers:
            if broker.is_paused:
                broker.resume()
            elif not broker.is_running:
                broker.launch()
        self.wait_ready(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every node gracefully (in parallel: a lone survivor waits for quorum).

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            kafka_cluster.stop(timeout=30)                  # graceful, in parallel
        """
        with ThreadPoolExecutor(len(self.brokers)) as pool:
            list(pool.map(lambda b: b.stop(timeout), self.brokers))

    @property
    def faults(self) -> NetworkFaults:
        """The network-fault proxies of every node (needs ``network_faults=True``):
        ``faults.bootstrap`` for clients, ``faults.latency(...)`` on all nodes,
        ``faults[node_id]`` for one (see :mod:`kafkalite.testing.netfaults`).

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            cluster = LocalCluster(nodes=3, network_faults=True).start()
            with cluster.faults[2].black_hole():            # node 2 unreachable for clients
                pass
        """
        return NetworkFaults({b.node_id: b.proxy for b in self.brokers})

    def close(self, *, remove: bool | None = None) -> None:
        """Stop every node quickly and delete an owned run dir.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            cluster = LocalCluster(nodes=3).start()
            cluster.close()
        """
        for broker in self.brokers:
            if broker._proxy is not None:
                broker._proxy.close()
                broker._proxy = None
            broker.kill()
        if self._zookeeper is not None:
            self._zookeeper.stop()
        if remove if remove is not None else self._owns_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- inspection --------------------------------------------------------------

    def _any_running(self) -> LocalBroker:
        for broker in self.brokers:
            if broker.is_running and not broker.is_paused:
                return broker
        raise RuntimeError("no node of the cluster is running")

    def live_bootstrap(self) -> str:
        """Addresses of the running, unpaused nodes only.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            kafka_cluster.node(1).pause()
            print(kafka_cluster.live_bootstrap())           # nodes 2 and 3 only
        """
        return ",".join(b.bootstrap for b in self.brokers if b.is_running and not b.is_paused)

    def leader(self, topic: str, partition: int = 0) -> LocalBroker:
        """The node that currently leads ``topic``/``partition``.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            create_topic(kafka_cluster.bootstrap, "led", replication_factor=3)
            kafka_cluster.leader("led", 0).kill()           # a leader failure
        """
        with KafkaSocket.to(self.live_bootstrap()) as conn:
            info = conn.metadata([topic]).topics.get(topic)
        if info is None or info.error_code:
            raise WireError(f"no metadata for topic {topic!r}")
        for p in info.partitions:
            if p.partition == partition and p.leader >= 0:
                return self.node(p.leader)
        raise WireError(f"{topic}-{partition} has no leader")

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` of each node's log, for a test's failure message.

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            print(kafka_cluster.log_tail(10))
        """
        return "\n".join(f"=== node {b.node_id} ===\n{b.log_tail(lines)}" for b in self.brokers)

    # -- conveniences ------------------------------------------------------------

    def _default_replication_factor(self) -> int:
        return self.brokers[0].replication_factor  # what this harness set as default.replication.factor

    @property
    def tools(self) -> JavaTools:
        """Kafka's Java tools of this cluster's release (its first node's).

        Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

            kafka_cluster.tools.run("kafka-metadata-quorum", ["--bootstrap-server", kafka_cluster.bootstrap, "describe", "--status"])
        """
        return self.brokers[0].tools

    def _topic_bootstrap(self) -> str:
        # Topics go through a node that is up (default replication factor: the cluster's).
        return self.live_bootstrap()
