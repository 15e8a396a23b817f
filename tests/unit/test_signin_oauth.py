"""OIDC login without a provider: what kafkalite sends to a token endpoint, how answers,
failures and retries become tokens or errors, when tokens are refreshed, and signed
assertions (KIP-768 / KIP-1139). The real provider is in tests/integration/test_signin_oidc.py."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from kafkalite.errors import ConfigError, SaslAuthenticationError
from kafkalite.net.oauth import OAuthLogin, TokenEndpoint, oauth_settings, parse_token
from kafkalite.net.oauth_assertion import make_assertion
from kafkalite.net.sasl import mechanism_for
from tests.helpers.settings import resolve

URL = "https://idp.example.com/oauth2/token"
SECRET = "not-to-be-seen"
BOOT = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": URL}


def settings(**extra):
    from kafkalite.config import lookup

    cfg = {**BOOT, "sasl.oauthbearer.client.credentials.client.id": "app",
           "sasl.oauthbearer.client.credentials.client.secret": SECRET}
    for key, value in extra.items():
        setting = lookup(key)
        cfg[setting.name if setting else key] = value
    return oauth_settings(resolve("producer", cfg))


def jwt(claims: dict) -> str:
    def part(obj) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


class FakeEndpoint:
    """Answers from a script; records what was posted."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.posts: list[tuple[str, str, dict]] = []

    def __call__(self, url, body, headers, **kw):
        self.posts.append((url, body, dict(headers)))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


def token_answer(exp: float, sub: str = "app", **claims) -> tuple[int, bytes]:
    return 200, json.dumps({"access_token": jwt({"sub": sub, "exp": exp, "iat": exp - 20, **claims}),
                            "token_type": "Bearer"}).encode()


def test_client_credentials_request() -> None:
    post = FakeEndpoint(token_answer(2000, scope="kafka read"))
    token = TokenEndpoint(settings(sasl_oauthbearer_scope="kafka"), post=post).fetch()
    url, body, headers = post.posts[0]
    assert url == URL and urllib.parse.parse_qs(body) == {"grant_type": ["client_credentials"], "scope": ["kafka"]}
    assert headers["Authorization"] == "Basic " + base64.b64encode(f"app:{SECRET}".encode()).decode()
    assert headers["Content-Type"] == "application/x-www-form-urlencoded" and headers["Accept"] == "application/json"
    assert (token.principal, token.expires_at, token.scope) == ("app", 2000.0, ("kafka", "read"))
    assert token.value not in repr(token)


