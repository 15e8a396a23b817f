"""Arguments and results of the security calls: ACLs, SCRAM credentials, client quotas.

Example::

    from kafkalite.admin import AclBinding, ResourcePattern, AccessControlEntry
    binding = AclBinding(ResourcePattern("topic", "orders"),
                         AccessControlEntry("User:alice", "*", "read", "allow"))
    admin.create_acls([binding]).all()
    admin.describe_acls(AclBindingFilter.any())
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from kafkalite.admin.types import AclOperation
from kafkalite.errors import ConfigError


class AclResourceType(enum.IntEnum):
    """The kind of resource an ACL protects (``ANY`` matches every kind in a filter).

    Example (needs secured_broker)::

        pattern = ResourcePattern(AclResourceType.TRANSACTIONAL_ID, "billing-", PatternType.PREFIXED)
        admin.create_acls([AclBinding(pattern, AccessControlEntry("User:alice", "*", "write", "allow"))]).all()
    """

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    """How an ACL's resource name matches: ``LITERAL``, ``PREFIXED``; ``ANY`` / ``MATCH`` in filters.

    Example (needs secured_broker)::

        pattern = ResourcePattern("topic", "orders-", PatternType.PREFIXED)    # every topic named orders-*
        admin.create_acls([AclBinding(pattern, AccessControlEntry("User:alice", "*", "read", "allow"))]).all()
    """

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclPermissionType(enum.IntEnum):
    """Whether an ACL allows or denies (``ANY`` matches both in a filter).

    Example (needs secured_broker)::

        deny = AccessControlEntry("User:mallory", "*", "all", AclPermissionType.DENY)
        admin.create_acls([AclBinding(ResourcePattern("topic", "orders"), deny)]).all()
    """

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


E = TypeVar("E", bound=enum.IntEnum)
#: An enum argument as callers may give it: the member, its name in any case, or its code.
EnumArg = enum.IntEnum | str | int


def parse_enum(cls: type[E], value: object, what: str) -> E:
    """Parse an enum member from itself, its name in any case (``transactional-id``), or its code.

    Example::

        from kafkalite.admin.security_types import parse_enum
        assert parse_enum(PatternType, "prefixed", "pattern type") is PatternType.PREFIXED
    """
    if isinstance(value, cls):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            pass
    else:
        key = str(value).strip().upper().replace("-", "_").replace(" ", "_")
        if key in cls.__members__:
            return cls.__members__[key]
    names = ", ".join(m.name.lower() for m in cls if m.name != "UNKNOWN")
    raise ConfigError(f"unknown {what} {value!r} (expected one of: {names})")


# These dataclasses take enum arguments in any form (EnumArg) and hold the members: their
# __init__ is written out (init=False) so that the fields have the members' types.


@dataclass(frozen=True, init=False)
class ResourcePattern:
    """What an ACL applies to: a resource type, a name (or prefix) and a pattern type.

    Example::

        pattern = ResourcePattern("group", "billing")
        assert str(pattern) == "GROUP:LITERAL:billing"
    """

    resource_type: AclResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __init__(self, resource_type: EnumArg, name: str, pattern_type: EnumArg = PatternType.LITERAL) -> None:
        object.__setattr__(self, "resource_type", parse_enum(AclResourceType, resource_type, "resource type"))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "pattern_type", parse_enum(PatternType, pattern_type, "pattern type"))

    def __str__(self) -> str:
        return f"{self.resource_type.name}:{self.pattern_type.name}:{self.name}"


@dataclass(frozen=True, init=False)
class AccessControlEntry:
    """Who (``User:alice``), from where (``*``), may or may not do what.

    Example::

        entry = AccessControlEntry("User:alice", "*", "describe", "allow")
        assert entry.operation is AclOperation.DESCRIBE
    """

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __init__(self, principal: str, host: str, operation: EnumArg, permission_type: EnumArg) -> None:
        object.__setattr__(self, "principal", principal)
        object.__setattr__(self, "host", host)
        object.__setattr__(self, "operation", parse_enum(AclOperation, operation, "ACL operation"))
        object.__setattr__(self, "permission_type", parse_enum(AclPermissionType, permission_type, "permission type"))

    def __str__(self) -> str:
        return f"{self.principal} {self.permission_type.name} {self.operation.name} from {self.host}"


@dataclass(frozen=True)
class AclBinding:
    """An ACL: a resource pattern and the access control entry that applies to it.

    Example (needs secured_broker)::

        binding = AclBinding(ResourcePattern("topic", "payments"), AccessControlEntry("User:bob", "*", "write", "allow"))
        admin.create_acls([binding]).all()
        assert binding in admin.describe_acls(AclBindingFilter.for_binding(binding))
    """

    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return f"ACL ({self.entry} on {self.pattern})"


@dataclass(frozen=True, init=False)
class AclBindingFilter:
    """Matches ACL bindings; ``None`` fields and ANY enums match anything.

    ``pattern_type`` MATCH finds every ACL that applies to ``name`` (literal, wildcard and
    prefixed ones), as ``kafka-acls --resource-pattern-type match`` does.

    Example (needs secured_broker)::

        for binding in admin.describe_acls(AclBindingFilter(principal="User:alice")):
            print(binding)
    """

    resource_type: AclResourceType = AclResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def __init__(self, resource_type: EnumArg = AclResourceType.ANY, name: str | None = None,
                 pattern_type: EnumArg = PatternType.ANY, principal: str | None = None, host: str | None = None,
                 operation: EnumArg = AclOperation.ANY, permission_type: EnumArg = AclPermissionType.ANY) -> None:
        object.__setattr__(self, "resource_type", parse_enum(AclResourceType, resource_type, "resource type"))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "pattern_type", parse_enum(PatternType, pattern_type, "pattern type"))
        object.__setattr__(self, "principal", principal)
        object.__setattr__(self, "host", host)
        object.__setattr__(self, "operation", parse_enum(AclOperation, operation, "ACL operation"))
        object.__setattr__(self, "permission_type", parse_enum(AclPermissionType, permission_type, "permission type"))

    @classmethod
    def any(cls) -> AclBindingFilter:
        """A filter that matches every ACL binding.

        Example (needs secured_broker)::

            for binding in admin.describe_acls(AclBindingFilter.any()):
                print(binding)
        """
        return cls()

    @classmethod
    def for_binding(cls, binding: AclBinding) -> AclBindingFilter:
        """The filter that matches exactly ``binding``.

        Example (needs secured_broker)::

            binding = AclBinding(ResourcePattern("topic", "refunds"), AccessControlEntry("User:erin", "*", "read", "allow"))
            admin.create_acls([binding]).all()
            assert admin.delete_acls([AclBindingFilter.for_binding(binding)]).all()
        """
        p, e = binding.pattern, binding.entry
        return cls(p.resource_type, p.name, p.pattern_type, e.principal, e.host, e.operation, e.permission_type)

    def __str__(self) -> str:
        parts = [f"{k}={v.name if isinstance(v, enum.Enum) else v}" for k, v in self.__dict__.items()
                 if v is not None and not (isinstance(v, enum.Enum) and v.name == "ANY")]
        return f"ACL filter ({', '.join(parts) or 'any'})"


# ------------------------------------------------------------------ SCRAM


class ScramMechanism(enum.IntEnum):
    """A SCRAM mechanism of a user's credential (KIP-554).

    Example::

        ScramMechanism.SCRAM_SHA_256.mechanism_name   # "SCRAM-SHA-256"
    """

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @classmethod
    def parse(cls, value: object) -> ScramMechanism:
        if isinstance(value, str):
            value = value.replace("-", "_")
        return parse_enum(cls, value, "SCRAM mechanism")


@dataclass(frozen=True)
class ScramCredentialInfo:
    """One SCRAM credential of a user: its mechanism and iteration count (never the secret).

    Example::

        admin.alter_user_scram_credentials([UserScramCredentialUpsertion("frank", "SCRAM-SHA-512", "secret")]).all()
        (info,) = admin.describe_user_scram_credentials(["frank"])["frank"].result().credentials
        assert (info.mechanism, info.iterations) == (ScramMechanism.SCRAM_SHA_512, 4096)
    """

    mechanism: ScramMechanism
    iterations: int


@dataclass
class UserScramCredentialsDescription:
    """A user's SCRAM credentials as ``describe_user_scram_credentials`` reports them.

    Example::

        admin.alter_user_scram_credentials([UserScramCredentialUpsertion("grace", "SCRAM-SHA-256", "secret")]).all()
        description = admin.describe_user_scram_credentials(["grace"])["grace"].result()
        assert description.user == "grace" and len(description.credentials) == 1
    """

    user: str
    credentials: list[ScramCredentialInfo] = field(default_factory=list)


@dataclass(frozen=True, init=False)
class UserScramCredentialUpsertion:
    """Create or replace a user's credential for one mechanism.

    The password never leaves the client: it is salted and hashed here (RFC 5802
    ``Hi()`` = PBKDF2-HMAC with ``iterations``) and only salt + salted password are sent.
    ``salt`` defaults to 32 random bytes.

    Example::

        upsert = UserScramCredentialUpsertion("heidi", "SCRAM-SHA-256", "heidi-secret", iterations=8192)
        admin.alter_user_scram_credentials([upsert]).all()      # salted here; the password is never sent
    """

    user: str
    mechanism: ScramMechanism
    password: str = field(repr=False)
    iterations: int = 4096
    salt: bytes | None = field(default=None, repr=False)

    def __init__(self, user: str, mechanism: EnumArg, password: str, iterations: int = 4096,
                 salt: bytes | None = None) -> None:
        object.__setattr__(self, "user", user)
        object.__setattr__(self, "mechanism", ScramMechanism.parse(mechanism))
        object.__setattr__(self, "password", password)
        object.__setattr__(self, "iterations", iterations)
        object.__setattr__(self, "salt", salt)
        if self.mechanism == ScramMechanism.UNKNOWN:
            raise ConfigError(f"user '{self.user}': pick SCRAM-SHA-256 or SCRAM-SHA-512")


@dataclass(frozen=True, init=False)
class UserScramCredentialDeletion:
    """Deletes a user's SCRAM credential of one mechanism (``alter_user_scram_credentials``).

    Example::

        admin.alter_user_scram_credentials([UserScramCredentialUpsertion("ivan", "SCRAM-SHA-256", "s")]).all()
        admin.alter_user_scram_credentials([UserScramCredentialDeletion("ivan", "SCRAM-SHA-256")]).all()
    """

    user: str
    mechanism: ScramMechanism

    def __init__(self, user: str, mechanism: EnumArg) -> None:
        object.__setattr__(self, "user", user)
        object.__setattr__(self, "mechanism", ScramMechanism.parse(mechanism))


# ------------------------------------------------------------------ quotas


@dataclass(frozen=True)
class ClientQuotaEntity:
    """Whom a quota applies to: ``{"user": "alice", "client-id": None}``.

    Entity types are ``user``, ``client-id`` and ``ip``; a None name is the default
    entity of that type (``--entity-default`` in kafka-configs).

    Example::

        entity = ClientQuotaEntity(user="judy")                 # or {"user": "judy", "client-id": "app"}
        admin.alter_client_quotas([ClientQuotaAlteration(entity, {"request_percentage": 50.0})]).all()
    """

    entries: tuple[tuple[str, str | None], ...]

    def __init__(self, entries: Mapping[str, str | None] | None = None, **kw: str | None) -> None:
        merged = dict(entries or {})
        merged.update({k.replace("_", "-"): v for k, v in kw.items()})
        object.__setattr__(self, "entries", tuple(sorted(merged.items())))

    def as_dict(self) -> dict[str, str | None]:
        """The entity as ``{entity type: name}`` (``None``: the default entity of that type).

        Example::

            assert ClientQuotaEntity({"user": "judy", "client-id": "app"}).as_dict() == {"user": "judy", "client-id": "app"}
        """
        return dict(self.entries)

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={'<default>' if v is None else v}" for k, v in self.entries)
        return f"quota entity ({inner})"


@dataclass(frozen=True)
class ClientQuotaFilterComponent:
    """``match``: an exact name, None with ``default=True`` for the default entity, or
    None for any entity of the type ("specified").

    Example::

        everyone = admin.describe_client_quotas([ClientQuotaFilterComponent("user")])   # any user entity
        for entity, quotas in everyone.items():
            print(entity, quotas)
    """

    entity_type: str
    match: str | None = None
    default: bool = False


@dataclass
class ClientQuotaAlteration:
    """Quota changes for one entity: ``ops`` maps a quota key (``producer_byte_rate``,
    ``consumer_byte_rate``, ``request_percentage``, ``controller_mutation_rate``,
    ``connection_creation_rate``) to a new value or None to remove it.

    Example::

        entity = ClientQuotaEntity({"client-id": "batch-jobs"})
        admin.alter_client_quotas([ClientQuotaAlteration(entity, {"producer_byte_rate": 524288.0})]).all()
    """

    entity: ClientQuotaEntity
    ops: Mapping[str, float | None]
