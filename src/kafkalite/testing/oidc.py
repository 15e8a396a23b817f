"""A real OpenID Connect provider for tests: ``no.nav.security:mock-oauth2-server``.

The server (6.0.2, Java 17+) comes from Maven Central by a committed lock
(``locks/mock-oauth2-server-6.0.2.json``, see :mod:`kafkalite.testing.jarsets`) and runs
on a loopback port. It signs real RS256 JWTs and publishes its keys (JWKS), so a
broker validates the tokens with Kafka's ``OAuthBearerValidatorCallbackHandler``
exactly as against a production identity provider. One issuer, ``kafka``:

- token endpoint ``http://127.0.0.1:PORT/kafka/token`` (``client_credentials`` and the
  ``jwt-bearer`` grant); tokens live ``token_lifetime_s`` seconds;
- ``sub`` is the client id, ``aud`` is ``kafka``, ``scope`` is ``kafka``; the client id
  :data:`REJECTED_CLIENT` gets a token for another audience (the broker refuses it);
- JWKS ``http://127.0.0.1:PORT/kafka/jwks``, issuer ``http://127.0.0.1:PORT/kafka``.

The server accepts any client secret (it is a mock in that respect only); it refuses
requests it cannot honour with a standard OAuth error (a client without credentials:
``invalid_client``; a ``jwt-bearer`` request without scope, or with an unsigned
assertion: ``invalid_request``). A ``jwt-bearer`` request as Kafka's
``JwtBearerJwtRetriever`` sends it (``grant_type``, ``assertion``, ``scope``; no client
id) is refused with ``invalid_client`` [HTTP 401] even when the assertion is signed:
the server's request-mapping callback resolves ``${clientId}`` for every request, and
there is none; the same request with a ``client_id`` parameter gets a token (both found
by experiment with 6.0.2). kafkalite sends that parameter when
``sasl.oauthbearer.client.credentials.client.id`` is set (RFC 7523 allows it), which is
how the grant is tested end to end here.

>>> with MockOAuth2Server(token_lifetime_s=30) as oidc:             # doctest: +SKIP
...     oidc.client_settings("billing-app")["sasl.oauthbearer.token.endpoint.url"]
'http://127.0.0.1:40311/kafka/token'
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkalite.testing.jarsets import JarSetLock
from kafkalite.testing.java import JavaRuntime
from kafkalite.testing.ports import free_port
from kafkalite.testing.services import JavaService

DEFAULT_OIDC_VERSION = "6.0.2"
ISSUER_ID = "kafka"
AUDIENCE = "kafka"
SCOPE = "kafka"
REJECTED_CLIENT = "rejected-by-broker"
"""A client id whose tokens name another audience: the broker's validator refuses them."""

JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class MockOAuth2Server(JavaService):
    """mock-oauth2-server on a loopback port (see the module docstring).

    Args:
        token_lifetime_s: lifetime of the access tokens it issues.
        port: HTTP port; default a free one.
    """

    kind = "oidc"

    def __init__(self, *, token_lifetime_s: int = 3600, port: int | None = None,
                 version: str = DEFAULT_OIDC_VERSION, run_dir: Path | None = None, tied: bool = True,
                 java: JavaRuntime | None = None) -> None:
        super().__init__(JarSetLock.load("mock-oauth2-server", version), run_dir=run_dir, heap="192m", tied=tied,
                         java=java)
        self.token_lifetime_s = token_lifetime_s
        self.host = "127.0.0.1"
        self.port = port or free_port()

    def __repr__(self) -> str:
        return f"<MockOAuth2Server {self.base_url}>"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def issuer(self) -> str:
        """The ``iss`` of its tokens (a broker's ``sasl.oauthbearer.expected.issuer``)."""
        return f"{self.base_url}/{ISSUER_ID}"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    def client_settings(self, client_id: str, client_secret: str = "client-secret",
                        **settings: Any) -> dict[str, Any]:
        """kafkalite settings that sign ``client_id`` in with OAUTHBEARER through this
        provider (client credentials grant, KIP-768)."""
        return {"sasl.mechanism": "OAUTHBEARER",
                "sasl.oauthbearer.token.endpoint.url": self.token_endpoint,
                "sasl.oauthbearer.client.credentials.client.id": client_id,
                "sasl.oauthbearer.client.credentials.client.secret": client_secret,
                "sasl.oauthbearer.scope": SCOPE, **settings}

    def token(self, client_id: str, client_secret: str = "client-secret") -> Mapping[str, Any]:
        """Fetch a token response directly (for tests of the provider itself)."""
        import base64

        body = f"grant_type=client_credentials&scope={SCOPE}".encode()
        basic = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
        request = urllib.request.Request(self.token_endpoint, data=body, method="POST",
                                         headers={"Authorization": f"Basic {basic}",
                                                  "Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return dict(json.loads(response.read()))

    # -- JavaService hooks ---------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The server's JSON configuration (``JSON_CONFIG_PATH``)."""
        return {
            "interactiveLogin": False,
            "httpServer": "NettyWrapper",
            "tokenCallbacks": [{
                "issuerId": ISSUER_ID,
                "tokenExpiry": self.token_lifetime_s,
                "requestMappings": [
                    {"requestParam": "client_id", "match": REJECTED_CLIENT,
                     "claims": {"sub": REJECTED_CLIENT, "aud": ["somebody-else"], "scope": SCOPE}},
                    {"requestParam": "grant_type", "match": JWT_BEARER_GRANT, "claims": {"aud": [AUDIENCE]}},
                    {"requestParam": "client_id", "match": "*",
                     "claims": {"sub": "${clientId}", "aud": [AUDIENCE], "scope": SCOPE}},
                ],
            }],
        }

    def prepare(self) -> None:
        (self.run_dir / "config.json").write_text(json.dumps(self.config(), indent=1))

    def environment(self) -> Mapping[str, str]:
        return {"SERVER_HOSTNAME": self.host, "SERVER_PORT": str(self.port),
                "JSON_CONFIG_PATH": str(self.run_dir / "config.json"), "LOG_LEVEL": "WARN"}

    def probe(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/isalive", timeout=2.0) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError, ValueError):
            return False
