"""One schema for every setting of every kafkalite client.

Settings use the Java client's names (``bootstrap.servers``, ``linger.ms``); each also
has a snake_case alias (``bootstrap_servers``, ``linger_ms``) so that keyword arguments
read naturally. Defaults follow the Java client 4.x.

This module is declarative: names, types, ranges, defaults, which client kinds take a
setting (and why another kind refuses it), what a kind cannot run without. It imports
nothing of ``net/`` or the clients. :func:`parse` applies the schema alone; clients get
their settings from their own rules (:class:`kafkalite.settings.ClientRules`), which
add the checks that relate several settings or load something (TLS stores, SASL
logins). Everything is validated at construction: an unknown key fails and
suggests the nearest known one, a wrong type or range names the key and the value.

Example::

    from kafkalite.producer.settings import PRODUCER_RULES
    cfg = PRODUCER_RULES.resolve({"bootstrap.servers": "127.0.0.1:9092"}, linger_ms=10)
    cfg["linger.ms"]      # 10
    cfg.linger_ms         # 10
    cfg.is_set("acks")    # False: acks is at its default ("all")
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from kafkalite.errors import ConfigError, InvalidArgumentError, InvalidGroupIdError, KafkaError

if TYPE_CHECKING:
    from kafkalite._config_keys import (
        BoolSetting,
        FloatSetting,
        IntSetting,
        OptionalStrSetting,
        PluginListSetting,
        PluginSetting,
        StrListSetting,
        StrSetting,
    )

PRODUCER, CONSUMER, ADMIN = "producer", "consumer", "admin"
SHARE_CONSUMER = "share_consumer"  # KIP-932 share groups (kafkalite.ShareConsumer)
ALL = frozenset({PRODUCER, CONSUMER, ADMIN, SHARE_CONSUMER})
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Setting:
    """One setting: its Java name, type, default, allowed range and which clients take it."""

    name: str
    type: str  # int, bool, str, list, choice, password, object, float
    default: Any
    doc: str
    clients: frozenset[str] = ALL
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    defaults_by_client: Mapping[str, Any] = field(default_factory=dict)
    # A list's items: names ("str"), or plugins given as objects or names ("object").
    items: str = "str"

    @property
    def alias(self) -> str:
        return self.name.replace(".", "_").replace("-", "_")

    def default_for(self, client: str) -> Any:
        return self.defaults_by_client.get(client, self.default)


def _s(name: str, type_: str, default: Any, doc: str, clients: frozenset[str] | set[str] = ALL,
       **kw: Any) -> Setting:
    return Setting(name, type_, default, doc, frozenset(clients), **kw)


P, C, A, S = {PRODUCER}, {CONSUMER}, {ADMIN}, {SHARE_CONSUMER}
PC = {PRODUCER, CONSUMER}
CS = {CONSUMER, SHARE_CONSUMER}

SETTINGS: tuple[Setting, ...] = (
    # ------------------------------------------------------------ every client
    _s("bootstrap.servers", "list", None, "host:port pairs used to discover the cluster."),
    _s("client.id", "str", "",
       "A name for this client in broker logs, quotas and metrics; empty: Java's default "
       "(producer-N or producer-<transactional.id>, consumer-<group>-N, adminclient-N)."),
    _s("client.rack", "str", "",
       "The rack of this client: consumers fetch from the nearest replica (KIP-392); every client "
       "reports it as the client_rack label of its pushed metrics (KIP-714)."),
    _s("request.timeout.ms", "int", 30000, "How long to wait for a broker's response.", min=0),
    _s("default.api.timeout.ms", "int", 60000, "Timeout of blocking calls that take no timeout.",
       {CONSUMER, ADMIN, SHARE_CONSUMER}, min=0),
    _s("retries", "int", INT32_MAX, "How often a failed request is retried (bounded by timeouts).",
       {PRODUCER, ADMIN}, min=0),
    _s("retry.backoff.ms", "int", 100, "First delay before retrying a failed request.", min=0),
    _s("retry.backoff.max.ms", "int", 1000, "Longest delay between retries (exponential, jittered).", min=0),
    _s("reconnect.backoff.ms", "int", 50, "First delay before reconnecting to a broker.", min=0),
    _s("reconnect.backoff.max.ms", "int", 1000, "Longest delay between reconnects.", min=0),
    _s("socket.connection.setup.timeout.ms", "int", 10000, "Timeout of one connection attempt.", min=0),
    _s("socket.connection.setup.timeout.max.ms", "int", 30000, "Longest connection timeout (exponential).", min=0),
    _s("connections.max.idle.ms", "int", 540000, "Close connections idle this long.",
       defaults_by_client={ADMIN: 300000}),
    _s("metadata.max.age.ms", "int", 300000, "Refresh metadata at least this often.", min=0),
    _s("metadata.recovery.strategy", "choice", "rebootstrap",
       "What to do when no known broker answers (KIP-899).", choices=("none", "rebootstrap")),
    # The producer leaves SO_SNDBUF to the OS (librdkafka's default), not Java's 128 KiB:
    # a 1 MB batch (its batch.size default) through 128 KiB takes ~8 writability
    # wake-ups of the engine, each waiting for the GIL; docs/producer.md has the figures.
    _s("send.buffer.bytes", "int", 131072, "SO_SNDBUF (-1: OS default).", min=-1,
       defaults_by_client={PRODUCER: -1}),
    _s("receive.buffer.bytes", "int", 32768, "SO_RCVBUF (-1: OS default).", min=-1,
       defaults_by_client={CONSUMER: 65536, SHARE_CONSUMER: 65536}),
    _s("receive.message.max.bytes", "int", 512 * 1024 * 1024,
       "Largest response frame accepted from a broker (guards against corrupt length fields).",
       min=1024),
    _s("metrics.sample.window.ms", "int", 30000, "Window of rate and average metrics.", min=1),
    _s("metrics.num.samples", "int", 2, "Samples kept per metric window.", min=1),
    _s("metrics.recording.level", "choice", "INFO",
       "Finest sensor level recorded (INFO, DEBUG adds DEBUG sensors, TRACE adds TRACE ones), as Java's; "
       "every client sensor is INFO-level, as in the Java clients.",
       choices=("INFO", "DEBUG", "TRACE")),
    _s("metric.reporters", "list", [],
       "Reporters called with metrics() every metrics.report.interval.ms: callables, objects with "
       "report(snapshot), classes, or 'module:attr' strings (docs/observability.md).", items="object"),
    _s("metrics.report.interval.ms", "int", 30000, "How often metric.reporters are called.", min=100),
    _s("enable.metrics.push", "bool", True,
       "Push client metrics to the broker when it has a matching client-metrics subscription (KIP-714).",
       defaults_by_client={ADMIN: False}),
    _s("otel.meter.provider", "object", None,
       "Export metrics() through OpenTelemetry: a MeterProvider, 'global' or 'module:attr' naming one "
       "(needs kafkalite[otel])."),
    _s("security.protocol", "choice", "PLAINTEXT", "How to talk to brokers.",
       choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    _s("sasl.mechanism", "choice", "GSSAPI",
       "SASL mechanism; Java's default GSSAPI is Kerberos (needs the gssapi extra).",
       choices=("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")),
    _s("sasl.username", "str", None, "SASL PLAIN/SCRAM user name (or use sasl.jaas.config)."),
    _s("sasl.password", "password", None, "SASL PLAIN/SCRAM password (or use sasl.jaas.config)."),
    _s("sasl.jaas.config", "password", None,
       "Java-style JAAS line: username/password (PLAIN/SCRAM), Krb5LoginModule options (GSSAPI), "
       "clientId/clientSecret/scope or unsecuredLoginStringClaim_sub (OAUTHBEARER)."),
    _s("sasl.oauthbearer.token.provider", "object", None,
       "Callable returning the OAUTHBEARER token: a str, (token, lifetime_ms) or an object with .token."),
    # -- GSSAPI (Kerberos), as Java's KerberosLogin
    _s("sasl.kerberos.service.name", "str", None,
       "Kerberos service name of the brokers (the 'kafka' of kafka/host@REALM); required for GSSAPI."),
    _s("sasl.kerberos.kinit.cmd", "str", "/usr/bin/kinit",
       "kinit used to renew a ticket-cache TGT (kinit -R) before it expires."),
    _s("sasl.kerberos.ticket.renew.window.factor", "float", 0.8,
       "Re-login (keytab) or renew (ticket cache) at this part of the TGT's lifetime.", min=0.0, max=1.0),
    _s("sasl.kerberos.ticket.renew.jitter", "float", 0.05,
       "Random part added to the renew window factor.", min=0.0, max=1.0),
    _s("sasl.kerberos.min.time.before.relogin", "int", 60000, "Least time between two Kerberos re-logins (ms).",
       min=0),
    # -- OAUTHBEARER with OIDC (KIP-768, KIP-1139)
    _s("sasl.login.callback.handler.class", "str", None,
       "Java's OAuthBearerLoginCallbackHandler (OIDC login) is accepted; kafkalite logs in to "
       "sasl.oauthbearer.token.endpoint.url itself."),
    _s("sasl.oauthbearer.token.endpoint.url", "str", None,
       "OAuth/OIDC token endpoint (https://...), or file:/path of a token (KIP-768)."),
    _s("sasl.oauthbearer.client.credentials.client.id", "str", None, "OAuth client id (client_credentials grant)."),
    _s("sasl.oauthbearer.client.credentials.client.secret", "password", None, "OAuth client secret."),
    _s("sasl.oauthbearer.scope", "str", None, "Scope requested from the token endpoint."),
    _s("sasl.oauthbearer.jwt.retriever.class", "str", "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
       "How tokens are fetched: DefaultJwtRetriever, ClientCredentialsJwtRetriever, JwtBearerJwtRetriever or "
       "FileJwtRetriever (Java's class names, with or without package)."),
    _s("sasl.oauthbearer.scope.claim.name", "str", "scope", "JWT claim holding the token's scopes."),
    _s("sasl.oauthbearer.sub.claim.name", "str", "sub", "JWT claim holding the principal."),
    _s("sasl.oauthbearer.header.urlencode", "bool", False,
       "URL-encode client id and secret in the Authorization header (KIP-1025)."),
    _s("sasl.oauthbearer.assertion.algorithm", "choice", "RS256", "Signature algorithm of a generated assertion.",
       choices=("RS256", "ES256")),
    _s("sasl.oauthbearer.assertion.claim.aud", "str", None, "aud claim of a generated assertion."),
    _s("sasl.oauthbearer.assertion.claim.exp.seconds", "int", 300, "Lifetime of a generated assertion (s).",
       min=0, max=86400),
    _s("sasl.oauthbearer.assertion.claim.iss", "str", None, "iss claim of a generated assertion."),
    _s("sasl.oauthbearer.assertion.claim.jti.include", "bool", False, "Add a random jti claim to the assertion."),
    _s("sasl.oauthbearer.assertion.claim.nbf.seconds", "int", 60, "nbf of a generated assertion, seconds ago.",
       min=0, max=3600),
    _s("sasl.oauthbearer.assertion.claim.sub", "str", None, "sub claim of a generated assertion."),
    _s("sasl.oauthbearer.assertion.file", "str", None, "File holding a ready JWT assertion (re-read at each login)."),
    _s("sasl.oauthbearer.assertion.private.key.file", "str", None, "PEM private key that signs the assertion."),
    _s("sasl.oauthbearer.assertion.private.key.passphrase", "password", None, "Passphrase of that key."),
    _s("sasl.oauthbearer.assertion.template.file", "str", None,
       "JSON file with 'header' and 'payload' objects merged into a generated assertion."),
    _s("sasl.login.refresh.window.factor", "float", 0.8,
       "Refresh the token at this part of its lifetime.", min=0.5, max=1.0),
    _s("sasl.login.refresh.window.jitter", "float", 0.05, "Random part added to the refresh window factor.",
       min=0.0, max=0.25),
    _s("sasl.login.refresh.min.period.seconds", "int", 60, "Least time between two token refreshes (s).",
       min=0, max=900),
    _s("sasl.login.refresh.buffer.seconds", "int", 300, "Refresh at least this long before the token expires (s).",
       min=0, max=3600),
    _s("sasl.login.connect.timeout.ms", "int", 10000,
       "Connect timeout to the token endpoint (Java: unset means none; kafkalite waits 10 s).", min=1),
    _s("sasl.login.read.timeout.ms", "int", 10000,
       "Read timeout of the token endpoint (Java: unset means none; kafkalite waits 10 s).", min=1),
    _s("sasl.login.retry.backoff.ms", "int", 100, "First delay before retrying the token endpoint.", min=0),
    _s("sasl.login.retry.backoff.max.ms", "int", 10000,
       "Give up on the token endpoint once retrying would exceed this (ms).", min=0),
    _s("ssl.ca.location", "str", None, "PEM file (or directory) of CA certificates to trust."),
    _s("ssl.truststore.location", "str", None, "PEM truststore (Java name; same as ssl.ca.location)."),
    _s("ssl.truststore.type", "choice", "PEM", "PEM or PKCS12 (JKS is refused with the conversion command).",
       choices=("PEM", "JKS", "PKCS12")),
    _s("ssl.truststore.certificates", "str", None, "CA certificates as PEM text (Java's PEM trust store)."),
    _s("ssl.truststore.password", "password", None, "Password of a PKCS12 trust store (PEM: an error if set)."),
    _s("ssl.certificate.location", "str", None, "PEM client certificate (mutual TLS)."),
    _s("ssl.key.location", "str", None, "PEM private key of the client certificate."),
    _s("ssl.key.password", "password", None, "Password of the (encrypted PKCS#8) private key."),
    _s("ssl.keystore.location", "str", None, "Key store: private key and certificate chain (PEM or PKCS12 file)."),
    _s("ssl.keystore.type", "choice", "PEM", "PEM or PKCS12 (JKS is refused with the conversion command).",
       choices=("PEM", "JKS", "PKCS12")),
    _s("ssl.keystore.key", "password", None, "Private key as PEM text (with ssl.keystore.certificate.chain)."),
    _s("ssl.keystore.certificate.chain", "str", None, "Client certificate chain as PEM text."),
    _s("ssl.keystore.password", "password", None, "Password of a PKCS12 key store (PEM: an error if set)."),
    _s("ssl.endpoint.identification.algorithm", "str", "https",
       "'https' checks the broker's host name against its certificate; '' turns it off."),
    _s("ssl.enabled.protocols", "list", ["TLSv1.2", "TLSv1.3"], "TLS versions the client may use."),
    _s("ssl.protocol", "choice", "TLSv1.3", "Java's SSLContext protocol: TLSv1.2 caps the handshake at TLS 1.2 whatever "
       "ssl.enabled.protocols lists; TLSv1.3 and TLS leave ssl.enabled.protocols to decide.",
       choices=("TLSv1.2", "TLSv1.3", "TLS")),
    _s("ssl.cipher.suites", "list", [], "OpenSSL cipher names for TLS 1.2 (empty: OpenSSL's defaults)."),
    _s("ssl.context", "object", None, "A ready ssl.SSLContext (overrides the other ssl.* settings)."),
    # ------------------------------------------------------------ producer
    _s("acks", "choice", "all", "Acknowledgements the leader waits for: 0, 1 or all (-1).", P,
       choices=("0", "1", "all", "-1")),
    _s("linger.ms", "int", 5, "How long a batch waits for more records.", P, min=0),
    # Not Java's 16384: batches reserve buffer.memory as they grow (accumulator.py), so a
    # large batch.size costs nothing on quiet partitions; docs/producer.md says why.
    _s("batch.size", "int", 1_000_000, "Target size of one partition's batch in bytes.", P, min=0),
    _s("buffer.memory", "int", 32 * 1024 * 1024, "Bytes of records buffered before send() blocks.", P, min=0),
    _s("max.block.ms", "int", 60000, "How long send() may block (full buffer, missing metadata).", P, min=0),
    _s("compression.type", "choice", "none", "Codec for batches.", P,
       choices=("none", "gzip", "snappy", "lz4", "zstd")),
    _s("compression.gzip.level", "int", -1, "gzip level (1-9; -1: default 6).", P, min=-1, max=9),
    _s("compression.lz4.level", "int", 9, "lz4 level (1-17).", P, min=1, max=17),
    _s("compression.zstd.level", "int", 3, "zstd level (-131072..22).", P, min=-131072, max=22),
    _s("max.request.size", "int", 1048576, "Largest produce request (and record) in bytes.", P, min=0),
    _s("delivery.timeout.ms", "int", 120000, "Bound on the time to report a send's outcome.", P, min=0),
    _s("max.in.flight.requests.per.connection", "int", 5, "Unacknowledged requests per broker.",
       P, min=1),
    _s("enable.idempotence", "bool", True, "Exactly-once per partition within a producer session.", P),
    _s("transactional.id", "str", None, "Makes the producer transactional.", P),
    _s("transaction.timeout.ms", "int", 60000, "Broker aborts transactions open longer than this.", P, min=1),
    _s("transaction.two.phase.commit.enable", "bool", False, "KIP-939 two-phase commit.", P),
    _s("partitioner.class", "object", None, "Custom partitioner (callable or class) or a built-in name.", P),
    _s("partitioner.ignore.keys", "bool", False, "Partition keyed records as if unkeyed.", P),
    _s("partitioner.adaptive.partitioning.enable", "bool", True,
       "Unkeyed records favour faster brokers (KIP-794).", P),
    _s("partitioner.availability.timeout.ms", "int", 0,
       "Skip partitions whose leader has not accepted data for this long (0: off).", P, min=0),
    _s("key.serializer", "object", None, "Serializer of keys (object, callable or built-in name).", P),
    _s("value.serializer", "object", None, "Serializer of values.", P),
    _s("interceptor.classes", "list", [],
       "Interceptors (objects, classes or 'module:Class'): the producer's on_send/on_acknowledgement, "
       "the consumer's on_consume/on_commit.", PC, items="object"),
    _s("otel.tracer.provider", "object", None,
       "OpenTelemetry tracing of send()/poll() with W3C trace context in record headers: a "
       "TracerProvider, 'global' or 'module:attr' naming one (needs kafkalite[otel]; off, at no cost, "
       "when None).", PC),
    _s("metadata.max.idle.ms", "int", 300000, "Forget metadata of topics not produced to this long.", P,
       min=5000),
    _s("exit.flush.timeout.ms", "int", 10000,
       "kafkalite: a producer not closed when the interpreter exits (or its asyncio loop shuts down) "
       "flushes for at most this long, then reports per topic what was not delivered; 0: no flush, "
       "just the report.", P, min=0),
    # ------------------------------------------------------------ consumer
    _s("group.id", "str", None, "Consumer group; required for subscribe() and commits.", CS),
    _s("group.instance.id", "str", None, "Static membership id (KIP-345).", C),
    _s("group.protocol", "choice", "classic", "classic or consumer (KIP-848).", C,
       choices=("classic", "consumer")),
    _s("group.remote.assignor", "str", None, "Server-side assignor (uniform, range) for KIP-848.", C),
    _s("partition.assignment.strategy", "list", ["range", "cooperative-sticky"],
       "Client-side assignors, in order of preference.", C, items="object"),
    _s("session.timeout.ms", "int", 45000, "Missed-heartbeat time before the member is removed.", C, min=1),
    _s("heartbeat.interval.ms", "int", 3000, "Heartbeat period.", C, min=1),
    _s("max.poll.interval.ms", "int", 300000, "Longest gap between poll() calls before leaving.", C, min=1),
    _s("max.poll.records", "int", 500, "Most records one poll() returns.", CS, min=1),
    _s("enable.auto.commit", "bool", True, "Commit positions in the background.", C),
    _s("auto.commit.interval.ms", "int", 5000, "Auto-commit period.", C, min=0),
    _s("auto.offset.reset", "choice", "latest", "Where to start without a committed offset.", C,
       choices=("latest", "earliest", "none", "by_duration")),
    _s("fetch.min.bytes", "int", 1, "Bytes a fetch waits for.", CS, min=0),
    _s("fetch.max.wait.ms", "int", 500, "Longest a fetch waits for fetch.min.bytes.", CS, min=0),
    _s("fetch.max.bytes", "int", 52428800, "Soft cap of one fetch response.", CS, min=0),
    _s("max.partition.fetch.bytes", "int", 1048576, "Soft cap per partition in a fetch.", C, min=0),
    _s("isolation.level", "choice", "read_uncommitted", "read_committed hides aborted and open transactions.",
       C, choices=("read_uncommitted", "read_committed")),
    _s("check.crcs", "bool", True, "Verify record batch CRCs.", CS),
    _s("exclude.internal.topics", "bool", True, "Pattern subscriptions skip internal topics.", C),
    _s("allow.auto.create.topics", "bool", True, "Let subscribing create missing topics (broker permitting).", C),
    _s("key.deserializer", "object", None, "Deserializer of keys.", CS),
    _s("stall.warning.ms", "int", 60000,
       "Log one warning when assigned partitions with records waiting yield none from poll() for "
       "this long (0: off).", C, min=0),
    _s("value.deserializer", "object", None, "Deserializer of values.", CS),
    # ------------------------------------------------------------ share consumer (KIP-932)
    _s("share.acknowledgement.mode", "choice", "implicit",
       "implicit: the next poll() or commit accepts what the last poll() returned; explicit: "
       "acknowledge() every record.", S, choices=("implicit", "explicit")),
    _s("share.acquire.mode", "choice", "batch_optimized",
       "batch_optimized: the broker may hand out whole batches beyond max.poll.records; "
       "record_limit: at most max.poll.records records per fetch (KIP-1206, ShareFetch v2).",
       S, choices=("batch_optimized", "record_limit")),
)

# Why a setting another client takes is refused by this one, where the generic "it is a
# producer setting" would leave the user guessing.
_NOT_FOR: dict[tuple[str, str], str] = {
    ("max.in.flight.requests.per.connection", CONSUMER):
        "the consumer keeps one fetch in flight per broker; Java's consumer has no such setting either",
}
# Consumer settings a share consumer refuses (KIP-932): those with a share group
# counterpart name the group config an administrator sets instead
# (AdminClient.incremental_alter_configs on ConfigResource("group", group_id)) ...
_SHARE_GROUP_CONFIGS: dict[str, str] = {
    "auto.offset.reset": "share.auto.offset.reset",
    "isolation.level": "share.isolation.level",
    "session.timeout.ms": "share.session.timeout.ms",
    "heartbeat.interval.ms": "share.heartbeat.interval.ms",
    "max.poll.interval.ms": "share.record.lock.duration.ms",
}
# ... and these mean nothing for a share group.
_NOT_FOR_SHARE = frozenset({"enable.auto.commit", "auto.commit.interval.ms", "group.instance.id", "group.protocol",
                            "group.remote.assignor", "partition.assignment.strategy", "max.partition.fetch.bytes"})

# Settings the Java clients do not have: kafkalite's own (librdkafka-style PEM paths and
# SASL user/password, Python objects such as an ssl.SSLContext or a token callable, the
# OpenTelemetry providers, the producer's exit flush, the consumer's stall warning). The
# settings reference (docs site) marks them; every name here is a declared setting
# (tests/unit/test_config.py).
KAFKALITE_ONLY = frozenset({
    "receive.message.max.bytes", "otel.meter.provider", "otel.tracer.provider", "sasl.username",
    "sasl.password", "sasl.oauthbearer.token.provider", "ssl.ca.location", "ssl.certificate.location",
    "ssl.key.location", "ssl.context", "exit.flush.timeout.ms", "stall.warning.ms",
})

# Settings every kind needs (parse() refuses a Config without one; its check names it).
REQUIRED_EVERYWHERE = frozenset({"bootstrap.servers"})
# Settings a client kind cannot run without (REQUIRED_EVERYWHERE aside): the error class
# and its text.
_REQUIRED: dict[tuple[str, str], tuple[type[KafkaError], str]] = {
    ("group.id", SHARE_CONSUMER): (InvalidGroupIdError, "a share consumer needs the setting 'group.id' (its share group)"),
}

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
_BY_ALIAS: dict[str, Setting] = {s.alias: s for s in SETTINGS}

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def lookup(key: str) -> Setting | None:
    """The setting for a Java name or snake_case alias, or None."""
    return BY_NAME.get(key) or _BY_ALIAS.get(key)


def settings_for(clients: str | Collection[str], settings: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``settings`` that every kind in ``clients`` takes.

    For a properties file shared by several tools or clients (Kafka's console tools take
    one ``--command-config`` for everything): the settings of other client kinds are left
    out, names the schema does not know are kept, so that resolving them still fails
    naming the nearest known one. ``settings_for(ALL, ...)`` keeps what every kind takes
    (connection, security, metrics).

    Example::

        settings_for("admin", {"bootstrap.servers": "b:9092", "linger.ms": 5})
        # {'bootstrap.servers': 'b:9092'}: linger.ms is a producer setting
    """
    kinds = {clients} if isinstance(clients, str) else set(clients)
    out = {}
    for key, value in settings.items():
        setting = lookup(key) if isinstance(key, str) else None
        if setting is None or kinds <= setting.clients:
            out[key] = value
    return out


