"""Sign-in pieces without a broker: the GSSAPI state machine (RFC 4752) over a scripted
GSS context, Java's JAAS line, the refresh formulas, Kerberos settings checks."""

from __future__ import annotations

import sys

import pytest

from kafkalite.errors import ConfigError, SaslAuthenticationError
from kafkalite.net.jaas import parse_jaas
from kafkalite.net.refresh import kerberos_refresh_at, oauth_refresh_at, retry_delays
from kafkalite.net.sasl import GssapiMechanism
from tests.helpers.settings import resolve

BOOT = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_PLAINTEXT"}
KRB5 = "com.sun.security.auth.module.Krb5LoginModule"


class ScriptedContext:
    """A GSS context whose tokens are scripted; wrap/unwrap tag the bytes visibly."""

    def __init__(self, steps: int) -> None:
        self.steps_left = steps
        self.complete = False
        self.seen: list[bytes | None] = []

    def step(self, token: bytes | None) -> bytes:
        self.seen.append(token)
        self.steps_left -= 1
        self.complete = self.steps_left == 0
        return b"" if token is not None else b"AP-REQ"

    def wrap(self, message: bytes) -> bytes:
        return b"W(" + message + b")"

    def unwrap(self, message: bytes) -> bytes:
        assert message.startswith(b"W(") and message.endswith(b")")
        return message[2:-1]


def test_gssapi_exchange_with_mutual_authentication() -> None:
    context = ScriptedContext(steps=2)
    mechanism = GssapiMechanism(context, "alice@EXAMPLE.COM")
    assert mechanism.blocking and mechanism.first_token() == b"AP-REQ"
    assert mechanism.next_token(b"AP-REP") == b""  # context established: empty answer
    assert context.seen == [None, b"AP-REP"]
    # The broker offers the layers it supports (all three) and its max buffer 0x010000.
    reply = mechanism.next_token(b"W(\x07\x01\x00\x00)")
    assert reply == b"W(\x01\x01\x00\x00)"  # "no security layer", same buffer, no authzid
    assert not mechanism.done
    assert mechanism.next_token(b"") is None and mechanism.done


def test_gssapi_exchange_without_mutual_authentication() -> None:
    mechanism = GssapiMechanism(ScriptedContext(steps=1))
    mechanism.first_token()
    assert mechanism.next_token(b"W(\x01\x00\x10\x00)") == b"W(\x01\x00\x10\x00)"
    assert mechanism.next_token(b"") is None and mechanism.done


def test_gssapi_refuses_security_layers_and_bad_offers() -> None:
    mechanism = GssapiMechanism(ScriptedContext(steps=1))
    mechanism.first_token()
    with pytest.raises(SaslAuthenticationError, match="requires a SASL security layer"):
        mechanism.next_token(b"W(\x06\x00\x10\x00)")
    mechanism = GssapiMechanism(ScriptedContext(steps=1))
    mechanism.first_token()
    with pytest.raises(SaslAuthenticationError, match="has 3 bytes, not 4"):
        mechanism.next_token(b"W(\x01\x00\x10)")
    mechanism = GssapiMechanism(ScriptedContext(steps=1))
    mechanism.first_token()
    mechanism.next_token(b"W(\x01\x00\x10\x00)")
    with pytest.raises(SaslAuthenticationError, match="after the exchange was complete"):
        mechanism.next_token(b"more")


def test_jaas_lines_as_java_reads_them() -> None:
    entry = parse_jaas(f'{KRB5} required useKeyTab=true storeKey=true keyTab="/k/a b.keytab" '
                       'principal="alice@EXAMPLE.COM" note="say \\"hi\\"";')
    assert (entry.module_name, entry.flag) == ("Krb5LoginModule", "required")
    assert entry.options == {"useKeyTab": "true", "storeKey": "true", "keyTab": "/k/a b.keytab",
                             "principal": "alice@EXAMPLE.COM", "note": 'say "hi"'}
    assert entry.flag_option("useKeyTab") and not entry.flag_option("useTicketCache")
    for bad, message in [(f"{KRB5} required useKeyTab=true", "must end with ';'"),
                         (f"{KRB5} mandatory;", "control flag"),
                         (f'{KRB5} required keyTab="/k;', "not closed"),
                         (f"{KRB5} required useKeyTab;", "expected name=value"),
                         (f"{KRB5} required; {KRB5} required;", "exactly one login module"),
                         ("required", "must read")]:
        with pytest.raises(ConfigError, match=message):
            parse_jaas(bad)
    with pytest.raises(ConfigError, match="useKeyTab must be true or false"):
        parse_jaas(f"{KRB5} required useKeyTab=yes;").flag_option("useKeyTab")


