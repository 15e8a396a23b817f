"""SASL GSSAPI (Kerberos) against a real KDC (Kafka's MiniKdc) and a real broker.

Everything runs on the session's sign-in services (``signin_services``: MiniKdc,
mock-oauth2-server and one broker with ``KERBEROS`` / ``KERBEROS_REAUTH`` listeners).
Logins come from keytabs (the harness splits MiniKdc's keytab per principal) or from a
ticket cache filled by MIT's ``kinit``. Bad input gets a typed error within seconds
that names the mechanism, the principal and the KDC's reason.
"""

from __future__ import annotations

import logging
import time
from itertools import pairwise

import pytest

from kafkalite import AdminClient, Consumer, Producer
from kafkalite.errors import SaslAuthenticationError
from kafkalite.net import kerberos
from kafkalite.testing.keytab import expire_ticket_cache
from kafkalite.testing.properties import SIGNIN_REAUTH_MS
from kafkalite.testing.topics import unique_topic_name
from tests.integration.security_support import round_trip, stats

pytestmark = pytest.mark.broker


def test_keytab_login_produces_and_consumes(kafka_broker_kerberos, kerberos_kdc) -> None:
    """Java's settings, unchanged: sasl.jaas.config with Krb5LoginModule and a keytab."""
    topic = kafka_broker_kerberos.create_topic(unique_topic_name("krb-keytab"), 2)
    cfg = kafka_broker_kerberos.client_config(**kerberos_kdc.client_settings("alice"))
    assert "Krb5LoginModule required useKeyTab=true" in cfg["sasl.jaas.config"]
    round_trip(cfg, topic, 10)
    with Producer(cfg) as producer:
        producer.send(topic, b"x").result(30)
        connections = [n.connection for n in producer._core.client._nodes.values() if n.connection is not None]
        assert connections and {c.sasl_principal for c in connections} == {"alice@EXAMPLE.COM"}


def test_ticket_cache_login_and_renewal(kafka_broker_kerberos, kerberos_kdc, tmp_path) -> None:
    """A ticket cache filled by kinit (useTicketCache=true), as interactive users have;
    when the renew window comes (made tiny here) the TGT is renewed with
    ``sasl.kerberos.kinit.cmd -R`` before the next login, as Java's KerberosLogin does."""
    import shutil

    topic = kafka_broker_kerberos.create_topic(unique_topic_name("krb-cache"), 1)
    cache = kerberos_kdc.kinit("bob", tmp_path / "krb5cc_bob")
    calls = tmp_path / "kinit-calls"
    kinit = tmp_path / "kinit"  # records its arguments, then runs MIT's kinit
    kinit.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {shutil.which("kinit")} "$@"\n')
    kinit.chmod(0o755)
    cfg = kafka_broker_kerberos.client_config(
        sasl_mechanism="GSSAPI", sasl_kerberos_service_name="kafka",
        sasl_jaas_config='com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true '
                         f'ticketCache="{cache}" principal="bob@EXAMPLE.COM";',
        **{"sasl.kerberos.kinit.cmd": str(kinit), "sasl.kerberos.ticket.renew.window.factor": 0.0,
           "sasl.kerberos.ticket.renew.jitter": 0.0, "sasl.kerberos.min.time.before.relogin": 0})
    round_trip(cfg, topic, 3)
    assert f"-R -c {cache}" in calls.read_text().splitlines()


@pytest.mark.timeout(120)
def test_relogin_and_reauthentication_during_a_long_run(kafka_broker_signin, kerberos_kdc) -> None:
    """Sessions on KERBEROS_REAUTH end every 4 s unless the client re-authenticates on
    the open connection, each time with a fresh service ticket; the TGT is renewed from
    the keytab every ~3 s (a small renew window: MiniKdc's tickets last a day and cannot
    be made shorter than 4 minutes). A producer and a consumer run for 14 s: nothing is
    lost, no connection is replaced, every session was renewed."""
    broker = kafka_broker_signin
    topic = broker.create_topic(unique_topic_name("krb-long"), 2)
    cfg = broker.client_config("KERBEROS_REAUTH", **kerberos_kdc.client_settings("alice"),
                               **{"sasl.kerberos.ticket.renew.window.factor": 3 / 86400,
                                  "sasl.kerberos.ticket.renew.jitter": 0.0,
                                  "sasl.kerberos.min.time.before.relogin": 1000})
    login = kerberos.login_for(kerberos.kerberos_settings(_resolved(cfg)))
    logins_before = login.logins
    sent = received = 0
    with Producer(cfg, linger_ms=0) as producer, \
            Consumer(cfg, group_id=f"{topic}-g", auto_offset_reset="earliest") as consumer:
        consumer.subscribe([topic])
        started = time.monotonic()
        while time.monotonic() - started < 3.5 * SIGNIN_REAUTH_MS / 1000:
            producer.send(topic, b"v%d" % sent).result(30)
            sent += 1
            received += len(consumer.poll(0.2))
        deadline = time.monotonic() + 30
        while received < sent and time.monotonic() < deadline:
            received += len(consumer.poll(0.5))
        assert received == sent
        p, c = stats(producer), stats(consumer)
        assert p.closed == c.closed == 0, (p, c)
        assert p.reauthentications >= 2 * p.created and c.reauthentications >= 2 * c.created, (p, c)
        assert p.authentication_failures == c.authentication_failures == 0
        assert producer.metrics()["successful-reauthentication-total"] == p.reauthentications
    assert login.logins - logins_before >= 3, login.logins  # fresh TGTs from the keytab


