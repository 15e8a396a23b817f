"""The HTTP side of the Schema Registry client: settings, TLS, auth, retries.

Standard library only (:mod:`urllib.request`): registry calls are rare because the
client caches everything it learns, so a connection per call costs nothing that
matters, and no HTTP dependency is forced on users.

Settings use Confluent's names; each may also be written with the
``schema.registry.`` prefix the Java serdes use (``schema.registry.ssl.ca.location``):

=================================  =======================================================
``schema.registry.url`` / ``url``  one URL or several, comma-separated (tried in turn)
``basic.auth.credentials.source``  ``USER_INFO`` (default) or ``URL`` (``http://u:p@host``)
``basic.auth.user.info``           ``"user:password"``
``bearer.auth.token``              a static bearer token (``Authorization: Bearer ...``)
``ssl.ca.location``                CA bundle (PEM) to verify the registry's certificate
``ssl.certificate.location``       client certificate (PEM), for mutual TLS
``ssl.key.location``               its private key (PEM); ``ssl.key.password`` if encrypted
``ssl.endpoint.identification.algorithm``  ``https`` (default) checks the host name; ``""`` not
``request.timeout.ms``             per request (default 30000)
``max.retries``                    retries of a failed request (default 3)
``retries.wait.ms``                first backoff (default 1000), doubling up to
``retries.max.wait.ms``            (default 20000), jittered (:mod:`kafkalite.backoff`)
``cache.capacity``                 schemas and ids kept per cache (default 1000)
``latest.cache.ttl.sec``           how long a "latest version" answer is reused (default -1: for ever)
=================================  =======================================================
"""

from __future__ import annotations

import base64
import difflib
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.backoff import ExponentialBackoff
from kafkalite.errors import ConfigError
from kafkalite.serialization.errors import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    SchemaNotFoundError,
    SchemaRegistryAuthError,
    SchemaRegistryError,
    SchemaRegistryUnavailableError,
    SubjectNotFoundError,
    UnknownSchemaIdError,
    VersionNotFoundError,
)

PREFIX = "schema.registry."

# name -> (type, default)
REGISTRY_SETTINGS: dict[str, tuple[type, Any]] = {
    "url": (str, None),
    "basic.auth.credentials.source": (str, "USER_INFO"),
    "basic.auth.user.info": (str, None),
    "bearer.auth.token": (str, None),
    "bearer.auth.credentials.source": (str, "STATIC_TOKEN"),
    "ssl.ca.location": (str, None),
    "ssl.certificate.location": (str, None),
    "ssl.key.location": (str, None),
    "ssl.key.password": (str, None),
    "ssl.endpoint.identification.algorithm": (str, "https"),
    "request.timeout.ms": (int, 30000),
    "max.retries": (int, 3),
    "retries.wait.ms": (int, 1000),
    "retries.max.wait.ms": (int, 20000),
    "cache.capacity": (int, 1000),
    "latest.cache.ttl.sec": (int, -1),
}

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
RETRIABLE_STATUS = frozenset({408, 429, 502, 503, 504})


def registry_key(name: str) -> str | None:
    """The canonical registry setting for ``name`` (with or without the prefix), or None."""
    if name in REGISTRY_SETTINGS:
        return name
    if name.startswith(PREFIX) and name[len(PREFIX):] in REGISTRY_SETTINGS:
        return name[len(PREFIX):]
    return None


def suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


