"""Schema Registry client: settings, and what a real registry cannot be made to do
(fail, time out, demand credentials, present a self-signed certificate) through a
scripted HTTP peer on loopback. Behaviour against a real registry is in
tests/integration/test_schema_registry_client.py."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    Schema,
    SchemaRegistryAuthError,
    SchemaRegistryClient,
    SchemaRegistryError,
    SchemaRegistryUnavailableError,
    SubjectNotFoundError,
    UnknownSchemaIdError,
    VersionNotFoundError,
)
from kafkalite.serialization.registry_http import RegistrySettings
from kafkalite.testing.ports import free_port

Reply = tuple[int, Any]


class Script:
    """Replies by request, recording what came in."""

    def __init__(self, replies: Callable[[str, str, Any], Reply]) -> None:
        self.replies = replies
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []


@contextmanager
def fake_registry(replies: Callable[[str, str, Any], Reply], *,
                  tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, Script]]:
    script = Script(replies)

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            script.requests.append((self.command, self.path, dict(self.headers), body))
            status, answer = script.replies(self.command, self.path, body)
            data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _handle

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if tls else "http"
    try:
        yield f"{scheme}://localhost:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()


FAST = {"retries.wait.ms": 1, "retries.max.wait.ms": 5}


def test_settings_accept_confluent_and_java_prefixed_names() -> None:
    s = RegistrySettings.parse({
        "schema.registry.url": "http://a:1, http://b:2/",
        "schema.registry.basic.auth.user.info": "u:p",
        "max.retries": "5",
        "request.timeout.ms": 2500,
        "latest.cache.ttl.sec": 30,
    })
    assert s.urls == ("http://a:1", "http://b:2")
    assert s.user_info == "u:p" and s.max_retries == 5 and s.timeout_s == 2.5 and s.latest_ttl_s == 30
    assert s.ssl_context is None


def test_credentials_from_the_url_are_moved_to_a_header() -> None:
    s = RegistrySettings.parse({"url": "http://alice:s%40cret@reg:8081", "basic.auth.credentials.source": "URL"})
    assert s.user_info == "alice:s@cret"
    assert s.urls == ("http://reg:8081",)


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({}, "needs 'schema.registry.url'"),
        ({"url": "ftp://x"}, "must be http"),
        ({"url": "http://x", "schema.registry.urll": "y"}, "did you mean 'schema.registry.url'"),
        ({"url": "http://x", "max.retries": "many"}, "'max.retries' must be an integer"),
        ({"url": "http://x", "max.retries": -5}, "must not be negative"),
        ({"url": "http://x", "basic.auth.user.info": "no-colon"}, "user:password"),
        ({"url": "http://x", "basic.auth.credentials.source": "SASL_INHERIT"}, "USER_INFO or URL"),
        ({"url": "http://x", "basic.auth.user.info": "a:b", "bearer.auth.token": "t"}, "not both"),
        ({"url": "https://x", "ssl.ca.location": "/nonexistent/ca.pem"}, "TLS settings"),
    ],
)
def test_bad_settings_are_config_errors(config: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        SchemaRegistryClient(config)


def test_transient_failures_are_retried_then_succeed() -> None:
    calls = {"n": 0}

    def replies(method: str, path: str, body: Any) -> Reply:
        calls["n"] += 1
        if calls["n"] <= 2:
            return 503, {"error_code": 50003, "message": "leader not known"}
        return 200, {"schema": '"string"'}

    with fake_registry(replies) as (url, _script):
        client = SchemaRegistryClient({"url": url, "max.retries": 3, **FAST})
        assert client.get_schema(7) == Schema('"string"')
        assert calls["n"] == 3
        # Cached: ids never change meaning, so no request the second time.
        assert client.get_schema(7).schema_str == '"string"'
        assert calls["n"] == 3


def test_retries_are_bounded_and_the_last_error_is_kept() -> None:
    with fake_registry(lambda m, p, b: (503, {"error_code": 50003, "message": "busy"})) as (url, script):
        client = SchemaRegistryClient({"url": url, "max.retries": 2, **FAST})
        with pytest.raises(SchemaRegistryUnavailableError, match="busy") as info:
            client.get_subjects()
        assert len(script.requests) == 3
        assert info.value.status == 503 and info.value.retriable


def test_unreachable_registry_names_the_url_and_is_retriable() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    client = SchemaRegistryClient({"url": url, "max.retries": 1, **FAST})
    with pytest.raises(SchemaRegistryUnavailableError, match="cannot reach the Schema Registry") as info:
        client.get_schema(3)
    assert url in str(info.value) and info.value.retriable
    assert info.value.schema_id == 3
    assert isinstance(info.value, SerializationError)


def test_failover_to_the_next_url() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with fake_registry(lambda m, p, b: (200, ["a-value"])) as (url, script):
        client = SchemaRegistryClient({"url": f"{dead},{url}", "max.retries": 0})
        assert client.get_subjects() == ["a-value"]
        assert client.get_subjects() == ["a-value"]  # now starts with the live one
        assert len(script.requests) == 2


def test_basic_auth_header_and_refusal() -> None:
    def replies(method: str, path: str, body: Any) -> Reply:
        return 401, {"error_code": 401, "message": "Unauthorized"}

    with fake_registry(replies) as (url, script):
        client = SchemaRegistryClient({"url": url, "basic.auth.user.info": "alice:secret"})
        with pytest.raises(SchemaRegistryAuthError, match="Unauthorized") as info:
            client.get_versions("orders-value")
        assert info.value.subject == "orders-value" and info.value.status == 401
        assert len(script.requests) == 1  # not retried
        auth = script.requests[0][2]["Authorization"]
        assert auth == "Basic " + base64.b64encode(b"alice:secret").decode()


def test_bearer_token_header() -> None:
    with fake_registry(lambda m, p, b: (200, [])) as (url, script):
        SchemaRegistryClient({"url": url, "bearer.auth.token": "tok"}).get_subjects()
        assert script.requests[0][2]["Authorization"] == "Bearer tok"


@pytest.mark.parametrize(
    ("status", "body", "call", "error", "named"),
    [
        (404, {"error_code": 40401, "message": "Subject not found"}, "versions", SubjectNotFoundError,
         "subject 'orders-value'"),
        (404, {"error_code": 40402, "message": "Version not found"}, "version", VersionNotFoundError, "version 9"),
        (404, {"error_code": 40403, "message": "Schema not found"}, "schema", UnknownSchemaIdError, "schema id 42"),
        (409, {"error_code": 409, "message": "incompatible"}, "register", IncompatibleSchemaError,
         "subject 'orders-value'"),
        (422, {"error_code": 42201, "message": "Invalid schema"}, "register", InvalidSchemaError, "error code 42201"),
        (500, b"<html>oops</html>", "register", SchemaRegistryError, "HTTP 500"),
    ],
)
def test_error_answers_become_typed_errors(status: int, body: Any, call: str, error: type,
                                           named: str) -> None:
    with fake_registry(lambda m, p, b: (status, body)) as (url, _script):
        client = SchemaRegistryClient({"url": url, "max.retries": 0})
        calls: dict[str, Callable[[], Any]] = {
            "versions": lambda: client.get_versions("orders-value"),
            "version": lambda: client.get_version("orders-value", 9),
            "schema": lambda: client.get_schema(42),
            "register": lambda: client.register_schema("orders-value", Schema('"string"')),
        }
        with pytest.raises(error) as info:
            calls[call]()
        assert type(info.value) is error
        assert named in str(info.value)


def test_register_sends_confluents_body_and_caches() -> None:
    def replies(method: str, path: str, body: Any) -> Reply:
        return 200, {"id": 5}

    with fake_registry(replies) as (url, script):
        client = SchemaRegistryClient({"url": url})
        schema = Schema("syntax = \"proto3\";", "protobuf")
        assert client.register_schema("a/b value", schema) == 5
        assert client.register_schema("a/b value", schema) == 5
        assert len(script.requests) == 1
        method, path, headers, body = script.requests[0]
        assert (method, path) == ("POST", "/subjects/a%2Fb%20value/versions")
        assert headers["Content-Type"] == "application/vnd.schemaregistry.v1+json"
        assert body == {"schema": 'syntax = "proto3";', "schemaType": "PROTOBUF"}
        assert client.get_schema(5) is schema  # learned from the registration


def test_non_json_answer_is_a_registry_error() -> None:
    with fake_registry(lambda m, p, b: (200, b"<html>proxy login</html>")) as (url, _script), \
            pytest.raises(SchemaRegistryError, match="non-JSON"):
        SchemaRegistryClient({"url": url}).get_subjects()


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60)
    return cert, key


def test_tls_with_the_right_ca_and_a_refused_unknown_certificate(self_signed: tuple[Path, Path]) -> None:
    cert, key = self_signed
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    with fake_registry(lambda m, p, b: (200, ["tls-value"]), tls=server_ctx) as (url, _script):
        assert url.startswith("https://")
        trusted = SchemaRegistryClient({"url": url, "ssl.ca.location": str(cert)})
        assert trusted.get_subjects() == ["tls-value"]
        untrusted = SchemaRegistryClient({"url": url, "max.retries": 0})
        with pytest.raises(SchemaRegistryError, match="TLS certificate check failed"):
            untrusted.get_subjects()