def test_oauth_refresh_moments_follow_java() -> None:
    common = {"window_factor": 0.8, "window_jitter": 0.05, "min_period_s": 60, "buffer_s": 300}
    # An hour-long token refreshes at 80-85 % of its life ...
    def at(**kw):
        return pytest.approx(oauth_refresh_at(**kw, **common))

    assert at(now=0, start=0, expires=3600, rand=0.0) == 2880
    assert at(now=0, start=0, expires=3600, rand=1.0) == 3060
    # ... but never inside the 300 s buffer before expiry ...
    assert at(now=0, start=0, expires=1000, rand=1.0) == 700
    # ... nor sooner than the minimum period from now.
    assert at(now=900, start=0, expires=2000, rand=0.0) == 1600
    assert at(now=1000, start=0, expires=2000, rand=0.0) == 1600
    # A token too short for both buffers: the window applies to what is left (tests' 20 s tokens).
    assert at(now=100, start=100, expires=120, rand=0.0) == 116
    # An expired token: now.
    assert at(now=200, start=100, expires=120, rand=0.0) == 200


def test_kerberos_refresh_moments_follow_java() -> None:
    assert kerberos_refresh_at(now=0, start=0, expires=86400, window_factor=0.8, jitter=0.05,
                               min_time_before_relogin_s=60, rand=0.0) == pytest.approx(69120)
    # Not sooner than min.time.before.relogin after now ...
    assert kerberos_refresh_at(now=0, start=0, expires=1000, window_factor=0.01, jitter=0.0,
                               min_time_before_relogin_s=60, rand=0.0) == 60
    # ... unless the ticket expires before that: at once.
    assert kerberos_refresh_at(now=0, start=0, expires=30, window_factor=0.8, jitter=0.0,
                               min_time_before_relogin_s=60, rand=0.0) == 0


def test_retry_delays_double_within_the_maximum() -> None:
    assert retry_delays(0.1, 10.0) == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2]
    assert retry_delays(0.1, 0.05) == [] and retry_delays(0.0, 10.0) == []


# ---------------------------------------------------------------- GSSAPI settings


def gssapi(**settings):
    return resolve("producer", dict(BOOT, **{"sasl.mechanism": "GSSAPI"}), **settings)


def test_gssapi_settings_problems_name_the_setting(tmp_path) -> None:
    keytab = tmp_path / "a.keytab"
    keytab.write_bytes(b"\x05\x02")
    ok = f'{KRB5} required useKeyTab=true keyTab="{keytab}" principal="alice@EXAMPLE.COM";'
    resolve("producer", dict(BOOT, **{"sasl.kerberos.service.name": "kafka", "sasl.jaas.config": ok}))
    cases = [
        ({"sasl.jaas.config": ok}, "needs 'sasl.kerberos.service.name'"),
        ({"sasl.kerberos.service.name": "kafka",
          "sasl.jaas.config": ok.replace(";", ' serviceName="other";')}, "disagree"),
        ({"sasl.kerberos.service.name": "kafka", "sasl.jaas.config": ok.replace(str(keytab), "/none.keytab")},
         "keyTab '/none.keytab' does not exist"),
        ({"sasl.kerberos.service.name": "kafka", "sasl.jaas.config": f'{KRB5} required useKeyTab=true '
                                                                     f'keyTab="{keytab}";'}, "needs principal"),
        ({"sasl.kerberos.service.name": "kafka", "sasl.jaas.config": ok.replace(";", " useFirstKey=true;")},
         r"option\(s\) \['useFirstKey'\] are not supported"),
        ({"sasl.kerberos.service.name": "kafka",
          "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a";'},
         "Krb5LoginModule"),
        ({"sasl.kerberos.service.name": "kafka", "sasl.kerberos.ticket.renew.window.factor": 1.5}, "<= 1.0"),
    ]
    for settings, message in cases:
        with pytest.raises(ConfigError, match=message):
            gssapi(**{k.replace(".", "_"): v for k, v in settings.items()})


def test_gssapi_without_the_package_names_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "gssapi", None)  # import gssapi -> ImportError
    with pytest.raises(ConfigError) as info:
        gssapi(sasl_kerberos_service_name="kafka")
    text = str(info.value)
    assert "'gssapi' package" in text and 'pip install "kafkalite[gssapi]"' in text and "libkrb5-dev" in text


def test_gssapi_default_cache_without_jaas_builds_a_mechanism() -> None:
    from kafkalite.net.sasl import mechanism_for

    mechanism = mechanism_for(gssapi(sasl_kerberos_service_name="kafka"), "broker1.example.com")
    assert isinstance(mechanism, GssapiMechanism) and mechanism.name == "GSSAPI"
    assert mechanism._context.service == "kafka/broker1.example.com"
