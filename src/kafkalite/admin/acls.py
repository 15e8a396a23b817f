"""ACL calls: create, describe and delete with filters (any broker; KRaft forwards).

Results are keyed by the binding (create) or the filter (delete) the caller passed;
each names itself in its error (e.g. a SECURITY_DISABLED broker, an invalid principal).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.admin.core import AdminCore, Fail, Outcome, outcome_for, raise_response_error
from kafkalite.admin.results import AdminResult
from kafkalite.admin.security_types import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    ResourcePattern,
)
from kafkalite.errors import ConfigError, error_for_code
from kafkalite.protocol.messages.create_acls import CreateAclsRequest, CreateAclsRequestAclCreation
from kafkalite.protocol.messages.delete_acls import (
    DeleteAclsRequest,
    DeleteAclsRequestDeleteAclsFilter,
)
from kafkalite.protocol.messages.describe_acls import DescribeAclsRequest


def _resource(key: Any) -> dict[str, Any]:
    return {"resource": str(key)}


def _binding(resource_type: int, name: str, pattern_type: int, principal: str, host: str,
             operation: int, permission_type: int) -> AclBinding:
    return AclBinding(ResourcePattern(resource_type, name, pattern_type),
                      AccessControlEntry(principal, host, operation, permission_type))


async def create_acls(core: AdminCore, bindings: Iterable[AclBinding], *,
                      timeout: float | None = None) -> AdminResult[AclBinding, None]:
    keys = list(dict.fromkeys(bindings))
    for b in keys:
        if not isinstance(b, AclBinding):
            raise ConfigError(f"create_acls takes AclBinding objects, got {b!r}")

    async def send(node: int, items: list[AclBinding], deadline: float) -> Mapping[AclBinding, Outcome[None]]:
        request = CreateAclsRequest(creations=[
            CreateAclsRequestAclCreation(
                resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
                resource_pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal,
                host=b.entry.host, operation=int(b.entry.operation),
                permission_type=int(b.entry.permission_type))
            for b in items])
        response, _ = await core.send(node, request, deadline)
        # Results come back in the order of the creations.
        return {b: outcome_for(r.error_code, r.error_message, resource=str(b))
                for b, r in zip(items, response.results)}

    return await core.run_batch("create_acls", keys, core.route_any, send, timeout, resource_of=_resource)


def _filter_fields(f: AclBindingFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": int(f.resource_type), "resource_name_filter": f.name,
        "pattern_type_filter": int(f.pattern_type), "principal_filter": f.principal,
        "host_filter": f.host, "operation": int(f.operation), "permission_type": int(f.permission_type),
    }


async def describe_acls(core: AdminCore, acl_filter: AclBindingFilter | None = None, *,
                        timeout: float | None = None) -> list[AclBinding]:
    """Every ACL binding matching ``acl_filter`` (default: all)."""
    f = acl_filter or AclBindingFilter.any()

    async def send(node: int, deadline: float) -> list[AclBinding]:
        response, _ = await core.send(node, DescribeAclsRequest(**_filter_fields(f)), deadline)
        raise_response_error(response.error_code, response.error_message, "describe_acls", resource=str(f))
        return [
            _binding(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation,
                     a.permission_type)
            for r in response.resources for a in r.acls
        ]

    return await core.run_single("describe_acls", core.route_any, send, timeout)


async def delete_acls(core: AdminCore, filters: Iterable[AclBindingFilter], *,
                      timeout: float | None = None) -> AdminResult[AclBindingFilter, list[AclBinding]]:
    """Delete the ACLs matching each filter; each filter's value is what it deleted."""
    keys = list(dict.fromkeys(filters))

    async def send(node: int, items: list[AclBindingFilter], deadline: float) -> Mapping[AclBindingFilter, Outcome[list[AclBinding]]]:
        request = DeleteAclsRequest(filters=[DeleteAclsRequestDeleteAclsFilter(**_filter_fields(f)) for f in items])
        response, _ = await core.send(node, request, deadline)
        out: dict[AclBindingFilter, Outcome[list[AclBinding]]] = {}
        for f, r in zip(items, response.filter_results):
            outcome = outcome_for(r.error_code, r.error_message, resource=str(f))
            if outcome is not None:
                out[f] = outcome
                continue
            deleted = []
            for m in r.matching_acls:
                if m.error_code:
                    outcome = Fail(error_for_code(m.error_code, m.error_message, resource=str(f)))
                    break
                deleted.append(_binding(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host,
                                        m.operation, m.permission_type))
            out[f] = outcome if outcome is not None else deleted
        return out

    return await core.run_batch("delete_acls", keys, core.route_any, send, timeout, resource_of=_resource)
