"""The admin client's API, written once: ``kafkalite.aio.AdminClient``.

This class is the definition of the admin API: ``kafkalite.AdminClient`` (blocking) is
generated from it by ``tools/generate_fronts.py`` over
:class:`~kafkalite.admin.fronts.BlockingAdminFront`; here it runs on the caller's event
loop (:class:`~kafkalite.admin.fronts.AsyncAdminFront`). Every call is a coroutine.
Calls on several items return an :class:`~kafkalite.admin.results.AdminResult`
(per-item value or typed error, see :mod:`kafkalite.admin.results`); calls with one
answer return it or raise. Each call takes ``timeout`` in seconds (default
``default.api.timeout.ms``) and retries retriable errors with backoff until then; see
:mod:`kafkalite.admin.core` for routing.

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
from kafkalite.admin.core import METRICS_GROUP
from kafkalite.admin.fronts import AsyncAdminFront
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
from kafkalite.metrics import MetricsSnapshot
from kafkalite.types import IsolationLevel, OffsetAndMetadata, TopicPartition


class AsyncAdminClient(AsyncAdminFront):
    """Manage topics, configs, groups, ACLs, quotas and more.

    Settings are the admin client's (``bootstrap.servers``, ``security.protocol``,
    ``sasl.*``, ``request.timeout.ms``, ``default.api.timeout.ms``, ``retries``,
    ``retry.backoff.ms`` ...), as a dict with Java names or snake_case keywords. Use it
    as a context manager or call :meth:`close`.

    Calls on several items return an :class:`~kafkalite.admin.results.AdminResult`
    (``{key: ItemResult}``; ``.all()`` returns the values or raises naming every
    failure); calls with one answer return it or raise. Each call takes ``timeout`` in
    seconds (default ``default.api.timeout.ms``) and retries retriable errors with
    backoff until then.

    Example::

        async with AdminClient({"bootstrap.servers": "127.0.0.1:9092"}) as admin:
            result = await admin.create_topics([NewTopic("orders", num_partitions=6, replication_factor=1)])
            result.all()                                   # raises TopicExistsError if it exists
            print((await admin.describe_topics(["orders"]))["orders"].result().partitions)
    """

    async def __aenter__(self) -> AsyncAdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``, with the Java admin client's names
        (connection-count, connection-creation-total, failed-authentication-total, ...)."""
        return self._core.registry.snapshot(METRICS_GROUP)

    # ------------------------------------------------------------ topics

    async def create_topics(self, new_topics: Iterable[NewTopic], *, validate_only: bool = False,
                            timeout: float | None = None) -> AdminResult[str, CreateTopicResult]:
        """Create topics; per topic: :class:`CreateTopicResult` or e.g. ``TopicExistsError``.

        ``validate_only=True`` asks the controller to check the request without creating.

        Example::

            result = await admin.create_topics([NewTopic("orders", num_partitions=6, replication_factor=1)])
            result.all()   # raises TopicExistsError (or AdminBatchError naming each failure)
        """
        return await self._run(topic_calls.create_topics(self._core, new_topics, validate_only=validate_only,
                                                         timeout=timeout), timeout)

    async def delete_topics(self, topics: Iterable[str | uuid.UUID], *,
                            timeout: float | None = None) -> AdminResult[str | uuid.UUID, None]:
        """Delete topics by name or topic id (ids need Kafka 2.8+)."""
        return await self._run(topic_calls.delete_topics(self._core, topics, timeout=timeout), timeout)

    async def list_topics(self, *, list_internal: bool = False,
                          timeout: float | None = None) -> dict[str, TopicListing]:
        """Every topic the client may describe, ``{name: TopicListing}`` sorted by name
        (internal topics such as ``__consumer_offsets`` only with ``list_internal``)."""
        return await self._run(topic_calls.list_topics(self._core, list_internal=list_internal, timeout=timeout),
                               timeout)

    async def describe_topics(self, topics: Iterable[str], *, include_authorized_operations: bool = False,
                              use_describe_topic_partitions: bool = False,
                              partition_size_limit_per_response: int | None = None,
                              timeout: float | None = None) -> AdminResult[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of each topic (``{name: TopicDescription}``).

        By default one Metadata request. ``use_describe_topic_partitions=True`` asks
        with DescribeTopicPartitions (Kafka 3.8+, KIP-966) instead, which also reports
        each partition's eligible leader replicas (``elr``, ``last_known_elr``) and
        pages through big topics ``partition_size_limit_per_response`` partitions at a
        time (default 2000, as kafka-topics); a broker without it is asked with
        Metadata (``elr`` stays None), like Java's admin client.

        Example::

            d = (await admin.describe_topics(["orders"], use_describe_topic_partitions=True))["orders"].result()
            [(p.partition, p.isr, p.elr) for p in d.partitions]
        """
        return await self._run(topic_calls.describe_topics(
            self._core, topics, include_authorized_operations=include_authorized_operations,
            use_describe_topic_partitions=use_describe_topic_partitions,
            partition_size_limit_per_response=partition_size_limit_per_response, timeout=timeout), timeout)

    async def create_partitions(self, new_partitions: Mapping[str, NewPartitions | int], *,
                                validate_only: bool = False,
                                timeout: float | None = None) -> AdminResult[str, None]:
        """Grow topics to a new partition count (a decrease fails that topic with INVALID_PARTITIONS)."""
        return await self._run(topic_calls.create_partitions(self._core, new_partitions, validate_only=validate_only,
                                                             timeout=timeout), timeout)

    # ------------------------------------------------------------ configs

    async def describe_configs(self, resources: Iterable[ConfigResource], *,
                               config_names: Mapping[ConfigResource, Sequence[str]] | None = None,
                               include_synonyms: bool = False, include_documentation: bool = False,
                               timeout: float | None = None) -> AdminResult[ConfigResource, dict[str, ConfigEntry]]:
        """The configs of each resource, ``{resource: {name: ConfigEntry}}`` (all of them, or
        the ``config_names`` asked for per resource; with their synonyms and documentation
        when asked).

        Example::

            topic = ConfigResource("topic", "orders")
            configs = (await admin.describe_configs([topic], config_names={topic: ["retention.ms"]})).all()
            print(configs[topic]["retention.ms"].value)
        """
        return await self._run(configs.describe_configs(self._core, resources, config_names=config_names,
                                                        include_synonyms=include_synonyms,
                                                        include_documentation=include_documentation,
                                                        timeout=timeout), timeout)

    async def incremental_alter_configs(self, changes: Mapping[ConfigResource, Iterable[AlterConfigOp]], *,
                                        validate_only: bool = False,
                                        timeout: float | None = None) -> AdminResult[ConfigResource, None]:
        """Apply SET / DELETE / APPEND / SUBTRACT operations to each resource's configs."""
        return await self._run(configs.incremental_alter_configs(self._core, changes, validate_only=validate_only,
                                                                 timeout=timeout), timeout)

    async def list_config_resources(self, types: Iterable[ResourceType | str] | None = None, *,
                                    timeout: float | None = None) -> list[ConfigResource]:
        """Resources that have configs (KIP-1142, Kafka 4.1+); by default client metrics
        resources, or the given ``types``."""
        return await self._run(configs.list_config_resources(self._core, types, timeout=timeout), timeout)

    # ------------------------------------------------------------ cluster

    async def describe_cluster(self, *, include_authorized_operations: bool = False,
                               include_fenced_brokers: bool = False,
                               timeout: float | None = None) -> ClusterDescription:
        """The cluster id, its brokers and the controller."""
        return await self._run(cluster.describe_cluster(self._core,
                                                        include_authorized_operations=include_authorized_operations,
                                                        include_fenced_brokers=include_fenced_brokers,
                                                        timeout=timeout), timeout)

    async def controller(self, *, timeout: float | None = None) -> Node | None:
        """The controller node as DescribeCluster reports it."""
        return (await self.describe_cluster(timeout=timeout)).controller

    async def describe_features(self, *, timeout: float | None = None) -> FeatureMetadata:
        """Finalized and supported feature levels (KIP-584)."""
        return await self._run(cluster.describe_features(self._core, timeout=timeout), timeout)

    async def update_features(self, updates: Mapping[str, FeatureUpdate | int], *, validate_only: bool = False,
                              timeout: float | None = None) -> AdminResult[str, None]:
        """Upgrade or downgrade finalized feature levels (``{"transaction.version": 2}``)."""
        return await self._run(cluster.update_features(self._core, updates, validate_only=validate_only,
                                                       timeout=timeout), timeout)

    # ------------------------------------------------------------ groups

    async def list_groups(self, *, states: Iterable[GroupState | str] | None = None,
                          types: Iterable[GroupType | str] | None = None,
                          timeout: float | None = None) -> ListResult[GroupListing]:
        """Groups of every broker, sorted by id.

        A :class:`ListResult` (a list): a broker that does not answer within ``timeout``
        is named in ``.errors`` while the groups of the others are still listed;
        ``.all()`` returns the list only if it is complete. Raises if no broker answers.

        Example::

            groups = await admin.list_groups(states=["Stable"], timeout=10)
            if not groups.ok:
                print("incomplete:", groups.errors)
        """
        return await self._run(groups.list_groups(self._core, states=states, types=types, timeout=timeout), timeout)

    async def list_consumer_groups(self, *, states: Iterable[GroupState | str] | None = None,
                                   types: Iterable[GroupType | str] | None = None,
                                   timeout: float | None = None) -> ListResult[GroupListing]:
        """Classic consumer-protocol (and simple) groups plus KIP-848 consumer groups."""
        listed = await self.list_groups(states=states, types=types, timeout=timeout)
        return ListResult(listed.what, [g for g in listed if g.is_consumer_group], listed.by_broker)

    async def describe_consumer_groups(self, group_ids: Iterable[str], *, include_authorized_operations: bool = False,
                                       timeout: float | None = None) -> AdminResult[str, ConsumerGroupDescription]:
        """State, protocol, coordinator and members (with their assignments) of each group."""
        return await self._run(groups.describe_consumer_groups(
            self._core, group_ids, include_authorized_operations=include_authorized_operations, timeout=timeout),
            timeout)

    async def delete_groups(self, group_ids: Iterable[str], *, timeout: float | None = None) -> AdminResult[str, None]:
        """Delete groups (a group with members fails with NON_EMPTY_GROUP, per group)."""
        return await self._run(groups.delete_groups(self._core, group_ids, timeout=timeout), timeout)

    delete_consumer_groups = delete_groups

    async def list_consumer_group_offsets(
        self, groups_: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str], *,
        require_stable: bool = False, timeout: float | None = None,
    ) -> AdminResult[str, dict[TopicPartition, OffsetAndMetadata]]:
        """Committed offsets per group, ``{group: {partition: OffsetAndMetadata}}`` (all of a
        group's, or the partitions given for it)."""
        return await self._run(groups.list_consumer_group_offsets(self._core, groups_, require_stable=require_stable,
                                                                  timeout=timeout), timeout)

    async def alter_consumer_group_offsets(self, group_id: str,
                                           offsets_: Mapping[TopicPartition, OffsetAndMetadata | int], *,
                                           timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Commit offsets for a group with no active members (the broker refuses while it has some)."""
        return await self._run(groups.alter_consumer_group_offsets(self._core, group_id, offsets_, timeout=timeout),
                               timeout)

    async def delete_consumer_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition], *,
                                            timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Delete committed offsets of partitions the group no longer consumes."""
        return await self._run(groups.delete_consumer_group_offsets(self._core, group_id, partitions,
                                                                    timeout=timeout), timeout)

    async def remove_members_from_consumer_group(self, group_id: str, members: Iterable[MemberToRemove] | None = None,
                                                 *, reason: str | None = None,
                                                 timeout: float | None = None) -> AdminResult[MemberToRemove, None]:
        """Remove members from a classic group (``members=None``: every member)."""
        return await self._run(groups.remove_members_from_consumer_group(self._core, group_id, members, reason=reason,
                                                                         timeout=timeout), timeout)

    # ------------------------------------------------------------ share groups

    async def describe_share_groups(self, group_ids: Iterable[str], *, include_authorized_operations: bool = False,
                                    timeout: float | None = None) -> AdminResult[str, ShareGroupDescription]:
        """State, coordinator and members (with their assignments) of each share group."""
        return await self._run(share_groups.describe_share_groups(
            self._core, group_ids, include_authorized_operations=include_authorized_operations, timeout=timeout),
            timeout)

    async def list_share_group_offsets(
        self, groups_: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str], *,
        timeout: float | None = None,
    ) -> AdminResult[str, dict[TopicPartition, SharePartitionOffset]]:
        """Start offsets (and lag, Kafka 4.1+) per share group and partition."""
        return await self._run(share_groups.list_share_group_offsets(self._core, groups_, timeout=timeout), timeout)

    async def alter_share_group_offsets(self, group_id: str, offsets_: Mapping[TopicPartition, int], *,
                                        timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Set the start offsets of an empty share group."""
        return await self._run(share_groups.alter_share_group_offsets(self._core, group_id, offsets_,
                                                                      timeout=timeout), timeout)

    async def delete_share_group_offsets(self, group_id: str, topics: Iterable[str], *,
                                         timeout: float | None = None) -> AdminResult[str, None]:
        """Forget an empty share group's state for whole topics."""
        return await self._run(share_groups.delete_share_group_offsets(self._core, group_id, topics,
                                                                       timeout=timeout), timeout)

    # ------------------------------------------------------------ offsets and records

    async def list_offsets(self, specs: Mapping[TopicPartition, OffsetSpec | str | int], *,
                           isolation_level: IsolationLevel | str = IsolationLevel.READ_UNCOMMITTED,
                           timeout: float | None = None) -> AdminResult[TopicPartition, ListOffsetsResultInfo]:
        """Offsets per partition for earliest / latest / max-timestamp / a timestamp (ms)."""
        return await self._run(offsets.list_offsets(self._core, specs, isolation_level=isolation_level,
                                                    timeout=timeout), timeout)

    async def delete_records(self, before: Mapping[TopicPartition, int], *,
                             timeout: float | None = None) -> AdminResult[TopicPartition, DeletedRecords]:
        """Delete records before the given offsets (-1: the high watermark, i.e. everything)."""
        return await self._run(offsets.delete_records(self._core, before, timeout=timeout), timeout)

    # ------------------------------------------------------------ security

    async def create_acls(self, bindings: Iterable[AclBinding], *,
                          timeout: float | None = None) -> AdminResult[AclBinding, None]:
        """Create ACL bindings; per binding: None or its error."""
        return await self._run(acls.create_acls(self._core, bindings, timeout=timeout), timeout)

    async def describe_acls(self, acl_filter: AclBindingFilter | None = None, *,
                            timeout: float | None = None) -> list[AclBinding]:
        """Every ACL binding matching ``acl_filter`` (default: all)."""
        return await self._run(acls.describe_acls(self._core, acl_filter, timeout=timeout), timeout)

    async def delete_acls(self, filters: Iterable[AclBindingFilter], *,
                          timeout: float | None = None) -> AdminResult[AclBindingFilter, list[AclBinding]]:
        """Delete the ACLs matching each filter; each filter's value is what it deleted."""
        return await self._run(acls.delete_acls(self._core, filters, timeout=timeout), timeout)

    async def describe_user_scram_credentials(self, users: Iterable[str] | None = None, *,
                                              timeout: float | None = None
                                              ) -> AdminResult[str, UserScramCredentialsDescription]:
        """SCRAM mechanisms and iteration counts per user (never the credentials themselves)."""
        return await self._run(scram.describe_user_scram_credentials(self._core, users, timeout=timeout), timeout)

    async def alter_user_scram_credentials(
        self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion], *,
        timeout: float | None = None,
    ) -> AdminResult[str, None]:
        """Upsert or delete SCRAM credentials; results are keyed by user name."""
        return await self._run(scram.alter_user_scram_credentials(self._core, alterations, timeout=timeout), timeout)

    async def describe_client_quotas(self, components: Iterable[ClientQuotaFilterComponent] = (), *,
                                     strict: bool = False, timeout: float | None = None
                                     ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """Quotas of the entities matching every component (none: all entities)."""
        return await self._run(quotas.describe_client_quotas(self._core, components, strict=strict,
                                                             timeout=timeout), timeout)

    async def alter_client_quotas(self, alterations: Iterable[ClientQuotaAlteration], *, validate_only: bool = False,
                                  timeout: float | None = None) -> AdminResult[ClientQuotaEntity, None]:
        """Set (a value) or remove (None) quota keys, per entity."""
        return await self._run(quotas.alter_client_quotas(self._core, alterations, validate_only=validate_only,
                                                          timeout=timeout), timeout)

    # ------------------------------------------------------------ operations

    async def elect_leaders(self, election_type: ElectionType | str = ElectionType.PREFERRED,
                            partitions: Iterable[TopicPartition] | None = None, *,
                            timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Run preferred or unclean leader elections (``partitions=None``: every partition)."""
        return await self._run(operations.elect_leaders(self._core, election_type, partitions, timeout=timeout),
                               timeout)

    async def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None], *,
                                            timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Move partitions to new replica lists (None cancels an ongoing reassignment)."""
        return await self._run(operations.alter_partition_reassignments(self._core, reassignments, timeout=timeout),
                               timeout)

    async def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None, *,
                                           timeout: float | None = None
                                           ) -> dict[TopicPartition, PartitionReassignment]:
        """Ongoing reassignments (of ``partitions``, or all)."""
        return await self._run(operations.list_partition_reassignments(self._core, partitions, timeout=timeout),
                               timeout)

    async def describe_log_dirs(self, broker_ids: Iterable[int] | None = None, *,
                                timeout: float | None = None) -> AdminResult[int, dict[str, LogDirDescription]]:
        """Log directories of each broker (default: every broker) with replica sizes."""
        return await self._run(operations.describe_log_dirs(self._core, broker_ids, timeout=timeout), timeout)

    async def describe_producers(self, partitions: Iterable[TopicPartition], *,
                                 timeout: float | None = None) -> AdminResult[TopicPartition, list[ProducerState]]:
        """Active idempotent and transactional producers per partition (from its leader)."""
        return await self._run(operations.describe_producers(self._core, partitions, timeout=timeout), timeout)

    async def list_transactions(self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                                duration_ms: int | None = None, transactional_id_pattern: str | None = None,
                                timeout: float | None = None) -> ListResult[TransactionListing]:
        """Transactions of every broker's transaction coordinator, sorted by id; a
        :class:`ListResult` like :meth:`list_groups` (``.errors`` by broker id)."""
        return await self._run(txn.list_transactions(self._core, states=states, producer_ids=producer_ids,
                                                     duration_ms=duration_ms,
                                                     transactional_id_pattern=transactional_id_pattern,
                                                     timeout=timeout), timeout)

    async def describe_transactions(self, transactional_ids: Iterable[str], *,
                                    timeout: float | None = None) -> AdminResult[str, TransactionDescription]:
        """State, producer id and epoch, timeout and partitions of each transactional id."""
        return await self._run(txn.describe_transactions(self._core, transactional_ids, timeout=timeout), timeout)

    async def abort_transaction(self, spec: AbortTransactionSpec, *, timeout: float | None = None) -> None:
        """Abort a hanging transaction on one partition (as ``kafka-transactions abort``)."""
        await self._run(txn.abort_transaction(self._core, spec, timeout=timeout), timeout)

    async def fence_producers(self, transactional_ids: Iterable[str], *,
                              timeout: float | None = None) -> AdminResult[str, ProducerIdAndEpoch]:
        """Fence the current producer of each transactional id (KIP-664: its epoch is bumped)."""
        return await self._run(txn.fence_producers(self._core, transactional_ids, timeout=timeout), timeout)
