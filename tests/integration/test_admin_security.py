"""ACLs, SCRAM credentials, quotas and authorization errors on a broker with the
StandardAuthorizer and a SASL_PLAINTEXT listener (the harness's security preset).

Kafka's own tools run on the PLAINTEXT listener, where the harness makes the anonymous
user a super user; kafkalite's clients log in over SASL (PLAIN, SCRAM-SHA-256/512).
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite import AdminClient, NewTopic
from kafkalite.admin.security_types import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    ResourcePattern,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafkalite.admin.types import ConfigResource
from kafkalite.errors import (
    InvalidRequestError,
    ResourceNotFoundError,
    SaslAuthenticationError,
    TopicAuthorizationError,
    UnacceptableCredentialError,
)
from kafkalite.testing.topics import unique_topic_name
from tests.integration.admin_support import tool, wait_until

pytestmark = pytest.mark.broker


def sasl_admin(broker: Any, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> AdminClient:
    return AdminClient({
        "bootstrap.servers": broker.bootstrap_for("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.username": user, "sasl.password": password,
        "default.api.timeout.ms": 20000,
    })


@pytest.fixture(scope="module")
def admin(kafka_broker_sasl):
    with sasl_admin(kafka_broker_sasl, "admin", "admin-secret") as client:
        yield client


def test_admin_logs_in_with_each_mechanism(kafka_broker_sasl) -> None:
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        with sasl_admin(kafka_broker_sasl, "admin", "admin-secret", mechanism) as client:
            assert [n.id for n in client.describe_cluster().nodes] == [1]


def test_acls_create_describe_delete(admin, kafka_broker_sasl) -> None:
    prefix = unique_topic_name("acl")
    read = AclBinding(ResourcePattern("topic", prefix, "prefixed"),
                      AccessControlEntry("User:alice", "*", "read", "allow"))
    write = AclBinding(ResourcePattern("topic", f"{prefix}-out"), AccessControlEntry("User:alice", "*", "write", "allow"))
    group = AclBinding(ResourcePattern("group", f"{prefix}-g"), AccessControlEntry("User:bob", "*", "read", "deny"))
    bad = AclBinding(ResourcePattern("topic", prefix), AccessControlEntry("alice", "*", "read", "allow"))
    created = admin.create_acls([read, write, group, bad])
    assert created[read].ok and created[write].ok and created[group].ok
    assert isinstance(created[bad].error, InvalidRequestError) and prefix in str(created[bad].error)

    alice = admin.describe_acls(AclBindingFilter(principal="User:alice"))
    assert {read, write} <= set(alice) and group not in alice
    matching = admin.describe_acls(AclBindingFilter("topic", f"{prefix}-out", "match"))
    assert set(matching) == {read, write}

    listed = tool(kafka_broker_sasl, "kafka-acls", "--list", "--topic", f"{prefix}-out",
                  "--resource-pattern-type", "match")
    assert "principal=User:alice" in listed and "operation=WRITE" in listed and "operation=READ" in listed

    deleted = admin.delete_acls([AclBindingFilter(principal="User:alice", resource_type="topic", name=prefix,
                                                  pattern_type="prefixed"),
                                 AclBindingFilter.for_binding(group)])
    assert deleted[AclBindingFilter(principal="User:alice", resource_type="topic", name=prefix,
                                    pattern_type="prefixed")].result() == [read]
    assert deleted[AclBindingFilter.for_binding(group)].result() == [group]
    remaining = tool(kafka_broker_sasl, "kafka-acls", "--list", "--topic", f"{prefix}-out",
                     "--resource-pattern-type", "match")
    assert "operation=READ" not in remaining and "operation=WRITE" in remaining
    admin.delete_acls([AclBindingFilter.for_binding(write)]).all()


def test_missing_permissions_are_typed_per_item(admin, kafka_broker_sasl) -> None:
    topic = unique_topic_name("authz")
    with sasl_admin(kafka_broker_sasl, "alice", "alice-secret", "SCRAM-SHA-256") as alice:
        result = alice.create_topics([NewTopic(topic, 1, 1)])
        err = result[topic].error
        assert isinstance(err, TopicAuthorizationError) and err.topic == topic
        admin.create_acls([AclBinding(ResourcePattern("topic", topic),
                                      AccessControlEntry("User:alice", "*", "create", "allow"))]).all()
        alice.create_topics([NewTopic(topic, 1, 1)]).all()
        res = ConfigResource("topic", topic)
        denied = alice.describe_configs([res])[res].error
        assert isinstance(denied, TopicAuthorizationError) and denied.topic == topic
    admin.delete_acls([AclBindingFilter(name=topic, resource_type="topic")]).all()


def test_scram_credentials_alter_describe_and_log_in(admin, kafka_broker_sasl) -> None:
    user = unique_topic_name("carol")
    result = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion(user, "SCRAM-SHA-256", "carol-secret", iterations=8192),
        UserScramCredentialUpsertion(user, ScramMechanism.SCRAM_SHA_512, "carol-secret"),
        UserScramCredentialUpsertion("dave", "SCRAM-SHA-256", "pw", iterations=100),
    ])
    assert result[user].ok
    assert isinstance(result["dave"].error, UnacceptableCredentialError) and "dave" in str(result["dave"].error)

    # The broker answers from its metadata cache, which applies the controller's records a
    # moment after the alter returned: wait for them (a busy machine makes it seconds).
    def mechanisms(users: list[str]) -> Any:
        answer = admin.describe_user_scram_credentials(users)
        if answer[user].error is not None:
            return None
        return answer, {(c.mechanism, c.iterations) for c in answer[user].result().credentials}

    expected = {(ScramMechanism.SCRAM_SHA_256, 8192), (ScramMechanism.SCRAM_SHA_512, 4096)}
    described, info = wait_until(lambda: (m := mechanisms([user, "nobody-here"])) and m[1] == expected and m,
                                 60, "the broker to show both credentials")
    assert info == expected
    assert isinstance(described["nobody-here"].error, ResourceNotFoundError)
    assert user in admin.describe_user_scram_credentials()
    shown = tool(kafka_broker_sasl, "kafka-configs", "--describe", "--entity-type", "users", "--entity-name", user)
    assert "SCRAM-SHA-256=iterations=8192" in shown and "SCRAM-SHA-512=iterations=4096" in shown

    # The salted password we computed is what the broker checks a SCRAM login against.
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        with sasl_admin(kafka_broker_sasl, user, "carol-secret", mechanism) as carol:
            assert carol.describe_cluster().cluster_id
    with sasl_admin(kafka_broker_sasl, user, "wrong", "SCRAM-SHA-256") as carol, \
            pytest.raises(SaslAuthenticationError):
        carol.describe_cluster(timeout=10)

    admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, "SCRAM-SHA-256")]).all()
    _, remaining = wait_until(lambda: (m := mechanisms([user])) and len(m[1]) == 1 and m, 60,
                              "the broker to drop the SCRAM-SHA-256 credential")
    assert remaining == {(ScramMechanism.SCRAM_SHA_512, 4096)}
    admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, "SCRAM-SHA-512")]).all()


def test_client_quotas(admin, kafka_broker_sasl) -> None:
    user = unique_topic_name("quota-user")
    entity = ClientQuotaEntity(user=user)
    default_client = ClientQuotaEntity({"client-id": None})
    result = admin.alter_client_quotas([
        ClientQuotaAlteration(entity, {"producer_byte_rate": 1024, "consumer_byte_rate": 2048}),
        ClientQuotaAlteration(default_client, {"request_percentage": 50}),
        ClientQuotaAlteration(ClientQuotaEntity(user=f"{user}-bad"), {"no_such_quota": 1}),
    ])
    assert result[entity].ok and result[default_client].ok
    assert result[ClientQuotaEntity(user=f"{user}-bad")].error is not None
    try:
        quotas = wait_until(lambda: admin.describe_client_quotas([ClientQuotaFilterComponent("user", user)]),
                            what="the quota to apply")  # brokers apply quota records a moment later
        assert quotas == {entity: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}}
        defaults = admin.describe_client_quotas([ClientQuotaFilterComponent("client-id", default=True)], strict=True)
        assert defaults[default_client] == {"request_percentage": 50.0}
        shown = tool(kafka_broker_sasl, "kafka-configs", "--describe", "--entity-type", "users", "--entity-name", user)
        assert "producer_byte_rate=1024.0" in shown
    finally:
        admin.alter_client_quotas([
            ClientQuotaAlteration(entity, {"producer_byte_rate": None, "consumer_byte_rate": None}),
            ClientQuotaAlteration(default_client, {"request_percentage": None}),
        ]).all()
    wait_until(lambda: admin.describe_client_quotas([ClientQuotaFilterComponent("user", user)]) == {},
               what="the quota removal to apply")
