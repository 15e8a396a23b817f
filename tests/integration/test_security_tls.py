"""TLS against a real broker: SSL and SASL_SSL listeners with certificates from a test CA
made at test time (kafkalite.testing.certs), mutual TLS, host name verification, and the
typed errors of every way a handshake can fail.

All listeners belong to one broker (the session's ``kafka_broker_sasl``, SECURE_PRESET).
"""

from __future__ import annotations

import time

import pytest

from kafkalite import AdminClient, Consumer, Producer, TopicPartition
from kafkalite.errors import ConfigError, KafkaConnectionError, SslAuthenticationError
from kafkalite.net.transport import BrokerConnection
from kafkalite.testing.certs import MISMATCHED_HOST
from tests.helpers.settings import resolve
from tests.integration.security_support import SCRAM_ADMIN, round_trip, stats

pytestmark = pytest.mark.broker


def test_producer_consumer_admin_over_tls(kafka_broker_ssl, topic_factory) -> None:
    topic = topic_factory(partitions=2, on=kafka_broker_ssl)
    cfg = kafka_broker_ssl.client_config()
    assert cfg["security.protocol"] == "SSL" and cfg["ssl.ca.location"] == str(kafka_broker_ssl.tls.ca)
    round_trip(cfg, topic, 10)
    with AdminClient(cfg) as admin:
        cluster = admin.describe_cluster()
        # The broker advertises its SSL listener to clients that came in over SSL.
        assert [f"{n.host}:{n.port}" for n in cluster.nodes] == [kafka_broker_ssl.bootstrap]
        assert topic in admin.list_topics()


def test_inline_pem_trust_store(kafka_broker_ssl, topic_factory) -> None:
    """Java's PEM trust store given as text (ssl.truststore.certificates) instead of a file."""
    topic = topic_factory(on=kafka_broker_ssl)
    cfg = kafka_broker_ssl.client_config()
    del cfg["ssl.ca.location"]
    cfg["ssl.truststore.type"] = "PEM"
    cfg["ssl.truststore.certificates"] = kafka_broker_ssl.tls.ca.read_text()
    with Producer(cfg) as producer:
        assert producer.send(topic, b"inline-ca").result(30).offset == 0


def test_wrong_ca_is_a_typed_error_naming_broker_and_reason(kafka_broker_ssl) -> None:
    cfg = kafka_broker_ssl.client_config(ssl_ca_location=str(kafka_broker_ssl.tls.other_ca))
    started = time.monotonic()
    with AdminClient(cfg, default_api_timeout_ms=60_000) as admin, \
            pytest.raises(SslAuthenticationError) as info:
        admin.describe_cluster()
    # Fails at once (one handshake), not retried until the API timeout (60 s): a
    # certificate does not fix itself. Generous for a busy machine.
    assert time.monotonic() - started < 20
    text = str(info.value)
    assert kafka_broker_ssl.bootstrap in text and "not signed by a trusted CA" in text
    assert "ssl.ca.location" in text and not info.value.retriable


def test_hostname_verification_on_and_off(kafka_broker_sasl, topic_factory) -> None:
    """The SSL_WRONG_HOST listener's certificate (same CA) names only another host."""
    topic = topic_factory(on=kafka_broker_sasl)
    checked = kafka_broker_sasl.client_config("SSL_WRONG_HOST")
    assert checked["ssl.ca.location"]
    with AdminClient(checked) as admin, pytest.raises(SslAuthenticationError) as info:
        admin.describe_cluster()
    assert "does not name this host" in str(info.value)
    assert kafka_broker_sasl.bootstrap_for("SSL_WRONG_HOST") in str(info.value)

    # ssl.endpoint.identification.algorithm='' skips the name check, not the chain check.
    unchecked = kafka_broker_sasl.client_config("SSL_WRONG_HOST", ssl_endpoint_identification_algorithm="")
    with Producer(unchecked) as producer:
        assert producer.send(topic, b"no-hostname-check").result(30).offset == 0
    untrusted = dict(unchecked, **{"ssl.ca.location": str(kafka_broker_sasl.tls.other_ca)})
    with AdminClient(untrusted) as admin, pytest.raises(SslAuthenticationError):
        admin.describe_cluster()
    assert MISMATCHED_HOST not in ("127.0.0.1", "localhost")


