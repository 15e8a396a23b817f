"""Test certificates for TLS listeners, made at test time (no keytool, no JKS).

:func:`make_test_pki` writes a small PKI into a directory as PEM files: a test CA, a
broker certificate for ``127.0.0.1`` and ``localhost`` (the broker reads it as a PEM
key store, ``ssl.keystore.type=PEM``), a broker certificate that names another host
(for hostname-verification tests), a client certificate for mutual TLS (its private
key plain and encrypted with a password), and an unrelated CA (the "wrong CA").

Files that already exist are reused, so a broker restarted on the same run directory
keeps its certificates, and the nodes of a cluster share one CA.

Example::

    pki = make_test_pki(Path("/tmp/tls"))
    client = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca)}

Needs the ``cryptography`` package (in kafkalite's ``testing`` extra).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography import x509

CLIENT_CN = "kafkalite-client"
"""Common name of the client certificate; the broker's principal mapping makes it
``User:kafkalite-client``."""

KEY_PASSWORD = "client-key-secret"
"""Password of ``client-encrypted.key`` (``ssl.key.password``)."""

STORE_PASSWORD = "client-store-secret"
"""Password of the PKCS#12 stores ``client.p12`` and ``truststore.p12``."""

MISMATCHED_HOST = "not-this-host.invalid"
"""The only name in ``broker-wrong-host.pem``: connecting to 127.0.0.1 must not verify."""


@dataclass(frozen=True)
class TestPki:
    """Paths of the PEM files :func:`make_test_pki` wrote.

    Example::

        import pathlib
        import tempfile
        pki = make_test_pki(pathlib.Path(tempfile.mkdtemp()))
        config = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca),
                  "ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key)}
    """

    __test__ = False  # not a pytest test class despite the name

    directory: Path

    @property
    def ca(self) -> Path:
        """The CA certificate clients trust (``ssl.ca.location``).

        Example::

            import pathlib
            import tempfile
            assert b"BEGIN CERTIFICATE" in make_test_pki(pathlib.Path(tempfile.mkdtemp())).ca.read_bytes()
        """
        return self.directory / "ca.pem"

    @property
    def other_ca(self) -> Path:
        """An unrelated CA: trusting only this one must fail verification.

        Example::

            import pathlib
            import tempfile
            pki = make_test_pki(pathlib.Path(tempfile.mkdtemp()))
            assert pki.other_ca.read_bytes() != pki.ca.read_bytes()
        """
        return self.directory / "other-ca.pem"

    @property
    def broker_keystore(self) -> Path:
        """Broker private key + certificate chain in one PEM file (``ssl.keystore.location``).

        Example::

            import pathlib
            import tempfile
            assert b"PRIVATE KEY" in make_test_pki(pathlib.Path(tempfile.mkdtemp())).broker_keystore.read_bytes()
        """
        return self.directory / "broker.pem"

    @property
    def broker_wrong_host_keystore(self) -> Path:
        """Like :attr:`broker_keystore`, but the certificate names only :data:`MISMATCHED_HOST`.

        Example::

            import pathlib
            import tempfile
            assert make_test_pki(pathlib.Path(tempfile.mkdtemp())).broker_wrong_host_keystore.exists()
        """
        return self.directory / "broker-wrong-host.pem"

    @property
    def client_cert(self) -> Path:
        """The client certificate (``ssl.certificate.location``), CN :data:`CLIENT_CN`.

        Example::

            import pathlib
            import tempfile
            assert make_test_pki(pathlib.Path(tempfile.mkdtemp())).client_cert.suffix == ".pem"
        """
        return self.directory / "client.pem"

    @property
    def client_key(self) -> Path:
        """Its private key, unencrypted PKCS#8 (``ssl.key.location``).

        Example::

            import pathlib
            import tempfile
            assert b"BEGIN PRIVATE KEY" in make_test_pki(pathlib.Path(tempfile.mkdtemp())).client_key.read_bytes()
        """
        return self.directory / "client.key"

    @property
    def client_key_encrypted(self) -> Path:
        """The same key encrypted with :data:`KEY_PASSWORD` (``ssl.key.password``).

        Example::

            import pathlib
            import tempfile
            pki = make_test_pki(pathlib.Path(tempfile.mkdtemp()))
            config = {"ssl.key.location": str(pki.client_key_encrypted), "ssl.key.password": pki.key_password}
        """
        return self.directory / "client-encrypted.key"

    @property
    def key_password(self) -> str:
        """The password of the encrypted client key.

        Example::

            import pathlib
            import tempfile
            assert make_test_pki(pathlib.Path(tempfile.mkdtemp())).key_password
        """
        return KEY_PASSWORD

    @property
    def client_keystore_p12(self) -> Path:
        """The client's key, certificate and CA as a PKCS#12 key store
        (``ssl.keystore.type=PKCS12``), password :data:`STORE_PASSWORD`.

        Example::

            import pathlib
            import tempfile
            pki = make_test_pki(pathlib.Path(tempfile.mkdtemp()))
            config = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki.client_keystore_p12),
                      "ssl.keystore.password": pki.store_password}
        """
        return self.directory / "client.p12"

    @property
    def truststore_p12(self) -> Path:
        """The test CA as a PKCS#12 trust store (``ssl.truststore.type=PKCS12``),
        password :data:`STORE_PASSWORD`.

        Example::

            import pathlib
            import tempfile
            pki = make_test_pki(pathlib.Path(tempfile.mkdtemp()))
            config = {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(pki.truststore_p12),
                      "ssl.truststore.password": pki.store_password}
        """
        return self.directory / "truststore.p12"

    @property
    def store_password(self) -> str:
        """The password of the PKCS#12 stores.

        Example::

            import pathlib
            import tempfile
            assert make_test_pki(pathlib.Path(tempfile.mkdtemp())).store_password
        """
        return STORE_PASSWORD

    def files(self) -> list[Path]:
        """Every file of the test PKI.

        Example::

            import pathlib
            import tempfile
            assert all(path.stat().st_size for path in make_test_pki(pathlib.Path(tempfile.mkdtemp())).files())
        """
        return [self.ca, self.other_ca, self.broker_keystore, self.broker_wrong_host_keystore,
                self.client_cert, self.client_key, self.client_key_encrypted, self.client_keystore_p12,
                self.truststore_p12]

    def complete(self) -> bool:
        """True when every file exists and is not empty.

        Example::

            import pathlib
            import tempfile
            assert make_test_pki(pathlib.Path(tempfile.mkdtemp())).complete()
        """
        return all(p.is_file() and p.stat().st_size > 0 for p in self.files())