def test_urlencoded_header_and_jaas_credentials() -> None:
    post = FakeEndpoint(token_answer(2000))
    cfg = {**BOOT, "sasl.oauthbearer.header.urlencode": True,
           "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                               'clientId="my app" clientSecret="p&ss:word" scope="s1";'}
    TokenEndpoint(oauth_settings(resolve("producer", cfg)), post=post).fetch()
    _, body, headers = post.posts[0]
    assert base64.b64decode(headers["Authorization"][6:]) == b"my%20app:p%26ss%3Aword"
    assert "scope=s1" in body


def test_refused_client_is_not_retried_and_names_url_and_error() -> None:
    post = FakeEndpoint((401, b'{"error":"invalid_client","error_description":"client authentication failed"}'))
    with pytest.raises(SaslAuthenticationError) as info:
        TokenEndpoint(settings(), post=post, sleep=lambda s: None).fetch()
    text = str(info.value)
    assert text.endswith(f"the token endpoint {URL} refused client 'app': invalid_client "
                         "(client authentication failed) [HTTP 401]")
    assert len(post.posts) == 1 and SECRET not in text


def test_unreachable_endpoint_is_retried_with_backoff_then_fails() -> None:
    sleeps: list[float] = []
    post = FakeEndpoint(*[ConnectionRefusedError(111, "Connection refused")] * 10)
    endpoint = TokenEndpoint(settings(sasl_login_retry_backoff_ms=100, sasl_login_retry_backoff_max_ms=1000),
                             post=post, sleep=sleeps.append)
    with pytest.raises(SaslAuthenticationError, match=f"cannot reach the token endpoint {URL}: .*Connection refused"):
        endpoint.fetch()
    assert sleeps == [0.1, 0.2, 0.4] and len(post.posts) == 4


def test_server_errors_are_retried() -> None:
    post = FakeEndpoint((503, b"busy"), (429, b""), token_answer(5000))
    token = TokenEndpoint(settings(), post=post, sleep=lambda s: None).fetch()
    assert token.expires_at == 5000 and len(post.posts) == 3


@pytest.mark.parametrize("claims, message", [
    ({"sub": "app"}, "no numeric 'exp' claim"),
    ({"exp": 5000}, "no 'sub' claim"),
    ({"exp": 5000, "client": "app"}, "no 'sub' claim"),
])
def test_tokens_need_exp_and_the_principal_claim(claims, message) -> None:
    with pytest.raises(SaslAuthenticationError, match=message):
        parse_token(jwt(claims), settings(), URL)
    assert parse_token(jwt({"exp": 5000, "client": "app"}), settings(sasl_oauthbearer_sub_claim_name="client"),
                       URL).principal == "app"
    with pytest.raises(SaslAuthenticationError, match="not a JWT"):
        parse_token("opaque-token", settings(), URL)


def test_login_refreshes_ahead_of_expiry_and_keeps_a_valid_token_on_failure() -> None:
    now = [1000.0]
    post = FakeEndpoint(token_answer(1020), ConnectionRefusedError(111, "refused"), token_answer(1040))
    endpoint = TokenEndpoint(settings(sasl_login_retry_backoff_max_ms=0), post=post, sleep=lambda s: None,
                             clock=lambda: now[0])
    login = OAuthLogin(endpoint.settings, endpoint, clock=lambda: now[0])
    first = login.token()
    now[0] = 1010  # 50 %: not yet
    assert login.token() is first and len(post.posts) == 1
    now[0] = 1018  # past 80-85 %: refresh; the endpoint is down, the token is still valid
    assert login.token() is first and len(post.posts) == 2
    assert login.token() is first and len(post.posts) == 2  # backoff: no new attempt at once
    now[0] = 1019.9
    assert login.token().expires_at == 1040 and login.fetches == 2


def test_mechanism_uses_the_login_and_extensions() -> None:
    cfg = resolve("producer", {**BOOT, "sasl.oauthbearer.client.credentials.client.id": "app",
                               "sasl.oauthbearer.client.credentials.client.secret": SECRET,
                               "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule '
                                                   'required extension_traceId="abc";'})
    mechanism = mechanism_for(cfg, "b1")
    assert mechanism.blocking
    from kafkalite.net import oauth

    login = oauth.login_for(oauth.oauth_settings(cfg))
    login.endpoint._post = FakeEndpoint(token_answer(9e9))
    message = mechanism.first_token()
    assert message.startswith(b"n,,\x01auth=Bearer ey") and message.endswith(b"\x01traceId=abc\x01\x01")
    assert mechanism.principal == "app"


def test_configuration_errors() -> None:
    for extra, message in [
        ({"sasl.oauthbearer.client.credentials.client.id": None}, "client.credentials.client.id"),
        ({"sasl.oauthbearer.client.credentials.client.secret": None}, "client.credentials.client.secret"),
        ({"sasl.oauthbearer.token.endpoint.url": "idp/token"}, "must be an http"),
        ({"sasl.oauthbearer.jwt.retriever.class": "MyRetriever"}, "must name one of"),
        ({"sasl.oauthbearer.jwt.retriever.class": "JwtBearerJwtRetriever"}, "needs an assertion"),
        ({"sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                              'unsecuredLoginStringClaim_sub="x";'}, "does not apply to a login at a token endpoint"),
        ({"sasl.oauthbearer.assertion.claim.iss": "app"}, "needs 'sasl.oauthbearer.assertion.private.key.file'"),
        ({"sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                              'ssl.truststore.location="/none.pem";'}, "sasl.jaas.config: setting 'ssl.truststore"),
    ]:
        with pytest.raises(ConfigError, match=message) as info:
            settings(**{k.replace(".", "_"): v for k, v in extra.items()})
        assert SECRET not in str(info.value)


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_generated_assertions_are_signed(tmp_path, algorithm) -> None:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

    key = rsa.generate_private_key(65537, 2048) if algorithm == "RS256" else ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "key.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.BestAvailableEncryption(b"pass")))
    template = tmp_path / "template.json"
    template.write_text(json.dumps({"header": {"kid": "k1"}, "payload": {"tenant": "t9"}}))
    s = settings(sasl_oauthbearer_jwt_retriever_class="JwtBearerJwtRetriever",
                 sasl_oauthbearer_assertion_private_key_file=str(path),
                 sasl_oauthbearer_assertion_private_key_passphrase="pass",
                 sasl_oauthbearer_assertion_algorithm=algorithm, sasl_oauthbearer_assertion_claim_aud=URL,
                 sasl_oauthbearer_assertion_claim_jti_include=True,
                 sasl_oauthbearer_assertion_template_file=str(template))
    assert s.assertion is not None
    header_b64, payload_b64, signature_b64 = make_assertion(s.assertion, 1000.0).split(".")

    def decode(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    header, payload = json.loads(decode(header_b64)), json.loads(decode(payload_b64))
    assert header == {"alg": algorithm, "typ": "JWT", "kid": "k1"}
    assert {k: payload[k] for k in ("iss", "sub", "aud", "iat", "exp", "nbf", "tenant")} == {
        "iss": "app", "sub": "app", "aud": URL, "iat": 1000, "exp": 1300, "nbf": 940, "tenant": "t9"}
    assert len(payload["jti"]) == 36
    data, signature = f"{header_b64}.{payload_b64}".encode(), decode(signature_b64)
    if algorithm == "RS256":
        key.public_key().verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
    else:
        assert len(signature) == 64
        der = utils.encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        key.public_key().verify(der, data, ec.ECDSA(hashes.SHA256()))
    with pytest.raises(ConfigError, match="wrong or missing sasl.oauthbearer.assertion.private.key.passphrase"):
        settings(sasl_oauthbearer_assertion_private_key_file=str(path), sasl_oauthbearer_assertion_claim_iss="app")


def test_jwt_bearer_and_client_assertion_requests(tmp_path) -> None:
    assertion = tmp_path / "assertion.jwt"
    assertion.write_text("header.payload.signature\n")
    post = FakeEndpoint(token_answer(2000), token_answer(2000), token_answer(2000))
    bearer = dict(sasl_oauthbearer_jwt_retriever_class="org.apache.kafka.common.security.oauthbearer."
                                                       "JwtBearerJwtRetriever",
                  sasl_oauthbearer_assertion_file=str(assertion), sasl_oauthbearer_scope="kafka")
    # Without a client id: the request Java's JwtBearerJwtRetriever sends.
    TokenEndpoint(settings(**bearer, sasl_oauthbearer_client_credentials_client_id=None,
                           sasl_oauthbearer_client_credentials_client_secret=None), post=post).fetch()
    body = urllib.parse.parse_qs(post.posts[0][1])
    assert body == {"grant_type": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                    "assertion": ["header.payload.signature"], "scope": ["kafka"]}
    assert "Authorization" not in post.posts[0][2]
    # With one, it identifies the client beside the grant (RFC 7523 3.1), never a secret.
    TokenEndpoint(settings(**bearer), post=post).fetch()
    body = urllib.parse.parse_qs(post.posts[1][1])
    assert body == {"grant_type": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                    "assertion": ["header.payload.signature"], "client_id": ["app"], "scope": ["kafka"]}
    assert "Authorization" not in post.posts[1][2] and SECRET not in post.posts[1][1]
    # Client credentials proven by the assertion instead of a secret (private_key_jwt).
    TokenEndpoint(settings(sasl_oauthbearer_assertion_file=str(assertion)), post=post).fetch()
    body = urllib.parse.parse_qs(post.posts[2][1])
    assert body["client_assertion_type"] == ["urn:ietf:params:oauth:client-assertion-type:jwt-bearer"]
    assert body["client_assertion"] == ["header.payload.signature"] and body["client_id"] == ["app"]
    assert "Authorization" not in post.posts[2][2]


def test_token_from_a_file(tmp_path) -> None:
    path = tmp_path / "token.jwt"
    path.write_text(jwt({"sub": "svc", "exp": 3000}) + "\n")
    s = oauth_settings(resolve("producer", {**BOOT, "sasl.oauthbearer.token.endpoint.url": f"file:{path}"}))
    assert s.grant == "file" and TokenEndpoint(s).fetch().principal == "svc"
    path.unlink()
    with pytest.raises(SaslAuthenticationError, match=f"cannot read the token file {path}"):
        TokenEndpoint(s).fetch()
