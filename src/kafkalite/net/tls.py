"""TLS for ``security.protocol`` SSL and SASL_SSL: the ``ssl.*`` settings as an SSLContext.

Settings follow the Java client's names, with PEM files or inline PEM text (Java's
``ssl.keystore.type=PEM`` / ``ssl.truststore.type=PEM``); librdkafka-style file
settings are accepted too:

- trust: ``ssl.ca.location`` or ``ssl.truststore.location`` (PEM file of CA
  certificates), or ``ssl.truststore.certificates`` (the PEM text itself); none of
  them means the system's default CAs;
- client certificate (mutual TLS): ``ssl.certificate.location`` + ``ssl.key.location``,
  or ``ssl.keystore.location`` (one PEM file holding key and chain, as Kafka's PEM
  key store), or ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key`` (PEM text);
  ``ssl.key.password`` decrypts an encrypted key;
- ``ssl.endpoint.identification.algorithm``: ``https`` (default) checks that the
  broker's certificate names the host we connect to; ``""`` turns that off;
- ``ssl.enabled.protocols`` (TLSv1.2, TLSv1.3) and ``ssl.cipher.suites``;
- ``ssl.protocol``, Java's ``SSLContext.getInstance(protocol)``: ``TLSv1.3`` (default)
  and ``TLS`` leave ``ssl.enabled.protocols`` alone; ``TLSv1.2`` caps the handshake at
  TLS 1.2 even where ``ssl.enabled.protocols`` lists TLSv1.3 (as Kafka documents: "clients
  will not use 'TLSv1.3' even if it is one of the values in ssl.enabled.protocols").

Contexts are built once per distinct group of settings and shared by every
connection (loading keys and CA files per connection would cost a few ms each).
Every problem is a :class:`ConfigError` naming the setting, raised when the client is
constructed (:func:`check_tls_settings`, one of the security checks
``kafkalite.settings.ClientRules`` runs for every client kind).

Example::

    ctx = ssl_context(PRODUCER_RULES.resolve({"bootstrap.servers": "b:9093",
                                              "security.protocol": "SSL",
                                              "ssl.ca.location": "/etc/kafka/ca.pem"}))
"""

from __future__ import annotations

import os
import ssl
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from kafkalite.config import SETTINGS, Config, coerce, lookup
from kafkalite.errors import ConfigError
from kafkalite.net import pkcs12

_FILE_SETTINGS = ("ssl.ca.location", "ssl.truststore.location", "ssl.certificate.location",
                  "ssl.key.location", "ssl.keystore.location")
_KEY_SETTINGS = (*_FILE_SETTINGS, "ssl.truststore.certificates", "ssl.keystore.certificate.chain",
                 "ssl.keystore.key", "ssl.key.password", "ssl.endpoint.identification.algorithm",
                 "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.keystore.type", "ssl.truststore.type",
                 "ssl.keystore.password", "ssl.truststore.password", "ssl.protocol")
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# ssl.protocol -> the newest version its Java SSLContext negotiates as a client.
_CONTEXT_MAXIMUM = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
                    "TLS": ssl.TLSVersion.TLSv1_3}

_cache: dict[tuple[Any, ...], ssl.SSLContext] = {}
_cache_lock = threading.Lock()
_CACHE_SIZE = 32


def uses_tls(cfg: Mapping[str, Any]) -> bool:
    return str(cfg["security.protocol"]).endswith("SSL")