def _suggest(key: str, client: str) -> str:
    names = [s.name for s in SETTINGS if client in s.clients]
    normalized = key.replace("_", ".").lower()
    close = difflib.get_close_matches(normalized, names, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def coerce(setting: Setting, value: Any) -> Any:
    """``value`` as ``setting``'s type (strings parsed as Java properties are), range-checked;
    a :class:`ConfigError` naming the setting otherwise."""
    key = setting.name

    def bad(expected: str) -> ConfigError:
        return ConfigError(f"setting '{key}' must be {expected}, got {value!r}")

    if value is None:
        return None
    t = setting.type
    if t == "int":
        if isinstance(value, bool):
            raise bad("an integer")
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise bad("an integer") from None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise bad("an integer")
        if setting.min is not None and value < setting.min:
            raise ConfigError(f"setting '{key}' must be >= {int(setting.min)}, got {value}")
        if setting.max is not None and value > setting.max:
            raise ConfigError(f"setting '{key}' must be <= {int(setting.max)}, got {value}")
        return value
    if t == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise bad("true or false")
    if t == "choice":
        text = str(value).strip()
        for choice in setting.choices:
            if text.lower() == choice.lower():
                return choice
        raise ConfigError(f"setting '{key}' must be one of {', '.join(setting.choices)}; got {value!r}")
    if t == "float":
        if isinstance(value, bool):
            raise bad("a number")
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise bad("a number") from None
        if not isinstance(value, (int, float)):
            raise bad("a number")
        value = float(value)
        if setting.min is not None and value < setting.min:
            raise ConfigError(f"setting '{key}' must be >= {setting.min}, got {value}")
        if setting.max is not None and value > setting.max:
            raise ConfigError(f"setting '{key}' must be <= {setting.max}, got {value}")
        return value
    if t in ("str", "password"):
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if t == "list":
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple)):
            if setting.items == "str" and not all(isinstance(v, str) for v in value):
                raise bad("a list of strings or a comma-separated string")
            return list(value)
        raise bad("a list or a comma-separated string")
    return value  # object: validated by the component that uses it


