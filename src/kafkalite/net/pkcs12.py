"""PKCS#12 key and trust stores (``ssl.keystore.type`` / ``ssl.truststore.type`` = PKCS12).

Python's ``ssl`` module reads PEM only, so a PKCS#12 store is opened with the
``cryptography`` package (``pip install "kafkalite[pkcs12]"``) and handed over as PEM:
the trust store's certificates as PEM text, the key store's key and chain as PEM with
the key encrypted under a one-off random password (it only ever touches disk in that
form, for the moment OpenSSL reads it). Wrong passwords and unreadable stores are
:class:`ConfigError`\\ s naming the setting.

>>> trusted_certificates_pem("/missing.p12", None)     # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
kafkalite.errors.ConfigError: setting 'ssl.truststore.location': cannot read '/missing.p12': ...
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from kafkalite.errors import ConfigError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.serialization.pkcs12 import PKCS12KeyAndCertificates


def _require_cryptography() -> None:
    """Nothing if ``cryptography`` imports (callers import it after this check)."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise ConfigError('PKCS12 stores need the \'cryptography\' package: pip install "kafkalite[pkcs12]" '
                          "(or convert the store to PEM: openssl pkcs12 -in store.p12 -out store.pem)") from None


def _read(path: str, setting: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ConfigError(f"setting '{setting}': cannot read {path!r}: {exc.strerror}") from None


def _open(data: bytes, password: str | None, path: str, setting: str,
          password_setting: str) -> PKCS12KeyAndCertificates:
    _require_cryptography()
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError as exc:
        text = str(exc).lower()
        if "password" in text or "mac" in text or "decrypt" in text:
            state = "is not set" if password is None else "is wrong"
            raise ConfigError(f"setting '{password_setting}' {state}: it does not open the PKCS12 store "
                              f"{path!r} ({setting})") from None
        raise ConfigError(f"setting '{setting}': {path!r} is not a PKCS12 store ({exc})") from None


def trusted_certificates_pem(path: str, password: str | None) -> str:
    """Every certificate of a PKCS12 trust store, as PEM text (``cadata``)."""
    _require_cryptography()
    from cryptography.hazmat.primitives import serialization

    store = _open(_read(path, "ssl.truststore.location"), password, path, "ssl.truststore.location",
                  "ssl.truststore.password")
    certificates = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certificates.append(store.cert.certificate)
    if not certificates:
        raise ConfigError(f"setting 'ssl.truststore.location': the PKCS12 store {path!r} holds no certificates")
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)


def key_and_chain_pem(path: str, store_password: str | None, key_password: str | None) -> tuple[bytes, str]:
    """(PEM of the encrypted key and the certificate chain, the one-off key password) of
    a PKCS12 key store.

    ``ssl.keystore.password`` opens the store; ``ssl.key.password``, when set and
    different, must open the key (PKCS12 files made by keytool or openssl protect both
    with one password, so it has to open the store too, as in Java).
    """
    _require_cryptography()
    from cryptography.hazmat.primitives import serialization

    data = _read(path, "ssl.keystore.location")
    if store_password is None and key_password is not None:
        store_password = key_password
    store = _open(data, store_password, path, "ssl.keystore.location", "ssl.keystore.password")
    if key_password is not None and key_password != store_password:
        store = _open(data, key_password, path, "ssl.keystore.location", "ssl.key.password")
    if store.key is None or store.cert is None:
        raise ConfigError(f"setting 'ssl.keystore.location': the PKCS12 store {path!r} holds no private key with a "
                          "certificate (is it a trust store? then use ssl.truststore.location)")
    one_off = secrets.token_urlsafe(24)
    key = store.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(one_off.encode()))
    chain = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
    return key + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain), one_off
