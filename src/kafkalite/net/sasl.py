"""SASL mechanisms as small state machines (no I/O): PLAIN, SCRAM-SHA-256/512, OAUTHBEARER.

The transport runs the exchange over SaslHandshake + SaslAuthenticate requests: it asks
the mechanism for the first token, sends it, hands back the broker's answer, and repeats
until the mechanism says it is done. SCRAM follows RFC 5802 / RFC 7677 (the broker's
final message is verified, so a fake broker cannot pass); OAUTHBEARER follows RFC 7628
with the token from a user callback (KIP-255).

Credentials come from ``sasl.username``/``sasl.password`` or, for settings copied from a
Java client, from ``sasl.jaas.config`` (``... username="u" password="p";``). For
OAUTHBEARER the token comes from ``sasl.oauthbearer.token.provider`` or, like Java's
default login handler, from the JAAS line's ``unsecuredLoginStringClaim_sub`` (an
unsigned JWT, for tests against a broker with the unsecured validator).

GSSAPI (Kerberos) is not implemented: choosing it is a :class:`ConfigError`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

from kafkalite.errors import ConfigError, SaslAuthenticationError


class SaslMechanism:
    """Produces client tokens and checks server tokens until ``done``."""

    name = ""
    done = False
    principal: str | None = None  # who logs in, for error messages

    def first_token(self) -> bytes:
        raise NotImplementedError

    def next_token(self, server_token: bytes) -> bytes | None:
        """Answer a server token; None when the exchange is complete."""
        self.done = True
        return None


class PlainMechanism(SaslMechanism):
    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self.username, self.password = username, password
        self.principal = username

    def first_token(self) -> bytes:
        return b"\0" + self.username.encode() + b"\0" + self.password.encode()


class ScramMechanism(SaslMechanism):
    """SCRAM-SHA-256 or SCRAM-SHA-512 (RFC 5802), without channel binding ("n,,")."""

    def __init__(self, name: str, username: str, password: str, nonce: str | None = None) -> None:
        if name not in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise ConfigError(f"unsupported SCRAM mechanism {name!r}")
        self.name = name
        self._hash = hashlib.sha256 if name.endswith("256") else hashlib.sha512
        self._hash_name = "sha256" if name.endswith("256") else "sha512"
        self.username = username
        self.principal = username
        self.password = password
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._client_first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._server_signature: bytes | None = None
        self._step = 0

    def first_token(self) -> bytes:
        return ("n,," + self._client_first_bare).encode()

    def next_token(self, server_token: bytes) -> bytes | None:
        text = server_token.decode()
        attrs = _parse_scram(text)
        if "e" in attrs:
            raise SaslAuthenticationError(f"{self.name}: broker refused: {attrs['e']}")
        if self._step == 0:
            self._step = 1
            nonce, salt, iterations = attrs.get("r", ""), attrs.get("s", ""), attrs.get("i", "")
            if not nonce.startswith(self._nonce) or not salt or not iterations.isdigit():
                raise SaslAuthenticationError(f"{self.name}: malformed server-first message")
            if int(iterations) < 4096:
                raise SaslAuthenticationError(f"{self.name}: iteration count {iterations} is below 4096")
            salted = hashlib.pbkdf2_hmac(self._hash_name, self.password.encode(), base64.b64decode(salt),
                                         int(iterations))
            client_key = hmac.new(salted, b"Client Key", self._hash).digest()
            stored_key = self._hash(client_key).digest()
            final_no_proof = f"c=biws,r={nonce}"
            auth_message = f"{self._client_first_bare},{text},{final_no_proof}".encode()
            signature = hmac.new(stored_key, auth_message, self._hash).digest()
            proof = bytes(a ^ b for a, b in zip(client_key, signature))
            server_key = hmac.new(salted, b"Server Key", self._hash).digest()
            self._server_signature = hmac.new(server_key, auth_message, self._hash).digest()
            return f"{final_no_proof},p={base64.b64encode(proof).decode()}".encode()
        verifier = attrs.get("v")
        if verifier is None or self._server_signature is None or not hmac.compare_digest(
            base64.b64decode(verifier), self._server_signature
        ):
            raise SaslAuthenticationError(f"{self.name}: the broker's signature does not verify")
        self.done = True
        return None


class OAuthBearerMechanism(SaslMechanism):
    """RFC 7628 client: the token comes from ``token_provider`` at every (re-)authentication.

    The provider may return the token string, a tuple whose first item is the token
    (``(token, lifetime_ms)``), or an object with a ``token`` or ``value`` attribute.
    """

    name = "OAUTHBEARER"

    def __init__(self, token_provider: Callable[[], Any]) -> None:
        self._provider = token_provider

    def first_token(self) -> bytes:
        try:
            result = self._provider()
        except Exception as exc:
            raise SaslAuthenticationError(f"OAUTHBEARER: the token provider failed: {exc!r}") from exc
        token = _token_text(result)
        self.principal = _jwt_subject(token)
        return f"n,,\x01auth=Bearer {token}\x01\x01".encode()

    def next_token(self, server_token: bytes) -> bytes | None:
        if server_token:
            # RFC 7628: an error JSON arrives; answer with %x01 and the broker fails auth.
            self.done = True
            raise SaslAuthenticationError(f"OAUTHBEARER refused: {server_token.decode(errors='replace')}")
        self.done = True
        return None


def _token_text(result: Any) -> str:
    if isinstance(result, tuple) and result:
        result = result[0]
    for attr in ("token", "value"):
        if not isinstance(result, (str, bytes)) and hasattr(result, attr):
            result = getattr(result, attr)
    if isinstance(result, bytes):
        result = result.decode()
    if not isinstance(result, str) or not result:
        raise SaslAuthenticationError(
            f"OAUTHBEARER: the token provider must return a token string, got {type(result).__name__}")
    return result


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt_subject(token: str) -> str | None:
    """The ``sub`` claim of a JWT, if it parses (for messages only; never trusted)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        sub = claims.get("sub")
        return sub if isinstance(sub, str) else None
    except (IndexError, ValueError, AttributeError):
        return None