def make_test_pki(directory: Path, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
                  *, days: int = 30) -> TestPki:
    """Write (or reuse) the test PKI in ``directory``; see the module doc.

    Example::

        import pathlib
        import tempfile
        pki = make_test_pki(pathlib.Path(tempfile.mkdtemp()), hosts=("127.0.0.1", "localhost"), days=7)
        assert pki.complete()
    """
    pki = TestPki(Path(directory))
    if pki.complete():
        return pki
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError as exc:  # pragma: no cover - the testing extra installs it
        raise RuntimeError(
            "TLS test listeners need the 'cryptography' package: pip install 'kafkalite[testing]'"
        ) from exc

    pki.directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    # Backdated a little: a JVM and Python on the same machine still disagree on "now"
    # by milliseconds, and a certificate valid from the future fails to verify.
    not_before = now - datetime.timedelta(hours=1)
    not_after = now + datetime.timedelta(days=days)

    def new_key() -> ec.EllipticCurvePrivateKey:
        # P-256 keys are fast to make and both the JDK and OpenSSL accept them.
        return ec.generate_private_key(ec.SECP256R1())

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkalite tests"),
                          x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def make_ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = new_key()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name(cn)).issuer_name(name(cn))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return key, cert

    def issue(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, cn: str, sans: tuple[str, ...],
              usage: x509.ObjectIdentifier) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = new_key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(cn)).issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName([_general_name(h) for h in sans]),
                                            critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    def pem_cert(cert: x509.Certificate) -> bytes:
        return cert.public_bytes(serialization.Encoding.PEM)

    def pem_key(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption())
        # PKCS#8: the only private key format Kafka's PEM key store reads.
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)

    ca_key, ca_cert = make_ca("kafkalite test CA")
    _, other_cert = make_ca("kafkalite unrelated CA")
    server = ExtendedKeyUsageOID.SERVER_AUTH
    broker_key, broker_cert = issue(ca_key, ca_cert, hosts[0], hosts, server)
    wrong_key, wrong_cert = issue(ca_key, ca_cert, MISMATCHED_HOST, (MISMATCHED_HOST,), server)
    client_key, client_cert = issue(ca_key, ca_cert, CLIENT_CN, (), ExtendedKeyUsageOID.CLIENT_AUTH)

    _write(pki.ca, pem_cert(ca_cert))
    _write(pki.other_ca, pem_cert(other_cert))
    _write(pki.broker_keystore, pem_key(broker_key) + pem_cert(broker_cert) + pem_cert(ca_cert))
    _write(pki.broker_wrong_host_keystore, pem_key(wrong_key) + pem_cert(wrong_cert) + pem_cert(ca_cert))
    _write(pki.client_cert, pem_cert(client_cert))
    _write(pki.client_key, pem_key(client_key))
    _write(pki.client_key_encrypted, pem_key(client_key, KEY_PASSWORD))
    # PKCS#12 stores as people receive them (what keytool -deststoretype PKCS12 or
    # openssl pkcs12 -export make); the trust store holds the CA as a trusted entry.
    from cryptography.hazmat.primitives.serialization import pkcs12

    store_encryption = serialization.BestAvailableEncryption(STORE_PASSWORD.encode())
    _write(pki.client_keystore_p12, pkcs12.serialize_key_and_certificates(
        CLIENT_CN.encode(), client_key, client_cert, [ca_cert], store_encryption))
    _write(pki.truststore_p12, pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca_cert, b"kafkalite-test-ca")], store_encryption))
    return pki


def _general_name(host: str) -> x509.GeneralName:
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _write(path: Path, data: bytes) -> None:
    # Written whole then renamed: a half-written key must never be read by a broker.
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
