"""SASL mechanisms as state machines (no broker): RFC test vectors, token shapes, and
the settings that choose a mechanism."""

from __future__ import annotations

import base64
import json

import pytest

from kafkalite import AdminClient, Consumer, Producer
from kafkalite.errors import ConfigError, SaslAuthenticationError
from kafkalite.net.sasl import (
    OAuthBearerMechanism,
    PlainMechanism,
    ScramMechanism,
    credentials,
    jaas_options,
    mechanism_for,
    unsecured_jwt,
)
from tests.helpers.settings import resolve

BOOT = {"bootstrap.servers": "127.0.0.1:1"}


def cfg(**settings):
    return resolve("admin", dict(BOOT, **{"security.protocol": "SASL_PLAINTEXT"}), **settings)


def claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_scram_sha256_rfc7677_vector() -> None:
    m = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert m.first_token() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = m.next_token(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                         b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert m.next_token(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None
    assert m.done and m.principal == "user"


def test_scram_rejects_a_forged_server_signature_and_weak_iterations() -> None:
    m = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    m.first_token()
    m.next_token(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(SaslAuthenticationError, match="signature does not verify"):
        m.next_token(b"v=" + base64.b64encode(b"x" * 32))
    weak = ScramMechanism("SCRAM-SHA-512", "user", "pencil", nonce="abc")
    with pytest.raises(SaslAuthenticationError, match="below 4096"):
        weak.next_token(b"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000")
    foreign = ScramMechanism("SCRAM-SHA-512", "user", "pencil", nonce="abc")
    with pytest.raises(SaslAuthenticationError, match="malformed"):
        foreign.next_token(b"r=zzz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")  # nonce not ours


def test_scram_escapes_user_names() -> None:
    m = ScramMechanism("SCRAM-SHA-256", "a=b,c", "pw", nonce="n")
    assert m.first_token() == b"n,,n=a=3Db=2Cc,r=n"


def test_plain_token() -> None:
    assert PlainMechanism("alice", "s3cret").first_token() == b"\0alice\0s3cret"


def test_unsecured_jwt_shape() -> None:
    token = unsecured_jwt("alice", lifetime_s=60, issued_at=1000.0, scope=["a", "b"])
    header, _payload, signature = token.split(".")
    assert signature == ""
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "none"}
    assert claims(token) == {"iat": 1000.0, "exp": 1060.0, "sub": "alice", "scope": ["a", "b"]}


@pytest.mark.parametrize("result", [
    "TOKEN.x.", ("TOKEN.x.", 60000), type("T", (), {"token": "TOKEN.x."})(), b"TOKEN.x.",
])
def test_oauthbearer_provider_shapes(result) -> None:
    m = OAuthBearerMechanism(lambda: result)
    assert m.first_token() == b"n,,\x01auth=Bearer TOKEN.x.\x01\x01"
    assert m.next_token(b"") is None and m.done


def test_oauthbearer_errors_are_typed() -> None:
    broken = OAuthBearerMechanism(lambda: 1 / 0)
    with pytest.raises(SaslAuthenticationError, match="token provider failed"):
        broken.first_token()
    with pytest.raises(SaslAuthenticationError, match="token string"):
        OAuthBearerMechanism(lambda: None).first_token()
    m = OAuthBearerMechanism(lambda: unsecured_jwt("bob"))
    m.first_token()
    assert m.principal == "bob"
    with pytest.raises(SaslAuthenticationError, match=r"the broker refused the token \(status invalid_token\)"):
        m.next_token(b'{"status":"invalid_token"}')


def test_credentials_from_jaas_config() -> None:
    c = cfg(sasl_mechanism="SCRAM-SHA-256",
            sasl_jaas_config='org.apache.kafka.common.security.scram.ScramLoginModule required '
                             'username="svc" password="p\\"w";')
    assert credentials(c) == ("svc", 'p"w')
    assert jaas_options(c)["password"] == 'p"w'
    # Explicit settings win over the JAAS line.
    c = cfg(sasl_mechanism="PLAIN", sasl_username="u", sasl_password="p",
            sasl_jaas_config='x required username="svc" password="other";')
    assert credentials(c) == ("u", "p")


def test_oauthbearer_from_java_jaas_line() -> None:
    c = cfg(sasl_mechanism="OAUTHBEARER",
            sasl_jaas_config='org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                             'unsecuredLoginStringClaim_sub="alice" unsecuredLoginLifetimeSeconds="120" '
                             'unsecuredLoginListClaim_scope=",read,write" unsecuredLoginNumberClaim_n="7";')
    m = mechanism_for(c)
    token = m.first_token().decode().split("Bearer ")[1].rstrip("\x01")
    got = claims(token)
    assert got["sub"] == "alice" and got["exp"] - got["iat"] == pytest.approx(120)
    assert got["scope"] == ["read", "write"] and got["n"] == 7.0


@pytest.mark.parametrize("client", [Producer, Consumer, AdminClient])
def test_mechanism_problems_fail_at_construction(client) -> None:
    sasl = dict(BOOT, **{"security.protocol": "SASL_SSL"})
    # Java's default mechanism is GSSAPI, which needs the brokers' Kerberos service name.
    with pytest.raises(ConfigError, match="GSSAPI needs 'sasl.kerberos.service.name'"):
        client(sasl)
    with pytest.raises(ConfigError, match="set sasl.mechanism to PLAIN or SCRAM"):
        client(dict(sasl, **{"sasl.username": "alice", "sasl.password": "pw"}))
    with pytest.raises(ConfigError, match="sasl.username"):
        client(dict(sasl, **{"sasl.mechanism": "SCRAM-SHA-512"}))
    with pytest.raises(ConfigError, match="sasl.oauthbearer.token.endpoint.url.*sasl.oauthbearer.token.provider"):
        client(dict(sasl, **{"sasl.mechanism": "OAUTHBEARER"}))
    with pytest.raises(ConfigError, match="'sasl.mechanism' must be one of GSSAPI, PLAIN"):
        client(dict(sasl, **{"sasl.mechanism": "KERBEROS"}))


def test_sasl_settings_are_ignored_without_sasl() -> None:
    # A PLAINTEXT client with leftover sasl.* settings is fine (Java ignores them too).
    assert resolve("producer", dict(BOOT, **{"sasl.mechanism": "GSSAPI"}))["security.protocol"] == "PLAINTEXT"


def test_passwords_are_hidden_in_repr() -> None:
    c = cfg(sasl_mechanism="PLAIN", sasl_username="u", sasl_password="topsecret")
    assert "topsecret" not in repr(c)