def test_mutual_tls(kafka_broker_mtls, topic_factory) -> None:
    topic = topic_factory(on=kafka_broker_mtls)
    cfg = kafka_broker_mtls.client_config()
    assert cfg["ssl.certificate.location"] and cfg["ssl.key.location"]
    round_trip(cfg, topic, 3)

    # The same key encrypted (PKCS#8), opened with ssl.key.password.
    encrypted = dict(cfg, **{"ssl.key.location": str(kafka_broker_mtls.tls.client_key_encrypted),
                             "ssl.key.password": kafka_broker_mtls.tls.key_password})
    with Producer(encrypted) as producer:
        assert producer.send(topic, b"encrypted-key").result(30).offset == 3

    # Java's PEM key store: key and chain in one file (ssl.keystore.location) ...
    pki = kafka_broker_mtls.tls
    keystore = pki.directory / "client-keystore.pem"
    keystore.write_text(pki.client_key_encrypted.read_text() + pki.client_cert.read_text())
    java_style = {k: v for k, v in cfg.items() if k not in ("ssl.certificate.location", "ssl.key.location")}
    with AdminClient(dict(java_style, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
                                         "ssl.key.password": pki.key_password})) as admin:
        assert admin.describe_cluster().cluster_id
    # ... or inline (ssl.keystore.key + ssl.keystore.certificate.chain).
    with AdminClient(dict(java_style, **{"ssl.keystore.key": pki.client_key.read_text(),
                                         "ssl.keystore.certificate.chain": pki.client_cert.read_text()})) as admin:
        assert admin.describe_cluster().cluster_id


def test_mutual_tls_without_client_certificate(kafka_broker_mtls) -> None:
    cfg = kafka_broker_mtls.client_config()
    del cfg["ssl.certificate.location"], cfg["ssl.key.location"]
    with AdminClient(cfg) as admin, pytest.raises(SslAuthenticationError) as info:
        admin.describe_cluster()
    assert "requires a client certificate" in str(info.value)
    assert kafka_broker_mtls.bootstrap in str(info.value)


def test_key_and_file_problems_fail_at_construction(kafka_broker_mtls, tmp_path) -> None:
    pki = kafka_broker_mtls.tls
    cfg = kafka_broker_mtls.client_config()
    cases = {
        "ssl.key.password": dict(cfg, **{"ssl.key.location": str(pki.client_key_encrypted),
                                         "ssl.key.password": "not-the-password"}),
        "is encrypted: set 'ssl.key.password'": dict(cfg, **{"ssl.key.location": str(pki.client_key_encrypted)}),
        "ssl.ca.location": dict(cfg, **{"ssl.ca.location": str(tmp_path / "missing.pem")}),
        "does not belong to the certificate": dict(cfg, **{"ssl.certificate.location": str(pki.ca)}),
        "ssl.truststore.type": dict(cfg, **{"ssl.truststore.type": "JKS"}),
        "ssl.keystore.password": dict(cfg, **{"ssl.keystore.password": "x"}),
        "'ssl.keystore.password' is wrong": {
            "bootstrap.servers": kafka_broker_mtls.bootstrap, "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca), "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(pki.client_keystore_p12), "ssl.keystore.password": "Wr0ng-Store-Pw"},
        "'ssl.truststore.password' is wrong": {
            "bootstrap.servers": kafka_broker_mtls.bootstrap, "security.protocol": "SSL",
            "ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(pki.truststore_p12),
            "ssl.truststore.password": "Wr0ng-Trust-Pw"},
    }
    for expected, settings in cases.items():
        for client in (Producer, Consumer, AdminClient):
            with pytest.raises(ConfigError) as info:
                client(settings)
            assert expected in str(info.value), (client, str(info.value))
            # A password, wrong or right, never appears in the error.
            for key in ("ssl.key.password", "ssl.keystore.password", "ssl.truststore.password"):
                if len(settings.get(key) or "") > 1:
                    assert settings[key] not in str(info.value) and settings[key] not in repr(info.value)
    assert pki.store_password not in str(info.value)


