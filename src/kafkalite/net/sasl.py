"""SASL mechanisms as small state machines (no I/O): PLAIN, SCRAM-SHA-256/512, OAUTHBEARER.

The transport runs the exchange over SaslHandshake + SaslAuthenticate requests: it asks
the mechanism for the first token, sends it, hands back the broker's answer, and repeats
until the mechanism says it is done. SCRAM follows RFC 5802 / RFC 7677 (the broker's
final message is verified, so a fake broker cannot pass); OAUTHBEARER follows RFC 7628
with the token from a user callback (KIP-255).

Credentials come from ``sasl.username``/``sasl.password`` or, for settings copied from a
Java client, from ``sasl.jaas.config`` (``... username="u" password="p";``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from typing import Any

from kafkalite.errors import ConfigError, SaslAuthenticationError


class SaslMechanism:
    """Produces client tokens and checks server tokens until ``done``."""

    name = ""
    done = False

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
    name = "OAUTHBEARER"

    def __init__(self, token_provider: Callable[[], Any]) -> None:
        self._provider = token_provider

    def first_token(self) -> bytes:
        token = self._provider()
        if isinstance(token, tuple):
            token = token[0]
        return f"n,,\x01auth=Bearer {token}\x01\x01".encode()

    def next_token(self, server_token: bytes) -> bytes | None:
        if server_token:
            # RFC 7628: an error JSON arrives; answer with %x01 and the broker fails auth.
            self.done = True
            raise SaslAuthenticationError(f"OAUTHBEARER refused: {server_token.decode(errors='replace')}")
        self.done = True
        return None


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _parse_scram(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        if len(part) >= 2 and part[1] == "=":
            out[part[0]] = part[2:]
    return out


_JAAS_VALUE = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def credentials(cfg: Any) -> tuple[str | None, str | None]:
    """(username, password) from sasl.username/password or sasl.jaas.config."""
    username, password = cfg["sasl.username"], cfg["sasl.password"]
    jaas = cfg["sasl.jaas.config"]
    if jaas and (username is None or password is None):
        values = dict(_JAAS_VALUE.findall(jaas))
        username = username or values.get("username")
        password = password or values.get("password")
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
        if not callable(provider):
            raise ConfigError("sasl.mechanism OAUTHBEARER needs 'sasl.oauthbearer.token.provider' (a callable)")
        return OAuthBearerMechanism(provider)
    raise ConfigError(
        "sasl.mechanism GSSAPI (Kerberos) is not available in this build of kafkalite; "
        "use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
    )