@dataclass(frozen=True)
class RegistrySettings:
    """Validated client settings (see the module doc for each)."""

    urls: tuple[str, ...]
    user_info: str | None
    bearer_token: str | None
    ssl_context: ssl.SSLContext | None
    timeout_s: float
    max_retries: int
    retries_wait_ms: int
    retries_max_wait_ms: int
    cache_capacity: int
    latest_ttl_s: float

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> RegistrySettings:
        values: dict[str, Any] = {k: d for k, (_, d) in REGISTRY_SETTINGS.items()}
        for name, value in config.items():
            key = registry_key(name)
            if key is None:
                raise ConfigError(f"unknown Schema Registry setting '{name}'"
                                  + suggest(name, [PREFIX + "url", *REGISTRY_SETTINGS]))
            kind = REGISTRY_SETTINGS[key][0]
            if value is not None and kind is int:
                if isinstance(value, bool) or not isinstance(value, (int, str)):
                    raise ConfigError(f"Schema Registry setting '{name}' must be an integer, got {value!r}")
                try:
                    value = int(value)
                except ValueError:
                    raise ConfigError(f"Schema Registry setting '{name}' must be an integer, got {value!r}") from None
                if value < -1:
                    raise ConfigError(f"Schema Registry setting '{name}' must not be negative, got {value}")
            elif value is not None and not isinstance(value, str):
                raise ConfigError(f"Schema Registry setting '{name}' must be a string, got {value!r}")
            values[key] = value
        if not values["url"]:
            raise ConfigError("the Schema Registry needs 'schema.registry.url' (e.g. http://127.0.0.1:8081)")
        urls = tuple(u.strip().rstrip("/") for u in str(values["url"]).split(",") if u.strip())
        for u in urls:
            scheme = urllib.parse.urlsplit(u).scheme
            if scheme not in ("http", "https"):
                raise ConfigError(f"'schema.registry.url' must be http(s) URLs; got {u!r}")
        source = str(values["basic.auth.credentials.source"]).upper()
        user_info = values["basic.auth.user.info"]
        if source == "URL":
            parts = urllib.parse.urlsplit(urls[0])
            if parts.username is not None:
                user_info = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        elif source != "USER_INFO":
            raise ConfigError(f"'basic.auth.credentials.source' must be USER_INFO or URL, got {source!r}")
        if user_info is not None and ":" not in user_info:
            raise ConfigError("'basic.auth.user.info' must be 'user:password'")
        urls = tuple(_strip_userinfo(u) for u in urls)
        bearer = values["bearer.auth.token"]
        if bearer is not None and user_info is not None:
            raise ConfigError("set either 'basic.auth.user.info' or 'bearer.auth.token', not both")
        return cls(
            urls=urls,
            user_info=user_info,
            bearer_token=bearer,
            ssl_context=_ssl_context(values) if any(u.startswith("https:") for u in urls) else None,
            timeout_s=max(0.001, values["request.timeout.ms"] / 1000.0),
            max_retries=max(0, values["max.retries"]),
            retries_wait_ms=max(0, values["retries.wait.ms"]),
            retries_max_wait_ms=max(0, values["retries.max.wait.ms"]),
            cache_capacity=max(1, values["cache.capacity"]),
            latest_ttl_s=float(values["latest.cache.ttl.sec"]),
        )


def _strip_userinfo(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _ssl_context(values: Mapping[str, Any]) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=values["ssl.ca.location"])
        if values["ssl.certificate.location"]:
            context.load_cert_chain(
                values["ssl.certificate.location"], values["ssl.key.location"], values["ssl.key.password"])
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"Schema Registry TLS settings: {exc}") from None
    if not values["ssl.endpoint.identification.algorithm"]:
        context.check_hostname = False
    return context


