"""Each client's settings rules (a ``ClientRules`` in its own settings module) run the same
checks whatever the process imported: before issue 14 a client package registered its
``@cross_check`` rules when imported, and a bare ``resolve("producer", ...)`` let
contradictions through. Since issue 28 no module imports every client's rules: a
client's rules hold its checks themselves, and the security checks are shared."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from kafkalite.config import ALL
from kafkalite.settings import SECURITY
from tests.helpers.settings import RULES

# (kind, settings): one case per registered check, plus the schema's own refusals and a
# producer whose defaulted idempotence is adjusted rather than refused.
_SCRIPT = textwrap.dedent('''
    import json, sys
    from kafkalite.admin.settings import ADMIN_RULES
    from kafkalite.consumer.settings import CONSUMER_RULES
    from kafkalite.producer.settings import PRODUCER_RULES
    from kafkalite.share.settings import SHARE_CONSUMER_RULES

    RULES = {r.kind: r for r in (PRODUCER_RULES, CONSUMER_RULES, SHARE_CONSUMER_RULES, ADMIN_RULES)}

    B = {"bootstrap.servers": "127.0.0.1:9092"}
    CASES = [
        ("producer", {**B, "acks": "1", "enable.idempotence": "true"}),
        ("producer", {**B, "acks": "1"}),
        ("producer", {**B, "delivery.timeout.ms": 1000}),
        ("producer", {**B, "transaction.two.phase.commit.enable": True}),
        ("producer", {**B, "transactional.id": "t", "enable.idempotence": False}),
        ("consumer", {**B, "group.instance.id": "i"}),
        ("consumer", {**B, "group.id": "g", "heartbeat.interval.ms": 50000}),
        ("consumer", {**B, "group.id": "g", "partition.assignment.strategy": "no-such-assignor"}),
        ("consumer", {**B, "group.protocol": "consumer", "group.id": "g", "session.timeout.ms": 10000}),
        ("share_consumer", {**B}),
        ("share_consumer", {**B, "group.id": "g", "auto.offset.reset": "earliest"}),
        ("share_consumer", {**B, "group.id": "g", "enable.auto.commit": False}),
        ("admin", {**B, "security.protocol": "SSL", "ssl.ca.location": "/no/such/ca.pem"}),
        ("admin", {**B, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}),
        ("share_consumer", {**B, "group.id": "g", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
                            "sasl.username": "u"}),
        ("consumer", {**B, "security.protocol": "SSL", "ssl.keystore.type": "JKS"}),
    ]

    def outcomes():
        out = []
        for kind, settings in CASES:
            try:
                cfg = RULES[kind].resolve(settings)
            except Exception as exc:
                out.append([type(exc).__name__, str(exc)])
            else:
                out.append({k: cfg[k] for k in ("enable.idempotence", "delivery.timeout.ms") if k in cfg})
        return out

    fresh = outcomes()
    loaded = sorted(m for m in sys.modules if m.startswith("kafkalite"))
    import kafkalite, kafkalite.aio, kafkalite.admin, kafkalite.cli.main
    for name in ("Producer", "Consumer", "ShareConsumer", "AdminClient"):
        getattr(kafkalite, name), getattr(kafkalite.aio, name)
    print(json.dumps({"fresh": fresh, "after": outcomes(), "loaded": loaded}))
''')


def test_resolve_runs_the_same_checks_in_a_fresh_interpreter_as_after_importing_every_client() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    fresh, after = result["fresh"], result["after"]
    assert fresh == after
    # No client was loaded for the fresh run (only the rule modules) ...
    cores = {f"kafkalite.{c}.core" for c in ("producer", "consumer", "share", "admin")} | {"kafkalite.net.client"}
    assert "kafkalite.settings" in result["loaded"] and not cores & set(result["loaded"])
    # ... and every check did its work there.
    errors = [e for e in fresh if isinstance(e, list)]
    assert len(errors) == len(fresh) - 1
    texts = [f"{kind}: {text}" for kind, text in errors]
    expected = [
        "ConfigError: setting 'acks' = '1' contradicts enable.idempotence=true",
        "ConfigError: setting 'delivery.timeout.ms' = 1000 must be at least linger.ms + request.timeout.ms",
        "ConfigError: setting 'transaction.two.phase.commit.enable' = true is not supported",
        "ConfigError: setting 'transactional.id' needs the idempotent producer",
        "ConfigError: setting 'group.instance.id' needs 'group.id'",
        "ConfigError: setting 'heartbeat.interval.ms' (50000) must be lower than 'session.timeout.ms' (45000)",
        "no-such-assignor",
        "ConfigError: setting 'session.timeout.ms' is not used with group.protocol=consumer (KIP-848)",
        "InvalidGroupIdError: [INVALID_GROUP_ID (24)] a share consumer needs the setting 'group.id' (its share group)",
        "ConfigError: setting 'auto.offset.reset' does not apply to a share_consumer: set the share group's "
        "config 'share.auto.offset.reset' instead",
        "ConfigError: setting 'enable.auto.commit' does not apply to a share_consumer (share groups assign",
        "ConfigError: setting 'ssl.ca.location': file '/no/such/ca.pem' does not exist",
        "ConfigError: sasl.mechanism PLAIN needs 'sasl.username' and 'sasl.password'",
        "ConfigError: sasl.mechanism SCRAM-SHA-256 needs 'sasl.username' and 'sasl.password'",
        "ConfigError: setting 'ssl.keystore.type' is JKS, which kafkalite does not read",
    ]
    assert len(texts) == len(expected)
    for text, start in zip(texts, expected):
        assert start in text, (start, text)
    # The defaulted idempotence is turned off (as Java does), not refused.
    assert fresh[1] == {"enable.idempotence": False, "delivery.timeout.ms": 120000}


def test_every_client_kind_has_its_rules_and_no_check_twice() -> None:
    """One ``ClientRules`` per client kind, each declared by its client; the security
    checks run for every kind (``ClientRules.resolve`` runs them first), so no client
    lists them again."""
    assert set(RULES) == set(ALL)
    for kind, rules in RULES.items():
        assert rules.kind == kind
        assert not set(rules.checks) & set(SECURITY), kind
        assert len(set(rules.checks)) == len(rules.checks), f"a check listed twice for {kind}"
    assert {r.__module__ for r in map(type, RULES.values())} == {"kafkalite.settings"}


def test_settings_import_no_client() -> None:
    """The shared settings module loads no client's rules: resolving an admin client's
    settings does not import the producer's or the consumer's."""
    script = ("import json, sys\nfrom kafkalite.admin.settings import ADMIN_RULES\n"
              "ADMIN_RULES.resolve({'bootstrap.servers': '127.0.0.1:9092'})\n"
              "print(json.dumps(sorted(m for m in sys.modules if m.startswith('kafkalite.'))))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "kafkalite.settings" in loaded
    assert not [m for m in loaded if m.split(".")[1] in ("producer", "consumer", "share")], loaded
