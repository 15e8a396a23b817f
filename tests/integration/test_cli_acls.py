"""``kafkalite acls`` and user configs end to end on the SASL/ACL broker, logging in
through a --command-config properties file; cross-checked with kafka-acls."""

from __future__ import annotations

import json

import pytest

from kafkalite.testing.topics import unique_topic_name
from tests.integration.admin_support import kafkalite, tool

pytestmark = pytest.mark.broker


@pytest.fixture
def admin_config(tmp_path, kafka_broker_sasl) -> list[str]:
    path = tmp_path / "admin.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                    'username="admin" password="admin-secret";\n')
    return ["--bootstrap-server", kafka_broker_sasl.bootstrap_for("SASL_PLAINTEXT"), "--command-config", str(path)]


def test_acls_add_list_remove(kafka_broker_sasl, admin_config) -> None:
    topic = unique_topic_name("cli-acl")
    added = kafkalite("acls", *admin_config, "--add", "--allow-principal", "User:alice", "--operation", "read",
                      "--operation", "describe", "--topic", topic, "--group", f"{topic}-g")
    assert added.returncode == 0, added.stderr
    assert added.stdout.count("Added") == 4
    listed = json.loads(kafkalite("acls", *admin_config, "--list", "--topic", topic, "--json").stdout)
    assert {(a["principal"], a["operation"]) for a in listed} == {("User:alice", "READ"), ("User:alice", "DESCRIBE")}
    java = tool(kafka_broker_sasl, "kafka-acls", "--list", "--topic", topic)
    assert "principal=User:alice" in java and "operation=READ" in java and "operation=DESCRIBE" in java

    bad = kafkalite("acls", *admin_config, "--add", "--allow-principal", "alice", "--operation", "read",
                    "--topic", topic)
    assert bad.returncode == 1 and "INVALID_REQUEST" in bad.stderr and "Traceback" not in bad.stderr
    typo = kafkalite("acls", *admin_config, "--add", "--allow-principal", "User:a", "--operation", "raed",
                     "--topic", topic)
    assert typo.returncode == 2 and "unknown ACL operation 'raed'" in typo.stderr

    removed = kafkalite("acls", *admin_config, "--remove", "--topic", topic, "--operation", "read")
    assert removed.returncode == 0 and removed.stdout.count("Removed") == 1
    java = tool(kafka_broker_sasl, "kafka-acls", "--list", "--topic", topic)
    assert "operation=READ" not in java and "operation=DESCRIBE" in java
    kafkalite("acls", *admin_config, "--remove", "--topic", topic, "--group", f"{topic}-g")
    assert "User:alice" not in tool(kafka_broker_sasl, "kafka-acls", "--list", "--topic", topic)


def test_denied_user_gets_one_clear_line(tmp_path, kafka_broker_sasl) -> None:
    path = tmp_path / "alice.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=alice\n"
                    "sasl.password=alice-secret\n")
    topic = unique_topic_name("cli-denied")
    done = kafkalite("topics", "--bootstrap-server", kafka_broker_sasl.bootstrap_for("SASL_PLAINTEXT"),
                     "--command-config", str(path), "--create", "--topic", topic)
    assert done.returncode == 1
    assert "TOPIC_AUTHORIZATION_FAILED" in done.stderr and topic in done.stderr and done.stderr.count("\n") == 1


def test_user_scram_and_quota_configs(kafka_broker_sasl, admin_config) -> None:
    user = unique_topic_name("cli-user")
    base = ["configs", *admin_config, "--entity-type", "users", "--entity-name", user]
    done = kafkalite(*base, "--alter", "--add-config",
                     "SCRAM-SHA-512=[iterations=8192,password=pw-1],producer_byte_rate=4096")
    assert done.returncode == 0, done.stderr
    shown = json.loads(kafkalite(*base, "--describe", "--json").stdout)
    assert shown["scram"] == [{"mechanism": "SCRAM-SHA-512", "iterations": 8192}]
    java = tool(kafka_broker_sasl, "kafka-configs", "--describe", "--entity-type", "users", "--entity-name", user)
    assert "SCRAM-SHA-512=iterations=8192" in java
    # The new user can log in with the password the CLI salted.
    login = kafkalite("topics", "--bootstrap-server", kafka_broker_sasl.bootstrap_for("SASL_PLAINTEXT"),
                      "--command-config", _props(admin_config, user, "pw-1"), "--list")
    assert login.returncode == 0, login.stderr
    assert kafkalite(*base, "--alter", "--delete-config", "SCRAM-SHA-512,producer_byte_rate").returncode == 0


def _props(admin_config: list[str], user: str, password: str) -> str:
    path = admin_config[-1].replace("admin.properties", f"{user}.properties")
    with open(path, "w") as f:
        f.write(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.username={user}\n"
                f"sasl.password={password}\n")
    return path
