"""ssl.* settings -> SSLContext (no broker), the test PKI, and the secured broker preset."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from kafkalite.errors import ConfigError
from kafkalite.net.tls import describe_tls_failure, ssl_context
from kafkalite.testing.certs import CLIENT_CN, make_test_pki
from kafkalite.testing.properties import REAUTH_MS, SECURE_PRESET, NodeConfig, server_properties
from tests.helpers.settings import resolve

BOOT = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL"}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_test_pki(tmp_path_factory.mktemp("pki"))


def ctx(**settings) -> ssl.SSLContext:
    context = ssl_context(resolve("producer", dict(BOOT), **settings))
    assert context is not None
    return context


def test_pki_files_and_reuse(pki) -> None:
    from cryptography import x509

    assert pki.complete()
    chain = pki.broker_keystore.read_text()
    assert chain.startswith("-----BEGIN PRIVATE KEY-----") and chain.count("BEGIN CERTIFICATE") == 2
    assert "ENCRYPTED PRIVATE KEY" in pki.client_key_encrypted.read_text()
    cert = x509.load_pem_x509_certificate(pki.client_cert.read_bytes())
    assert cert.subject.rfc4514_string().startswith(f"CN={CLIENT_CN}")
    broker = x509.load_pem_x509_certificate(chain.split("-----END PRIVATE KEY-----\n")[1].encode())
    names = broker.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(n.value) for n in names} == {"127.0.0.1", "localhost"}
    before = pki.ca.read_bytes()
    assert make_test_pki(pki.directory).ca.read_bytes() == before  # restart keeps the CA


def test_context_defaults(pki) -> None:
    c = ctx(ssl_ca_location=str(pki.ca))
    assert c.check_hostname and c.verify_mode == ssl.CERT_REQUIRED
    assert c.minimum_version == ssl.TLSVersion.TLSv1_2 and c.maximum_version == ssl.TLSVersion.TLSv1_3
    # A configured CA replaces the system's trust (like a Java trust store).
    assert len(c.get_ca_certs()) == 1
    assert ctx(ssl_ca_location=str(pki.ca), ssl_endpoint_identification_algorithm="").check_hostname is False
    only13 = ctx(ssl_ca_location=str(pki.ca), ssl_enabled_protocols="TLSv1.3")
    assert only13.minimum_version == ssl.TLSVersion.TLSv1_3
    assert resolve("producer", {"bootstrap.servers": "h:1"})["security.protocol"] == "PLAINTEXT"
    assert ssl_context(resolve("producer", {"bootstrap.servers": "h:1"})) is None


def test_ssl_protocol_caps_the_enabled_protocols(pki) -> None:
    """Java's SSLContext.getInstance(ssl.protocol): a TLSv1.2 context never negotiates
    TLS 1.3, whatever ssl.enabled.protocols lists; TLSv1.3 and TLS leave it to decide."""
    capped = ctx(ssl_ca_location=str(pki.ca), ssl_protocol="TLSv1.2")
    assert capped.minimum_version == capped.maximum_version == ssl.TLSVersion.TLSv1_2
    for protocol in ("TLSv1.3", "TLS"):
        both = ctx(ssl_ca_location=str(pki.ca), ssl_protocol=protocol)
        assert (both.minimum_version, both.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    with pytest.raises(ConfigError) as info:
        ctx(ssl_ca_location=str(pki.ca), ssl_protocol="TLSv1.2", ssl_enabled_protocols="TLSv1.3")
    assert "'ssl.protocol' 'TLSv1.2' never negotiates any of 'ssl.enabled.protocols' ['TLSv1.3']" in str(info.value)
    for unsupported in ("TLSv1.1", "SSLv3"):
        with pytest.raises(ConfigError, match="'ssl.protocol'"):
            ctx(ssl_ca_location=str(pki.ca), ssl_protocol=unsupported)


def test_contexts_are_shared_per_settings(pki) -> None:
    a = ctx(ssl_ca_location=str(pki.ca))
    assert ctx(ssl_ca_location=str(pki.ca)) is a
    assert ctx(ssl_ca_location=str(pki.other_ca)) is not a
    given = ssl.create_default_context()
    assert ctx(ssl_context=given) is given


def _handshake(client: ssl.SSLContext, pki, *, require_client_certificate: bool = True) -> str | None:
    """Run a TLS handshake in memory against a server with the test broker's certificate
    that verifies client certificates against the test CA; the CN the client presented."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.broker_keystore)
    server.load_verify_locations(pki.ca)
    server.verify_mode = ssl.CERT_REQUIRED if require_client_certificate else ssl.CERT_OPTIONAL
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    client_end = client.wrap_bio(to_client, to_server, server_hostname="localhost")
    server_end = server.wrap_bio(to_server, to_client, server_side=True)
    pending = [client_end, server_end]
    for _ in range(10):  # a TLS 1.3 handshake takes two round trips
        for end in list(pending):
            try:
                end.do_handshake()
                pending.remove(end)
            except ssl.SSLWantReadError:
                pass
        if not pending:
            break
    assert not pending, "the handshake did not complete"
    peer = server_end.getpeercert()
    if not peer:
        return None
    return next(value for rdn in peer["subject"] for key, value in rdn if key == "commonName")