SHORT_TICKET_S = 20
"""Ticket lifetime of the short-ticket KDC (ApacheDS's 4-minute minimum lowered)."""


@pytest.mark.slow
@pytest.mark.timeout(300)  # generous: its own KDC and broker start (about 35 s), then a 40 s run
def test_run_outlives_two_ticket_lifetimes(tmp_path, monkeypatch, caplog) -> None:
    """A KDC of its own whose tickets live 20 s (MiniKdc's 4-minute floor lowered by the
    harness's launcher) and a broker whose KERBEROS_REAUTH sessions end every 4 s. With
    Java's default renew window (0.8 of the lifetime), a producer and a consumer run
    until the TGT of the second login has expired by its end time: the client logged in
    again from the keytab before each TGT ended, every session was re-authenticated
    (KIP-368) on its open connection, nothing is lost, no connection closed, no warning."""
    from kafkalite.testing.signin import SignInServices

    with SignInServices(tmp_path / "short", kerberos=True, oauth=False, ticket_lifetime_s=SHORT_TICKET_S) as short:
        assert short.kdc is not None and short.broker is not None
        monkeypatch.setenv("KRB5_CONFIG", str(short.kdc.krb5_conf))
        caplog.set_level(logging.WARNING, logger="kafkalite")
        broker = short.broker
        topic = broker.create_topic(unique_topic_name("krb-expiry"), 2)
        cfg = broker.client_config("KERBEROS_REAUTH", **short.kdc.client_settings("alice"),
                                   **{"sasl.kerberos.min.time.before.relogin": 1000})
        login = kerberos.login_for(kerberos.kerberos_settings(_resolved(cfg)))
        sent = received = 0
        ends: list[float] = []  # each TGT's end time as MIT Kerberos reports it
        with Producer(cfg, linger_ms=0) as producer, \
                Consumer(cfg, group_id=f"{topic}-g", auto_offset_reset="earliest") as consumer:
            consumer.subscribe([topic])
            first_login = time.time()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                producer.send(topic, b"v%d" % sent).result(30)
                sent += 1
                received += len(consumer.poll(0.5))
                if not ends or login.expires_at != ends[-1]:
                    ends.append(login.expires_at)
                if len(ends) >= 3 and time.time() > ends[1] + 1:
                    break  # the first two TGTs have ended, a third is in use
            assert len(ends) >= 3 and time.time() > ends[1], (ends, time.time())
            drain = time.monotonic() + 30
            while received < sent and time.monotonic() < drain:
                received += len(consumer.poll(0.5))
            assert received == sent
            p, c = stats(producer), stats(consumer)
            # The TGTs really were 20 s ones (not MiniKdc's 4-minute minimum; the first login
            # happens when the first connection authenticates, on a busy machine seconds
            # after the clients were made), and each next one was fetched before the
            # previous one ended.
            assert ends[0] - first_login <= SHORT_TICKET_S + 30, (ends[0], first_login)
            assert all(0 < later - earlier < SHORT_TICKET_S for earlier, later in pairwise(ends)), ends
            assert p.closed == c.closed == 0, (p, c)
            assert p.authentication_failures == c.authentication_failures == 0, (p, c)
            # Sessions end every 4 s: both clients re-authenticated several times over the run.
            assert p.reauthentications >= 3 * p.created and c.reauthentications >= 3 * c.created, (p, c)
        assert login.logins >= 3, login.logins
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def _resolved(cfg):
    from tests.helpers.settings import resolve

    return resolve("producer", cfg)