def unsecured_jwt(subject: str, *, lifetime_s: float = 3600, scope: str | list[str] | None = None,
                  issued_at: float | None = None, **claims: Any) -> str:
    """An unsigned JWT (``"alg": "none"``, empty signature), as Java's
    ``OAuthBearerUnsecuredLoginCallbackHandler`` makes: only for brokers that run the
    unsecured validator (tests, development).

    >>> token = unsecured_jwt("alice", lifetime_s=60)
    >>> token.count("."), token.endswith(".")
    (2, True)
    """
    now = time.time() if issued_at is None else issued_at
    payload: dict[str, Any] = {"iat": round(now, 3), "exp": round(now + lifetime_s, 3), "sub": subject}
    if scope is not None:
        payload["scope"] = scope
    payload.update(claims)
    header = _b64url(json.dumps({"alg": "none"}, separators=(",", ":")).encode())
    body = _b64url(json.dumps(payload, separators=(",", ":")).encode())
    return f"{header}.{body}."


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _parse_scram(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        if len(part) >= 2 and part[1] == "=":
            out[part[0]] = part[2:]
    return out


_JAAS_VALUE = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def jaas_options(cfg: Any) -> dict[str, str]:
    """The ``key="value"`` options of ``sasl.jaas.config`` (empty if unset)."""
    jaas = cfg["sasl.jaas.config"]
    return {k: v.replace('\\"', '"') for k, v in _JAAS_VALUE.findall(jaas)} if jaas else {}


def credentials(cfg: Any) -> tuple[str | None, str | None]:
    """(username, password) from sasl.username/password or sasl.jaas.config."""
    username, password = cfg["sasl.username"], cfg["sasl.password"]
    if username is None or password is None:
        values = jaas_options(cfg)
        username = username or values.get("username")
        password = password if password is not None else values.get("password")
    return username, password


def mechanism_for(cfg: Any) -> SaslMechanism:
    """Build the configured mechanism; raises ConfigError naming what is missing."""
    name = cfg["sasl.mechanism"]
    if name in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        username, password = credentials(cfg)
        if not username or password is None:
            raise ConfigError(
                f"sasl.mechanism {name} needs 'sasl.username' and 'sasl.password' (or 'sasl.jaas.config')"
            )
        return PlainMechanism(username, password) if name == "PLAIN" else ScramMechanism(name, username, password)
    if name == "OAUTHBEARER":
        provider = cfg["sasl.oauthbearer.token.provider"]
        if provider is None:
            provider = _unsecured_provider(jaas_options(cfg))
        if not callable(provider):
            raise ConfigError(
                "sasl.mechanism OAUTHBEARER needs 'sasl.oauthbearer.token.provider' (a callable returning "
                "the token), or for an unsecured test broker 'sasl.jaas.config' with "
                "unsecuredLoginStringClaim_sub=\"<user>\""
            )
        return OAuthBearerMechanism(provider)
    raise ConfigError(
        "sasl.mechanism GSSAPI (Kerberos, the Java client's default mechanism) is not supported by "
        "kafkalite; set 'sasl.mechanism' to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
    )


def _unsecured_provider(options: dict[str, str]) -> Callable[[], str] | None:
    """Java's default OAUTHBEARER login: an unsigned token from the JAAS options."""
    subject = options.get("unsecuredLoginStringClaim_sub")
    if not subject:
        return None
    try:
        lifetime = float(options.get("unsecuredLoginLifetimeSeconds", "3600"))
    except ValueError:
        raise ConfigError("sasl.jaas.config: unsecuredLoginLifetimeSeconds must be a number") from None
    extra: dict[str, Any] = {}
    for key, value in options.items():
        if key.startswith("unsecuredLoginStringClaim_") and key != "unsecuredLoginStringClaim_sub":
            extra[key.removeprefix("unsecuredLoginStringClaim_")] = value
        elif key.startswith("unsecuredLoginListClaim_") and value:
            # Java: the first character is the separator (",a,b" or "|a|b").
            extra[key.removeprefix("unsecuredLoginListClaim_")] = value[1:].split(value[0])
        elif key.startswith("unsecuredLoginNumberClaim_"):
            try:
                extra[key.removeprefix("unsecuredLoginNumberClaim_")] = float(value)
            except ValueError:
                raise ConfigError(f"sasl.jaas.config: {key} must be a number") from None
    return lambda: unsecured_jwt(subject, lifetime_s=lifetime, **extra)