def test_client_certificate_forms(pki, tmp_path) -> None:
    """Every way to give the client certificate ends with the broker seeing it."""
    trust = {"ssl_ca_location": str(pki.ca)}
    key_and_chain = tmp_path / "client-keystore.pem"  # ssl.keystore.location: key and chain in one PEM file
    key_and_chain.write_text(pki.client_key.read_text() + pki.client_cert.read_text())
    forms = {
        "certificate + key files": ctx(**trust, ssl_certificate_location=str(pki.client_cert),
                                       ssl_key_location=str(pki.client_key)),
        "encrypted key file": ctx(**trust, ssl_certificate_location=str(pki.client_cert),
                                  ssl_key_location=str(pki.client_key_encrypted), ssl_key_password=pki.key_password),
        "PEM key store file": ctx(**trust, ssl_keystore_location=str(key_and_chain)),
        "PEM key and chain as values": ctx(**trust, ssl_keystore_key=pki.client_key_encrypted.read_text(),
                                           ssl_key_password=pki.key_password,
                                           ssl_keystore_certificate_chain=pki.client_cert.read_text()),
    }
    assert {form: _handshake(c, pki) for form, c in forms.items()} == dict.fromkeys(forms, CLIENT_CN)
    # Without a client certificate, the broker sees none (and one that requires it refuses).
    assert _handshake(ctx(**trust), pki, require_client_certificate=False) is None
    with pytest.raises(ssl.SSLError):
        _handshake(ctx(**trust), pki)


def test_trusted_certificates_as_a_value(pki) -> None:
    both = ctx(ssl_truststore_certificates=pki.ca.read_text() + pki.other_ca.read_text())
    assert sorted(dict(rdn[0] for rdn in c["subject"])["commonName"] for c in both.get_ca_certs()) == [
        "kafkalite test CA", "kafkalite unrelated CA"]
    assert _handshake(both, pki, require_client_certificate=False) is None  # the broker's certificate verifies
    only_other = ctx(ssl_truststore_certificates=pki.other_ca.read_text())
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(only_other, pki, require_client_certificate=False)


def test_pkcs12_stores_load(pki) -> None:
    # The same PKCS#12 files Java clients use (keytool -deststoretype PKCS12 / openssl pkcs12 -export).
    both = ctx(ssl_keystore_type="PKCS12", ssl_keystore_location=str(pki.client_keystore_p12),
               ssl_keystore_password=pki.store_password, ssl_truststore_type="PKCS12",
               ssl_truststore_location=str(pki.truststore_p12), ssl_truststore_password=pki.store_password)
    assert [c["subject"] for c in both.get_ca_certs()] == [((("organizationName", "kafkalite tests"),),
                                                             (("commonName", "kafkalite test CA"),))]
    # ssl.key.password equal to the store's password is fine (keytool writes one password).
    ctx(ssl_keystore_type="PKCS12", ssl_keystore_location=str(pki.client_keystore_p12),
        ssl_keystore_password=pki.store_password, ssl_key_password=pki.store_password)


