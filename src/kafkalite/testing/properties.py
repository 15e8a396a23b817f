"""The files a test broker runs with: ``server.properties`` and the logging config.

Everything here is pure (no processes, no sockets), so the choices are unit-tested
and readable in one place. Defaults aim at fast, deterministic tests:

- combined mode (``process.roles=broker,controller``) with a static quorum
  (``controller.quorum.voters``): the same config works for 3.9 and 4.x, needs no
  directory ids at format time, and a node restarted on its ports keeps its identity;
- ``auto.create.topics.enable=false``: tests create their topics explicitly, so a
  client bug that relies on auto-creation (or a typo in a topic name) fails loudly
  instead of silently creating a topic; pass ``auto_create_topics=True`` to change it;
- internal topics (offsets, transactions, share state) sized to the cluster, with
  few partitions so the first group or transaction does not wait for 50 of them;
- no rebalance delay, a small log-cleaner buffer to fit a small heap, and short
  broker session timeouts so a killed node is fenced in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkalite.testing.certs import TestPki

CONTROLLER_LISTENER = "CONTROLLER"
CLIENT_LISTENER = "PLAINTEXT"
#: A second PLAINTEXT listener advertised at a network-fault proxy's port (netfaults).
PROXIED_LISTENER = "PROXIED"


def kafka_major(version: str) -> int:
    """The major version number of a Kafka release.

    >>> kafka_major("3.9.1")
    3
    """
    return int(version.split(".", 1)[0])


SSL_PROTOCOLS = ("SSL", "SASL_SSL")
_UNSECURED_VALIDATOR = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
)
_JWKS_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
_KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
"""Kafka 4.x fetches JWKS / token URLs only if this JVM system property lists them."""


@dataclass(frozen=True)
class BrokerSignIn:
    """What GSSAPI and OIDC listeners need at run time: the KDC's and the identity
    provider's coordinates (see :mod:`kafkalite.testing.kdc` and
    :mod:`kafkalite.testing.oidc`).

    Attributes:
        krb5_conf: the realm's ``krb5.conf`` (``-Djava.security.krb5.conf``).
        keytab / principal: the broker's Kerberos identity (``kafka/127.0.0.1@REALM``).
        jwks_url / issuer / audience: what ``OAuthBearerValidatorCallbackHandler``
            checks tokens against.
    """

    krb5_conf: Path | None = None
    keytab: Path | None = None
    principal: str | None = None
    service_name: str = "kafka"
    jwks_url: str | None = None
    issuer: str | None = None
    audience: str | None = None

    def jvm_options(self) -> list[str]:
        """System properties of the broker's JVM."""
        options = []
        if self.krb5_conf is not None:
            options.append(f"-Djava.security.krb5.conf={self.krb5_conf}")
        if self.jwks_url is not None:
            options.append(f"-D{ALLOWED_URLS_PROPERTY}={self.jwks_url}")
        return options


