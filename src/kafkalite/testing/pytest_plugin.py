"""pytest fixtures for real Kafka brokers (registered as the ``kafkalite`` plugin).

Fixtures (every broker starts on first use only, once per session; the release is
``$KAFKALITE_KAFKA_VERSION`` or the pinned one, in its default mode or
``$KAFKALITE_KAFKA_MODE``, ``kraft`` or ``zookeeper``, where it has both):

``kafka_broker``
    session-scoped single broker (pinned release); honours ``KAFKALITE_BOOTSTRAP``
    / ``KAFKALITE_BROKER`` (see :mod:`kafkalite.testing.backends`). Has
    ``.bootstrap``, ``.version``, ``.run_tool(...)``, ``.java_tool_command(...)``,
    ``.create_topic(...)``.
``kafka_cluster``
    a 3-node :class:`LocalCluster` shared by the session; before each test it is
    healed (paused nodes resumed, stopped nodes restarted), so fault tests may kill
    and pause nodes freely.
``network_faults``
    the proxies in front of ``kafka_cluster``'s nodes
    (:class:`~kafkalite.testing.netfaults.NetworkFaults`): ``.bootstrap`` for clients,
    ``.latency(ms)``, ``.bandwidth(...)``, ``.black_hole()``, ``.reset()``,
    ``.refuse_new()``, ``.partial_writes()``, ``.corrupt(rate)``, ``[node_id]`` for one
    node; healed after each test.
``kafka_broker_39``
    a Kafka 3.9.x broker for compatibility tests.
``kafka_broker_zk``
    a broker of the oldest supported release (Kafka 2.1.1) in ZooKeeper mode, for
    features an old broker lacks.
``kafka_broker_sasl``
    the session's secured broker (:data:`SECURE_PRESET`): ``bootstrap_for(name)``
    gives its ``SASL_PLAINTEXT`` (PLAIN, SCRAM, OAUTHBEARER), ``SSL``, ``MTLS``,
    ``SSL_WRONG_HOST``, ``SASL_SSL`` and ``REAUTH`` listeners; ACLs on.
``kafka_broker_ssl`` / ``kafka_broker_mtls`` / ``kafka_broker_sasl_ssl``
    that broker's ``SSL``, ``MTLS`` (client certificate required) and ``SASL_SSL``
    listeners as :class:`~kafkalite.testing.secured.BrokerListener`: ``.bootstrap``,
    ``.client_config(**settings)``, ``.tls`` (CA, client certificate, keys).
``kerberos_kdc`` / ``oidc_provider`` / ``kafka_broker_signin``
    enterprise sign-in (:mod:`kafkalite.testing.signin`): Kafka's MiniKdc (principals
    ``alice``, ``bob``, keytabs via ``.keytab(name)``, ``.client_settings(name)``;
    ``KRB5_CONFIG`` is set for the session), mock-oauth2-server (tokens live 20 s;
    ``.client_settings(client_id)``) and one broker with ``KERBEROS``,
    ``KERBEROS_REAUTH`` (GSSAPI) and ``OAUTH`` (OIDC) listeners, all started once,
    the KDC and the provider side by side.
``kafka_broker_kerberos`` / ``kafka_broker_oauth``
    that broker's ``KERBEROS`` and ``OAUTH`` listeners as
    :class:`~kafkalite.testing.secured.BrokerListener`.
``schema_registry``
    a Schema Registry for the session (Apicurio Registry with its Confluent-compatible
    API, see :mod:`kafkalite.testing.registry`), or ``$KAFKALITE_SCHEMA_REGISTRY_URL``.
    ``.url`` is the value for ``schema.registry.url``.
``unique_topic``
    a fresh topic name per test (not created).
``topic_factory``
    ``topic_factory(partitions=1, replication_factor=-1, configs=None, *, name=None,
    on=None) -> name``: creates a topic (on ``kafka_broker`` unless ``on=`` names
    another fixture value) and waits for its leaders.

Logs: brokers write under ``<rootdir>/.kafkalite/runs/<session>/`` (or
``$KAFKALITE_RUN_DIR/<session>``). A failed test that used a broker gets the tail of
its logs in the report, and the directory is kept (the last few sessions' are);
if every such test passed, the directory is deleted at the end.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from kafkalite.testing import processes
from kafkalite.testing.backends import Backend, ExternalKafka, KafkaService, select_backend
from kafkalite.testing.broker import LocalBroker
from kafkalite.testing.cluster import LocalCluster
from kafkalite.testing.distribution import COMPAT_KAFKA_VERSION, DEFAULT_KAFKA_VERSION
from kafkalite.testing.netfaults import NetworkFaults
from kafkalite.testing.properties import SECURE_PRESET
from kafkalite.testing.registry import (
    ApicurioRegistry,
    ExternalSchemaRegistry,
    SchemaRegistryService,
    start_default_registry,
)
from kafkalite.testing.releases import OLDEST_KAFKA_VERSION, ZOOKEEPER
from kafkalite.testing.secured import BrokerListener
from kafkalite.testing.services import JavaService
from kafkalite.testing.signin import SignInServices
from kafkalite.testing.topics import unique_topic_name

T = TypeVar("T")

_KEEP_SESSIONS = 5


class KafkaTestSession:
    """The brokers of one pytest session and the directory their files live in."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        self.keep_logs = False
        self._services: dict[str, object] = {}
        self._failures: dict[str, BaseException] = {}
        # Brokers left behind by a SIGKILLed earlier session (where PDEATHSIG did
        # not reach them) are killed before we start more.
        processes.reap_orphans()
        _prune(root, keep=_KEEP_SESSIONS)

    def service(self, key: str, factory: Callable[[Path], T]) -> T:
        """Start ``factory(run_dir)`` once; a failed start is not retried each test."""
        if key in self._failures:
            raise RuntimeError(f"{key} failed to start earlier in this session") from self._failures[key]
        if key not in self._services:
            try:
                self._services[key] = factory(self.dir / key)
            except BaseException as exc:
                self._failures[key] = exc
                self.keep_logs = True
                raise
        return cast(T, self._services[key])  # made by this key's factory

    def close(self) -> None:
        for service in self._services.values():
            close = getattr(service, "close", None)
            if close is not None:
                close(remove=False) if isinstance(service, LocalBroker | LocalCluster) else close()
        self._services.clear()
        if not self.keep_logs:
            shutil.rmtree(self.dir, ignore_errors=True)