def ssl_context(cfg: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The TLS context for SSL / SASL_SSL (None for PLAINTEXT / SASL_PLAINTEXT)."""
    if not uses_tls(cfg):
        return None
    if cfg["ssl.context"] is not None:
        ctx = cfg["ssl.context"]
        if not isinstance(ctx, ssl.SSLContext):
            raise ConfigError(f"setting 'ssl.context' must be an ssl.SSLContext, got {type(ctx).__name__}")
        return ctx
    key = tuple(_freeze(cfg[name]) for name in _KEY_SETTINGS)
    with _cache_lock:
        ctx = _cache.get(key)
    if ctx is None:
        ctx = _build(cfg)
        with _cache_lock:
            if len(_cache) >= _CACHE_SIZE:
                _cache.pop(next(iter(_cache)))
            _cache[key] = ctx
    return ctx


def check_tls_settings(cfg: Config) -> Config:
    """Build the context now so that a wrong path or password fails at construction (as
    Java's clients load their key and trust stores when built), not at the first
    connection. Returns ``cfg`` unchanged."""
    if uses_tls(cfg):
        ssl_context(cfg)
    return cfg


def _freeze(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _build(cfg: Mapping[str, Any]) -> ssl.SSLContext:
    for store in ("ssl.keystore.type", "ssl.truststore.type"):
        if cfg[store] == "JKS":
            location = cfg[store.replace(".type", ".location")] or "store.jks"
            target = os.path.splitext(location)[0] + ".p12"
            raise ConfigError(
                f"setting '{store}' is JKS, which kafkalite does not read; convert the store to PKCS12 once "
                f"with Java's keytool: 'keytool -importkeystore -srckeystore {location} -destkeystore {target} "
                f"-deststoretype PKCS12', then set {store}=PKCS12 and "
                f"{store.replace('.type', '.location')}={target}"
            )
    if cfg["ssl.keystore.password"] is not None and cfg["ssl.keystore.type"] == "PEM":
        # Java refuses it too for PEM key stores: only the key itself has a password.
        raise ConfigError("setting 'ssl.keystore.password' does not apply to PEM key stores; "
                          "set 'ssl.key.password' to the password of the private key")
    if cfg["ssl.truststore.password"] is not None and cfg["ssl.truststore.type"] == "PEM":
        # Java: "SSL trust store password cannot be specified for PEM format".
        raise ConfigError("setting 'ssl.truststore.password' does not apply to PEM trust stores (they have no "
                          "password); it opens PKCS12 trust stores (ssl.truststore.type=PKCS12)")
    for name in _FILE_SETTINGS:
        path = cfg[name]
        if path is not None and not os.path.exists(path):
            raise ConfigError(f"setting '{name}': file {path!r} does not exist")

    # Verified chain and host name by default (PROTOCOL_TLS_CLIENT).
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _trust(ctx, cfg)
    _client_certificate(ctx, cfg)

    algorithm = (cfg["ssl.endpoint.identification.algorithm"] or "").strip().lower()
    if algorithm not in ("", "https"):
        raise ConfigError("setting 'ssl.endpoint.identification.algorithm' must be 'https' or '' (off), "
                          f"got {cfg['ssl.endpoint.identification.algorithm']!r}")
    # Like Java: '' skips the host name check but the chain is still verified.
    ctx.check_hostname = algorithm == "https"

    protocols = cfg["ssl.enabled.protocols"] or []
    unknown = [p for p in protocols if p not in _PROTOCOLS]
    if unknown or not protocols:
        raise ConfigError(f"setting 'ssl.enabled.protocols' must list TLSv1.2 and/or TLSv1.3, got {protocols!r}")
    context_protocol = cfg["ssl.protocol"]
    versions = sorted(v for v in (_PROTOCOLS[p] for p in protocols) if v <= _CONTEXT_MAXIMUM[context_protocol])
    if not versions:
        raise ConfigError(f"setting 'ssl.protocol' {context_protocol!r} never negotiates any of "
                          f"'ssl.enabled.protocols' {protocols!r}: add {context_protocol} to ssl.enabled.protocols "
                          "or set ssl.protocol to TLSv1.3")
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    if cfg["ssl.cipher.suites"]:
        try:
            ctx.set_ciphers(":".join(cfg["ssl.cipher.suites"]))
        except ssl.SSLError as exc:
            raise ConfigError(f"setting 'ssl.cipher.suites' names no usable cipher: {exc}") from None
    return ctx


def _trust(ctx: ssl.SSLContext, cfg: Mapping[str, Any]) -> None:
    if cfg["ssl.truststore.type"] == "PKCS12":
        if cfg["ssl.truststore.location"] is None:
            raise ConfigError("setting 'ssl.truststore.type' is PKCS12: set 'ssl.truststore.location' to the store")
        if cfg["ssl.ca.location"] is not None or cfg["ssl.truststore.certificates"] is not None:
            raise ConfigError("a PKCS12 trust store (ssl.truststore.location) and PEM CA settings "
                              "(ssl.ca.location / ssl.truststore.certificates) both name the CAs; set one")
        try:
            ctx.load_verify_locations(cadata=pkcs12.trusted_certificates_pem(
                cfg["ssl.truststore.location"], cfg["ssl.truststore.password"]))
        except ssl.SSLError as exc:
            raise ConfigError(f"setting 'ssl.truststore.location': cannot use its certificates: {exc}") from None
        return
    ca_file = cfg["ssl.ca.location"] or cfg["ssl.truststore.location"]
    name = "ssl.ca.location" if cfg["ssl.ca.location"] else "ssl.truststore.location"
    inline = cfg["ssl.truststore.certificates"]
    if ca_file is None and inline is None:
        ctx.load_default_certs()
        return
    # A configured CA replaces the system's, like a Java trust store.
    try:
        if ca_file is not None:
            if os.path.isdir(ca_file):
                ctx.load_verify_locations(capath=ca_file)
            else:
                ctx.load_verify_locations(cafile=ca_file)
        if inline is not None:
            name = "ssl.truststore.certificates"
            ctx.load_verify_locations(cadata=inline)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(f"setting '{name}': cannot read CA certificates: {exc}") from None


def _client_certificate(ctx: ssl.SSLContext, cfg: Mapping[str, Any]) -> None:
    password = cfg["ssl.key.password"]
    cert, key = cfg["ssl.certificate.location"], cfg["ssl.key.location"]
    keystore = cfg["ssl.keystore.location"]
    chain_text, key_text = cfg["ssl.keystore.certificate.chain"], cfg["ssl.keystore.key"]
    given = [n for n, v in (("ssl.certificate.location", cert), ("ssl.keystore.location", keystore),
                            ("ssl.keystore.certificate.chain", chain_text)) if v is not None]
    if len(given) > 1:
        raise ConfigError(f"settings {given} each give a client certificate; set only one")
    if key is not None and cert is None:
        raise ConfigError("setting 'ssl.key.location' needs 'ssl.certificate.location' (the certificate of the key)")
    if (chain_text is None) != (key_text is None):
        raise ConfigError("settings 'ssl.keystore.certificate.chain' and 'ssl.keystore.key' go together")
    if cfg["ssl.keystore.type"] == "PKCS12":
        if keystore is None:
            raise ConfigError("setting 'ssl.keystore.type' is PKCS12: set 'ssl.keystore.location' to the store")
        if len(given) > 1 or key is not None:
            raise ConfigError("a PKCS12 key store (ssl.keystore.location) holds key and certificate: do not set "
                              "ssl.certificate.location / ssl.key.location / ssl.keystore.key as well")
        _load_pkcs12(ctx, keystore, cfg["ssl.keystore.password"], password)
        return
    if cert is not None:
        _load_chain(ctx, cert, key, password, "ssl.certificate.location", "ssl.key.location")
    elif keystore is not None:
        _load_chain(ctx, keystore, None, password, "ssl.keystore.location", "ssl.keystore.location")
    elif chain_text is not None:
        # The ssl module loads keys from files only: a private temporary file, removed
        # as soon as OpenSSL has read it.
        fd, path = tempfile.mkstemp(prefix="kafkalite-key-", suffix=".pem")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(key_text.strip() + "\n" + chain_text.strip() + "\n")
            _load_chain(ctx, path, None, password, "ssl.keystore.certificate.chain", "ssl.keystore.key")
        finally:
            os.unlink(path)
    elif password is not None:
        raise ConfigError("setting 'ssl.key.password' is set but no client key is configured "
                          "('ssl.key.location', 'ssl.keystore.location' or 'ssl.keystore.key')")


def _load_pkcs12(ctx: ssl.SSLContext, path: str, store_password: str | None, key_password: str | None) -> None:
    """Key and chain of a PKCS12 key store, handed to OpenSSL through a private
    temporary PEM file whose key is encrypted with a one-off password."""
    pem, one_off = pkcs12.key_and_chain_pem(path, store_password, key_password)
    fd, tmp = tempfile.mkstemp(prefix="kafkalite-p12-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        _load_chain(ctx, tmp, None, one_off, "ssl.keystore.location", "ssl.keystore.location")
    finally:
        os.unlink(tmp)


def context_from_options(options: Mapping[str, str], where: str) -> ssl.SSLContext:
    """A TLS context from ``ssl.*`` options given somewhere else than the client's own
    settings (Java reads the token endpoint's TLS settings from ``sasl.jaas.config``).
    Unset options take the client defaults."""
    values: dict[str, Any] = {s.name: s.default for s in SETTINGS if s.name.startswith("ssl.")}
    for key, value in options.items():
        setting = lookup(key)
        if setting is None or not setting.name.startswith("ssl.") or setting.name == "ssl.context":
            raise ConfigError(f"{where}: {key!r} is not an ssl.* setting kafkalite knows")
        try:
            values[setting.name] = coerce(setting, value)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    values["security.protocol"] = "SSL"
    try:
        return _build(values)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _load_chain(ctx: ssl.SSLContext, certfile: str, keyfile: str | None, password: str | None,
                cert_setting: str, key_setting: str) -> None:
    def no_password() -> str:
        raise ConfigError(f"the private key of '{key_setting}' is encrypted: set 'ssl.key.password'")

    try:
        ctx.load_cert_chain(certfile, keyfile, password if password is not None else no_password)
    except ConfigError:
        raise
    except ssl.SSLError as exc:
        text = str(exc)
        if password is not None and ("BAD_DECRYPT" in text or "bad decrypt" in text.lower()
                                     or _is_encrypted(keyfile or certfile)):
            raise ConfigError(f"setting 'ssl.key.password' does not decrypt the key of '{key_setting}'") from None
        if "KEY_VALUES_MISMATCH" in text:
            raise ConfigError(f"the key of '{key_setting}' does not belong to the certificate of "
                              f"'{cert_setting}'") from None
        raise ConfigError(f"setting '{cert_setting}': cannot load the client certificate and key: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"setting '{cert_setting}': cannot read {certfile!r}: {exc}") from None


def _is_encrypted(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return b"ENCRYPTED" in f.read()
    except OSError:
        return False


def describe_tls_failure(exc: BaseException, client_certificate: bool = True) -> str:
    """A short, actionable reason for a failed TLS handshake (for the error message);
    ``client_certificate`` tells whether we offered one."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        reason = exc.verify_message or str(exc)
        if "mismatch" in reason.lower() or "hostname" in reason.lower():
            return (f"the broker's certificate does not name this host ({reason}); check the advertised "
                    "host name, or set ssl.endpoint.identification.algorithm='' to skip the check")
        if "self-signed" in reason or "issuer" in reason:
            return (f"the broker's certificate is not signed by a trusted CA ({reason}); set "
                    "ssl.ca.location to the CA that signed it")
        return f"certificate verify failed: {reason}"
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or str(exc)
        upper = str(reason).upper()
        if "CERTIFICATE_REQUIRED" in upper or (not client_certificate and "BAD_CERTIFICATE" in upper):
            return f"the broker requires a client certificate ({reason}); set ssl.certificate.location and ssl.key.location"
        if "WRONG_VERSION_NUMBER" in upper or "RECORD_LAYER_FAILURE" in upper or "PACKET_LENGTH" in upper:
            return f"the broker did not answer in TLS ({reason}); is this port a TLS listener?"
        if "PROTOCOL_VERSION" in upper or "UNSUPPORTED_PROTOCOL" in upper or "NO_PROTOCOLS_AVAILABLE" in upper:
            return (f"the broker accepts none of the TLS versions this client offers ({reason}); check "
                    "ssl.protocol and ssl.enabled.protocols against the broker's ssl.enabled.protocols")
        if "UNKNOWN_CA" in upper or "BAD_CERTIFICATE" in upper or "CERTIFICATE_UNKNOWN" in upper:
            return f"the broker rejected our client certificate ({reason})"
        return str(reason)
    return str(exc) or type(exc).__name__
