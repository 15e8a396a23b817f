"""SASL for producers and consumers against a real broker: PLAIN, SCRAM-SHA-256/512 and
OAUTHBEARER (the broker's unsecured JWT validator), refused logins, ACL denials raised to
the user, and KIP-368 re-authentication on open connections.

Everything runs on the session's secured broker (``kafka_broker_sasl``, SECURE_PRESET):
SASL_PLAINTEXT for the logins, REAUTH (connections.max.reauth.ms = 3 s) for KIP-368.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kafkalite import AdminClient, Consumer, Producer, TopicPartition
from kafkalite.admin.security_types import UserScramCredentialDeletion, UserScramCredentialUpsertion
from kafkalite.errors import (
    GroupAuthorizationError,
    SaslAuthenticationError,
    TopicAuthorizationError,
)
from kafkalite.net.sasl import unsecured_jwt
from kafkalite.net.transport import BrokerConnection
from kafkalite.protocol.messages.metadata import MetadataRequest
from kafkalite.testing.properties import REAUTH_MS, SECURE_PRESET
from kafkalite.testing.topics import unique_topic_name
from tests.helpers.settings import resolve
from tests.integration.security_support import consume, grant, round_trip, stats

pytestmark = pytest.mark.broker

USERS = SECURE_PRESET.users


def sasl(broker, mechanism: str, user: str, password: str | None = None, listener: str = "SASL_PLAINTEXT",
         **settings):
    return broker.client_config(listener, sasl_mechanism=mechanism, sasl_username=user,
                                sasl_password=USERS[user] if password is None else password, **settings)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_producer_and_consumer_log_in(kafka_broker_sasl, mechanism) -> None:
    """alice is no super user: she works with exactly the ACLs granted to her."""
    topic = kafka_broker_sasl.create_topic(unique_topic_name(f"sasl-{mechanism}"), 2)
    group = f"{topic}-g"
    grant(kafka_broker_sasl, "User:alice", "topic", topic, "write", "read", "describe")
    grant(kafka_broker_sasl, "User:alice", "group", group, "read")
    cfg = sasl(kafka_broker_sasl, mechanism, "alice")
    round_trip(cfg, topic, 10, group=group)


def test_java_style_jaas_config(kafka_broker_sasl, topic_factory) -> None:
    """Settings copied from a Java client (sasl.jaas.config) work unchanged."""
    topic = topic_factory(on=kafka_broker_sasl)
    cfg = kafka_broker_sasl.client_config(
        "SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
        sasl_jaas_config='org.apache.kafka.common.security.scram.ScramLoginModule required '
                         f'username="admin" password="{USERS["admin"]}";')
    round_trip(cfg, topic, 3)


def test_wrong_password_is_typed_names_mechanism_and_user_and_does_not_storm(kafka_broker_sasl) -> None:
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        cfg = sasl(kafka_broker_sasl, mechanism, "bob", "not-bobs-password", default_api_timeout_ms=60_000)
        with AdminClient(cfg) as admin:
            started = time.monotonic()
            with pytest.raises(SaslAuthenticationError) as info:
                admin.describe_cluster()
            # At once (one login, well under a second), not retried until the API timeout (60 s).
            assert time.monotonic() - started < 20
            text = str(info.value)
            assert mechanism in text and "'bob'" in text
            assert kafka_broker_sasl.bootstrap_for("SASL_PLAINTEXT") in text
            # Calls during the reconnect backoff get the same error without new logins.
            for _ in range(20):
                with pytest.raises(SaslAuthenticationError):
                    admin.describe_cluster()
            counters = stats(admin)
            assert counters.created == 0
            assert 1 <= counters.authentication_failures <= 10, counters
            metrics = admin.metrics()  # Java's admin-client-metrics names
            assert metrics["failed-authentication-total"] == counters.authentication_failures
            assert metrics["connection-count"] == 0 == metrics["connection-creation-total"]


@pytest.mark.timeout(90)
def test_wrong_password_producer_and_consumer_retry_at_backoff_pace(kafka_broker_sasl) -> None:
    """A producer and a consumer with a wrong password log in at most once per reconnect
    backoff (50 ms doubling to 1 s), however often they are called, and the producer's
    error carries the broker's refusal with mechanism and user."""
    topic = kafka_broker_sasl.create_topic(unique_topic_name("wrong-pw"), 1)
    cfg = sasl(kafka_broker_sasl, "SCRAM-SHA-256", "alice", "not-alices-password")
    with Consumer(cfg, group_id=f"{topic}-g") as consumer:
        consumer.subscribe([topic])
        started = time.monotonic()
        raised: list[float] = []
        while time.monotonic() - started < 6:
            try:
                consumer.poll(0.2)
            except SaslAuthenticationError as exc:
                assert "SCRAM-SHA-256" in str(exc) and "'alice'" in str(exc)
                raised.append(time.monotonic() - started)
        # poll() raises the refused login (as Java's does), first within a few seconds
        # (one login: well under a second; generous for a busy machine).
        assert raised and raised[0] < 5, raised
        counters = stats(consumer)
        assert counters.created == 0 and 1 <= counters.authentication_failures <= 16, counters
        metrics = consumer.metrics()
        assert metrics["failed-authentication-total"] == counters.authentication_failures
        assert metrics["connection-count"] == 0 and metrics["successful-authentication-total"] == 0
    with Producer(cfg, max_block_ms=60_000) as producer:
        started = time.monotonic()
        with pytest.raises(SaslAuthenticationError) as info:
            producer.send(topic, b"v")
        # At once, not after max.block.ms (60 s): waiting would not fix a wrong password.
        assert time.monotonic() - started < 20
        assert "SCRAM-SHA-256" in str(info.value) and "'alice'" in str(info.value)
        counters = stats(producer)
        assert counters.created == 0 and 1 <= counters.authentication_failures <= 16, counters