# ---------------------------------------------------------------- bad input


def _refused(cfg, *, within: float = 20.0) -> SaslAuthenticationError:
    """The error an admin call gets, checked to come fast and not to storm the KDC."""
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
    return info.value


def test_wrong_keytab(kafka_broker_kerberos, kerberos_kdc) -> None:
    keytab = kerberos_kdc.wrong_keytab("alice")
    error = str(_refused(kafka_broker_kerberos.client_config(**kerberos_kdc.client_settings("alice", keytab=keytab))))
    assert "SASL GSSAPI" in error and "alice@EXAMPLE.COM" in error and str(keytab) in error
    assert "the keytab's keys are not the KDC's" in error and "Decrypt integrity check failed" in error


def test_unknown_principal(kafka_broker_kerberos, kerberos_kdc) -> None:
    keytab = kerberos_kdc.unknown_principal_keytab("mallory")
    error = str(_refused(kafka_broker_kerberos.client_config(**kerberos_kdc.client_settings("mallory",
                                                                                           keytab=keytab))))
    assert "SASL GSSAPI" in error and "the KDC does not know principal 'mallory@EXAMPLE.COM'" in error
    assert "not found in Kerberos database" in error


def test_wrong_service_name(kafka_broker_kerberos, kerberos_kdc) -> None:
    cfg = kafka_broker_kerberos.client_config(**{**kerberos_kdc.client_settings("alice"),
                                                 "sasl.kerberos.service.name": "kafka-typo"})
    error = str(_refused(cfg))
    assert "alice@EXAMPLE.COM" in error and "kafka-typo/127.0.0.1" in error
    assert "check sasl.kerberos.service.name 'kafka-typo'" in error


def test_expired_ticket(kafka_broker_kerberos, kerberos_kdc, tmp_path) -> None:
    """A kinit ticket that has expired (made so by rewriting the cache's times: MiniKdc's
    tickets live at least 4 minutes): the error says to run kinit again."""
    cache = kerberos_kdc.kinit("bob", tmp_path / "krb5cc_expired")
    assert expire_ticket_cache(cache) >= 1
    cfg = kafka_broker_kerberos.client_config(
        sasl_mechanism="GSSAPI", sasl_kerberos_service_name="kafka",
        sasl_jaas_config='com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true '
                         f'ticketCache="{cache}" principal="bob@EXAMPLE.COM";')
    error = str(_refused(cfg))
    assert "SASL GSSAPI" in error and "bob@EXAMPLE.COM" in error and str(cache) in error
    assert "expired; run kinit again" in error


def test_no_secret_or_key_in_logs(kafka_broker_kerberos, kerberos_kdc, caplog) -> None:
    """Keytab contents never reach a log line or an error (only its path does)."""
    caplog.set_level(logging.DEBUG, logger="kafkalite")
    keytab = kerberos_kdc.keytab("alice")
    topic = kafka_broker_kerberos.create_topic(unique_topic_name("krb-logs"), 1)
    round_trip(kafka_broker_kerberos.client_config(**kerberos_kdc.client_settings("alice")), topic, 1)
    secret_bytes = keytab.read_bytes()
    for record in caplog.records:
        text = record.getMessage()
        assert secret_bytes.hex() not in text and "\x05\x02" not in text


def _kdc_connections_closed_by_clients_only(port: int) -> list[str]:
    """The KDC's TCP connections in CLOSE_WAIT (the client closed, the KDC did not)."""
    stuck = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local, state = fields[1], fields[3]
                if int(local.rsplit(":", 1)[1], 16) == port and state == "08":  # TCP_CLOSE_WAIT
                    stuck.append(fields[2])
    return stuck


def test_the_kdc_closes_the_connections_clients_closed(kerberos_kdc, tmp_path) -> None:
    """ApacheDS's KDC ignores a client's close; each such connection kept one of its I/O
    threads reading end-of-stream in a loop (most of a 2-core CI machine after a few
    sign-ins). The harness's launcher closes them (kafkalite.testing.kdc)."""
    for i in range(3):
        kerberos_kdc.kinit("alice", tmp_path / f"cc{i}")  # MIT kinit: TCP (udp_preference_limit 1)
    deadline = time.monotonic() + 30
    while (stuck := _kdc_connections_closed_by_clients_only(kerberos_kdc.port)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not stuck, f"{len(stuck)} KDC connections in CLOSE_WAIT (the clients closed them)"
