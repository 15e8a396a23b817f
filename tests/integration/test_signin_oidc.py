"""OAUTHBEARER with OIDC (KIP-768): kafkalite fetches tokens from a real OIDC provider
(mock-oauth2-server, signing RS256 JWTs) and a real broker validates them with Kafka's
``OAuthBearerValidatorCallbackHandler`` against the provider's JWKS.

The session's provider issues 20-second tokens and the broker's ``OAUTH`` listener ends
each session when its token expires (KIP-368), so a run of half a minute needs refreshed
tokens and re-authentications on the open connections.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from kafkalite import AdminClient, Consumer, Producer
from kafkalite.errors import ConfigError, SaslAuthenticationError
from kafkalite.net import oauth
from kafkalite.testing.oidc import REJECTED_CLIENT
from kafkalite.testing.ports import free_port
from kafkalite.testing.topics import unique_topic_name
from tests.helpers.settings import resolve
from tests.integration.security_support import round_trip, stats

pytestmark = pytest.mark.broker

SECRET = "s3cr3t-never-logged"


def test_client_credentials_produce_and_consume(kafka_broker_oauth, oidc_provider) -> None:
    topic = kafka_broker_oauth.create_topic(unique_topic_name("oidc"), 2)
    cfg = kafka_broker_oauth.client_config(**oidc_provider.client_settings("billing-app", SECRET))
    round_trip(cfg, topic, 10)
    with Producer(cfg) as producer:
        producer.send(topic, b"x").result(30)
        principals = {n.connection.sasl_principal for n in producer._core.client._nodes.values() if n.connection}
        assert principals == {"billing-app"}  # the token's sub claim


def test_java_style_settings(kafka_broker_oauth, oidc_provider) -> None:
    """A Java client's properties (JAAS clientId / clientSecret / scope and the login
    callback handler) work unchanged."""
    topic = kafka_broker_oauth.create_topic(unique_topic_name("oidc-java"), 1)
    cfg = kafka_broker_oauth.client_config(**{
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": oidc_provider.token_endpoint,
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                            f'clientId="java-style-app" clientSecret="{SECRET}" scope="kafka";',
    })
    round_trip(cfg, topic, 3)


@pytest.mark.timeout(120)
def test_a_run_outlives_the_token_lifetime(kafka_broker_oauth, oidc_provider) -> None:
    """Tokens live 20 s; a producer and a consumer work for 28 s. The login refreshes
    the token ahead of expiry and every connection re-authenticates with the new one:
    nothing fails, no connection is replaced."""
    topic = kafka_broker_oauth.create_topic(unique_topic_name("oidc-long"), 2)
    cfg = kafka_broker_oauth.client_config(**oidc_provider.client_settings("long-runner", SECRET))
    login = oauth.login_for(oauth.oauth_settings(resolve("producer", cfg)))
    fetched_before = login.fetches
    sent = received = 0
    with Producer(cfg, linger_ms=0) as producer, \
            Consumer(cfg, group_id=f"{topic}-g", auto_offset_reset="earliest") as consumer:
        consumer.subscribe([topic])
        first_token = login.token()
        started = time.monotonic()
        while time.monotonic() - started < 28:
            producer.send(topic, b"v%d" % sent).result(30)
            sent += 1
            received += len(consumer.poll(0.2))
        deadline = time.monotonic() + 30
        while received < sent and time.monotonic() < deadline:
            received += len(consumer.poll(0.5))
        assert received == sent
        assert time.time() > first_token.expires_at  # the first token is long gone
        p, c = stats(producer), stats(consumer)
        assert p.closed == c.closed == 0, (p, c)
        assert p.reauthentications >= p.created and c.reauthentications >= c.created, (p, c)
        assert p.authentication_failures == c.authentication_failures == 0
    assert login.fetches - fetched_before >= 2  # refreshed ahead of expiry


def test_jwt_bearer_grant_with_a_signed_assertion(kafka_broker_oauth, oidc_provider, tmp_path: Path) -> None:
    """KIP-1139's JwtBearerJwtRetriever: kafkalite signs an assertion (RS256, its own key)
    and trades it for an access token; the broker validates that token against the
    provider's JWKS. The client id is sent beside the grant (the provider looks it up)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_file = tmp_path / "assertion-key.pem"
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    topic = kafka_broker_oauth.create_topic(unique_topic_name("oidc-jwt-bearer"), 1)
    cfg = kafka_broker_oauth.client_config(**{
        "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": oidc_provider.token_endpoint,
        "sasl.oauthbearer.jwt.retriever.class": "JwtBearerJwtRetriever",
        "sasl.oauthbearer.assertion.private.key.file": str(key_file),
        "sasl.oauthbearer.assertion.claim.iss": "jwt-bearer-app", "sasl.oauthbearer.assertion.claim.sub": "jwt-bearer-app",
        "sasl.oauthbearer.assertion.claim.aud": oidc_provider.token_endpoint,
        "sasl.oauthbearer.client.credentials.client.id": "jwt-bearer-app", "sasl.oauthbearer.scope": "kafka"})
    round_trip(cfg, topic, 3)
    with Producer(cfg) as producer:
        producer.send(topic, b"x").result(30)
        principals = {n.connection.sasl_principal for n in producer._core.client._nodes.values() if n.connection}
        assert principals == {"jwt-bearer-app"}  # the token the provider issued for that client