def test_oauthbearer_token_callback(kafka_broker_sasl) -> None:
    topic = kafka_broker_sasl.create_topic(unique_topic_name("oauth"), 1)
    calls: list[str] = []

    def token_for(user: str):
        def provide() -> tuple[str, int]:
            calls.append(user)
            return unsecured_jwt(user, lifetime_s=600), 600_000
        return provide

    admin_cfg = kafka_broker_sasl.client_config("SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                                                sasl_oauthbearer_token_provider=token_for("admin"))
    round_trip(admin_cfg, topic, 5)
    assert calls and set(calls) == {"admin"}

    # The broker takes the principal from the token's "sub": bob has no ACLs.
    bob = kafka_broker_sasl.client_config("SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                                          sasl_oauthbearer_token_provider=token_for("bob"))
    with Producer(bob, enable_idempotence=False) as producer, pytest.raises(TopicAuthorizationError) as info:
        producer.send(topic, b"denied").result(30)
    assert info.value.topic == topic
    assert "bob" in calls

    # Java's default OAUTHBEARER login (unsecured token from the JAAS line) works too.
    jaas = kafka_broker_sasl.client_config(
        "SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
        sasl_jaas_config='org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                         'unsecuredLoginStringClaim_sub="admin";')
    assert consume(jaas, topic, 5, group=f"{topic}-jaas") != []


def test_oauthbearer_refused_token(kafka_broker_sasl) -> None:
    expired = unsecured_jwt("admin", lifetime_s=-60, issued_at=time.time() - 120)
    cfg = kafka_broker_sasl.client_config("SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                                          sasl_oauthbearer_token_provider=lambda: expired)
    with AdminClient(cfg) as admin, pytest.raises(SaslAuthenticationError) as info:
        admin.describe_cluster()
    assert "OAUTHBEARER" in str(info.value) and "'admin'" in str(info.value)


def test_produce_denied_is_topic_authorization_error(kafka_broker_sasl) -> None:
    topic = kafka_broker_sasl.create_topic(unique_topic_name("deny-produce"), 1)
    cfg = sasl(kafka_broker_sasl, "SCRAM-SHA-256", "bob")
    for idempotent in (True, False):
        with Producer(cfg, enable_idempotence=idempotent, max_block_ms=20000) as producer:
            # No Describe: the metadata wait inside send() gets the denial.
            with pytest.raises(TopicAuthorizationError) as info:
                producer.send(topic, b"v")
            assert info.value.topic == topic and topic in str(info.value)
    # With Describe (metadata) but no Write the denial comes from the Produce answer.
    grant(kafka_broker_sasl, "User:bob", "topic", topic, "describe")
    with Producer(cfg, enable_idempotence=False) as producer:
        future = producer.send(topic, b"v", partition=0)
        with pytest.raises(TopicAuthorizationError) as info:
            future.result(30)
        assert info.value.topic == topic


def test_consume_denied_topic_and_group(kafka_broker_sasl) -> None:
    broker = kafka_broker_sasl
    topic = broker.create_topic(unique_topic_name("deny-consume"), 1)
    round_trip(broker.client_config(), topic, 3)
    cfg = sasl(broker, "SCRAM-SHA-512", "bob")

    # Group allowed, topic not readable: poll() raises naming the topic.
    group_ok = f"{topic}-ok"
    grant(broker, "User:bob", "group", group_ok, "read")
    grant(broker, "User:bob", "topic", topic, "describe")
    with Consumer(cfg, group_id=group_ok, auto_offset_reset="earliest") as consumer:
        consumer.subscribe([topic])
        with pytest.raises(TopicAuthorizationError) as info:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                consumer.poll(1.0)
        assert info.value.topic == topic

    # Topic readable, group not: poll() (joining) raises naming the group ...
    grant(broker, "User:bob", "topic", topic, "read")
    denied = f"{topic}-denied"
    with Consumer(cfg, group_id=denied, auto_offset_reset="earliest") as consumer:
        consumer.subscribe([topic])
        with pytest.raises(GroupAuthorizationError) as info:
            consumer.poll(10)
        assert denied in str(info.value)
    # ... and so does commit() of positions read without the group.
    with Consumer(cfg, group_id=denied, enable_auto_commit=False) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        records = []
        deadline = time.monotonic() + 30
        while len(records) < 3 and time.monotonic() < deadline:
            records += consumer.poll(1.0)
        assert len(records) == 3
        with pytest.raises(GroupAuthorizationError) as info:
            consumer.commit()
        assert denied in str(info.value)
    # assign() without seek(): the committed offsets it looks up are denied, and poll()
    # says so (Java does the same) instead of waiting for a position forever.
    with Consumer(cfg, group_id=denied, enable_auto_commit=False) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        deadline = time.monotonic() + 60  # a deadline for the error, not a bound on it
        with pytest.raises(GroupAuthorizationError) as info:
            while time.monotonic() < deadline:
                consumer.poll(0.5)
        assert denied in str(info.value)


# ---------------------------------------------------------------- KIP-368 re-authentication


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "OAUTHBEARER"])
def test_reauthentication_keeps_connections(kafka_broker_sasl, mechanism) -> None:
    """The REAUTH listener ends sessions after 3 s unless the client logs in again on the
    same connection: a producer and a consumer working for 10+ s keep their connections."""
    broker = kafka_broker_sasl
    topic = broker.create_topic(unique_topic_name(f"reauth-{mechanism}"), 2)
    tokens: list[float] = []

    def provide() -> str:
        tokens.append(time.monotonic())
        return unsecured_jwt("admin", lifetime_s=3600)

    if mechanism == "OAUTHBEARER":
        cfg = broker.client_config("REAUTH", sasl_mechanism=mechanism, sasl_oauthbearer_token_provider=provide)
    else:
        cfg = sasl(broker, mechanism, "admin", listener="REAUTH")
    sent, received = 0, 0
    with Producer(cfg, linger_ms=0) as producer, \
            Consumer(cfg, group_id=f"{topic}-g", auto_offset_reset="earliest") as consumer:
        consumer.subscribe([topic])
        producer.send(topic, b"first").result(30)
        while not consumer.poll(0.5):
            pass
        received = 1
        base_p, base_c = stats(producer).created, stats(consumer).created
        started = time.monotonic()
        while time.monotonic() - started < 3.5 * REAUTH_MS / 1000:
            producer.send(topic, b"v%d" % sent).result(30)
            sent += 1
            received += len(consumer.poll(0.1))
        producer.flush(30)
        deadline = time.monotonic() + 30
        while received < sent + 1 and time.monotonic() < deadline:
            received += len(consumer.poll(0.5))
        assert received == sent + 1
        p, c = stats(producer), stats(consumer)
        # No connection was replaced ...
        assert (p.created, p.closed, c.created, c.closed) == (base_p, 0, base_c, 0), (p, c)
        # ... because every one of them re-authenticated (3 sessions each, at least).
        assert p.reauthentications >= 2 * p.created and c.reauthentications >= 2 * c.created, (p, c)
        assert p.authentication_failures == c.authentication_failures == 0
        # The same counts through metrics(), with the Java client's names.
        pm, cm = producer.metrics(), consumer.metrics()
        assert pm["connection-creation-total"] == p.created and pm["connection-count"] == p.active
        assert pm["successful-authentication-total"] == p.created
        assert pm["successful-reauthentication-total"] == p.reauthentications
        assert pm["reauthentication-latency-avg"] > 0
        assert cm["successful-reauthentication-total"] == c.reauthentications
        assert cm["failed-authentication-total"] == 0
    if mechanism == "OAUTHBEARER":
        assert len(tokens) > p.created + c.created  # a fresh token from the callback each time


@pytest.mark.timeout(60)
async def test_reauthentication_behind_pipelined_requests(kafka_broker_sasl) -> None:
    """Re-authentication starts with requests in flight; requests sent meanwhile wait and
    go out afterwards, in order; every response reaches its request."""
    broker = kafka_broker_sasl
    cfg = resolve("admin", sasl(broker, "SCRAM-SHA-512", "admin", listener="REAUTH"))
    host, port = broker.bootstrap_for("REAUTH").split(":")
    conn = BrokerConnection(host, int(port), cfg)
    await conn.connect()
    try:
        assert conn.sasl_session_expires_at is not None and conn.sasl_principal == "admin"
        # Brokers refuse a re-authentication within a second of the last one.
        await asyncio.sleep(1.1)
        before = [conn.send(MetadataRequest(topics=[])) for _ in range(20)]
        conn._begin_reauthentication()
        assert conn.reauthenticating
        during = [conn.send(MetadataRequest(topics=[])) for _ in range(20)]
        assert conn.in_flight >= 20 and conn.held == 20
        responses = await asyncio.wait_for(asyncio.gather(*before, *during), 30)
        assert all(r.brokers for r in responses)
        assert conn.reauthentications == 1 and not conn.reauthenticating and conn.connected
        # And the automatic schedule keeps the connection alive past several lifetimes.
        deadline = time.monotonic() + 3 * REAUTH_MS / 1000
        while time.monotonic() < deadline:
            assert (await conn.request(MetadataRequest(topics=[]))).brokers
            await asyncio.sleep(0.2)
        assert conn.connected and conn.reauthentications >= 3
    finally:
        conn.close()


def test_failed_reauthentication_closes_with_the_error(kafka_broker_sasl) -> None:
    """A password changed while connected: the next re-authentication fails, the
    connection closes with SaslAuthenticationError, later calls raise it."""
    broker = kafka_broker_sasl
    user = unique_topic_name("rotating")[:40]
    with AdminClient(broker.client_config("SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                                          sasl_username="admin", sasl_password=USERS["admin"])) as admin:
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion(user, "SCRAM-SHA-256", "old-pw")]).all()
        try:
            cfg = broker.client_config("REAUTH", sasl_mechanism="SCRAM-SHA-256", sasl_username=user,
                                       sasl_password="old-pw")
            closed = threading.Event()

            async def run() -> BaseException | None:
                host, port = broker.bootstrap_for("REAUTH").split(":")
                conn = BrokerConnection(host, int(port), resolve("admin", cfg),
                                        on_close=lambda c, reason: closed.set())
                await conn.connect()
                await asyncio.to_thread(admin.alter_user_scram_credentials(
                    [UserScramCredentialUpsertion(user, "SCRAM-SHA-256", "new-pw")]).all)
                # The next re-authentication (at 85-95 % of a session) fails and closes
                # the connection; a generous deadline (ten sessions) for a busy machine.
                deadline = time.monotonic() + 10 * REAUTH_MS / 1000
                while conn.connected and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                return conn._close_reason

            reason = asyncio.run(run())
            assert closed.is_set()
            assert isinstance(reason, SaslAuthenticationError) and f"'{user}'" in str(reason), reason
        finally:
            admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, "SCRAM-SHA-256")]).all()
