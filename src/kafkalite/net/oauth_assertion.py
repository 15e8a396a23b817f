"""JWT assertions a client signs to prove itself to a token endpoint (KIP-1139, RFC 7523).

Used by the ``jwt-bearer`` grant and by client credentials with ``private_key_jwt``.
Either a ready assertion is read from ``sasl.oauthbearer.assertion.file`` at each login
(someone else keeps it fresh), or kafkalite makes one: claims ``iss``, ``sub``, ``aud``
from ``sasl.oauthbearer.assertion.claim.*``, ``iat`` now, ``exp`` now +
``claim.exp.seconds``, ``nbf`` now - ``claim.nbf.seconds``, a random ``jti`` with
``claim.jti.include``, merged with the ``header`` / ``payload`` objects of
``sasl.oauthbearer.assertion.template.file``, signed RS256 or ES256 with
``sasl.oauthbearer.assertion.private.key.file`` (PEM, optionally encrypted with
``...private.key.passphrase``). Signing uses the ``cryptography`` package.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalite.config import Config
from kafkalite.errors import ConfigError, SaslAuthenticationError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey


@dataclass(frozen=True)
class AssertionSettings:
    """Where an assertion comes from (a file, or a key and claims)."""

    file: str | None = None
    private_key_file: str | None = None
    passphrase: str | None = field(default=None, repr=False)
    algorithm: str = "RS256"
    iss: str | None = None
    sub: str | None = None
    aud: str | None = None
    exp_s: int = 300
    nbf_s: int = 60
    jti: bool = False
    template_file: str | None = None


def assertion_settings(cfg: Config, client_id: str | None) -> AssertionSettings | None:
    """The assertion settings, None when no assertion is configured (Kafka 4.3's order:
    a file first, then a generated assertion when ``assertion.claim.iss`` or a private
    key is set)."""
    file = cfg["sasl.oauthbearer.assertion.file"]
    key_file = cfg["sasl.oauthbearer.assertion.private.key.file"]
    iss = cfg["sasl.oauthbearer.assertion.claim.iss"]
    template = cfg["sasl.oauthbearer.assertion.template.file"]
    if file:
        if not os.path.isfile(file):
            raise ConfigError(f"setting 'sasl.oauthbearer.assertion.file': {file!r} does not exist")
        return AssertionSettings(file=file)
    if not key_file and not iss:
        return None
    if not key_file:
        raise ConfigError("a generated assertion (sasl.oauthbearer.assertion.claim.iss is set) needs "
                          "'sasl.oauthbearer.assertion.private.key.file'")
    for name, path in (("sasl.oauthbearer.assertion.private.key.file", key_file),
                       ("sasl.oauthbearer.assertion.template.file", template)):
        if path and not os.path.isfile(path):
            raise ConfigError(f"setting '{name}': {path!r} does not exist")
    settings = AssertionSettings(
        private_key_file=key_file, passphrase=cfg["sasl.oauthbearer.assertion.private.key.passphrase"],
        algorithm=cfg["sasl.oauthbearer.assertion.algorithm"], iss=iss or client_id,
        sub=cfg["sasl.oauthbearer.assertion.claim.sub"] or client_id, aud=cfg["sasl.oauthbearer.assertion.claim.aud"],
        exp_s=cfg["sasl.oauthbearer.assertion.claim.exp.seconds"],
        nbf_s=cfg["sasl.oauthbearer.assertion.claim.nbf.seconds"],
        jti=cfg["sasl.oauthbearer.assertion.claim.jti.include"], template_file=template)
    _private_key(settings, ConfigError)  # a wrong passphrase or a key of the wrong type fails now
    if template:
        _template(template, ConfigError)
    return settings


def make_assertion(settings: AssertionSettings, now: float) -> str:
    """The assertion to send: the file's content, or a freshly signed JWT."""
    if settings.file:
        try:
            with open(settings.file) as f:
                return f.read().strip()
        except OSError as exc:
            raise SaslAuthenticationError(f"cannot read the assertion file {settings.file}: "
                                          f"{exc.strerror}") from None
    header: dict[str, Any] = {"alg": settings.algorithm, "typ": "JWT"}
    payload: dict[str, Any] = {"iat": int(now), "exp": int(now) + settings.exp_s, "nbf": int(now) - settings.nbf_s}
    for claim in ("iss", "sub", "aud"):
        value = getattr(settings, claim)
        if value:
            payload[claim] = value
    if settings.jti:
        payload["jti"] = str(uuid.uuid4())
    if settings.template_file:
        template = _template(settings.template_file, SaslAuthenticationError)
        header.update(template.get("header", {}))
        payload.update(template.get("payload", {}))
    signing_input = f"{_b64(json.dumps(header, separators=(',', ':')).encode())}." \
                    f"{_b64(json.dumps(payload, separators=(',', ':')).encode())}"
    return f"{signing_input}.{_b64(_sign(settings, signing_input.encode()))}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _require_cryptography() -> None:
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise ConfigError("signing OAuth assertions needs the 'cryptography' package: "
                          'pip install "kafkalite[oauth]"') from None


def _private_key(settings: AssertionSettings, error: type[Exception]) -> RSAPrivateKey | EllipticCurvePrivateKey:
    _require_cryptography()
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    path = settings.private_key_file or ""
    try:
        with open(path, "rb") as f:
            data = f.read()
        key = serialization.load_pem_private_key(
            data, settings.passphrase.encode() if settings.passphrase else None)
    except OSError as exc:
        raise error(f"setting 'sasl.oauthbearer.assertion.private.key.file': cannot read {path!r}: "
                    f"{exc.strerror}") from None
    except (ValueError, TypeError) as exc:
        what = "wrong or missing sasl.oauthbearer.assertion.private.key.passphrase" \
            if "password" in str(exc).lower() or "decrypt" in str(exc).lower() else "not a PEM private key"
        raise error(f"setting 'sasl.oauthbearer.assertion.private.key.file' {path!r}: {what}") from None
    if settings.algorithm == "RS256":
        if isinstance(key, rsa.RSAPrivateKey):
            return key
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        return key
    raise error(f"sasl.oauthbearer.assertion.algorithm {settings.algorithm} needs an "
                f"{'RSA' if settings.algorithm == 'RS256' else 'EC P-256'} key in {path!r}")


def _sign(settings: AssertionSettings, data: bytes) -> bytes:
    key = _private_key(settings, SaslAuthenticationError)
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

    if isinstance(key, rsa.RSAPrivateKey):
        return key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    r, s = utils.decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")  # JWS: raw r || s


def _template(path: str, error: type[Exception]) -> dict[str, dict[str, Any]]:
    try:
        with open(path) as f:
            document = json.load(f)
    except (OSError, ValueError) as exc:
        raise error(f"setting 'sasl.oauthbearer.assertion.template.file' {path!r}: {exc}") from None
    if not isinstance(document, dict) or not all(isinstance(document.get(k, {}), dict) for k in ("header", "payload")):
        raise error(f"setting 'sasl.oauthbearer.assertion.template.file' {path!r}: expected "
                    '{"header": {...}, "payload": {...}}')
    return document