def _prune(root: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` session directories of finished sessions."""
    if not root.is_dir():
        return
    sessions = sorted(p for p in root.iterdir() if p.is_dir())
    for old in sessions[:-keep] if keep else sessions:
        pid = old.name.rsplit("-", 1)[-1]
        if pid.isdigit() and processes.is_alive(int(pid)):
            continue
        shutil.rmtree(old, ignore_errors=True)


_SESSION_KEY = pytest.StashKey[KafkaTestSession]()


def _run_root(config: pytest.Config) -> Path:
    override = os.environ.get("KAFKALITE_RUN_DIR")
    return Path(override) if override else config.rootpath / ".kafkalite" / "runs"


def _version(env: Mapping[str, str]) -> str:
    return env.get("KAFKALITE_KAFKA_VERSION") or DEFAULT_KAFKA_VERSION


def _mode(env: Mapping[str, str]) -> str | None:
    """``KAFKALITE_KAFKA_MODE`` (``kraft`` / ``zookeeper``), for releases that have both."""
    return env.get("KAFKALITE_KAFKA_MODE") or None


def start_default_broker(run_dir: Path, env: Mapping[str, str] | None = None) -> KafkaService:
    """The ``kafka_broker`` service for the selected backend, ready to use."""
    env = os.environ if env is None else env
    backend = select_backend(env)
    if backend is Backend.EXTERNAL:
        external = ExternalKafka.from_env(env)
        external.wait_ready()
        return external
    if backend is Backend.DOCKER:
        from kafkalite.testing.containers import DockerKafka

        return DockerKafka(_version(env)).start()
    return LocalBroker(_version(env), run_dir=run_dir, mode=_mode(env)).start()


@pytest.fixture(scope="session")
def kafkalite_session(request: pytest.FixtureRequest) -> Iterator[KafkaTestSession]:
    """The session's broker registry (used by the other fixtures).

    Example::

        def test_own_service(kafkalite_session):        # what the other fixtures are built on
            kafkalite_session.service("my-broker", lambda run_dir: LocalBroker(run_dir=run_dir).start())
    """
    session = KafkaTestSession(_run_root(request.config))
    request.config.stash[_SESSION_KEY] = session
    yield session
    session.close()


@pytest.fixture(scope="session")
def kafka_broker(kafkalite_session: KafkaTestSession) -> KafkaService:
    """A running single Kafka broker of the pinned release (see the module doc).

    Example::

        def test_round_trip(kafka_broker, unique_topic):
            kafka_broker.create_topic(unique_topic)
            with Producer({"bootstrap.servers": kafka_broker.bootstrap}) as p:
                p.send(unique_topic, b"v").result(timeout=10)

        test_round_trip(kafka_broker, unique_topic_name("round trip"))   # pytest passes the fixtures
    """
    return kafkalite_session.service("broker", start_default_broker)


def _session_cluster(kafkalite_session: KafkaTestSession) -> LocalCluster:
    # Every node has a PROXIED listener (one more port, no cost until a proxy is used).
    cluster: LocalCluster = kafkalite_session.service(
        "cluster", lambda d: LocalCluster(3, _version(os.environ), run_dir=d, network_faults=True,
                               mode=_mode(os.environ)).start()
    )
    for broker in cluster:
        if broker._proxy is not None:
            broker._proxy.heal()
    cluster.heal()
    return cluster


@pytest.fixture
def kafka_cluster(kafkalite_session: KafkaTestSession) -> LocalCluster:
    """A healthy 3-node cluster (shared by the session, healed before each test).

    Example (not run: starts a 3-node cluster; tests/integration/test_admin_cluster.py and the fault tests use it)::

        def test_survives_a_crash(kafka_cluster):
            create_topic(kafka_cluster.bootstrap, "t", replication_factor=3)
            kafka_cluster.leader("t").kill()
    """
    return _session_cluster(kafkalite_session)


@pytest.fixture
def network_faults(kafkalite_session: KafkaTestSession) -> Iterator[NetworkFaults]:
    """Network faults between clients and the session's 3-node cluster: bootstrap
    clients with ``network_faults.bootstrap`` (their connections then all go through
    one proxy per broker) and switch faults on it (see
    :mod:`kafkalite.testing.netfaults`); every fault is cleared after the test.

    Example::

        def test_slow_network(network_faults):
            with network_faults.latency(200):
                with AdminClient({"bootstrap.servers": network_faults.bootstrap}) as a:
                    assert a.list_topics(timeout=30)

        test_slow_network(network_faults)
    """
    faults = _session_cluster(kafkalite_session).faults
    try:
        yield faults
    finally:
        faults.heal()


@pytest.fixture(scope="session")
def kafka_broker_zk(kafkalite_session: KafkaTestSession) -> LocalBroker:
    """A broker of the oldest release kafkalite supports (Kafka 2.1.1), in ZooKeeper mode:
    for the behaviour of features an old broker lacks.

    Example (not run: starts ZooKeeper and a Kafka 2.1.1 broker; tests/integration/test_old_brokers.py uses it)::

        def test_oldest_broker(kafka_broker_zk):
            with AdminClient({"bootstrap.servers": kafka_broker_zk.bootstrap}) as a:
                a.list_topics()
    """
    return kafkalite_session.service(
        "broker-zk", lambda d: LocalBroker(OLDEST_KAFKA_VERSION, run_dir=d, mode=ZOOKEEPER).start()
    )


@pytest.fixture(scope="session")
def kafka_broker_39(kafkalite_session: KafkaTestSession) -> LocalBroker:
    """A Kafka 3.9.x broker, for compatibility tests.

    Example (not run: starts a Kafka 3.9 broker; tests/integration/test_old_brokers.py uses it)::

        def test_on_kafka_39(kafka_broker_39):
            assert kafka_broker_39.major_version == 3
    """
    return kafkalite_session.service(
        "broker-3.9", lambda d: LocalBroker(COMPAT_KAFKA_VERSION, run_dir=d).start()
    )


@pytest.fixture(scope="session")
def kafka_broker_sasl(kafkalite_session: KafkaTestSession) -> LocalBroker:
    """The secured broker: SASL (SCRAM, PLAIN, OAUTHBEARER) and TLS listeners, ACLs on.

    Example (needs secured_broker)::

        def test_scram(kafka_broker_sasl):
            config = kafka_broker_sasl.client_config("SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                                                     sasl_username="admin", sasl_password="admin-secret")
            with AdminClient(config) as a:
                a.list_topics()

        test_scram(secured_broker)
    """
    return kafkalite_session.service(
        "broker-secure",
        lambda d: LocalBroker(_version(os.environ), run_dir=d, security=SECURE_PRESET).start(),
    )


@pytest.fixture(scope="session")
def kafka_broker_ssl(kafka_broker_sasl: LocalBroker) -> BrokerListener:
    """The secured broker's TLS listener (server certificate from the test CA).

    Example (needs secured_broker)::

        def test_tls(kafka_broker_ssl):
            with AdminClient(kafka_broker_ssl.client_config()) as a:
                a.list_topics()

        test_tls(BrokerListener(secured_broker, "SSL"))
    """
    return BrokerListener(kafka_broker_sasl, "SSL")


@pytest.fixture(scope="session")
def kafka_broker_mtls(kafka_broker_sasl: LocalBroker) -> BrokerListener:
    """The secured broker's mutual-TLS listener (client certificate required).

    Example (needs secured_broker)::

        def test_client_certificate(kafka_broker_mtls):
            with AdminClient(kafka_broker_mtls.client_config()) as a:     # the client certificate included
                a.list_topics()

        test_client_certificate(BrokerListener(secured_broker, "MTLS"))
    """
    return BrokerListener(kafka_broker_sasl, "MTLS")


@pytest.fixture(scope="session")
def kafka_broker_sasl_ssl(kafka_broker_sasl: LocalBroker) -> BrokerListener:
    """The secured broker's SASL_SSL listener.

    Example (needs secured_broker)::

        def test_sasl_over_tls(kafka_broker_sasl_ssl):
            config = kafka_broker_sasl_ssl.client_config(sasl_mechanism="PLAIN", sasl_username="admin",
                                                         sasl_password="admin-secret")
            with AdminClient(config) as a:
                a.list_topics()

        test_sasl_over_tls(BrokerListener(secured_broker, "SASL_SSL"))
    """
    return BrokerListener(kafka_broker_sasl, "SASL_SSL")


@pytest.fixture(scope="session")
def signin_services(kafkalite_session: KafkaTestSession) -> SignInServices:
    """The session's KDC, OIDC provider and sign-in broker (see :mod:`kafkalite.testing.signin`).

    Example (not run: starts a KDC, an OIDC provider and a broker; tests/integration/test_signin*.py use them)::

        def test_services(signin_services):
            print(signin_services)
    """
    services: SignInServices = kafkalite_session.service("signin", lambda d: SignInServices(d).start())
    if services.kdc is not None:
        # MIT Kerberos (the gssapi package) finds the realm through KRB5_CONFIG.
        os.environ.update(services.kdc.environment_for_clients())
    return services


@pytest.fixture(scope="session")
def kerberos_kdc(signin_services: SignInServices) -> Any:
    """Kafka's MiniKdc (``.keytab(name)``, ``.client_settings(name)``, ``.kinit(...)``).

    Example (not run: starts Kafka's MiniKdc; tests/integration/test_signin_kerberos.py uses it)::

        def test_kinit(kerberos_kdc):
            settings = kerberos_kdc.client_settings("client")
    """
    return signin_services.kdc


@pytest.fixture(scope="session")
def oidc_provider(signin_services: SignInServices) -> Any:
    """mock-oauth2-server (``.client_settings(client_id)``, ``.token_endpoint``, ``.jwks_url``).

    Example (not run: starts mock-oauth2-server; tests/integration/test_signin_oidc.py uses it)::

        def test_token(oidc_provider):
            settings = oidc_provider.client_settings("kafkalite-client")
    """
    return signin_services.oidc


@pytest.fixture(scope="session")
def kafka_broker_signin(signin_services: SignInServices) -> LocalBroker:
    """The broker with ``KERBEROS``, ``KERBEROS_REAUTH`` and ``OAUTH`` listeners.

    Example (not run: starts the sign-in broker with its KDC and OIDC provider; tests/integration/test_signin_clients.py uses it)::

        def test_listeners(kafka_broker_signin):
            print(kafka_broker_signin.bootstrap_for("OAUTH"))
    """
    assert signin_services.broker is not None
    return signin_services.broker


@pytest.fixture(scope="session")
def kafka_broker_kerberos(kafka_broker_signin: LocalBroker, kerberos_kdc: Any) -> BrokerListener:
    """The sign-in broker's GSSAPI listener.

    Example (not run: starts the sign-in broker and a KDC; tests/integration/test_signin_kerberos.py uses it)::

        def test_gssapi(kafka_broker_kerberos, kerberos_kdc):
            with AdminClient(kafka_broker_kerberos.client_config(**kerberos_kdc.client_settings("client"))) as a:
                a.list_topics()
    """
    return BrokerListener(kafka_broker_signin, "KERBEROS")


@pytest.fixture(scope="session")
def kafka_broker_oauth(kafka_broker_signin: LocalBroker, oidc_provider: Any) -> BrokerListener:
    """The sign-in broker's OAUTHBEARER (OIDC) listener.

    Example (not run: starts the sign-in broker and an OIDC provider; tests/integration/test_signin_oidc.py uses it)::

        def test_oidc(kafka_broker_oauth, oidc_provider):
            with AdminClient(kafka_broker_oauth.client_config(**oidc_provider.client_settings("kafkalite-client"))) as a:
                a.list_topics()
    """
    return BrokerListener(kafka_broker_signin, "OAUTH")


@pytest.fixture(scope="session")
def schema_registry(kafkalite_session: KafkaTestSession) -> SchemaRegistryService:
    """A running Schema Registry; ``.url`` is its Confluent-compatible API root.

    Example (needs schema_registry)::

        def test_avro(schema_registry, kafka_broker):
            serializer = AvroSerializer('"string"', {"schema.registry.url": schema_registry.url})
            assert serializer.serialize("names", "ada")[0] == 0

        test_avro(schema_registry, kafka_broker)
    """
    return kafkalite_session.service("schema-registry", start_default_registry)


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> str:
    """A topic name no other test uses (the topic is not created).

    Example::

        def test_fresh_topic(kafka_broker, unique_topic):
            kafka_broker.create_topic(unique_topic, partitions=2)

        test_fresh_topic(kafka_broker, unique_topic_name("fresh topic"))
    """
    return unique_topic_name(request.node.name)


TopicFactory = Callable[..., str]


@pytest.fixture
def topic_factory(request: pytest.FixtureRequest) -> TopicFactory:
    """Create uniquely named topics: ``topic_factory(partitions=3, configs={...})``.

    Example::

        def test_two_topics(topic_factory):
            source = topic_factory(partitions=3)
            sink = topic_factory(configs={"cleanup.policy": "compact"})
            assert source != sink

        test_two_topics(lambda **kw: create_topic(bootstrap, unique_topic_name("factory"), **kw))
    """

    def create(
        partitions: int = 1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        on: KafkaService | None = None,
    ) -> str:
        target = on if on is not None else request.getfixturevalue("kafka_broker")
        topic = name or unique_topic_name(request.node.name)
        return target.create_topic(topic, partitions, replication_factor, configs)

    return create


# -- reporting -----------------------------------------------------------------


def _services_of(item: pytest.Item) -> list[Any]:
    values = getattr(item, "funcargs", {}).values()
    kinds = (LocalBroker, LocalCluster, KafkaService, ApicurioRegistry, ExternalSchemaRegistry, BrokerListener,
             JavaService, SignInServices)
    return [v for v in values if isinstance(v, kinds)]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed:
        services = _services_of(item)
        session = item.config.stash.get(_SESSION_KEY, None)
        if services and session is not None:
            session.keep_logs = True
        for service in services:
            where = getattr(service, "run_dir", None)
            title = f"kafka logs: {service!r}" + (f" in {where}" if where else "")
            report.sections.append((title, service.log_tail(40)))
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    session = config.stash.get(_SESSION_KEY, None)
    if session is not None and session.keep_logs:
        terminalreporter.write_line(f"kafkalite: broker logs kept in {session.dir}")
