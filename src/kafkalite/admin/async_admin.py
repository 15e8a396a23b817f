"""The asyncio admin client (``kafkalite.aio.AdminClient``).

Every call is a coroutine. Calls on several items return an
:class:`~kafkalite.admin.results.AdminResult` (per-item value or typed error, see
:mod:`kafkalite.admin.results`); calls with one answer return it or raise. Each call
takes ``timeout`` in seconds (default ``default.api.timeout.ms``) and retries retriable
errors with backoff until then; see :mod:`kafkalite.admin.core` for routing.

Example::

    from kafkalite.aio import AdminClient
    from kafkalite import NewTopic

    async with AdminClient({"bootstrap.servers": "127.0.0.1:9092"}) as admin:
        (await admin.create_topics([NewTopic("orders", 6, 1)])).all()
        print(await admin.list_topics())
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafkalite.admin import (
    acls,
    cluster,
    configs,
    groups,
    offsets,
    operations,
    quotas,
    scram,
    share_groups,
)
from kafkalite.admin import topics as topic_calls
from kafkalite.admin import transactions as txn
from kafkalite.admin.core import METRICS_GROUP, AdminCore
from kafkalite.admin.group_types import (
    ConsumerGroupDescription,
    GroupListing,
    GroupState,
    GroupType,
    MemberToRemove,
    ShareGroupDescription,
    SharePartitionOffset,
)
from kafkalite.admin.ops_types import (
    AbortTransactionSpec,
    ElectionType,
    LogDirDescription,
    PartitionReassignment,
    ProducerIdAndEpoch,
    ProducerState,
    TransactionDescription,
    TransactionListing,
)
from kafkalite.admin.results import AdminResult, ListResult
from kafkalite.admin.security_types import (
    AclBinding,
    AclBindingFilter,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from kafkalite.admin.types import (
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    CreateTopicResult,
    DeletedRecords,
    FeatureMetadata,
    FeatureUpdate,
    ListOffsetsResultInfo,
    NewPartitions,
    NewTopic,
    Node,
    OffsetSpec,
    ResourceType,
    TopicDescription,
    TopicListing,
)
from kafkalite.config import Config
from kafkalite.metrics import MetricsSnapshot
from kafkalite.settings import resolve
from kafkalite.types import IsolationLevel, OffsetAndMetadata, TopicPartition


class AsyncAdminClient:
    """Manage topics, configs, groups, ACLs, quotas and more, on the caller's event loop.

    Settings are the admin client's (``bootstrap.servers``, ``security.protocol``,
    ``sasl.*``, ``request.timeout.ms``, ``default.api.timeout.ms``, ``retries``,
    ``retry.backoff.ms`` ...), as a dict with Java names or snake_case keywords.
    """

    def __init__(self, config: Mapping[str, Any] | Config | None = None, **kwargs: Any) -> None:
        self.config = config if isinstance(config, Config) and not kwargs else resolve("admin", config, **kwargs)
        self._core = AdminCore(self.config)

    async def __aenter__(self) -> AsyncAdminClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every connection (idempotent)."""
        await self._core.close()

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``, with the Java admin client's names
        (connection-count, connection-creation-total, failed-authentication-total, ...)."""
        return self._core.registry.snapshot(METRICS_GROUP)

    # ------------------------------------------------------------ topics

    async def create_topics(self, new_topics: Iterable[NewTopic], *, validate_only: bool = False,
                            timeout: float | None = None) -> AdminResult[str, CreateTopicResult]:
        """Create topics; per topic: :class:`CreateTopicResult` or e.g. ``TopicExistsError``."""
        return await topic_calls.create_topics(self._core, new_topics, validate_only=validate_only, timeout=timeout)

    async def delete_topics(self, topics: Iterable[str | uuid.UUID], *,
                            timeout: float | None = None) -> AdminResult[str | uuid.UUID, None]:
        """Delete topics by name or topic id."""
        return await topic_calls.delete_topics(self._core, topics, timeout=timeout)

    async def list_topics(self, *, list_internal: bool = False,
                          timeout: float | None = None) -> dict[str, TopicListing]:
        return await topic_calls.list_topics(self._core, list_internal=list_internal, timeout=timeout)

    async def describe_topics(self, topics: Iterable[str], *, include_authorized_operations: bool = False,
                              use_describe_topic_partitions: bool = False,
                              partition_size_limit_per_response: int | None = None,
                              timeout: float | None = None) -> AdminResult[str, TopicDescription]:
        """Describe topics (see :meth:`AdminClient.describe_topics`)."""
        return await topic_calls.describe_topics(
            self._core, topics, include_authorized_operations=include_authorized_operations,
            use_describe_topic_partitions=use_describe_topic_partitions,
            partition_size_limit_per_response=partition_size_limit_per_response, timeout=timeout)

    async def create_partitions(self, new_partitions: Mapping[str, NewPartitions | int], *,
                                validate_only: bool = False,
                                timeout: float | None = None) -> AdminResult[str, None]:
        """Grow topics to a new partition count (a decrease fails that topic with INVALID_PARTITIONS)."""
        return await topic_calls.create_partitions(self._core, new_partitions, validate_only=validate_only,
                                                   timeout=timeout)

    # ------------------------------------------------------------ configs

    async def describe_configs(self, resources: Iterable[ConfigResource], *,
                               config_names: Mapping[ConfigResource, Sequence[str]] | None = None,
                               include_synonyms: bool = False, include_documentation: bool = False,
                               timeout: float | None = None) -> AdminResult[ConfigResource, dict[str, ConfigEntry]]:
        return await configs.describe_configs(self._core, resources, config_names=config_names,
                                              include_synonyms=include_synonyms,
                                              include_documentation=include_documentation, timeout=timeout)

    async def incremental_alter_configs(self, changes: Mapping[ConfigResource, Iterable[AlterConfigOp]], *,
                                        validate_only: bool = False,
                                        timeout: float | None = None) -> AdminResult[ConfigResource, None]:
        return await configs.incremental_alter_configs(self._core, changes, validate_only=validate_only,
                                                       timeout=timeout)

    async def list_config_resources(self, types: Iterable[ResourceType | str] | None = None, *,
                                    timeout: float | None = None) -> list[ConfigResource]:
        return await configs.list_config_resources(self._core, types, timeout=timeout)

    # ------------------------------------------------------------ cluster

    async def describe_cluster(self, *, include_authorized_operations: bool = False,
                               include_fenced_brokers: bool = False,
                               timeout: float | None = None) -> ClusterDescription:
        return await cluster.describe_cluster(self._core, include_authorized_operations=include_authorized_operations,
                                              include_fenced_brokers=include_fenced_brokers, timeout=timeout)

    async def controller(self, *, timeout: float | None = None) -> Node | None:
        """The controller node as DescribeCluster reports it."""
        return (await self.describe_cluster(timeout=timeout)).controller

    async def describe_features(self, *, timeout: float | None = None) -> FeatureMetadata:
        return await cluster.describe_features(self._core, timeout=timeout)

    async def update_features(self, updates: Mapping[str, FeatureUpdate | int], *, validate_only: bool = False,
                              timeout: float | None = None) -> AdminResult[str, None]:
        return await cluster.update_features(self._core, updates, validate_only=validate_only, timeout=timeout)

    # ------------------------------------------------------------ groups

    async def list_groups(self, *, states: Iterable[GroupState | str] | None = None,
                          types: Iterable[GroupType | str] | None = None,
                          timeout: float | None = None) -> ListResult[GroupListing]:
        """Groups of every broker (a :class:`ListResult`: ``.errors`` names brokers that did not answer)."""
        return await groups.list_groups(self._core, states=states, types=types, timeout=timeout)

    async def list_consumer_groups(self, *, states: Iterable[GroupState | str] | None = None,
                                   types: Iterable[GroupType | str] | None = None,
                                   timeout: float | None = None) -> ListResult[GroupListing]:
        """Classic consumer-protocol (and simple) groups plus KIP-848 consumer groups."""
        listed = await self.list_groups(states=states, types=types, timeout=timeout)
        return ListResult(listed.what, [g for g in listed if g.is_consumer_group], listed.by_broker)

    async def describe_consumer_groups(self, group_ids: Iterable[str], *, include_authorized_operations: bool = False,
                                       timeout: float | None = None) -> AdminResult[str, ConsumerGroupDescription]:
        return await groups.describe_consumer_groups(self._core, group_ids,
                                                     include_authorized_operations=include_authorized_operations,
                                                     timeout=timeout)

    async def delete_groups(self, group_ids: Iterable[str], *, timeout: float | None = None) -> AdminResult[str, None]:
        return await groups.delete_groups(self._core, group_ids, timeout=timeout)

    delete_consumer_groups = delete_groups

    async def list_consumer_group_offsets(
        self, groups_: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str], *,
        require_stable: bool = False, timeout: float | None = None,
    ) -> AdminResult[str, dict[TopicPartition, OffsetAndMetadata]]:
        return await groups.list_consumer_group_offsets(self._core, groups_, require_stable=require_stable,
                                                        timeout=timeout)

    async def alter_consumer_group_offsets(self, group_id: str,
                                           offsets_: Mapping[TopicPartition, OffsetAndMetadata | int], *,
                                           timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        return await groups.alter_consumer_group_offsets(self._core, group_id, offsets_, timeout=timeout)

    async def delete_consumer_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition], *,
                                            timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        return await groups.delete_consumer_group_offsets(self._core, group_id, partitions, timeout=timeout)

    async def remove_members_from_consumer_group(self, group_id: str, members: Iterable[MemberToRemove] | None = None,
                                                 *, reason: str | None = None,
                                                 timeout: float | None = None) -> AdminResult[MemberToRemove, None]:
        return await groups.remove_members_from_consumer_group(self._core, group_id, members, reason=reason,
                                                               timeout=timeout)

    # ------------------------------------------------------------ share groups

    async def describe_share_groups(self, group_ids: Iterable[str], *, include_authorized_operations: bool = False,
                                    timeout: float | None = None) -> AdminResult[str, ShareGroupDescription]:
        return await share_groups.describe_share_groups(
            self._core, group_ids, include_authorized_operations=include_authorized_operations, timeout=timeout)

    async def list_share_group_offsets(
        self, groups_: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str], *,
        timeout: float | None = None,
    ) -> AdminResult[str, dict[TopicPartition, SharePartitionOffset]]:
        return await share_groups.list_share_group_offsets(self._core, groups_, timeout=timeout)

    async def alter_share_group_offsets(self, group_id: str, offsets_: Mapping[TopicPartition, int], *,
                                        timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        return await share_groups.alter_share_group_offsets(self._core, group_id, offsets_, timeout=timeout)

    async def delete_share_group_offsets(self, group_id: str, topics: Iterable[str], *,
                                         timeout: float | None = None) -> AdminResult[str, None]:
        return await share_groups.delete_share_group_offsets(self._core, group_id, topics, timeout=timeout)

    # ------------------------------------------------------------ offsets and records

    async def list_offsets(self, specs: Mapping[TopicPartition, OffsetSpec | str | int], *,
                           isolation_level: IsolationLevel | str = IsolationLevel.READ_UNCOMMITTED,
                           timeout: float | None = None) -> AdminResult[TopicPartition, ListOffsetsResultInfo]:
        return await offsets.list_offsets(self._core, specs, isolation_level=isolation_level, timeout=timeout)

    async def delete_records(self, before: Mapping[TopicPartition, int], *,
                             timeout: float | None = None) -> AdminResult[TopicPartition, DeletedRecords]:
        return await offsets.delete_records(self._core, before, timeout=timeout)

    # ------------------------------------------------------------ security

    async def create_acls(self, bindings: Iterable[AclBinding], *,
                          timeout: float | None = None) -> AdminResult[AclBinding, None]:
        return await acls.create_acls(self._core, bindings, timeout=timeout)

    async def describe_acls(self, acl_filter: AclBindingFilter | None = None, *,
                            timeout: float | None = None) -> list[AclBinding]:
        return await acls.describe_acls(self._core, acl_filter, timeout=timeout)

    async def delete_acls(self, filters: Iterable[AclBindingFilter], *,
                          timeout: float | None = None) -> AdminResult[AclBindingFilter, list[AclBinding]]:
        return await acls.delete_acls(self._core, filters, timeout=timeout)

    async def describe_user_scram_credentials(self, users: Iterable[str] | None = None, *,
                                              timeout: float | None = None
                                              ) -> AdminResult[str, UserScramCredentialsDescription]:
        return await scram.describe_user_scram_credentials(self._core, users, timeout=timeout)

    async def alter_user_scram_credentials(
        self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion], *,
        timeout: float | None = None,
    ) -> AdminResult[str, None]:
        return await scram.alter_user_scram_credentials(self._core, alterations, timeout=timeout)

    async def describe_client_quotas(self, components: Iterable[ClientQuotaFilterComponent] = (), *,
                                     strict: bool = False, timeout: float | None = None
                                     ) -> dict[ClientQuotaEntity, dict[str, float]]:
        return await quotas.describe_client_quotas(self._core, components, strict=strict, timeout=timeout)

    async def alter_client_quotas(self, alterations: Iterable[ClientQuotaAlteration], *, validate_only: bool = False,
                                  timeout: float | None = None) -> AdminResult[ClientQuotaEntity, None]:
        return await quotas.alter_client_quotas(self._core, alterations, validate_only=validate_only, timeout=timeout)

    # ------------------------------------------------------------ operations

    async def elect_leaders(self, election_type: ElectionType | str = ElectionType.PREFERRED,
                            partitions: Iterable[TopicPartition] | None = None, *,
                            timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        return await operations.elect_leaders(self._core, election_type, partitions, timeout=timeout)

    async def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None], *,
                                            timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        return await operations.alter_partition_reassignments(self._core, reassignments, timeout=timeout)

    async def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None, *,
                                           timeout: float | None = None
                                           ) -> dict[TopicPartition, PartitionReassignment]:
        return await operations.list_partition_reassignments(self._core, partitions, timeout=timeout)

    async def describe_log_dirs(self, broker_ids: Iterable[int] | None = None, *,
                                timeout: float | None = None) -> AdminResult[int, dict[str, LogDirDescription]]:
        return await operations.describe_log_dirs(self._core, broker_ids, timeout=timeout)

    async def describe_producers(self, partitions: Iterable[TopicPartition], *,
                                 timeout: float | None = None) -> AdminResult[TopicPartition, list[ProducerState]]:
        return await operations.describe_producers(self._core, partitions, timeout=timeout)

    async def list_transactions(self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                                duration_ms: int | None = None, transactional_id_pattern: str | None = None,
                                timeout: float | None = None) -> ListResult[TransactionListing]:
        return await txn.list_transactions(self._core, states=states, producer_ids=producer_ids,
                                           duration_ms=duration_ms,
                                           transactional_id_pattern=transactional_id_pattern, timeout=timeout)

    async def describe_transactions(self, transactional_ids: Iterable[str], *,
                                    timeout: float | None = None) -> AdminResult[str, TransactionDescription]:
        return await txn.describe_transactions(self._core, transactional_ids, timeout=timeout)

    async def abort_transaction(self, spec: AbortTransactionSpec, *, timeout: float | None = None) -> None:
        await txn.abort_transaction(self._core, spec, timeout=timeout)

    async def fence_producers(self, transactional_ids: Iterable[str], *,
                              timeout: float | None = None) -> AdminResult[str, ProducerIdAndEpoch]:
        return await txn.fence_producers(self._core, transactional_ids, timeout=timeout)
