"""One secured listener of a test broker, as a fixture value.

The security fixtures (``kafka_broker_ssl``, ``kafka_broker_mtls``,
``kafka_broker_sasl_ssl``) share one broker with :data:`SECURE_PRESET`; each hands
tests a :class:`BrokerListener`: ``.bootstrap`` is that listener's address and
``.client_config(...)`` the settings a kafkalite client needs there, while topic
helpers and Java tools go through the broker's PLAINTEXT back door.

Example::

    def test_tls(kafka_broker_ssl, topic_factory):
        topic = topic_factory(on=kafka_broker_ssl)
        with Producer(kafka_broker_ssl.client_config()) as producer:
            producer.send(topic, b"v").result(10)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.testing.broker import LocalBroker
from kafkalite.testing.certs import TestPki


@dataclass(frozen=True)
class BrokerListener:
    """A named client listener of ``broker`` (e.g. ``"SSL"``, ``"MTLS"``, ``"SASL_SSL"``).

    Example (needs secured_broker)::

        listener = BrokerListener(secured_broker, "SASL_SSL")
        with AdminClient(listener.client_config(sasl_mechanism="SCRAM-SHA-256", sasl_username="admin",
                                                sasl_password="admin-secret")) as a:
            a.list_topics()
    """

    broker: LocalBroker
    listener: str

    def __repr__(self) -> str:
        return f"<BrokerListener {self.listener} {self.bootstrap} of {self.broker!r}>"

    @property
    def bootstrap(self) -> str:
        """This listener's ``host:port``.

        Example (needs secured_broker)::

            assert BrokerListener(secured_broker, "SSL").bootstrap == secured_broker.bootstrap_for("SSL")
        """
        return self.broker.bootstrap_for(self.listener)

    @property
    def protocol(self) -> str:
        """Its security protocol (``SSL`` for the ``MTLS`` listener).

        Example (needs secured_broker)::

            assert BrokerListener(secured_broker, "MTLS").protocol == "SSL"
        """
        return self.broker.protocol_of(self.listener)

    @property
    def tls(self) -> TestPki:
        """The test certificates (CA, client certificate and keys).

        Example (needs secured_broker)::

            assert BrokerListener(secured_broker, "SSL").tls.ca.exists()
        """
        pki = self.broker.tls
        if pki is None:
            raise RuntimeError(f"{self.broker!r} has no TLS listeners")
        return pki

    def client_config(self, **settings: Any) -> dict[str, Any]:
        """Client settings for this listener (see :meth:`LocalBroker.client_config`).

        Example (needs secured_broker)::

            config = BrokerListener(secured_broker, "MTLS").client_config()
            assert config["security.protocol"] == "SSL" and "ssl.certificate.location" in config
        """
        return self.broker.client_config(self.listener, **settings)

    # The PLAINTEXT side, so that topic_factory(on=...) and admin tools work unchanged.

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = -1,
                     configs: Mapping[str, str] | None = None) -> str:
        """Create a topic on the broker (and wait for its leaders); returns its name.

        Example (needs secured_broker)::

            BrokerListener(secured_broker, "SSL").create_topic("secured-topic", partitions=1)
        """
        return self.broker.create_topic(name, partitions, replication_factor, configs)

    def run_tool(self, tool: str, args: Any = (), **kwargs: Any) -> Any:
        """Run one of Kafka's command-line tools against the broker.

        Example (needs secured_broker)::

            done = BrokerListener(secured_broker, "SSL").run_tool("kafka-acls", ["--list"])
            print(done.stdout)
        """
        return self.broker.run_tool(tool, args, **kwargs)

    def log_tail(self, lines: int = 40) -> str:
        """The broker's log tail, for a test's failure message.

        Example (needs secured_broker)::

            print(BrokerListener(secured_broker, "SSL").log_tail(5))
        """
        return self.broker.log_tail(lines)

    @property
    def run_dir(self) -> Any:
        """The broker's run directory.

        Example (needs secured_broker)::

            assert BrokerListener(secured_broker, "SSL").run_dir == secured_broker.run_dir
        """
        return self.broker.run_dir