@dataclass(frozen=True)
class SecurityPreset:
    """Secured client listeners: SASL users (SCRAM, PLAIN, optionally OAUTHBEARER),
    TLS listeners with test certificates, and ACLs on.

    The broker keeps its PLAINTEXT listener for the harness and for inter-broker and
    controller traffic; clients there are ``User:ANONYMOUS``, which must be a super
    user for the broker to talk to its own controller under an authorizer. So the
    PLAINTEXT port is an all-powerful back door, fine for tests: authorization is
    exercised through the secured listeners. (A TLS listener without client
    certificates also gives ``User:ANONYMOUS``.)

    Attributes:
        users: user name -> password; each gets SCRAM-SHA-256 and -512 credentials
            (created at format time) and a PLAIN login.
        super_users: users the StandardAuthorizer lets do anything.
        mechanisms: SASL mechanisms of every SASL listener. With ``OAUTHBEARER`` the
            broker validates unsigned JWTs with Kafka's built-in unsecured validator
            (any ``sub`` is accepted as the principal: test use only).
        listener: the main SASL listener (named after its protocol).
        extra_listeners: more client listeners, name -> security protocol, e.g.
            ``{"SSL": "SSL", "MTLS": "SSL", "SASL_SSL": "SASL_SSL"}``.
        client_auth_listeners: TLS listeners that require a client certificate.
        wrong_host_listeners: TLS listeners whose certificate names another host
            (:data:`~kafkalite.testing.certs.MISMATCHED_HOST`).
        listener_configs: listener name -> more broker settings for that listener
            only (written with the ``listener.name.<name>.`` prefix), e.g.
            ``{"REAUTH": {"connections.max.reauth.ms": "3000"}}``.
        listener_mechanisms: listener name -> its SASL mechanisms, where they differ
            from ``mechanisms`` (``GSSAPI`` needs :class:`BrokerSignIn`'s keytab).
        oidc_listeners: listeners whose OAUTHBEARER validates signed JWTs against the
            identity provider's JWKS (Kafka's ``OAuthBearerValidatorCallbackHandler``)
            instead of accepting unsigned test tokens.
        authorizer: run the StandardAuthorizer (False: every signed-in principal may
            do anything; for tests of signing in, not of authorization).

    Example::

        preset = SecurityPreset(users={"alice": "alice-secret", "admin": "admin-secret"})
        assert preset.listeners == {"SASL_PLAINTEXT": "SASL_PLAINTEXT"}
    """

    users: Mapping[str, str] = field(
        default_factory=lambda: {
            "admin": "admin-secret",
            "alice": "alice-secret",
            "bob": "bob-secret",
        }
    )
    super_users: tuple[str, ...] = ("admin",)
    mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    listener: str = "SASL_PLAINTEXT"
    extra_listeners: Mapping[str, str] = field(default_factory=dict)
    client_auth_listeners: tuple[str, ...] = ()
    wrong_host_listeners: tuple[str, ...] = ()
    listener_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    listener_mechanisms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    oidc_listeners: tuple[str, ...] = ()
    authorizer: bool = True

    @property
    def listeners(self) -> dict[str, str]:
        """Every client listener this preset adds: name -> security protocol.

        Example::

            assert set(SECURE_PRESET.listeners) >= {"SASL_PLAINTEXT", "SSL", "MTLS", "SASL_SSL"}
        """
        return {self.listener: self.listener, **self.extra_listeners}

    @property
    def needs_tls(self) -> bool:
        """Whether the broker needs certificates (some listener speaks TLS).

        Example::

            assert SECURE_PRESET.needs_tls and not SASL_PRESET.needs_tls
        """
        return any(p in SSL_PROTOCOLS for p in self.listeners.values())

    def scram_arguments(self) -> list[str]:
        """``kafka-storage format`` arguments that create the SCRAM credentials.

        Example::

            args = SASL_PRESET.scram_arguments()
            assert "--add-scram" in args
        """
        args = []
        for mechanism in (m for m in self.mechanisms if m.startswith("SCRAM-")):
            for user, password in self.users.items():
                args += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
        return args

    def properties(self, tls: TestPki | None = None, signin: BrokerSignIn | None = None) -> dict[str, str]:
        """Broker settings; ``tls`` gives the certificate files for TLS listeners,
        ``signin`` the KDC and identity provider of GSSAPI and OIDC listeners.

        Example::

            settings = SASL_PRESET.properties()
            assert "SCRAM-SHA-256" in settings["sasl.enabled.mechanisms"]
        """
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in self.users.items())
        props = {"sasl.enabled.mechanisms": ",".join(self.mechanisms)}
        if self.authorizer:
            props.update({
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": ";".join([f"User:{u}" for u in self.super_users] + ["User:ANONYMOUS"]),
                "allow.everyone.if.no.acl.found": "false",
            })
        for name, protocol in self.listeners.items():
            prefix = f"listener.name.{name.lower()}"
            if protocol.startswith("SASL"):
                mechanisms = self.listener_mechanisms.get(name, self.mechanisms)
                props[f"{prefix}.sasl.enabled.mechanisms"] = ",".join(mechanisms)
                props.update(_signin_properties(prefix, name, mechanisms, self.oidc_listeners, signin))
                for mechanism in mechanisms:
                    if mechanism == "PLAIN":
                        props[f"{prefix}.plain.sasl.jaas.config"] = (
                            f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"
                        )
                    elif mechanism.startswith("SCRAM-"):
                        props[f"{prefix}.{mechanism.lower()}.sasl.jaas.config"] = (
                            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                        )
                    elif mechanism == "OAUTHBEARER" and name not in self.oidc_listeners:
                        # The broker's own login token (unused by a single node) and the
                        # validator that accepts unsigned JWTs ("alg":"none").
                        props[f"{prefix}.oauthbearer.sasl.jaas.config"] = (
                            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                            'unsecuredLoginStringClaim_sub="admin";'
                        )
                        props[f"{prefix}.oauthbearer.sasl.server.callback.handler.class"] = _UNSECURED_VALIDATOR
            if protocol in SSL_PROTOCOLS:
                if tls is None:
                    raise ValueError(f"listener {name} speaks {protocol}: the broker needs test certificates")
                keystore = tls.broker_wrong_host_keystore if name in self.wrong_host_listeners else tls.broker_keystore
                props[f"{prefix}.ssl.keystore.type"] = "PEM"
                props[f"{prefix}.ssl.keystore.location"] = str(keystore)
                props[f"{prefix}.ssl.truststore.type"] = "PEM"
                props[f"{prefix}.ssl.truststore.location"] = str(tls.ca)
                props[f"{prefix}.ssl.client.auth"] = "required" if name in self.client_auth_listeners else "none"
                # A client certificate's principal is its CN ("User:kafkalite-client"),
                # not the whole distinguished name.
                props[f"{prefix}.ssl.principal.mapping.rules"] = "RULE:^CN=([^,]+).*$/$1/,DEFAULT"
            for key, value in self.listener_configs.get(name, {}).items():
                props[f"{prefix}.{key}"] = str(value)
        return props


