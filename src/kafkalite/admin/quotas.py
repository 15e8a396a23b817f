"""Client quota calls: describe (with entity filters) and alter (set / remove keys)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafkalite.admin.core import AdminCore, Outcome, outcome_for, raise_response_error
from kafkalite.admin.results import AdminResult
from kafkalite.admin.security_types import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
)
from kafkalite.errors import ConfigError
from kafkalite.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntityData,
    AlterClientQuotasRequestEntryData,
    AlterClientQuotasRequestOpData,
)
from kafkalite.protocol.messages.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasRequestComponentData,
)

_EXACT, _DEFAULT, _SPECIFIED = 0, 1, 2


async def describe_client_quotas(core: AdminCore, components: Iterable[ClientQuotaFilterComponent] = (), *,
                                 strict: bool = False,
                                 timeout: float | None = None) -> dict[ClientQuotaEntity, dict[str, float]]:
    """Quotas of the entities matching every component (none: all entities).

    ``strict``: only entities with exactly these entity types.
    """
    comps = [
        DescribeClientQuotasRequestComponentData(
            entity_type=c.entity_type,
            match_type=_EXACT if c.match is not None else (_DEFAULT if c.default else _SPECIFIED),
            match=c.match)
        for c in components
    ]

    async def send(node: int, deadline: float) -> dict[ClientQuotaEntity, dict[str, float]]:
        response, _ = await core.send(node, DescribeClientQuotasRequest(components=comps, strict=strict), deadline)
        raise_response_error(response.error_code, response.error_message, "describe_client_quotas")
        return {
            ClientQuotaEntity({e.entity_type: e.entity_name for e in entry.entity}):
                {v.key: v.value for v in entry.values}
            for entry in response.entries or []
        }

    return await core.run_single("describe_client_quotas", core.route_any, send, timeout)


async def alter_client_quotas(core: AdminCore, alterations: Iterable[ClientQuotaAlteration], *,
                              validate_only: bool = False,
                              timeout: float | None = None) -> AdminResult[ClientQuotaEntity, None]:
    """Set (a value) or remove (None) quota keys, per entity."""
    by_entity: dict[ClientQuotaEntity, Mapping[str, float | None]] = {}
    for a in alterations:
        if not isinstance(a, ClientQuotaAlteration):
            raise ConfigError(f"expected ClientQuotaAlteration objects, got {a!r}")
        if a.entity in by_entity:
            raise ConfigError(f"{a.entity} is altered twice in one call")
        by_entity[a.entity] = a.ops

    async def send(node: int, items: list[ClientQuotaEntity], deadline: float) -> Mapping[ClientQuotaEntity, Outcome[None]]:
        request = AlterClientQuotasRequest(
            entries=[AlterClientQuotasRequestEntryData(
                entity=[AlterClientQuotasRequestEntityData(entity_type=k, entity_name=v) for k, v in e.entries],
                ops=[AlterClientQuotasRequestOpData(key=k, value=0.0 if v is None else float(v), remove=v is None)
                     for k, v in by_entity[e].items()])
                for e in items],
            validate_only=validate_only)
        response, _ = await core.send(node, request, deadline)
        out: dict[ClientQuotaEntity, Outcome[None]] = {}
        for r in response.entries:
            entity = ClientQuotaEntity({d.entity_type: d.entity_name for d in r.entity})
            out[entity] = outcome_for(r.error_code, r.error_message, resource=str(entity))
        return out

    return await core.run_batch("alter_client_quotas", list(by_entity), core.route_any, send, timeout,
                                resource_of=lambda e: {"resource": str(e)})
