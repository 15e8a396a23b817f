"""Config calls: describe (with sources and synonyms), incremental alter, list resources.

Resources of type BROKER or BROKER_LOGGER that name a broker id go to that broker (only
it knows its static and per-broker configs, as in Java's AdminClient); everything else
(topics, groups, client metrics, the cluster-wide broker default ``""``) goes to any
broker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafkalite.admin.core import (
    AdminCore,
    Outcome,
    Route,
    Router,
    outcome_for,
    raise_response_error,
)
from kafkalite.admin.results import AdminResult
from kafkalite.admin.types import (
    AlterConfigOp,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    ResourceType,
    resource_type,
)
from kafkalite.errors import ConfigError, KafkaError
from kafkalite.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsRequestDescribeConfigsResource,
)
from kafkalite.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)
from kafkalite.protocol.messages.list_config_resources import ListConfigResourcesRequest


def resource_context(resource: Any) -> dict[str, Any]:
    """Error context naming a config resource (topic / group fields where they fit)."""
    if not isinstance(resource, ConfigResource):
        return {}
    if resource.type == ResourceType.TOPIC:
        return {"topic": resource.name}
    if resource.type == ResourceType.GROUP:
        return {"group_id": resource.name}
    return {"resource": f"config resource {resource}"}


def _broker_router(core: AdminCore) -> Router[ConfigResource]:
    async def route(keys: list[ConfigResource], deadline: float) -> Route[ConfigResource]:
        meta = await core.ensure_metadata(deadline)
        if any(_broker_id(r) not in (None, *meta.brokers) for r in keys):
            # A broker that just (re)started is missing from cached metadata: ask again
            # before saying it does not exist.
            meta = await core.ensure_metadata(deadline, force=True)
        by_node: dict[int, list[Any]] = {}
        failed: dict[Any, KafkaError] = {}
        for r in keys:
            node = -1
            if r.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER) and r.name != "":
                try:
                    node = int(r.name)
                except ValueError:
                    failed[r] = ConfigError("a broker resource is named by the broker id (an integer)")
                    continue
                if node not in meta.brokers:
                    # Kafka names a missing broker this way too (the request would go nowhere).
                    failed[r] = ConfigError(f"no broker with id {node} in the cluster")
                    continue
            target = node if node >= 0 else core.client.least_loaded_node()
            by_node.setdefault(target, []).append(r)
        return by_node, failed

    return route


def _broker_id(r: ConfigResource) -> int | None:
    """The broker a per-broker resource names (None: any broker will do, or not a number)."""
    if r.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER) and r.name.strip().isdigit():
        return int(r.name)
    return None


def _key(resource_type_code: int, name: str) -> tuple[int, str]:
    return int(resource_type_code), name


async def describe_configs(core: AdminCore, resources: Iterable[ConfigResource], *,
                           config_names: Mapping[ConfigResource, Sequence[str]] | None = None,
                           include_synonyms: bool = False, include_documentation: bool = False,
                           timeout: float | None = None) -> AdminResult[ConfigResource, dict[str, ConfigEntry]]:
    """Describe resources: ``{resource: {config name: ConfigEntry}}`` per resource.

    ``config_names`` restricts some resources to the named configs.
    """
    keys = list(dict.fromkeys(_as_resource(r) for r in resources))
    names = config_names or {}

    async def send(node: int, items: list[ConfigResource], deadline: float) -> Mapping[ConfigResource, Outcome[dict[str, ConfigEntry]]]:
        request = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequestDescribeConfigsResource(
                    resource_type=int(r.type), resource_name=r.name,
                    configuration_keys=list(names[r]) if r in names else None)
                for r in items
            ],
            include_synonyms=include_synonyms,
            include_documentation=include_documentation,
        )
        response, _ = await core.send(node, request, deadline)
        by_key = {_key(r.type, r.name): r for r in items}
        out: dict[ConfigResource, Outcome[dict[str, ConfigEntry]]] = {}
        for res in response.results:
            r = by_key.get(_key(res.resource_type, res.resource_name))
            if r is None:
                continue
            outcome = outcome_for(res.error_code, res.error_message, **resource_context(r))
            if outcome is not None:
                out[r] = outcome
                continue
            out[r] = {c.name: _entry(c) for c in res.configs}
        return out

    return await core.run_batch("describe_configs", keys, _broker_router(core), send, timeout,
                                resource_of=resource_context)


def _entry(c: Any) -> ConfigEntry:
    try:
        ctype = ConfigType(c.config_type)
    except ValueError:
        ctype = ConfigType.UNKNOWN
    return ConfigEntry(
        c.name, c.value, ConfigSource.of(c.config_source), c.is_sensitive, c.read_only,
        [ConfigSynonym(s.name, s.value, ConfigSource.of(s.source)) for s in c.synonyms or []],
        ctype, c.documentation,
    )


def _as_resource(r: Any) -> ConfigResource:
    if isinstance(r, ConfigResource):
        return r
    if isinstance(r, tuple) and len(r) == 2:
        return ConfigResource(r[0], r[1])
    raise ConfigError(f"expected a ConfigResource, got {r!r}")


async def incremental_alter_configs(core: AdminCore,
                                    changes: Mapping[ConfigResource, Iterable[AlterConfigOp]], *,
                                    validate_only: bool = False,
                                    timeout: float | None = None) -> AdminResult[ConfigResource, None]:
    """Apply SET / DELETE / APPEND / SUBTRACT operations, per resource.

    Example::

        admin.incremental_alter_configs({
            ConfigResource("topic", "orders"): [AlterConfigOp.set("retention.ms", "3600000"),
                                                AlterConfigOp.delete("segment.ms")],
        }).all()
    """
    ops = {_as_resource(r): list(o) for r, o in changes.items()}
    for r, lst in ops.items():
        seen: set[str] = set()
        for op in lst:
            if not isinstance(op, AlterConfigOp):
                raise ConfigError(f"{r}: expected AlterConfigOp objects, got {op!r}")
            if op.name in seen:
                raise ConfigError(f"{r}: config {op.name!r} is changed twice in one call")
            seen.add(op.name)

    async def send(node: int, items: list[ConfigResource], deadline: float) -> Mapping[ConfigResource, Outcome[None]]:
        request = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestAlterConfigsResource(
                    resource_type=int(r.type), resource_name=r.name,
                    configs=[IncrementalAlterConfigsRequestAlterableConfig(
                        name=o.name, config_operation=int(o.op), value=o.value) for o in ops[r]])
                for r in items
            ],
            validate_only=validate_only,
        )
        response, _ = await core.send(node, request, deadline)
        by_key = {_key(r.type, r.name): r for r in items}
        out: dict[ConfigResource, Outcome[None]] = {}
        for res in response.responses:
            r = by_key.get(_key(res.resource_type, res.resource_name))
            if r is not None:
                out[r] = outcome_for(res.error_code, res.error_message, **resource_context(r))
        return out

    return await core.run_batch("incremental_alter_configs", list(ops), _broker_router(core), send, timeout,
                                resource_of=resource_context)


async def list_config_resources(core: AdminCore, types: Iterable[ResourceType | str] | None = None, *,
                                timeout: float | None = None) -> list[ConfigResource]:
    """Resources that have configs (KIP-1142; Kafka 4.1+). Default: client metrics only
    on brokers that know no other type; pass ``types`` to ask for others."""
    codes = [int(resource_type(t)) for t in types] if types is not None else []

    async def send(node: int, deadline: float) -> list[ConfigResource]:
        request = ListConfigResourcesRequest(resource_types=codes)
        response, version = await core.send(node, request, deadline)
        raise_response_error(response.error_code, None, "list_config_resources")
        return [ConfigResource(r.resource_type if version >= 1 else ResourceType.CLIENT_METRICS, r.resource_name)
                for r in response.config_resources]

    return await core.run_single("list_config_resources", core.route_any, send, timeout)
