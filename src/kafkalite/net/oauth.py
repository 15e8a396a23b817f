"""OAUTHBEARER with OIDC built in (KIP-768, KIP-1139): tokens fetched from a token endpoint.

With ``sasl.oauthbearer.token.endpoint.url`` set, kafkalite logs in to the identity
provider itself, as the Java client's ``OAuthBearerLoginCallbackHandler`` does:

- **client credentials** (the default, Java's ``ClientCredentialsJwtRetriever``): client
  id and secret from ``sasl.oauthbearer.client.credentials.client.id`` / ``.secret``
  (or the deprecated JAAS options ``clientId`` / ``clientSecret``), sent as HTTP Basic
  authentication (URL-encoded first with ``sasl.oauthbearer.header.urlencode``), scope
  from ``sasl.oauthbearer.scope`` (or JAAS ``scope``). With
  ``sasl.oauthbearer.assertion.file`` or ``sasl.oauthbearer.assertion.claim.iss`` the
  client proves itself with a signed JWT (``client_assertion``) instead of a secret;
- **JWT bearer grant** (``sasl.oauthbearer.jwt.retriever.class=JwtBearerJwtRetriever``):
  the assertion itself is the grant (:mod:`kafkalite.net.oauth_assertion`);
- **a file** (``file:/path``): a token someone else keeps fresh, re-read at each refresh.

The token's claims are checked like Java's ``ClientJwtValidator`` (``exp`` and the
``sasl.oauthbearer.sub.claim.name`` claim present); the principal is that claim. The
token is refreshed ahead of expiry at the moment Java's rules give
(``sasl.login.refresh.*``, :func:`~kafkalite.net.refresh.oauth_refresh_at`), lazily:
the next authentication after that moment fetches a new one (a KIP-368
re-authentication then presents it). Endpoint failures are retried with backoff
(``sasl.login.retry.backoff.ms`` doubling while the total stays within
``sasl.login.retry.backoff.max.ms``); 4xx answers are not retried. A failed refresh
keeps the current token while it is valid and tries again after a backoff.

HTTP goes through the standard library (``http.client``) with
``sasl.login.connect.timeout.ms`` / ``sasl.login.read.timeout.ms``. An ``https``
endpoint is verified against the system's CAs, or, as in Java, the ``ssl.*`` options
given inside ``sasl.jaas.config`` (``ssl.truststore.location=...``).

No secret (client secret, assertion, token) ever appears in a log line or an error.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafkalite.config import Config
from kafkalite.errors import ConfigError, SaslAuthenticationError
from kafkalite.net.jaas import jaas_entry
from kafkalite.net.oauth_assertion import AssertionSettings, assertion_settings, make_assertion
from kafkalite.net.refresh import oauth_refresh_at, retry_delays

if TYPE_CHECKING:
    from kafkalite._config_keys import OptionalStrSetting

log = logging.getLogger("kafkalite.net.oauth")

LOGIN_HANDLERS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                  "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler")
_RETRIEVERS = {"DefaultJwtRetriever": "default", "ClientCredentialsJwtRetriever": "client_credentials",
               "JwtBearerJwtRetriever": "jwt_bearer", "FileJwtRetriever": "file"}
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_JAAS_OPTIONS = ("clientId", "clientSecret", "scope")


@dataclass(frozen=True)
class OAuthSettings:
    """Everything one OIDC login needs (hashable: logins are shared per settings)."""

    url: str
    grant: str  # client_credentials, jwt_bearer, file
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scope: str | None = None
    urlencode_header: bool = False
    sub_claim: str = "sub"
    scope_claim: str = "scope"
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 10.0
    backoff_s: float = 0.1
    backoff_max_s: float = 10.0
    window_factor: float = 0.8
    window_jitter: float = 0.05
    min_period_s: float = 60.0
    buffer_s: float = 300.0
    assertion: AssertionSettings | None = None
    tls_options: tuple[tuple[str, str], ...] = ()
    extensions: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """Who logs in where (no secrets)."""
        if self.grant == "file":
            return f"token file {self.url}"
        who = f"client '{self.client_id}'" if self.client_id else "the assertion's subject"
        return f"{who} at {self.url}"


def uses_oidc(cfg: Config) -> bool:
    """Whether OAUTHBEARER tokens come from a token endpoint (KIP-768)."""
    return bool(cfg["sasl.oauthbearer.token.endpoint.url"])


def oauth_settings(cfg: Config) -> OAuthSettings:
    """Read and check the OIDC settings; every problem is a ConfigError naming the setting."""
    url = cfg["sasl.oauthbearer.token.endpoint.url"]
    handler = cfg["sasl.login.callback.handler.class"]
    if handler is not None and handler not in LOGIN_HANDLERS:
        raise ConfigError(f"setting 'sasl.login.callback.handler.class' {handler!r}: kafkalite runs no Java classes; "
                          f"only Java's OIDC login ({LOGIN_HANDLERS[0]}) is understood, with "
                          "sasl.oauthbearer.token.endpoint.url")
    if not url:
        raise ConfigError("sasl.login.callback.handler.class is OAuthBearerLoginCallbackHandler: set "
                          "'sasl.oauthbearer.token.endpoint.url' (the identity provider's token endpoint)")
    retriever = cfg["sasl.oauthbearer.jwt.retriever.class"].rsplit(".", 1)[-1]
    if retriever not in _RETRIEVERS:
        raise ConfigError(f"setting 'sasl.oauthbearer.jwt.retriever.class' must name one of "
                          f"{', '.join(_RETRIEVERS)}, got {cfg['sasl.oauthbearer.jwt.retriever.class']!r}")
    parsed = urllib.parse.urlsplit(url)
    is_file = parsed.scheme == "file"
    grant = _RETRIEVERS[retriever]
    if grant == "default":
        grant = "file" if is_file else "client_credentials"
    if grant == "file":
        if not is_file:
            raise ConfigError(f"FileJwtRetriever needs a file: URL in 'sasl.oauthbearer.token.endpoint.url', got {url!r}")
    elif parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"setting 'sasl.oauthbearer.token.endpoint.url' must be an http(s) or file: URL, got {url!r}")

    entry = jaas_entry(cfg)
    jaas: dict[str, str] = {}
    tls: dict[str, str] = {}
    extensions: dict[str, str] = {}
    if entry is not None:
        if entry.module_name != "OAuthBearerLoginModule":
            raise ConfigError(f"sasl.mechanism OAUTHBEARER needs sasl.jaas.config for OAuthBearerLoginModule, "
                              f"not {entry.module}")
        for key, value in entry.options.items():
            if key in _JAAS_OPTIONS:
                jaas[key] = value
            elif key.startswith("ssl."):
                tls[key] = value
            elif key.startswith("extension_"):
                extensions[key.removeprefix("extension_")] = value
            else:
                raise ConfigError(f"sasl.jaas.config: OAuthBearerLoginModule option {key!r} does not apply to a login "
                                  f"at a token endpoint; supported: {', '.join(_JAAS_OPTIONS)}, ssl.*, extension_*")
    client_id = _config_or_jaas(cfg, "sasl.oauthbearer.client.credentials.client.id", jaas, "clientId")
    client_secret = _config_or_jaas(cfg, "sasl.oauthbearer.client.credentials.client.secret", jaas, "clientSecret")
    scope = _config_or_jaas(cfg, "sasl.oauthbearer.scope", jaas, "scope")
    assertion = assertion_settings(cfg, client_id)
    if grant == "client_credentials":
        if not client_id:
            raise ConfigError("OAUTHBEARER login at a token endpoint needs "
                              "'sasl.oauthbearer.client.credentials.client.id' (or JAAS clientId)")
        if assertion is None and not client_secret:
            raise ConfigError("OAUTHBEARER login at a token endpoint needs "
                              "'sasl.oauthbearer.client.credentials.client.secret' (or JAAS clientSecret), or a "
                              "client assertion (sasl.oauthbearer.assertion.file / .assertion.claim.iss)")
    elif grant == "jwt_bearer" and assertion is None:
        raise ConfigError("JwtBearerJwtRetriever needs an assertion: 'sasl.oauthbearer.assertion.file', or "
                          "'sasl.oauthbearer.assertion.private.key.file' with the assertion.claim.* settings")
    if tls and parsed.scheme == "https":
        from kafkalite.net.tls import context_from_options

        context_from_options(tls, "sasl.jaas.config")  # a wrong trust store fails now
    return OAuthSettings(
        url=url, grant=grant, client_id=client_id, client_secret=client_secret, scope=scope,
        urlencode_header=cfg["sasl.oauthbearer.header.urlencode"], sub_claim=cfg["sasl.oauthbearer.sub.claim.name"],
        scope_claim=cfg["sasl.oauthbearer.scope.claim.name"],
        connect_timeout_s=cfg["sasl.login.connect.timeout.ms"] / 1000.0,
        read_timeout_s=cfg["sasl.login.read.timeout.ms"] / 1000.0,
        backoff_s=cfg["sasl.login.retry.backoff.ms"] / 1000.0,
        backoff_max_s=cfg["sasl.login.retry.backoff.max.ms"] / 1000.0,
        window_factor=cfg["sasl.login.refresh.window.factor"], window_jitter=cfg["sasl.login.refresh.window.jitter"],
        min_period_s=float(cfg["sasl.login.refresh.min.period.seconds"]),
        buffer_s=float(cfg["sasl.login.refresh.buffer.seconds"]),
        assertion=assertion, tls_options=tuple(sorted(tls.items())), extensions=tuple(sorted(extensions.items())),
    )


def _config_or_jaas(cfg: Config, setting: OptionalStrSetting, jaas: Mapping[str, str], option: str) -> str | None:
    """Kafka 4.x: the setting wins over the deprecated JAAS option (with a warning)."""
    value, legacy = cfg[setting], jaas.get(option)
    if value is not None and legacy is not None and legacy != value:
        log.warning("both %s and the JAAS option %s are set; using %s", setting, option, setting)
    return value if value is not None else legacy


@dataclass(frozen=True)
class AccessToken:
    """A token from the identity provider (its value never shows in repr or logs)."""

    value: str = field(repr=False)
    principal: str
    expires_at: float
    issued_at: float | None = None
    scope: tuple[str, ...] = ()


def parse_token(jwt: str, settings: OAuthSettings, source: str) -> AccessToken:
    """Check a JWT's claims as Java's ``ClientJwtValidator`` does (no signature check:
    the broker does that) and read principal, scope and expiry."""
    parts = jwt.strip().split(".")
    if len(parts) != 3:
        raise SaslAuthenticationError(f"the token from {source} is not a JWT (it has {len(parts)} "
                                      "dot-separated parts, not 3)")
    try:
        payload = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, TypeError) as exc:
        raise SaslAuthenticationError(f"the token from {source} has an unreadable payload: {exc}") from None
    if not isinstance(claims, dict):
        raise SaslAuthenticationError(f"the token from {source} has an unreadable payload: "
                                      "the payload is not a JSON object")
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)) or isinstance(exp, bool):
        raise SaslAuthenticationError(f"the token from {source} has no numeric 'exp' claim")
    sub = claims.get(settings.sub_claim)
    if not isinstance(sub, str) or not sub.strip():
        raise SaslAuthenticationError(f"the token from {source} has no '{settings.sub_claim}' claim "
                                      "(sasl.oauthbearer.sub.claim.name)")
    raw_scope = claims.get(settings.scope_claim)
    scope: tuple[str, ...] = ()
    if isinstance(raw_scope, str):
        scope = tuple(raw_scope.split())
    elif isinstance(raw_scope, list):
        scope = tuple(str(s) for s in raw_scope)
    iat = claims.get("iat")
    return AccessToken(jwt.strip(), sub, float(exp), float(iat) if isinstance(iat, (int, float)) else None, scope)


def post_form(url: str, body: str, headers: Mapping[str, str], *, connect_timeout_s: float,
              read_timeout_s: float, tls: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    """POST ``body`` (form-encoded); return (status, response body). OSError when unreachable."""
    parts = urllib.parse.urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=connect_timeout_s,
                                           context=tls or ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=connect_timeout_s)
    try:
        conn.connect()
        if conn.sock is not None:
            conn.sock.settimeout(read_timeout_s)
        conn.request("POST", path, body=body.encode(), headers=dict(headers))
        response = conn.getresponse()
        return response.status, response.read()
    except http.client.HTTPException as exc:
        # An OSError like the socket's own: TokenEndpoint.fetch() retries it as "unreachable"
        # and reports it as a SaslAuthenticationError; it never reaches the caller.
        raise OSError(f"bad HTTP answer: {exc!r}") from exc
    finally:
        conn.close()


class TokenEndpoint:
    """Fetches tokens for one :class:`OAuthSettings` (blocking; retries with backoff)."""

    def __init__(self, settings: OAuthSettings, *, post: Callable[..., tuple[int, bytes]] = post_form,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._post = post
        self._sleep = sleep
        self._clock = clock
        self._tls: ssl.SSLContext | None = None
        if settings.tls_options and settings.url.startswith("https:"):
            from kafkalite.net.tls import context_from_options

            self._tls = context_from_options(dict(settings.tls_options), "sasl.jaas.config")

    def fetch(self) -> AccessToken:
        s = self.settings
        if s.grant == "file":
            return self._from_file()
        delays = retry_delays(s.backoff_s, s.backoff_max_s)
        started = self._clock()
        attempt = 0
        while True:
            attempt += 1
            try:
                status, body = self._post(s.url, self._body(), self._headers(), connect_timeout_s=s.connect_timeout_s,
                                          read_timeout_s=s.read_timeout_s, tls=self._tls)
            except ssl.SSLError as exc:
                raise SaslAuthenticationError(f"TLS to the token endpoint {s.url} failed: {exc}") from None
            except OSError as exc:
                if attempt <= len(delays):
                    self._sleep(delays[attempt - 1])
                    continue
                raise SaslAuthenticationError(
                    f"cannot reach the token endpoint {s.url}: {exc} ({attempt} attempt(s) in "
                    f"{self._clock() - started:.1f} s; sasl.login.retry.backoff.max.ms bounds the retries)") from None
            if 200 <= status < 300:
                return self._token(body)
            if (status >= 500 or status in (408, 429)) and attempt <= len(delays):
                self._sleep(delays[attempt - 1])
                continue
            raise SaslAuthenticationError(f"the token endpoint {s.url} refused {self._who()}: "
                                          f"{_oauth_error(body)} [HTTP {status}]")

    def _who(self) -> str:
        return f"client '{self.settings.client_id}'" if self.settings.client_id else "the request"

    def _headers(self) -> dict[str, str]:
        s = self.settings
        headers = {"Accept": "application/json", "Cache-Control": "no-cache",
                   "Content-Type": "application/x-www-form-urlencoded"}
        if s.grant == "client_credentials" and s.assertion is None:
            client_id, secret = s.client_id or "", s.client_secret or ""
            if s.urlencode_header:  # KIP-1025 / RFC 6749 2.3.1
                client_id, secret = urllib.parse.quote(client_id, safe=""), urllib.parse.quote(secret, safe="")
            headers["Authorization"] = "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()
        return headers

    def _body(self) -> str:
        s = self.settings
        fields: list[tuple[str, str]]
        if s.grant == "jwt_bearer":
            assert s.assertion is not None
            fields = [("grant_type", JWT_BEARER_GRANT), ("assertion", make_assertion(s.assertion, self._clock()))]
            if s.client_id:
                # RFC 7523 3.1: the grant may be used with or without identifying the
                # client. Java's JwtBearerJwtRetriever sends no client id; providers that
                # look the client up (mock-oauth2-server, some Keycloak set-ups) need one,
                # so it is sent only when the user sets the client-id setting.
                fields.append(("client_id", s.client_id))
        elif s.assertion is not None:  # client credentials proven by a signed JWT (private_key_jwt)
            fields = [("client_assertion_type", CLIENT_ASSERTION_TYPE),
                      ("client_assertion", make_assertion(s.assertion, self._clock())),
                      ("grant_type", "client_credentials"), ("client_id", s.client_id or "")]
        else:
            fields = [("grant_type", "client_credentials")]
        if s.scope:
            fields.append(("scope", s.scope))
        return urllib.parse.urlencode(fields)

    def _token(self, body: bytes) -> AccessToken:
        try:
            document = json.loads(body)
        except ValueError:
            raise SaslAuthenticationError(f"the token endpoint {self.settings.url} answered with "
                                          "something other than JSON") from None
        jwt = document.get("access_token") or document.get("id_token") if isinstance(document, dict) else None
        if not isinstance(jwt, str) or not jwt:
            raise SaslAuthenticationError(f"the answer of the token endpoint {self.settings.url} holds "
                                          "no access_token")
        return parse_token(jwt, self.settings, self.settings.url)

    def _from_file(self) -> AccessToken:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.settings.url).path)
        try:
            with open(path) as f:
                text = f.read()
        except OSError as exc:
            raise SaslAuthenticationError(f"cannot read the token file {path}: {exc.strerror}") from None
        return parse_token(text, self.settings, f"file {path}")


def _oauth_error(body: bytes) -> str:
    """``error (error_description)`` of an RFC 6749 error answer (Okta's errorCode /
    errorSummary too), else the start of the body."""
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if isinstance(document, dict):
        code = document.get("error") or document.get("errorCode")
        text = document.get("error_description") or document.get("errorSummary")
        if code or text:
            return f"{code or 'error'}" + (f" ({str(text)[:300]})" if text else "")
    snippet = body[:200].decode(errors="replace").strip()
    return snippet or "no error details"


class OAuthLogin:
    """The current token of one :class:`OAuthSettings`, refreshed ahead of expiry.

    Blocking (HTTP): call it from an executor thread. Thread-safe.
    """

    def __init__(self, settings: OAuthSettings, endpoint: TokenEndpoint | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.endpoint = endpoint or TokenEndpoint(settings, clock=clock)
        self._clock = clock
        self._lock = threading.Lock()
        self._token: AccessToken | None = None
        self._refresh_at = 0.0
        self._retry_at = 0.0
        self._failures = 0
        self.fetches = 0

    def token(self) -> AccessToken:
        """A valid token: the current one, or a new one once its refresh time has come."""
        with self._lock:
            now = self._clock()
            current = self._token
            if current is not None and now < self._refresh_at:
                return current
            if current is not None and now < min(self._retry_at, current.expires_at):
                return current
            try:
                token = self.endpoint.fetch()
            except SaslAuthenticationError as exc:
                if current is not None and now < current.expires_at:
                    self._failures += 1
                    s = self.settings
                    wait = min(s.backoff_max_s, s.backoff_s * 2 ** self._failures)
                    self._retry_at = now + max(wait, 1.0)
                    log.warning("OAUTHBEARER token refresh for %s failed (the current token stays valid until %s; "
                                "next attempt in %.1f s): %s", s.describe(), time.ctime(current.expires_at),
                                wait, exc)
                    return current
                raise
            self.fetches += 1
            self._failures = 0
            self._token = token
            s = self.settings
            self._refresh_at = oauth_refresh_at(now=now, start=token.issued_at, expires=token.expires_at,
                                                window_factor=s.window_factor, window_jitter=s.window_jitter,
                                                min_period_s=s.min_period_s, buffer_s=s.buffer_s)
            log.debug("OAUTHBEARER token for %s (principal %s) valid until %s; refresh at %s", s.describe(),
                      token.principal, time.ctime(token.expires_at), time.ctime(self._refresh_at))
            return token


_logins: dict[OAuthSettings, OAuthLogin] = {}
_logins_lock = threading.Lock()


def login_for(settings: OAuthSettings) -> OAuthLogin:
    """The shared login of these settings (one per identity in the process)."""
    with _logins_lock:
        login = _logins.get(settings)
        if login is None:
            login = _logins[settings] = OAuthLogin(settings)
        return login
