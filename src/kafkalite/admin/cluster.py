"""Cluster calls: describe_cluster (brokers, controller, id), features, update_features."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalite.admin.core import AdminCore, Fail, Outcome, outcome_for, raise_response_error
from kafkalite.admin.results import AdminResult
from kafkalite.admin.types import (
    ClusterDescription,
    FeatureMetadata,
    FeatureUpdate,
    Node,
    decode_authorized_operations,
)
from kafkalite.errors import ConfigError
from kafkalite.net.features import (
    DESCRIBE_CLUSTER,
    UPDATE_FEATURES,
    feature_level,
    feature_level_missing,
    unsupported,
)
from kafkalite.protocol.messages.describe_cluster import DescribeClusterRequest
from kafkalite.protocol.messages.metadata import MetadataRequest
from kafkalite.protocol.messages.update_features import (
    UpdateFeaturesRequest,
    UpdateFeaturesRequestFeatureUpdateKey,
)

_UPGRADE_TYPES = {"upgrade": 1, "safe_downgrade": 2, "unsafe_downgrade": 3}


async def describe_cluster(core: AdminCore, *, include_authorized_operations: bool = False,
                           include_fenced_brokers: bool = False,
                           timeout: float | None = None) -> ClusterDescription:
    """The cluster id, its brokers and the controller (on KRaft: the id DescribeCluster
    reports, which Kafka 4 clients use only for display; requests go to any broker)."""

    async def send(node: int, deadline: float) -> ClusterDescription:
        conn = await core.client.connection(node)
        if conn.versions is not None and not conn.versions.supports(DescribeClusterRequest):
            if include_fenced_brokers:  # only DescribeCluster v2 (Kafka 3.7+) lists them
                conn.require(DESCRIBE_CLUSTER)
            return await _cluster_from_metadata(core, node, deadline, include_authorized_operations)
        request = DescribeClusterRequest(
            include_cluster_authorized_operations=include_authorized_operations,
            include_fenced_brokers=include_fenced_brokers,
        )
        response, _ = await core.send(node, request, deadline, min_version=2 if include_fenced_brokers else 0)
        raise_response_error(response.error_code, response.error_message, "describe_cluster")
        nodes = [Node(b.broker_id, b.host, b.port, b.rack, bool(getattr(b, "is_fenced", False)))
                 for b in sorted(response.brokers, key=lambda b: b.broker_id)]
        controller = next((n for n in nodes if n.id == response.controller_id), None)
        return ClusterDescription(
            response.cluster_id, controller, nodes,
            decode_authorized_operations(response.cluster_authorized_operations)
            if include_authorized_operations else None,
        )

    return await core.run_single("describe_cluster", core.route_any, send, timeout)


async def _cluster_from_metadata(core: AdminCore, node: int, deadline: float,
                                 include_authorized_operations: bool) -> ClusterDescription:
    """Before Kafka 2.8 (KIP-700) the cluster is described by Metadata, as Java's admin
    client does when the broker lacks DescribeCluster."""
    request = MetadataRequest(topics=[], allow_auto_topic_creation=False,
                              include_cluster_authorized_operations=include_authorized_operations)
    response, _ = await core.send(node, request, deadline, min_version=8 if include_authorized_operations else 0)
    nodes = [Node(b.node_id, b.host, b.port, b.rack) for b in sorted(response.brokers, key=lambda b: b.node_id)]
    controller = next((n for n in nodes if n.id == response.controller_id), None)
    return ClusterDescription(
        response.cluster_id, controller, nodes,
        decode_authorized_operations(response.cluster_authorized_operations) if include_authorized_operations else None,
    )


async def describe_features(core: AdminCore, *, timeout: float | None = None) -> FeatureMetadata:
    """Finalized and supported feature levels (from ApiVersions, KIP-584)."""

    async def send(node: int, deadline: float) -> FeatureMetadata:
        conn = await core.client.connection(node)
        table = conn.versions
        if table is None:  # pragma: no cover - a connected connection has negotiated
            raise ConfigError("the connection has no ApiVersions answer")
        return FeatureMetadata(
            dict(sorted(table.finalized_features.items())),
            {k: (v.min, v.max) for k, v in sorted(table.supported_features.items())},
        )

    return await core.run_single("describe_features", core.route_any, send, timeout)


async def update_features(core: AdminCore, updates: Mapping[str, FeatureUpdate | int], *,
                          validate_only: bool = False, timeout: float | None = None) -> AdminResult[str, None]:
    """Upgrade or downgrade finalized feature levels (``{"transaction.version": 2}``)."""
    wanted = {k: (u if isinstance(u, FeatureUpdate) else FeatureUpdate(int(u))) for k, u in updates.items()}
    for name, u in wanted.items():
        if u.upgrade_type not in _UPGRADE_TYPES:
            raise ConfigError(f"feature {name!r}: upgrade_type must be one of {', '.join(_UPGRADE_TYPES)}")

    async def send(node: int, names: list[str], deadline: float) -> Mapping[str, Outcome[None]]:
        out: dict[str, Any] = {}
        conn = await core.client.connection(node)
        conn.require(UPDATE_FEATURES)
        for n in names:  # a level the broker's release cannot have fails at once, naming the release
            why = feature_level_missing(conn.versions, n, wanted[n].max_version_level) if conn.versions else None
            if why is not None and wanted[n].max_version_level > 0:
                out[n] = Fail(unsupported(feature_level(n, wanted[n].max_version_level), why, broker=conn.address))
        names = [n for n in names if n not in out]
        if not names:
            return out
        request = UpdateFeaturesRequest(
            timeout_ms=core.remaining_ms(deadline),
            feature_updates=[
                UpdateFeaturesRequestFeatureUpdateKey(
                    feature=n, max_version_level=wanted[n].max_version_level,
                    allow_downgrade=wanted[n].upgrade_type != "upgrade",
                    upgrade_type=_UPGRADE_TYPES[wanted[n].upgrade_type])
                for n in names
            ],
            validate_only=validate_only,
        )
        response, _ = await core.send(node, request, deadline, min_version=1)
        top = outcome_for(response.error_code, response.error_message)
        for r in response.results:
            out[r.feature] = top if top is not None else outcome_for(
                r.error_code, r.error_message, resource=f"feature '{r.feature}'")
        # v2 dropped the per-feature results: the top-level error (or success) is everyone's.
        for n in names:
            out.setdefault(n, top)
        return out

    return await core.run_batch("update_features", list(wanted), core.route_controller, send, timeout,
                                resource_of=lambda n: {"resource": f"feature '{n}'"})
