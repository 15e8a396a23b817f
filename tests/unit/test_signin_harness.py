"""The sign-in harness without processes: keytab files, the realm's krb5.conf, the
broker settings of SIGNIN_PRESET, the jar-set locks and the CLI's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.testing import keytab
from kafkalite.testing.__main__ import main
from kafkalite.testing.jarsets import JarSetLock
from kafkalite.testing.kdc import krb5_conf
from kafkalite.testing.properties import SIGNIN_PRESET, BrokerSignIn
from kafkalite.testing.signin import signin_preset


def test_keytab_round_trip_and_split(tmp_path: Path) -> None:
    entries = [keytab.KeytabEntry("EXAMPLE.COM", ("kafka", "127.0.0.1"), 1, 17, b"k" * 16, 1234),
               keytab.KeytabEntry("EXAMPLE.COM", ("alice",), 1, 18, b"a" * 32, 1234)]
    source = keytab.write_keytab(tmp_path / "all.keytab", entries)
    assert keytab.parse_keytab(source.read_bytes()) == entries
    assert (source.stat().st_mode & 0o777) == 0o600
    alice = keytab.extract(source, "alice@EXAMPLE.COM", tmp_path / "alice.keytab")
    assert [e.principal for e in keytab.parse_keytab(alice.read_bytes())] == ["alice@EXAMPLE.COM"]
    with pytest.raises(KeyError, match="no key for bob@EXAMPLE.COM"):
        keytab.extract(source, "bob@EXAMPLE.COM", tmp_path / "bob.keytab")
    wrong = keytab.parse_keytab(keytab.random_keytab(tmp_path / "w.keytab", "alice@EXAMPLE.COM").read_bytes())
    assert {(e.principal, e.enctype, len(e.key)) for e in wrong} == {("alice@EXAMPLE.COM", 17, 16),
                                                                       ("alice@EXAMPLE.COM", 18, 32)}


def test_krb5_conf_names_the_kdc_and_keeps_host_names() -> None:
    text = krb5_conf("EXAMPLE.COM", "127.0.0.1", 40000)
    assert "default_realm = EXAMPLE.COM" in text and "kdc = 127.0.0.1:40000" in text
    assert "dns_canonicalize_hostname = false" in text and "rdns = false" in text
    assert "permitted_enctypes = aes128-cts-hmac-sha1-96" in text


def test_signin_preset_broker_settings(tmp_path: Path) -> None:
    signin = BrokerSignIn(krb5_conf=tmp_path / "krb5.conf", keytab=tmp_path / "kafka.keytab",
                          principal="kafka/127.0.0.1@EXAMPLE.COM", jwks_url="http://127.0.0.1:1/kafka/jwks",
                          issuer="http://127.0.0.1:1/kafka", audience="kafka")
    props = SIGNIN_PRESET.properties(None, signin)
    assert props["listener.name.kerberos.sasl.enabled.mechanisms"] == "GSSAPI"
    assert "useKeyTab=true" in props["listener.name.kerberos.gssapi.sasl.jaas.config"]
    assert props["listener.name.kerberos_reauth.connections.max.reauth.ms"] == "4000"
    assert props["listener.name.oauth.oauthbearer.sasl.server.callback.handler.class"].endswith(
        "OAuthBearerValidatorCallbackHandler")
    assert props["sasl.oauthbearer.jwks.endpoint.url"] == signin.jwks_url
    assert props["sasl.oauthbearer.expected.audience"] == "kafka"
    assert "authorizer.class.name" not in props
    assert signin.jvm_options() == [f"-Djava.security.krb5.conf={signin.krb5_conf}",
                                    "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=http://127.0.0.1:1/kafka/jwks"]
    with pytest.raises(ValueError, match="needs BrokerSignIn"):
        SIGNIN_PRESET.properties(None, None)
    assert set(signin_preset(kerberos=False).extra_listeners) == {"OAUTH"}
    assert set(signin_preset(oauth=False).extra_listeners) == {"KERBEROS", "KERBEROS_REAUTH"}


def test_jar_set_locks_are_pinned() -> None:
    kdc = JarSetLock.load("minikdc", "4.3.1")
    assert kdc.kafka_version == "4.3.1" and kdc.main_class == "kafka.security.minikdc.MiniKdc"
    assert any(a.coordinate == "org.apache.kafka:kafka_2.13:4.3.1:test" for a in kdc.artifacts)
    oidc = JarSetLock.load("mock-oauth2-server", "6.0.2")
    assert any(a.coordinate == "no.nav.security:mock-oauth2-server:6.0.2" for a in oidc.artifacts)
    for lock in (kdc, oidc):
        names = [a.filename for a in lock.artifacts]
        assert len(names) == len(set(names)) and all(a.sha1 and len(a.sha256) == 64 for a in lock.artifacts)


def test_cli_refuses_kerberos_with_other_presets(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setenv("KAFKALITE_STATE_DIR", str(tmp_path))
    assert main(["up", "--kerberos", "--ssl"]) == 2
    assert "leave out --ssl, --sasl and --nodes" in capsys.readouterr().err