@pytest.mark.parametrize("settings, message", [
    ({"ssl.ca.location": "/nonexistent/ca.pem"}, "'ssl.ca.location': file '/nonexistent/ca.pem' does not exist"),
    ({"ssl.key.location": "KEY"}, "'ssl.key.location' needs 'ssl.certificate.location'"),
    ({"ssl.certificate.location": "CERT", "ssl.key.location": "ENC"}, "is encrypted: set 'ssl.key.password'"),
    ({"ssl.certificate.location": "CERT", "ssl.key.location": "ENC", "ssl.key.password": "nope"},
     "'ssl.key.password' does not decrypt"),
    ({"ssl.certificate.location": "CA", "ssl.key.location": "KEY"}, "does not belong to the certificate"),
    ({"ssl.certificate.location": "CERT", "ssl.keystore.location": "STORE"}, "set only one"),
    ({"ssl.keystore.key": "x"}, "go together"),
    ({"ssl.key.password": "x"}, "no client key is configured"),
    ({"ssl.truststore.type": "JKS"},
     "'keytool -importkeystore -srckeystore store.jks -destkeystore store.p12 -deststoretype PKCS12'"),
    ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/etc/kafka/client.jks"},
     "-srckeystore /etc/kafka/client.jks -destkeystore /etc/kafka/client.p12 -deststoretype PKCS12', then set "
     "ssl.keystore.type=PKCS12"),
    ({"ssl.keystore.type": "PKCS12"}, "'ssl.keystore.type' is PKCS12: set 'ssl.keystore.location'"),
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "P12"}, "'ssl.keystore.password' is not set"),
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "P12", "ssl.keystore.password": "wrong-pw-1"},
     "'ssl.keystore.password' is wrong: it does not open the PKCS12 store"),
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "P12", "ssl.keystore.password": "STOREPW",
      "ssl.key.password": "wrong-pw-2"}, "'ssl.key.password' is wrong"),
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "TRUST12", "ssl.keystore.password": "STOREPW"},
     "holds no private key with a certificate"),
    ({"ssl.truststore.type": "PKCS12", "ssl.truststore.location": "TRUST12", "ssl.truststore.password": "wrong-3"},
     "'ssl.truststore.password' is wrong"),
    ({"ssl.truststore.location": "CA", "ssl.truststore.password": "wrong-4"},
     "'ssl.truststore.password' does not apply to PEM trust stores"),
    ({"ssl.keystore.password": "x"}, "'ssl.key.password'"),
    ({"ssl.truststore.certificates": "not a certificate"}, "'ssl.truststore.certificates'"),
    ({"ssl.endpoint.identification.algorithm": "ldaps"}, "'https' or ''"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "'ssl.enabled.protocols'"),
    ({"ssl.cipher.suites": "NO-SUCH-CIPHER"}, "'ssl.cipher.suites'"),
    ({"ssl.context": "not a context"}, "'ssl.context' must be an ssl.SSLContext"),
])
def test_setting_errors_name_the_setting(pki, settings, message) -> None:
    files = {"KEY": pki.client_key, "ENC": pki.client_key_encrypted, "CERT": pki.client_cert,
             "CA": pki.ca, "STORE": pki.broker_keystore, "P12": pki.client_keystore_p12,
             "TRUST12": pki.truststore_p12, "STOREPW": pki.store_password}
    given = {k: str(files[v]) if v in files else v for k, v in settings.items()}
    for client in ("producer", "consumer", "admin"):
        with pytest.raises(ConfigError) as info:
            resolve(client, dict(BOOT, **given))
        assert message in str(info.value)
        # No password, right or wrong, is echoed (the one-letter ones could match any text).
        for key, value in given.items():
            if key.endswith("password") and len(value) > 1:
                assert value not in str(info.value), (key, str(info.value))
                assert value not in repr(info.value), (key, repr(info.value))


def test_tls_settings_are_not_checked_without_tls() -> None:
    cfg = resolve("producer", {"bootstrap.servers": "h:1", "ssl.ca.location": "/nonexistent"})
    assert cfg["ssl.ca.location"] == "/nonexistent"


def test_tls_failure_descriptions() -> None:
    mismatch = ssl.SSLCertVerificationError(1, "x")
    mismatch.verify_message = "IP address mismatch, certificate is not valid for '127.0.0.1'."
    assert "ssl.endpoint.identification.algorithm" in describe_tls_failure(mismatch)
    unknown = ssl.SSLCertVerificationError(1, "x")
    unknown.verify_message = "unable to get local issuer certificate"
    assert "ssl.ca.location" in describe_tls_failure(unknown)
    alert = ssl.SSLError(1, "x")
    alert.reason = "TLSV13_ALERT_CERTIFICATE_REQUIRED"
    assert "requires a client certificate" in describe_tls_failure(alert)
    bad = ssl.SSLError(1, "x")
    bad.reason = "SSLV3_ALERT_BAD_CERTIFICATE"
    assert "requires a client certificate" in describe_tls_failure(bad, client_certificate=False)
    assert "rejected our client certificate" in describe_tls_failure(bad, client_certificate=True)
    plain = ssl.SSLError(1, "x")
    plain.reason = "WRONG_VERSION_NUMBER"
    assert "TLS listener" in describe_tls_failure(plain)


def test_secure_preset_properties(pki) -> None:
    listeners = {"PLAINTEXT": 1, **{name: 10 + i for i, name in enumerate(SECURE_PRESET.listeners)}}
    props = server_properties(NodeConfig(1, "4.3.1", Path("/d"), listeners, 2, {1: 2},
                                         security=SECURE_PRESET, tls=pki))
    protocols = dict(item.split(":") for item in props["listener.security.protocol.map"].split(","))
    assert protocols["MTLS"] == "SSL" and protocols["SASL_SSL"] == "SASL_SSL" and protocols["REAUTH"] == "SASL_PLAINTEXT"
    assert props["listener.name.mtls.ssl.client.auth"] == "required"
    assert props["listener.name.ssl.ssl.client.auth"] == "none"
    assert props["listener.name.ssl.ssl.keystore.type"] == "PEM"
    assert props["listener.name.ssl.ssl.keystore.location"] == str(pki.broker_keystore)
    assert props["listener.name.ssl_wrong_host.ssl.keystore.location"] == str(pki.broker_wrong_host_keystore)
    assert props["listener.name.sasl_ssl.ssl.truststore.location"] == str(pki.ca)
    assert props["listener.name.reauth.connections.max.reauth.ms"] == str(REAUTH_MS)
    assert "OAuthBearerUnsecuredValidatorCallbackHandler" in props[
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"]
    assert "ssl.keystore.location" not in props  # per listener only
    assert "User:kafkalite-client" in props["super.users"].split(";")
    with pytest.raises(ValueError, match="needs test certificates"):
        SECURE_PRESET.properties(None)