class RestClient:
    """JSON over HTTP(S) to the registry, with retries, failover and typed errors."""

    def __init__(self, settings: RegistrySettings, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self._backoff = ExponentialBackoff(settings.retries_wait_ms, settings.retries_max_wait_ms)
        self._sleep = sleep
        self._url_index = 0
        self._lock = threading.Lock()
        headers = {"Accept": f"{CONTENT_TYPE}, application/json", "User-Agent": "kafkalite"}
        if settings.user_info is not None:
            token = base64.b64encode(settings.user_info.encode()).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        elif settings.bearer_token is not None:
            headers["Authorization"] = f"Bearer {settings.bearer_token}"
        self._headers = headers

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, Any] | None = None,
        not_found: type[SchemaNotFoundError] = SchemaNotFoundError,
        context: Mapping[str, Any] | None = None,
    ) -> Any:
        """Send ``method path``; return the decoded JSON answer or raise a typed error.

        ``context`` (subject, version, schema_id) names the resource in errors;
        ``not_found`` is the class of a 404 whose registry code says nothing finer.
        """
        context = dict(context or {})
        if query:
            path += "?" + urllib.parse.urlencode({k: _q(v) for k, v in query.items() if v is not None})
        data = json.dumps(body).encode() if body is not None else None
        attempt = 0
        urls = self.settings.urls
        while True:
            with self._lock:
                start = self._url_index
            last_error: Exception | None = None
            for i in range(len(urls)):
                index = (start + i) % len(urls)
                url = urls[index] + path
                try:
                    return self._send(method, url, data, not_found, context)
                except _Transient as exc:
                    last_error = exc.error
                    with self._lock:  # prefer the next URL from now on
                        self._url_index = (index + 1) % len(urls)
            if attempt >= self.settings.max_retries:
                assert last_error is not None
                if isinstance(last_error, SchemaRegistryError):
                    raise last_error
                raise SchemaRegistryUnavailableError(
                    f"cannot reach the Schema Registry at {', '.join(urls)} after {attempt + 1} "
                    f"attempt(s): {last_error}", url=urls[0] + path, **context) from last_error
            self._sleep(self._backoff.delay_s(attempt))
            attempt += 1

    def _send(self, method: str, url: str, data: bytes | None, not_found: type[SchemaNotFoundError],
              context: dict[str, Any]) -> Any:
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = CONTENT_TYPE
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.settings.timeout_s,
                                        context=self.settings.ssl_context) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read() if exc.fp is not None else b""
            error = _error_from(exc.code, raw, url, not_found, context)
            if exc.code in RETRIABLE_STATUS:
                raise _Transient(error) from None
            raise error from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, ssl.SSLCertVerificationError):
                raise SchemaRegistryError(f"TLS certificate check failed for {url}: {reason}",
                                          url=url, **context) from None
            raise _Transient(exc) from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise SchemaRegistryError(f"the registry at {url} answered with non-JSON: {raw[:200]!r}",
                                      url=url, **context) from None


class _Transient(Exception):
    def __init__(self, error: Exception) -> None:
        self.error = error


def _q(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _error_from(status: int, raw: bytes, url: str, not_found: type[SchemaNotFoundError],
                context: Mapping[str, Any]) -> SchemaRegistryError:
    try:
        body = json.loads(raw)
        message = str(body.get("message") or body)
        code = int(body.get("error_code") or -1)
    except (ValueError, AttributeError, TypeError):
        message = raw.decode(errors="replace").strip()[:500] or f"HTTP {status}"
        code = -1
    cls: type[SchemaRegistryError]
    # Confluent's 404xx codes say what is missing (40404 / 40406: soft-deleted subject /
    # version); Apicurio sends some of them with other statuses (409), so codes go first.
    by_code: dict[int, type[SchemaRegistryError]] = {
        40401: SubjectNotFoundError, 40402: VersionNotFoundError, 40404: SubjectNotFoundError,
        40406: VersionNotFoundError,
        40403: UnknownSchemaIdError if "schema_id" in context and "subject" not in context else SchemaNotFoundError,
    }
    if code in by_code:
        cls = by_code[code]
    elif status == 404:
        cls = not_found
    elif status == 409:
        cls = IncompatibleSchemaError
    elif status == 422:
        cls = InvalidSchemaError
    elif status in (401, 403):
        cls = SchemaRegistryAuthError
    elif status in RETRIABLE_STATUS:
        cls = SchemaRegistryUnavailableError
    else:
        cls = SchemaRegistryError
    return cls(message, status=status, error_code=code, url=url, **context)
