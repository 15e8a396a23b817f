"""SASL mechanisms as small state machines (no I/O): PLAIN, SCRAM-SHA-256/512, OAUTHBEARER, GSSAPI.

The transport runs the exchange over SaslHandshake + SaslAuthenticate requests: it asks
the mechanism for the first token, sends it, hands back the broker's answer, and repeats
until the mechanism says it is done. SCRAM follows RFC 5802 / RFC 7677 (the broker's
final message is verified, so a fake broker cannot pass); OAUTHBEARER follows RFC 7628;
GSSAPI follows RFC 4752 over a GSS-API context (:mod:`kafkalite.net.kerberos`).

Credentials come from ``sasl.username``/``sasl.password`` or, for settings copied from a
Java client, from ``sasl.jaas.config`` (``... username="u" password="p";``). For
OAUTHBEARER the token comes from ``sasl.oauthbearer.token.provider``, from an OIDC token
endpoint (``sasl.oauthbearer.token.endpoint.url``, :mod:`kafkalite.net.oauth`) or, like
Java's default login handler, from the JAAS line's ``unsecuredLoginStringClaim_sub`` (an
unsigned JWT, for tests against a broker with the unsecured validator). GSSAPI logs in
with a keytab or a ticket cache (:mod:`kafkalite.net.kerberos`).

Mechanisms whose steps may block (a KDC or token endpoint round trip) say so with
``blocking = True``; the transport then runs their steps on an executor thread.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from kafkalite.config import Config
from kafkalite.errors import ConfigError, SaslAuthenticationError
from kafkalite.net.jaas import jaas_entry


class SaslMechanism:
    """Produces client tokens and checks server tokens until ``done``."""

    name = ""
    done = False
    principal: str | None = None  # who logs in, for error messages
    blocking = False  # steps may block on network I/O: run them off the event loop

    def first_token(self) -> bytes:
        # Abstract: each mechanism implements it.
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


# What a token provider returns (a string, a tuple, a token object: see _token_text).
Token = TypeVar("Token")


class OAuthBearerMechanism(SaslMechanism, Generic[Token]):
    """RFC 7628 client: the token comes from ``token_provider`` at every (re-)authentication.

    The provider may return the token string, a tuple whose first item is the token
    (``(token, lifetime_ms)``), or an object with a ``token`` or ``value`` attribute;
    ``principal_of`` names who the token is for (default: the JWT's ``sub``).
    """

    name = "OAUTHBEARER"

    def __init__(self, token_provider: Callable[[], Token], *, extensions: Mapping[str, str] | None = None,
                 blocking: bool = False, principal_of: Callable[[Token], str | None] | None = None) -> None:
        self._provider = token_provider
        self._extensions = dict(extensions or {})
        self._principal_of = principal_of
        self.blocking = blocking

    def first_token(self) -> bytes:
        try:
            result = self._provider()
        except SaslAuthenticationError:
            raise
        except Exception as exc:
            raise SaslAuthenticationError(f"OAUTHBEARER: the token provider failed: {exc!r}") from exc
        token = _token_text(result)
        self.principal = self._principal_of(result) if self._principal_of is not None else _jwt_subject(token)
        # RFC 7628 / KIP-342: SASL extensions follow the auth value, each key=value\x01.
        extensions = "".join(f"{k}={v}\x01" for k, v in sorted(self._extensions.items()))
        return f"n,,\x01auth=Bearer {token}\x01{extensions}\x01".encode()

    def next_token(self, server_token: bytes) -> bytes | None:
        if server_token:
            # RFC 7628: an error JSON arrives (the broker fails the login next).
            self.done = True
            raise SaslAuthenticationError(_bearer_refusal(server_token))
        self.done = True
        return None


class GssContextLike(Protocol):
    """What :class:`GssapiMechanism` needs of a GSS-API initiator context
    (:class:`kafkalite.net.kerberos.GssContext`; scripted ones in unit tests)."""

    @property
    def complete(self) -> bool: ...

    def step(self, token: bytes | None) -> bytes: ...

    def wrap(self, message: bytes) -> bytes: ...

    def unwrap(self, message: bytes) -> bytes: ...


class GssapiMechanism(SaslMechanism):
    """RFC 4752 client over a GSS-API context (Kafka: no security layer).

    ``context`` has ``step(token) -> bytes``, ``complete``, ``wrap(bytes)`` and
    ``unwrap(bytes)`` (:class:`kafkalite.net.kerberos.GssContext`, or a fake in unit
    tests). The exchange: context tokens until the context is established (an empty
    answer when the last step produced none), then the broker's wrapped offer of
    security layers, answered by a wrapped choice of "no security layer" with the
    broker's maximum buffer size and no authorization id; the broker's final, empty
    answer ends it.
    """

    name = "GSSAPI"
    blocking = True
    _NO_SECURITY_LAYER = 0x01

    def __init__(self, context: GssContextLike, principal: str | None = None) -> None:
        self._context = context
        self.principal = principal
        self._layers_answered = False

    def first_token(self) -> bytes:
        token = self._context.step(None)
        self._refresh_principal()
        return token

    def next_token(self, server_token: bytes) -> bytes | None:
        if not self._context.complete:
            token = self._context.step(server_token)
            return token or b""
        if not self._layers_answered:
            offer = self._context.unwrap(server_token)
            if len(offer) != 4:
                raise SaslAuthenticationError(f"GSSAPI: the broker's security layer offer has {len(offer)} bytes, "
                                              "not 4 (RFC 4752)")
            if not offer[0] & self._NO_SECURITY_LAYER:
                raise SaslAuthenticationError("GSSAPI: the broker requires a SASL security layer (integrity or "
                                              "confidentiality), which Kafka clients do not use")
            self._layers_answered = True
            # Our choice: no security layer, the broker's max buffer size, no authzid.
            return self._context.wrap(bytes([self._NO_SECURITY_LAYER]) + offer[1:4])
        if server_token:
            raise SaslAuthenticationError("GSSAPI: the broker sent data after the exchange was complete")
        self.done = True
        return None

    def _refresh_principal(self) -> None:
        login = getattr(self._context, "login", None)
        if login is not None and getattr(login, "principal", None):
            self.principal = login.principal


def _bearer_refusal(server_token: bytes) -> str:
    """The broker's RFC 7628 error (``{"status": "invalid_token", "scope": ...}``) in words."""
    text = server_token.decode(errors="replace")
    try:
        error = json.loads(text)
    except ValueError:
        error = None
    if not isinstance(error, dict) or "status" not in error:
        return f"the broker refused the token: {text}"
    detail = f"the broker refused the token (status {error['status']}"
    if error.get("scope"):
        detail += f", required scope {error['scope']}"
    return detail + "); its validator checks signature, expiry, issuer and audience " \
                    "(sasl.oauthbearer.expected.issuer / .expected.audience on the broker)"


def _token_text(result: object) -> str:
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


def jaas_options(cfg: Config) -> dict[str, str]:
    """The ``key=value`` options of ``sasl.jaas.config`` (empty if unset)."""
    entry = jaas_entry(cfg)
    return dict(entry.options) if entry is not None else {}


def credentials(cfg: Config) -> tuple[str | None, str | None]:
    """(username, password) from sasl.username/password or sasl.jaas.config."""
    username, password = cfg["sasl.username"], cfg["sasl.password"]
    if username is None or password is None:
        values = jaas_options(cfg)
        username = username or values.get("username")
        password = password if password is not None else values.get("password")
    return username, password


def check_sasl_settings(cfg: Config) -> Config:
    """For SASL_PLAINTEXT / SASL_SSL: the mechanism has what it needs (credentials, a
    token source, a Kerberos login's settings and the ``gssapi`` package), checked when
    the client is constructed as Java's clients read their JAAS config then. Builds the
    mechanism without logging in. Returns ``cfg`` unchanged."""
    if cfg["security.protocol"].startswith("SASL"):
        mechanism_for(cfg)
    return cfg


def mechanism_for(cfg: Config, host: str | None = None) -> SaslMechanism:
    """Build the configured mechanism for a connection to ``host``; raises ConfigError
    naming what is missing. No I/O: logins (KDC, token endpoint) happen in the steps."""
    name = cfg["sasl.mechanism"]
    if name in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        username, password = credentials(cfg)
        if not username or password is None:
            raise ConfigError(
                f"sasl.mechanism {name} needs 'sasl.username' and 'sasl.password' (or 'sasl.jaas.config')"
            )
        return PlainMechanism(username, password) if name == "PLAIN" else ScramMechanism(name, username, password)
    if name == "OAUTHBEARER":
        return _oauthbearer(cfg)
    from kafkalite.net import kerberos

    login = kerberos.login_for(kerberos.kerberos_settings(cfg))
    return GssapiMechanism(kerberos.GssContext(login, host or "localhost"), login.principal)


def _oauthbearer(cfg: Config) -> SaslMechanism:
    provider = cfg["sasl.oauthbearer.token.provider"]
    if provider is not None:
        if not callable(provider):
            raise ConfigError("setting 'sasl.oauthbearer.token.provider' must be a callable returning the token")
        return OAuthBearerMechanism(provider)
    from kafkalite.net import oauth

    if oauth.uses_oidc(cfg) or cfg["sasl.login.callback.handler.class"] is not None:
        login = oauth.login_for(oauth.oauth_settings(cfg))
        return OAuthBearerMechanism(login.token, extensions=dict(login.settings.extensions), blocking=True,
                                    principal_of=lambda token: token.principal)
    unsecured = _unsecured_provider(jaas_options(cfg))
    if unsecured is None:
        raise ConfigError(
            "sasl.mechanism OAUTHBEARER needs 'sasl.oauthbearer.token.endpoint.url' with a client id and secret "
            "(OIDC, KIP-768), 'sasl.oauthbearer.token.provider' (a callable returning the token), or for an "
            "unsecured test broker 'sasl.jaas.config' with unsecuredLoginStringClaim_sub=\"<user>\""
        )
    return OAuthBearerMechanism(unsecured)


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