def _signin_properties(prefix: str, listener: str, mechanisms: tuple[str, ...], oidc_listeners: tuple[str, ...],
                       signin: BrokerSignIn | None) -> dict[str, str]:
    """GSSAPI (keytab login of the broker) and OIDC (JWKS validation) settings of one listener."""
    props: dict[str, str] = {}
    needs_kerberos = "GSSAPI" in mechanisms
    needs_oidc = "OAUTHBEARER" in mechanisms and listener in oidc_listeners
    if (needs_kerberos or needs_oidc) and signin is None:
        raise ValueError(f"listener {listener} signs in with {'/'.join(mechanisms)}: the broker needs BrokerSignIn")
    if needs_kerberos and signin is not None:
        if signin.keytab is None or signin.principal is None:
            raise ValueError(f"listener {listener} uses GSSAPI: BrokerSignIn needs the broker's keytab and principal")
        props[f"{prefix}.gssapi.sasl.jaas.config"] = (
            f'{_KRB5_LOGIN_MODULE} required useKeyTab=true storeKey=true keyTab="{signin.keytab}" '
            f'principal="{signin.principal}";')
        props[f"{prefix}.gssapi.sasl.kerberos.service.name"] = signin.service_name
        props["sasl.kerberos.service.name"] = signin.service_name
    if needs_oidc and signin is not None:
        if signin.jwks_url is None:
            raise ValueError(f"listener {listener} validates OIDC tokens: BrokerSignIn needs jwks_url")
        props[f"{prefix}.oauthbearer.sasl.server.callback.handler.class"] = _JWKS_VALIDATOR
        # The broker's own login (unused by one node) with Java's default unsecured handler.
        props[f"{prefix}.oauthbearer.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="broker";')
        props["sasl.oauthbearer.jwks.endpoint.url"] = signin.jwks_url
        if signin.issuer:
            props["sasl.oauthbearer.expected.issuer"] = signin.issuer
        if signin.audience:
            props["sasl.oauthbearer.expected.audience"] = signin.audience
    return props


SASL_PRESET = SecurityPreset()
"""The SASL preset: ``LocalBroker(security=SASL_PRESET)`` (SASL_PLAINTEXT, PLAIN + SCRAM)."""

REAUTH_MS = 3000
"""``connections.max.reauth.ms`` of :data:`SECURE_PRESET`'s ``REAUTH`` listener (KIP-368)."""

SECURE_PRESET = SecurityPreset(
    mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"),
    super_users=("admin", "kafkalite-client"),
    extra_listeners={"SSL": "SSL", "MTLS": "SSL", "SSL_WRONG_HOST": "SSL", "SASL_SSL": "SASL_SSL",
                     "REAUTH": "SASL_PLAINTEXT", "TLS13": "SSL"},
    client_auth_listeners=("MTLS",),
    wrong_host_listeners=("SSL_WRONG_HOST",),
    listener_configs={"REAUTH": {"connections.max.reauth.ms": str(REAUTH_MS)},
                      "TLS13": {"ssl.enabled.protocols": "TLSv1.3"}},
)
"""Everything security tests need on one broker (one JVM start instead of five):

- ``SASL_PLAINTEXT``: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER (unsecured JWTs);
- ``SSL``: TLS, server certificate for 127.0.0.1/localhost from the test CA;
- ``MTLS``: TLS with a required client certificate (principal ``User:kafkalite-client``,
  a super user);
- ``SSL_WRONG_HOST``: TLS whose certificate names another host (hostname verification);
- ``SASL_SSL``: the SASL mechanisms over TLS;
- ``REAUTH``: SASL_PLAINTEXT with ``connections.max.reauth.ms`` = :data:`REAUTH_MS`;
- ``TLS13``: TLS that accepts TLS 1.3 only (``ssl.enabled.protocols=TLSv1.3``).
"""

SIGNIN_REAUTH_MS = 4000
"""``connections.max.reauth.ms`` of :data:`SIGNIN_PRESET`'s ``KERBEROS_REAUTH`` listener."""

SIGNIN_PRESET = SecurityPreset(
    mechanisms=("PLAIN",),
    extra_listeners={"KERBEROS": "SASL_PLAINTEXT", "KERBEROS_REAUTH": "SASL_PLAINTEXT", "OAUTH": "SASL_PLAINTEXT"},
    listener_mechanisms={"KERBEROS": ("GSSAPI",), "KERBEROS_REAUTH": ("GSSAPI",), "OAUTH": ("OAUTHBEARER",)},
    oidc_listeners=("OAUTH",),
    listener_configs={"KERBEROS_REAUTH": {"connections.max.reauth.ms": str(SIGNIN_REAUTH_MS)},
                      # KIP-368: a session ends when its token expires (tokens are short in tests).
                      "OAUTH": {"connections.max.reauth.ms": "3600000"}},
    authorizer=False,
)
"""Enterprise sign-in on one broker (it needs :class:`BrokerSignIn` from a KDC and an
OIDC provider); no authorizer:

- ``KERBEROS``: SASL_PLAINTEXT with GSSAPI (the broker is ``kafka/127.0.0.1@EXAMPLE.COM``);
- ``KERBEROS_REAUTH``: the same with ``connections.max.reauth.ms`` = :data:`SIGNIN_REAUTH_MS`;
- ``OAUTH``: SASL_PLAINTEXT with OAUTHBEARER validated against the provider's JWKS,
  expected issuer and audience; a session ends when its token expires (KIP-368).
"""


@dataclass(frozen=True)
class NodeConfig:
    """Everything that makes one node's ``server.properties``.

    Attributes:
        listeners: client listener name -> port; ``PLAINTEXT`` always, plus the
            security preset's listeners when there is one.
        voters: node id -> controller port of every quorum member (itself included).
        tls: the certificate files of TLS listeners (see :mod:`kafkalite.testing.certs`).

    Example::

        node = kafka_broker.config()                    # what server.properties is made from
        assert node.version == DEFAULT_KAFKA_VERSION and node.auto_create_topics
    """

    node_id: int
    version: str
    data_dir: Path
    listeners: Mapping[str, int]
    controller_port: int
    voters: Mapping[int, int]
    host: str = "127.0.0.1"
    replication_factor: int = 1
    min_insync_replicas: int = 1
    auto_create_topics: bool = False
    internal_topic_partitions: int = 10
    security: SecurityPreset | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    tls: TestPki | None = None
    signin: BrokerSignIn | None = None
    #: listener name -> the port to advertise instead of the bound one (a proxy's)
    advertised_ports: Mapping[str, int] = field(default_factory=dict)
    #: ZooKeeper mode: the ZooKeeper server's ``host:port`` (None: KRaft mode)
    zookeeper_connect: str | None = None


def server_properties(cfg: NodeConfig) -> dict[str, str]:
    """The broker's configuration, ``cfg.extra`` applied last (it wins).

    >>> cfg = NodeConfig(1, "4.3.1", Path("/d"), {"PLAINTEXT": 9092}, 9093, {1: 9093})
    >>> server_properties(cfg)["controller.quorum.voters"]
    '1@127.0.0.1:9093'
    """
    rf, isr = str(cfg.replication_factor), str(cfg.min_insync_replicas)
    internal = str(cfg.internal_topic_partitions)
    protocols = {name: "PLAINTEXT" if name == PROXIED_LISTENER else name for name in cfg.listeners}
    if cfg.security is not None:
        protocols.update({n: p for n, p in cfg.security.listeners.items() if n in cfg.listeners})
    protocols[CONTROLLER_LISTENER] = "PLAINTEXT"
    client = [f"{name}://{cfg.host}:{port}" for name, port in cfg.listeners.items()]
    advertised = [f"{name}://{cfg.host}:{cfg.advertised_ports.get(name, port)}" for name, port in cfg.listeners.items()]
    if cfg.zookeeper_connect is not None:
        del protocols[CONTROLLER_LISTENER]
        mode = {
            "broker.id": str(cfg.node_id),
            "zookeeper.connect": cfg.zookeeper_connect,
            # A killed broker leaves the cluster when its ZooKeeper session expires:
            # seconds, not the 18 s default, for fault tests (6 s was the default up to 2.4).
            "zookeeper.session.timeout.ms": "6000",
            "listeners": ",".join(client),
        }
    else:
        mode = {
            "process.roles": "broker,controller",
            "node.id": str(cfg.node_id),
            "controller.quorum.voters": ",".join(
                f"{node}@{cfg.host}:{port}" for node, port in sorted(cfg.voters.items())
            ),
            "listeners": ",".join([*client, f"{CONTROLLER_LISTENER}://{cfg.host}:{cfg.controller_port}"]),
            "controller.listener.names": CONTROLLER_LISTENER,
            # Fence a dead broker in seconds rather than the 9 s default.
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": "4000",
        }
    props = {
        **mode,
        "advertised.listeners": ",".join(advertised),
        "inter.broker.listener.name": CLIENT_LISTENER,
        "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in protocols.items()),
        "log.dirs": str(cfg.data_dir),
        "num.partitions": "1",
        "default.replication.factor": rf,
        "min.insync.replicas": isr,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": internal,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": isr,
        "transaction.state.log.num.partitions": internal,
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": str(cfg.auto_create_topics).lower(),
        # The cleaner allocates this buffer up front; Kafka's 128 MiB default would
        # eat a quarter of a 512 MiB heap.
        "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
        "num.recovery.threads.per.data.dir": "2",
    }
    if kafka_major(cfg.version) >= 4:
        props.update(
            {
                "share.coordinator.state.topic.replication.factor": rf,
                "share.coordinator.state.topic.min.isr": isr,
                "share.coordinator.state.topic.num.partitions": internal,
                # KIP-848 groups (group.protocol=consumer, on by default in 4.x): the broker dictates the
                # heartbeat interval (default 5 s, minimum 5 s) and session timeout
                # (45 s); tests of members joining, leaving and dying need seconds.
                "group.consumer.min.heartbeat.interval.ms": "500",
                "group.consumer.heartbeat.interval.ms": "1000",
                "group.consumer.min.session.timeout.ms": "6000",
                "group.consumer.session.timeout.ms": "10000",
                # KIP-932 share groups: the broker's floors (record lock 15 s, heartbeat 5 s,
                # session 45 s) would make redelivery and member-loss tests wait minutes;
                # tests lower a group's share.record.lock.duration.ms to seconds.
                "group.share.min.record.lock.duration.ms": "1000",
                "group.share.min.heartbeat.interval.ms": "500",
                "group.share.heartbeat.interval.ms": "1000",
                "group.share.min.session.timeout.ms": "6000",
                "group.share.session.timeout.ms": "10000",
            }
        )
    if cfg.security is not None:
        props.update(cfg.security.properties(cfg.tls, cfg.signin))
    props.update({k: str(v) for k, v in cfg.extra.items()})
    return props


def render_properties(props: Mapping[str, str]) -> str:
    """Java ``.properties`` text (keys sorted; backslashes escaped).

    >>> render_properties({"b": "2", "a": "c:\\\\x"})
    'a=c:\\\\\\\\x\\nb=2\\n'
    """
    lines = [f"{k}={v.replace(chr(92), chr(92) * 2)}" for k, v in sorted(props.items())]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class LogConfig:
    """A logging configuration file and the JVM flag that selects it."""

    filename: str
    text: str
    jvm_flag_template: str

    def jvm_flag(self, path: Path) -> str:
        return self.jvm_flag_template.format(path=path)


def broker_log_config(version: str) -> LogConfig:
    """INFO and above into ``${kafka.logs.dir}/server.log``.

    Kafka 4 logs with log4j2 (``-Dlog4j2.configurationFile``); 3.x with reload4j
    (``-Dlog4j.configuration``).
    """
    pattern = "[%d] %p %m (%c)%n"
    if kafka_major(version) >= 4:
        text = f"""status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${{sys:kafka.logs.dir}}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = {pattern}
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafkarequest.name = kafka.request.logger
logger.kafkarequest.level = WARN
"""
        return LogConfig("log4j2.properties", text, "-Dlog4j2.configurationFile={path}")
    text = f"""log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${{kafka.logs.dir}}/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern={pattern}
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
"""
    return LogConfig("log4j.properties", text, "-Dlog4j.configuration=file:{path}")


def tools_log_config(version: str) -> LogConfig:
    """WARN and above to stderr, like Kafka's own ``tools-log4j`` config."""
    if kafka_major(version) >= 4:
        text = """status = error
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
"""
        return LogConfig("tools-log4j2.properties", text, "-Dlog4j2.configurationFile={path}")
    text = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
    return LogConfig("tools-log4j.properties", text, "-Dlog4j.configuration=file:{path}")
