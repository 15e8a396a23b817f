"""Admin argument types, parsing and SCRAM salting (no broker)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from kafkalite.admin.group_types import GroupState, GroupType
from kafkalite.admin.groups import decode_assignment
from kafkalite.admin.offsets import _spec
from kafkalite.admin.scram import salted_password
from kafkalite.admin.security_types import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclPermissionType,
    AclResourceType,
    ClientQuotaEntity,
    PatternType,
    ResourcePattern,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafkalite.admin.types import (
    AclOperation,
    ConfigResource,
    NewTopic,
    OffsetSpec,
    ResourceType,
    decode_authorized_operations,
)
from kafkalite.errors import ConfigError
from kafkalite.protocol.messages.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
    ConsumerProtocolAssignmentTopicPartition,
)
from kafkalite.types import TopicPartition


def test_scram_salted_password_matches_rfc7677_test_vector() -> None:
    # RFC 7677 section 3: user "user", password "pencil"; the client proof is derived
    # from SaltedPassword, so matching it proves our Hi() is RFC 5802's.
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    salted = salted_password(ScramMechanism.SCRAM_SHA_256, "pencil", salt, 4096)
    auth_message = (
        b"n=user,r=rOprNGfwEbeRWgbNEkqO,"
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    signature = hmac.new(stored_key, auth_message, hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    assert base64.b64encode(proof).decode() == "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="


def test_scram_types_parse_mechanisms() -> None:
    assert ScramMechanism.parse("SCRAM-SHA-512") is ScramMechanism.SCRAM_SHA_512
    assert ScramMechanism.SCRAM_SHA_256.mechanism_name == "SCRAM-SHA-256"
    with pytest.raises(ConfigError, match="SCRAM mechanism"):
        UserScramCredentialUpsertion("u", "SCRAM-MD5", "pw")
    assert "pw" not in repr(UserScramCredentialUpsertion("u", "SCRAM-SHA-256", "pw"))


def test_config_resource_types() -> None:
    assert ConfigResource("topic", "t").type is ResourceType.TOPIC
    assert ConfigResource("brokers", 1).name == "1"
    assert ConfigResource("client-metrics", "m").type is ResourceType.CLIENT_METRICS
    assert ConfigResource(ResourceType.GROUP, "g") == ConfigResource("group", "g")
    assert ConfigResource(99, "x").type == 99  # left for the broker to refuse, per item
    assert str(ConfigResource("broker", "")) == "broker default"
    with pytest.raises(ConfigError, match="unknown config resource type 'tpoic'"):
        ConfigResource("tpoic", "t")


def test_new_topic_needs_one_placement() -> None:
    NewTopic("t", replica_assignment={0: [1]})
    with pytest.raises(ConfigError, match="not both"):
        NewTopic("t", 3, 1, replica_assignment={0: [1]})


def test_offset_specs() -> None:
    assert _spec("earliest") == OffsetSpec.earliest()
    assert _spec("max-timestamp").timestamp == -3
    assert _spec(1234) == OffsetSpec.for_timestamp(1234)
    assert repr(OffsetSpec.latest()) == "OffsetSpec.latest()"
    with pytest.raises(ConfigError):
        _spec("yesterday")
    with pytest.raises(ConfigError):
        OffsetSpec.for_timestamp(-7)


def test_acl_types_parse_names_and_codes() -> None:
    binding = AclBinding(ResourcePattern("topic", "orders", "prefixed"),
                         AccessControlEntry("User:alice", "*", "read", "allow"))
    assert binding.pattern.resource_type is AclResourceType.TOPIC
    assert binding.pattern.pattern_type is PatternType.PREFIXED
    assert binding.entry.operation is AclOperation.READ
    assert binding.entry.permission_type is AclPermissionType.ALLOW
    assert ResourcePattern("transactional-id", "x").resource_type is AclResourceType.TRANSACTIONAL_ID
    f = AclBindingFilter.for_binding(binding)
    assert f.principal == "User:alice" and f.operation is AclOperation.READ
    assert "principal=User:alice" in str(f)
    with pytest.raises(ConfigError, match="unknown ACL operation 'reed'"):
        AccessControlEntry("User:a", "*", "reed", "allow")


def test_authorized_operations_bits() -> None:
    assert decode_authorized_operations(-(2**31)) is None
    bits = (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)
    assert decode_authorized_operations(bits) == {AclOperation.READ, AclOperation.DESCRIBE}


def test_group_enums() -> None:
    assert GroupState.parse("PreparingRebalance") is GroupState.PREPARING_REBALANCE
    assert GroupState.parse("stable") is GroupState.STABLE
    assert GroupState.parse("completing_rebalance") is GroupState.COMPLETING_REBALANCE
    assert GroupState.parse("bogus") is GroupState.UNKNOWN
    assert GroupType.parse("Consumer") is GroupType.CONSUMER


def test_classic_assignment_decoding() -> None:
    assignment = ConsumerProtocolAssignment(assigned_partitions=[
        ConsumerProtocolAssignmentTopicPartition(topic="a", partitions=[0, 2])])
    raw = (3).to_bytes(2, "big") + assignment.encode(3)
    assert decode_assignment(raw) == {TopicPartition("a", 0), TopicPartition("a", 2)}
    assert decode_assignment(b"") == set()


def test_quota_entity_is_hashable_and_named() -> None:
    e = ClientQuotaEntity({"user": "alice"}, client_id=None)
    assert e == ClientQuotaEntity(client_id=None, user="alice")
    assert e.as_dict() == {"client-id": None, "user": "alice"}
    assert "client-id=<default>" in str(e)
