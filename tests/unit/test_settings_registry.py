"""No setting is accepted and then ignored: every key each client kind accepts in the
schema (src/kafkalite/config.py) is registered here with the module that reads it for
that client, and that module's code (not a docstring) must name it. A new key without a
reader fails :func:`test_every_accepted_setting_has_a_reader`; a reader that stops
reading a key fails :func:`test_registered_readers_really_read_their_settings`.

Settings that used to be accepted and ignored (issue 13) also name the test that proves
their effect or their refusal. The pending list names the few accepted keys not honoured
yet, each with the issue that implements it; it may only shrink.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from kafkalite.config import ADMIN, CONSUMER, PRODUCER, SETTINGS, SHARE_CONSUMER, lookup
from kafkalite.errors import ConfigError
from tests.helpers.settings import resolve

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "kafkalite"
ANY = "*"

# setting -> {client kind (or "*": every kind that takes it): module under src/kafkalite}
READERS: dict[str, dict[str, str]] = {
    "bootstrap.servers": {ANY: "net/client.py"},
    "client.id": {ANY: "net/transport.py"},
    "client.rack": {CONSUMER: "consumer/fetcher.py", SHARE_CONSUMER: "share/heartbeat.py",
                    PRODUCER: "producer/fronts.py", ADMIN: "admin/core.py"},  # KIP-714 label
    "request.timeout.ms": {ANY: "net/transport.py"},
    "default.api.timeout.ms": {CONSUMER: "consumer/core.py", ADMIN: "admin/core.py", SHARE_CONSUMER: "share/core.py"},
    "retries": {PRODUCER: "producer/sender.py", ADMIN: "admin/core.py"},
    "retry.backoff.ms": {ANY: "net/client.py"},
    "retry.backoff.max.ms": {ANY: "net/client.py"},
    "reconnect.backoff.ms": {ANY: "net/client.py"},
    "reconnect.backoff.max.ms": {ANY: "net/client.py"},
    "socket.connection.setup.timeout.ms": {ANY: "net/client.py"},
    "socket.connection.setup.timeout.max.ms": {ANY: "net/client.py"},
    "connections.max.idle.ms": {ANY: "net/client.py"},
    "metadata.max.age.ms": {ANY: "net/client.py"},
    "metadata.recovery.strategy": {ANY: "net/client.py"},
    "send.buffer.bytes": {ANY: "net/transport.py"},
    "receive.buffer.bytes": {ANY: "net/transport.py"},
    "receive.message.max.bytes": {ANY: "net/transport.py"},
    "metrics.sample.window.ms": {PRODUCER: "producer/core.py", CONSUMER: "consumer/core.py", ADMIN: "admin/core.py",
                                 SHARE_CONSUMER: "share/core.py"},
    "metrics.num.samples": {PRODUCER: "producer/core.py", CONSUMER: "consumer/core.py", ADMIN: "admin/core.py",
                            SHARE_CONSUMER: "share/core.py"},
    "metrics.recording.level": {PRODUCER: "producer/core.py", CONSUMER: "consumer/core.py", ADMIN: "admin/core.py",
                                SHARE_CONSUMER: "share/core.py"},
    "security.protocol": {ANY: "net/transport.py"},
    "sasl.mechanism": {ANY: "net/sasl.py"},
    "sasl.username": {ANY: "net/sasl.py"},
    "sasl.password": {ANY: "net/sasl.py"},
    "sasl.jaas.config": {ANY: "net/jaas.py"},
    "sasl.oauthbearer.token.provider": {ANY: "net/sasl.py"},
    "ssl.ca.location": {ANY: "net/tls.py"},
    "ssl.truststore.location": {ANY: "net/tls.py"},
    "ssl.truststore.type": {ANY: "net/tls.py"},
    "ssl.truststore.certificates": {ANY: "net/tls.py"},
    "ssl.certificate.location": {ANY: "net/tls.py"},
    "ssl.key.location": {ANY: "net/tls.py"},
    "ssl.key.password": {ANY: "net/tls.py"},
    "ssl.keystore.location": {ANY: "net/tls.py"},
    "ssl.keystore.type": {ANY: "net/tls.py"},
    "ssl.keystore.key": {ANY: "net/tls.py"},
    "ssl.keystore.certificate.chain": {ANY: "net/tls.py"},
    "ssl.keystore.password": {ANY: "net/tls.py"},
    "ssl.endpoint.identification.algorithm": {ANY: "net/tls.py"},
    "ssl.enabled.protocols": {ANY: "net/tls.py"},
    "ssl.protocol": {ANY: "net/tls.py"},
    "ssl.cipher.suites": {ANY: "net/tls.py"},
    "ssl.context": {ANY: "net/tls.py"},
    "ssl.truststore.password": {ANY: "net/tls.py"},
    "sasl.kerberos.service.name": {ANY: "net/kerberos.py"},
    "sasl.kerberos.kinit.cmd": {ANY: "net/kerberos.py"},
    "sasl.kerberos.ticket.renew.window.factor": {ANY: "net/kerberos.py"},
    "sasl.kerberos.ticket.renew.jitter": {ANY: "net/kerberos.py"},
    "sasl.kerberos.min.time.before.relogin": {ANY: "net/kerberos.py"},
    "sasl.login.callback.handler.class": {ANY: "net/sasl.py"},
    "sasl.oauthbearer.token.endpoint.url": {ANY: "net/oauth.py"},
    "sasl.oauthbearer.client.credentials.client.id": {ANY: "net/oauth.py"},
    "sasl.oauthbearer.client.credentials.client.secret": {ANY: "net/oauth.py"},
    "sasl.oauthbearer.scope": {ANY: "net/oauth.py"},
    "sasl.oauthbearer.jwt.retriever.class": {ANY: "net/oauth.py"},
    "sasl.oauthbearer.scope.claim.name": {ANY: "net/oauth.py"},
    "sasl.oauthbearer.sub.claim.name": {ANY: "net/oauth.py"},
    "sasl.oauthbearer.header.urlencode": {ANY: "net/oauth.py"},
    "sasl.oauthbearer.assertion.algorithm": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.claim.aud": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.claim.exp.seconds": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.claim.iss": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.claim.jti.include": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.claim.nbf.seconds": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.claim.sub": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.file": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.private.key.file": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.private.key.passphrase": {ANY: "net/oauth_assertion.py"},
    "sasl.oauthbearer.assertion.template.file": {ANY: "net/oauth_assertion.py"},
    "sasl.login.refresh.window.factor": {ANY: "net/oauth.py"},
    "sasl.login.refresh.window.jitter": {ANY: "net/oauth.py"},
    "sasl.login.refresh.min.period.seconds": {ANY: "net/oauth.py"},
    "sasl.login.refresh.buffer.seconds": {ANY: "net/oauth.py"},
    "sasl.login.connect.timeout.ms": {ANY: "net/oauth.py"},
    "sasl.login.read.timeout.ms": {ANY: "net/oauth.py"},
    "sasl.login.retry.backoff.ms": {ANY: "net/oauth.py"},
    "sasl.login.retry.backoff.max.ms": {ANY: "net/oauth.py"},
    # metrics and telemetry
    "metric.reporters": {ANY: "telemetry/hub.py"},
    "metrics.report.interval.ms": {ANY: "telemetry/hub.py"},
    "enable.metrics.push": {ANY: "telemetry/hub.py"},
    "otel.meter.provider": {ANY: "telemetry/hub.py"},
    "otel.tracer.provider": {ANY: "otel/tracing.py"},
    # producer
    "acks": {PRODUCER: "producer/sender.py"},
    "linger.ms": {PRODUCER: "producer/core.py"},
    "batch.size": {PRODUCER: "producer/core.py"},
    "buffer.memory": {PRODUCER: "producer/core.py"},
    "max.block.ms": {PRODUCER: "producer/core.py"},
    "compression.type": {PRODUCER: "producer/core.py"},
    "compression.gzip.level": {PRODUCER: "producer/core.py"},
    "compression.lz4.level": {PRODUCER: "producer/core.py"},
    "compression.zstd.level": {PRODUCER: "producer/core.py"},
    "max.request.size": {PRODUCER: "producer/core.py"},
    "delivery.timeout.ms": {PRODUCER: "producer/core.py"},
    "max.in.flight.requests.per.connection": {PRODUCER: "producer/sender.py"},
    "enable.idempotence": {PRODUCER: "producer/core.py"},
    "transactional.id": {PRODUCER: "producer/core.py"},
    "transaction.timeout.ms": {PRODUCER: "producer/core.py"},
    "transaction.two.phase.commit.enable": {PRODUCER: "producer/settings.py"},  # refused when true
    "partitioner.class": {PRODUCER: "producer/core.py"},
    "partitioner.ignore.keys": {PRODUCER: "producer/core.py"},
    "partitioner.adaptive.partitioning.enable": {PRODUCER: "producer/sender.py"},
    "partitioner.availability.timeout.ms": {PRODUCER: "producer/sender.py"},
    "key.serializer": {PRODUCER: "producer/serializing.py"},
    "value.serializer": {PRODUCER: "producer/serializing.py"},
    "interceptor.classes": {PRODUCER: "producer/core.py", CONSUMER: "consumer/core.py"},
    "metadata.max.idle.ms": {PRODUCER: "producer/sender.py"},
    "exit.flush.timeout.ms": {PRODUCER: "producer/exit_guard.py"},
    # consumer and share consumer
    "group.id": {CONSUMER: "consumer/core.py", SHARE_CONSUMER: "share/core.py"},
    "group.instance.id": {CONSUMER: "consumer/coordinator.py"},
    "group.protocol": {CONSUMER: "consumer/core.py"},
    "group.remote.assignor": {CONSUMER: "consumer/group_consumer_protocol.py"},
    "partition.assignment.strategy": {CONSUMER: "consumer/coordinator.py"},
    "session.timeout.ms": {CONSUMER: "consumer/coordinator.py"},
    "heartbeat.interval.ms": {CONSUMER: "consumer/coordinator.py"},
    "max.poll.interval.ms": {CONSUMER: "consumer/core.py"},
    "max.poll.records": {CONSUMER: "consumer/core.py", SHARE_CONSUMER: "share/core.py"},
    "enable.auto.commit": {CONSUMER: "consumer/core.py"},
    "auto.commit.interval.ms": {CONSUMER: "consumer/core.py"},
    "auto.offset.reset": {CONSUMER: "consumer/core.py"},
    "fetch.min.bytes": {CONSUMER: "consumer/fetcher.py", SHARE_CONSUMER: "share/fetcher.py"},
    "fetch.max.wait.ms": {CONSUMER: "consumer/fetcher.py", SHARE_CONSUMER: "share/fetcher.py"},
    "fetch.max.bytes": {CONSUMER: "consumer/fetcher.py", SHARE_CONSUMER: "share/fetcher.py"},
    "max.partition.fetch.bytes": {CONSUMER: "consumer/fetcher.py"},
    "isolation.level": {CONSUMER: "consumer/core.py"},
    "check.crcs": {CONSUMER: "consumer/fetcher.py", SHARE_CONSUMER: "share/fetcher.py"},
    "exclude.internal.topics": {CONSUMER: "consumer/core.py"},
    "stall.warning.ms": {CONSUMER: "consumer/observability.py"},
    "allow.auto.create.topics": {CONSUMER: "net/client.py"},
    "key.deserializer": {ANY: "serialization/deserializers.py"},
    "value.deserializer": {ANY: "serialization/deserializers.py"},
    "share.acknowledgement.mode": {SHARE_CONSUMER: "share/core.py"},
    "share.acquire.mode": {SHARE_CONSUMER: "share/fetcher.py"},
}

# Accepted but not honoured yet, each implemented by another piece of work: may only shrink.
PENDING: dict[str, str] = {
}

_EFFECTS = "tests/integration/test_settings_effects.py"
_UNIT = "tests/unit/test_settings_effects.py"
# The settings issue 13 found accepted and ignored: the tests that prove what they do now.
PROOFS: dict[str, list[str]] = {
    "ssl.protocol": ["tests/integration/test_security_tls.py::test_ssl_protocol_caps_the_tls_version",
                     "tests/unit/test_security_tls.py::test_ssl_protocol_caps_the_enabled_protocols"],
    "connections.max.idle.ms": [f"{_EFFECTS}::test_idle_connections_are_closed_and_reopened_on_demand",
                                f"{_EFFECTS}::test_busy_connections_are_not_reaped"],
    "socket.connection.setup.timeout.max.ms": [f"{_UNIT}::test_setup_timeout_doubles_per_failed_attempt_up_to_the_max",
                                               f"{_UNIT}::test_each_failed_connection_attempt_waits_longer"],
    "metadata.max.idle.ms": [f"{_EFFECTS}::test_producer_forgets_metadata_of_idle_topics_and_fetches_it_again",
                             f"{_UNIT}::test_idle_topics_are_forgotten_and_a_later_send_revives_them"],
    "allow.auto.create.topics": [f"{_EFFECTS}::test_subscribing_creates_the_topic_only_when_allowed"],
    "interceptor.classes": [f"{_EFFECTS}::test_consumer_interceptors_see_polls_and_every_kind_of_commit",
                            f"{_UNIT}::test_a_missing_interceptor_class_is_refused_by_consumer_and_producer_alike"],
    "transaction.two.phase.commit.enable": [f"{_UNIT}::test_two_phase_commit_is_refused_with_the_reason"],
    "max.in.flight.requests.per.connection": [f"{_UNIT}::test_consumer_refuses_max_in_flight_saying_why"],
    "exit.flush.timeout.ms": ["tests/integration/test_producer_exit.py::"
                              "test_unreachable_broker_exit_is_bounded_and_reports_per_topic",
                              "tests/integration/test_producer_exit.py::test_the_off_switch_reports_at_once"],
    "metrics.recording.level": [f"{_UNIT}::test_metrics_recording_level_records_the_sensors_up_to_it",
                                f"{_UNIT}::test_every_client_records_at_its_metrics_recording_level"],
    "client.id": ["tests/integration/test_client_ids.py::"
                  "test_kafka_consumer_groups_shows_java_style_client_and_member_ids"],
}


@cache
def _names_in_code(module: str) -> tuple[frozenset[str], frozenset[str]]:
    """(string constants that are not docstrings, attribute names) of a module."""
    tree = ast.parse((SRC / module).read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    constants = frozenset(n.value for n in ast.walk(tree)
                          if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings)
    attributes = frozenset(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))
    return constants, attributes


def _reader(name: str, client: str) -> str | None:
    readers = READERS.get(name, {})
    return readers.get(client) or readers.get(ANY)


ACCEPTED = [(s.name, client) for s in SETTINGS for client in sorted(s.clients)]


@pytest.mark.parametrize("name,client", ACCEPTED, ids=[f"{n}[{c}]" for n, c in ACCEPTED])
def test_every_accepted_setting_has_a_reader(name: str, client: str) -> None:
    if name in PENDING:
        return  # see test_pending_settings_are_few_accepted_and_owned
    assert _reader(name, client) is not None, (
        f"the {client} accepts '{name}' but nothing is registered as reading it: read it (with Java's "
        "meaning) and register the module here, or refuse it in config.py with the reason")


def test_registered_readers_really_read_their_settings() -> None:
    unknown = sorted(set(READERS) - {s.name for s in SETTINGS})
    assert not unknown, f"registered settings that the schema does not have: {unknown}"
    for name, readers in READERS.items():
        setting = lookup(name)
        assert setting is not None
        for client, module in readers.items():
            assert client == ANY or client in setting.clients, f"{name} is not a {client} setting"
            constants, attributes = _names_in_code(module)
            assert name in constants or setting.alias in attributes, f"{module} does not read '{name}'"


def test_pending_settings_are_few_accepted_and_owned() -> None:
    assert len(PENDING) <= 2
    modules = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
               if "protocol/messages" not in str(p) and p.name not in ("config.py", "_config_keys.py")]
    for name, owner in PENDING.items():
        setting = lookup(name)
        assert setting is not None and owner.startswith("issue ")
        reading = [m for m in modules if name in _names_in_code(m)[0] or setting.alias in _names_in_code(m)[1]]
        assert not reading, f"'{name}' is read in {reading} now: move it from PENDING to READERS"


def test_proofs_of_effect_exist() -> None:
    for name, tests in PROOFS.items():
        assert lookup(name) is not None, name
        for ref in tests:
            path, _, function = ref.partition("::")
            text = (ROOT / path).read_text()
            assert re.search(rf"^(async )?def {function}\(", text, re.M), f"{ref} (proof for {name}) is missing"


def test_settings_not_for_a_client_are_refused_naming_the_kind() -> None:
    """The other half of 'honoured or refused': a key of another client kind fails."""
    boot = {"bootstrap.servers": "127.0.0.1:9"}
    for setting in SETTINGS:
        for client in sorted({PRODUCER, CONSUMER, ADMIN, SHARE_CONSUMER} - setting.clients):
            with pytest.raises(ConfigError, match=f"'{re.escape(setting.name)}' does not apply to a {client}"):
                resolve(client, {**boot, setting.name: setting.default})