class Config(Mapping[str, Any]):
    """Resolved settings of one client: every setting the client takes, with its value.

    Index by Java name (``cfg["linger.ms"]``) or read the alias as an attribute
    (``cfg.linger_ms``). ``is_set(name)`` tells whether the user chose the value.
    A Java name written out is typed by the schema (``cfg["linger.ms"]`` is an ``int``,
    ``cfg["transactional.id"]`` a ``str | None``: ``kafkalite/_config_keys.py``,
    generated by ``tools/gen_config_keys.py``); a name computed at run time gives an
    ``object`` to narrow.
    """

    def __init__(self, client: str, values: dict[str, Any], explicit: set[str],
                 extra: dict[str, Any] | None = None) -> None:
        self.client = client
        self._values = values
        self._explicit = explicit
        self.extra = extra or {}

    @overload
    def __getitem__(self, key: IntSetting) -> int: ...
    @overload
    def __getitem__(self, key: FloatSetting) -> float: ...
    @overload
    def __getitem__(self, key: BoolSetting) -> bool: ...
    @overload
    def __getitem__(self, key: StrSetting) -> str: ...
    @overload
    def __getitem__(self, key: OptionalStrSetting) -> str | None: ...
    @overload
    def __getitem__(self, key: StrListSetting) -> list[str]: ...
    @overload
    def __getitem__(self, key: PluginListSetting) -> list[Any]: ...  # plugin objects or names
    @overload
    def __getitem__(self, key: PluginSetting) -> Any: ...  # a plugin: any object the user gives
    @overload
    def __getitem__(self, key: str) -> object: ...

    def __getitem__(self, key: str) -> object:
        setting = lookup(key)
        if setting is None or setting.name not in self._values:
            # The mapping protocol (`in`, .get()) expects KeyError from __getitem__.
            raise KeyError(key)
        return self._values[setting.name]

    def __getattr__(self, alias: str) -> Any:
        setting = _BY_ALIAS.get(alias)
        if setting is None or setting.name not in self.__dict__.get("_values", {}):
            # getattr(cfg, name, default) and hasattr() expect AttributeError.
            raise AttributeError(alias)
        return self._values[setting.name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def is_set(self, key: str) -> bool:
        setting = lookup(key)
        return setting is not None and setting.name in self._explicit

    def replace(self, **changes: Any) -> Config:
        """A copy with some values changed (internal adjustments; not marked explicit)."""
        values = dict(self._values)
        for key, value in changes.items():
            setting = lookup(key)
            if setting is None:
                raise ConfigError(f"unknown setting '{key}'")
            values[setting.name] = value
        return Config(self.client, values, set(self._explicit), dict(self.extra))

    def __repr__(self) -> str:
        shown = {
            k: ("[hidden]" if BY_NAME[k].type == "password" and v is not None else v)
            for k, v in self._values.items()
            if k in self._explicit
        }
        return f"Config({self.client}, {shown})"


def _refusal(setting: Setting, client: str) -> str:
    """Why ``client`` refuses ``setting``, which other kinds take (always naming the kind:
    "does not apply to a share_consumer")."""
    name = setting.name
    if client == SHARE_CONSUMER and name in _SHARE_GROUP_CONFIGS:
        return (f"setting '{name}' does not apply to a {client}: set the share group's config "
                f"'{_SHARE_GROUP_CONFIGS[name]}' instead (AdminClient.incremental_alter_configs on "
                "ConfigResource('group', <group.id>))")
    if client == SHARE_CONSUMER and name in _NOT_FOR_SHARE:
        return (f"setting '{name}' does not apply to a {client} (share groups assign "
                "partitions on the broker and track every record's state there)")
    why = _NOT_FOR.get((name, client))
    return (f"setting '{name}' does not apply to a {client} "
            f"(it is a {'/'.join(sorted(setting.clients))} setting" + (f"; {why})" if why else ")"))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def parse(client: str, settings: Mapping[str, Any] | None = None, **kwargs: Any) -> Config:
    """Apply the schema alone to user settings for ``client`` ('producer', 'consumer',
    'admin', 'share_consumer'): known names, types, ranges, defaults, required settings,
    ``bootstrap.servers`` addresses.

    ``settings`` is a dict with Java names or aliases; keyword arguments use aliases.
    Raises :class:`ConfigError` naming the key for anything unknown or invalid. Checks
    between settings are not run here: clients resolve their settings with
    :meth:`kafkalite.settings.ClientRules.resolve`, which runs this first.
    """
    if client not in ALL:
        raise InvalidArgumentError(f"unknown client kind {client!r} (one of {', '.join(sorted(ALL))})")
    given: dict[str, Any] = {}
    for source in (dict(settings or {}), kwargs):
        for key, value in source.items():
            if not isinstance(key, str):
                raise ConfigError(f"setting names must be strings, got {key!r}")
            setting = lookup(key)
            if setting is None:
                raise ConfigError(f"unknown setting '{key}'{_suggest(key, client)}")
            if client not in setting.clients:
                raise ConfigError(_refusal(setting, client))
            if setting.name in given and given[setting.name] != value:
                raise ConfigError(f"setting '{setting.name}' given twice with different values")
            given[setting.name] = value
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if client not in setting.clients:
            continue
        if setting.name in given:
            value = given[setting.name]
            default = setting.default_for(client)
            if value is None and default is not None:
                # Java refuses null for a setting with a default as well; None here would
                # reach code that relies on the value's type.
                raise ConfigError(f"setting '{setting.name}' cannot be None "
                                  f"(leave it out for its default, {default!r})")
            values[setting.name] = coerce(setting, value)
        else:
            default = setting.default_for(client)
            values[setting.name] = list(default) if isinstance(default, list) else default
    cfg = Config(client, values, set(given))
    if not cfg["bootstrap.servers"]:
        raise ConfigError("setting 'bootstrap.servers' is required (e.g. '127.0.0.1:9092')")
    for addr in cfg["bootstrap.servers"]:
        parse_host_port(addr)
    for (name, kind), (error, text) in _REQUIRED.items():
        if kind == client and _missing(cfg[name]):
            raise error(text)
    return cfg


# Process-wide sequences, as Java's PRODUCER_CLIENT_ID_SEQUENCE (ProducerConfig),
# CONSUMER_CLIENT_ID_SEQUENCE (ConsumerConfig, shared by the share consumer, which Java
# configures through ConsumerConfig too) and ADMIN_CLIENT_ID_SEQUENCE (KafkaAdminClient).
# next() on itertools.count is atomic under the GIL, so threads never share a number.
_CLIENT_ID_SEQUENCES = {PRODUCER: itertools.count(1), CONSUMER: itertools.count(1), ADMIN: itertools.count(1)}


def default_client_id(cfg: Config) -> str:
    """Java's ``client.id`` for a client configured without one.

    - producer: ``producer-<transactional.id>``, else ``producer-N``;
    - consumer and share consumer: ``consumer-<group.id>-<group.instance.id or N>``
      (``consumer-N`` without a group; Java would write ``consumer-null-N``);
    - admin client: ``adminclient-N``.

    ``N`` counts per kind from 1 in this process. Brokers show the id in
    ``kafka-consumer-groups --describe`` (CLIENT-ID) and build member ids from it
    (``<client.id>-<uuid>``), so an empty one gives member ids starting with "-".
    """
    kind = cfg.client
    if kind == PRODUCER:
        txn = cfg["transactional.id"]
        return f"producer-{txn}" if txn else f"producer-{next(_CLIENT_ID_SEQUENCES[PRODUCER])}"
    if kind == ADMIN:
        return f"adminclient-{next(_CLIENT_ID_SEQUENCES[ADMIN])}"
    group = cfg["group.id"]
    instance = cfg.get("group.instance.id")
    part = instance or str(next(_CLIENT_ID_SEQUENCES[CONSUMER]))
    return f"consumer-{group}-{part}" if group else f"consumer-{part}"


_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\s]+)):(?P<port>\d{1,5})$")


def parse_host_port(address: str) -> tuple[str, int]:
    """Split 'host:port' or '[v6]:port'; accepts a 'PLAINTEXT://' style prefix."""
    text = address.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    m = _HOST_PORT.match(text)
    if not m or not 0 < int(m.group("port")) < 65536:
        raise ConfigError(f"setting 'bootstrap.servers' has an invalid address {address!r} (expected host:port)")
    return (m.group("v6") or m.group("host")), int(m.group("port"))


def acks_value(cfg: Config) -> int:
    """The wire value of ``acks``: 0, 1 or -1 ('all')."""
    return {"0": 0, "1": 1, "all": -1, "-1": -1}[cfg["acks"]]
