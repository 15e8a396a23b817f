"""SCRAM credential calls: describe and alter (upsert / delete) per user.

Passwords never travel: an upsertion carries a random salt and the salted password
``Hi(password, salt, iterations)`` of RFC 5802 (PBKDF2 with HMAC-SHA-256 or -512),
which is exactly what the broker stores and what a SCRAM login checks against (KIP-554).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.admin.core import AdminCore, Fail, Outcome, Retry, outcome_for, raise_response_error
from kafkalite.admin.results import AdminResult, ItemResult
from kafkalite.admin.security_types import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from kafkalite.errors import ConfigError, ResourceNotFoundError
from kafkalite.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsRequestScramCredentialDeletion,
    AlterUserScramCredentialsRequestScramCredentialUpsertion,
)
from kafkalite.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequestUserName,
)

_HASHES = {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}
SALT_BYTES = 32


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802 ``Hi(Normalize(password), salt, i)``: PBKDF2-HMAC over the UTF-8 password."""
    return hashlib.pbkdf2_hmac(_HASHES[mechanism], password.encode("utf-8"), salt, iterations)


def _user(key: Any) -> dict[str, Any]:
    return {"resource": f"user '{key}'"}


async def describe_user_scram_credentials(
    core: AdminCore, users: Iterable[str] | None = None, *, timeout: float | None = None,
) -> AdminResult[str, UserScramCredentialsDescription]:
    """Mechanisms and iteration counts per user (never the credentials themselves).

    ``users=None`` describes every user that has a SCRAM credential. An unknown user
    fails with RESOURCE_NOT_FOUND on its own item.
    """
    names = None if users is None else list(dict.fromkeys(users))

    async def fetch(node: int, deadline: float) -> Any:
        request = DescribeUserScramCredentialsRequest(
            users=None if names is None else [DescribeUserScramCredentialsRequestUserName(name=n) for n in names])
        response, _ = await core.send(node, request, deadline)
        raise_response_error(response.error_code, response.error_message, "describe_user_scram_credentials")
        return response

    response = await core.run_single("describe_user_scram_credentials", core.route_any, fetch, timeout)
    outcomes: dict[str, Outcome[UserScramCredentialsDescription]] = {}
    for r in response.results:
        outcome = outcome_for(r.error_code, r.error_message, **_user(r.user))
        outcomes[r.user] = outcome if outcome is not None else UserScramCredentialsDescription(
            r.user, [ScramCredentialInfo(ScramMechanism.parse(c.mechanism), c.iterations) for c in r.credential_infos])
    keys = names if names is not None else sorted(outcomes)
    items: dict[str, ItemResult[UserScramCredentialsDescription]] = {}
    for k in keys:
        o = outcomes.get(k)
        if o is None:
            items[k] = ItemResult(error=ResourceNotFoundError("the broker did not describe this user", **_user(k)))
        elif isinstance(o, (Fail, Retry)):
            items[k] = ItemResult(error=o.error)
        else:
            items[k] = ItemResult(o)
    return AdminResult("describe_user_scram_credentials", items)


async def alter_user_scram_credentials(
    core: AdminCore, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion], *,
    timeout: float | None = None,
) -> AdminResult[str, None]:
    """Upsert or delete SCRAM credentials; results are keyed by user name."""
    changes = list(alterations)
    by_user: dict[str, list[Any]] = {}
    for a in changes:
        if not isinstance(a, (UserScramCredentialUpsertion, UserScramCredentialDeletion)):
            raise ConfigError(f"expected UserScramCredentialUpsertion/Deletion, got {a!r}")
        by_user.setdefault(a.user, []).append(a)
    # Salt once per call, so retries send the same credential.
    salted: dict[int, tuple[bytes, bytes]] = {}
    for a in changes:
        if isinstance(a, UserScramCredentialUpsertion):
            salt = a.salt if a.salt is not None else os.urandom(SALT_BYTES)
            salted[id(a)] = (salt, salted_password(a.mechanism, a.password, salt, a.iterations))

    async def send(node: int, users: list[str], deadline: float) -> Mapping[str, Outcome[None]]:
        # The broker refuses a request that names a user twice (DUPLICATE_RESOURCE), even
        # for two mechanisms: the k-th change of every user goes into the k-th request.
        out: dict[str, Outcome[None]] = {}
        rounds = max(len(by_user[u]) for u in users)
        for k in range(rounds):
            items = [by_user[u][k] for u in users if k < len(by_user[u]) and out.get(u) is None]
            if not items:
                break
            request = AlterUserScramCredentialsRequest(
                deletions=[AlterUserScramCredentialsRequestScramCredentialDeletion(name=a.user,
                                                                                   mechanism=int(a.mechanism))
                           for a in items if isinstance(a, UserScramCredentialDeletion)],
                upsertions=[AlterUserScramCredentialsRequestScramCredentialUpsertion(
                    name=a.user, mechanism=int(a.mechanism), iterations=a.iterations,
                    salt=salted[id(a)][0], salted_password=salted[id(a)][1])
                    for a in items if isinstance(a, UserScramCredentialUpsertion)],
            )
            response, _ = await core.send(node, request, deadline)
            for r in response.results:
                out[r.user] = outcome_for(r.error_code, r.error_message, **_user(r.user))
        return out

    return await core.run_batch("alter_user_scram_credentials", list(by_user), core.route_any, send, timeout,
                                resource_of=_user)