async def test_protocol_mismatch_fails_fast_with_a_hint(kafka_broker_ssl, kafka_broker_sasl) -> None:
    """A client whose security.protocol does not match the listener fails at once and
    says so, in both directions (it does not wait for a response that never comes)."""
    async def connect(settings: dict) -> str:
        # A connection that waited for an answer would give up only after the setup
        # timeout (60 s here); the mismatch is seen at once (generous: 20 s).
        cfg = resolve("admin", settings, socket_connection_setup_timeout_ms=60_000,
                      socket_connection_setup_timeout_max_ms=60_000)
        host, port = settings["bootstrap.servers"].split(":")
        conn = BrokerConnection(host, int(port), cfg)
        started = time.monotonic()
        with pytest.raises(KafkaConnectionError) as info:
            await conn.connect()
        assert time.monotonic() - started < 20
        return str(info.value)

    text = await connect({"bootstrap.servers": kafka_broker_ssl.bootstrap})
    assert "security.protocol=PLAINTEXT" in text and kafka_broker_ssl.bootstrap in text
    text = await connect(kafka_broker_ssl.client_config(bootstrap_servers=kafka_broker_sasl.bootstrap))
    assert "is this port a TLS listener?" in text and kafka_broker_sasl.bootstrap in text


def test_sasl_ssl_scram(kafka_broker_sasl_ssl, topic_factory) -> None:
    topic = topic_factory(partitions=3, on=kafka_broker_sasl_ssl)
    cfg = kafka_broker_sasl_ssl.client_config(**SCRAM_ADMIN)
    assert cfg["security.protocol"] == "SASL_SSL"
    round_trip(cfg, topic, 20)
    with Consumer(cfg, group_id=f"{topic}-g") as consumer:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(3)])
        assert sum(o.offset for o in committed.values() if o is not None) == 20


def test_one_tls_context_per_client_settings(kafka_broker_ssl, topic_factory) -> None:
    """Keys and CA files are loaded once, not per connection."""
    from kafkalite.net.tls import ssl_context

    topic = topic_factory(on=kafka_broker_ssl)
    with Producer(kafka_broker_ssl.client_config()) as producer:
        producer.send(topic, b"v").result(30)
        core_cfg = producer._core.cfg
        assert ssl_context(core_cfg) is ssl_context(core_cfg)
        assert stats(producer).created >= 2  # bootstrap + the leader


async def test_ssl_protocol_caps_the_tls_version(kafka_broker_ssl, kafka_broker_sasl, topic_factory) -> None:
    """ssl.protocol is Java's SSLContext protocol: TLSv1.2 negotiates TLS 1.2 with a broker
    that offers 1.3, and fails fast, saying why, against a listener that accepts TLS 1.3
    only (``TLS13``: ``ssl.enabled.protocols=TLSv1.3`` on the broker); the default
    (TLSv1.3) negotiates 1.3 with both."""
    from kafkalite.testing.secured import BrokerListener

    tls13 = BrokerListener(kafka_broker_sasl, "TLS13")

    async def negotiated(listener: BrokerListener, **settings: str) -> str:
        cfg = resolve("admin", listener.client_config(**settings))
        host, port = listener.bootstrap.rsplit(":", 1)
        conn = BrokerConnection(host, int(port), cfg)
        await conn.connect()
        try:
            assert conn._protocol is not None and conn._protocol.transport is not None
            return str(conn._protocol.transport.get_extra_info("ssl_object").version())
        finally:
            conn.close()

    assert await negotiated(kafka_broker_ssl) == "TLSv1.3"
    assert await negotiated(kafka_broker_ssl, ssl_protocol="TLSv1.2") == "TLSv1.2"
    assert await negotiated(kafka_broker_ssl, ssl_protocol="TLS") == "TLSv1.3"
    assert await negotiated(tls13) == "TLSv1.3"
    topic = topic_factory(on=kafka_broker_ssl)
    round_trip(kafka_broker_ssl.client_config(ssl_protocol="TLSv1.2"), topic, 3)

    with AdminClient(tls13.client_config(ssl_protocol="TLSv1.2"), default_api_timeout_ms=60_000) as admin:
        started = time.monotonic()
        with pytest.raises(SslAuthenticationError) as info:
            admin.describe_cluster()
        assert time.monotonic() - started < 20  # the handshake's answer, not the API timeout
    text = str(info.value)
    assert tls13.bootstrap in text and "accepts none of the TLS versions this client offers" in text
    assert "ssl.protocol and ssl.enabled.protocols" in text