# ---------------------------------------------------------------- bad input


def _refused(cfg, *, within: float = 20.0) -> str:
    with AdminClient(cfg, default_api_timeout_ms=60_000, reconnect_backoff_ms=500,
                     reconnect_backoff_max_ms=2000) as admin:
        started = time.monotonic()
        with pytest.raises(SaslAuthenticationError) as info:
            admin.describe_cluster()
        # At once (one login), not retried until the API timeout (60 s); generous bound.
        assert time.monotonic() - started < within
        for _ in range(20):  # during the reconnect backoff: the same error, no new login
            with pytest.raises(SaslAuthenticationError):
                admin.describe_cluster()
        counters = stats(admin)
        assert counters.created == 0 and 1 <= counters.authentication_failures <= 4, counters
    text = str(info.value)
    assert SECRET not in text
    return text


def test_endpoint_refuses_the_client(kafka_broker_oauth, oidc_provider, tmp_path: Path) -> None:
    """The provider refuses the JWT-bearer grant of a client whose assertion is not signed:
    the error names the URL and the OAuth error, and is not retried (4xx)."""
    assertion = tmp_path / "assertion.jwt"
    from kafkalite.net.sasl import unsecured_jwt

    assertion.write_text(unsecured_jwt("unsigned-app", lifetime_s=60))
    cfg = kafka_broker_oauth.client_config(**{
        "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": oidc_provider.token_endpoint,
        "sasl.oauthbearer.jwt.retriever.class": "JwtBearerJwtRetriever",
        "sasl.oauthbearer.assertion.file": str(assertion), "sasl.oauthbearer.scope": "kafka"})
    error = _refused(cfg)
    assert f"the token endpoint {oidc_provider.token_endpoint} refused" in error
    assert "invalid_request" in error and "[HTTP 400]" in error and "SASL OAUTHBEARER" in error


def test_endpoint_down(kafka_broker_oauth, oidc_provider) -> None:
    """Nobody listens at the token endpoint: retried with backoff for at most
    sasl.login.retry.backoff.max.ms, then an error naming the URL."""
    url = f"http://127.0.0.1:{free_port()}/kafka/token"
    cfg = kafka_broker_oauth.client_config(**{**oidc_provider.client_settings("app", SECRET),
                                              "sasl.oauthbearer.token.endpoint.url": url,
                                              "sasl.login.retry.backoff.max.ms": 1500})
    error = _refused(cfg)
    assert f"cannot reach the token endpoint {url}" in error and "Connection refused" in error


def test_token_rejected_by_the_broker(kafka_broker_oauth, oidc_provider) -> None:
    """The provider hands this client a token for another audience; the broker's validator
    refuses it."""
    cfg = kafka_broker_oauth.client_config(**oidc_provider.client_settings(REJECTED_CLIENT, SECRET))
    error = _refused(cfg)
    assert f"as user '{REJECTED_CLIENT}'" in error and "the broker refused the token (status invalid_token" in error
    assert kafka_broker_oauth.bootstrap in error


def test_configuration_problems_fail_at_construction(kafka_broker_oauth, oidc_provider) -> None:
    base = kafka_broker_oauth.client_config(**oidc_provider.client_settings("app", SECRET))
    with pytest.raises(ConfigError,
                       match="login at a token endpoint needs 'sasl.oauthbearer.client.credentials.client.secret'"):
        Producer({**base, "sasl.oauthbearer.client.credentials.client.secret": None})
    with pytest.raises(ConfigError, match="must be an http"):
        Producer({**base, "sasl.oauthbearer.token.endpoint.url": "ftp://idp/token"})
    with pytest.raises(ConfigError, match="runs no Java classes"):
        Producer({**base, "sasl.login.callback.handler.class": "com.example.MyHandler"})


def test_no_secret_or_token_in_logs(kafka_broker_oauth, oidc_provider, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="kafkalite")
    topic = kafka_broker_oauth.create_topic(unique_topic_name("oidc-logs"), 1)
    cfg = kafka_broker_oauth.client_config(**oidc_provider.client_settings("quiet-app", SECRET))
    round_trip(cfg, topic, 1)
    token = oauth.login_for(oauth.oauth_settings(resolve("producer", cfg))).token()
    assert SECRET not in repr(resolve("producer", cfg)) and token.value not in repr(token)
    for record in caplog.records:
        text = record.getMessage()
        assert SECRET not in text and token.value.split(".")[2] not in text
