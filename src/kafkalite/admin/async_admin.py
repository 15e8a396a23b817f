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
            result = await admin.create_topics([NewTopic("payments", num_partitions=6, replication_factor=1)])
            result.all()                                   # raises TopicExistsError if it exists
            print((await admin.describe_topics(["payments"]))["payments"].result().partitions)
    """

    async def __aenter__(self) -> AsyncAdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``, with the Java admin client's names
        (connection-count, connection-creation-total, failed-authentication-total, ...).

        Example::

            await admin.list_topics()
            assert admin.metrics()["connection-count"] >= 1
        """
        return self._core.registry.snapshot(METRICS_GROUP)

    # ------------------------------------------------------------ topics

    async def create_topics(self, new_topics: Iterable[NewTopic], *, validate_only: bool = False,
                            timeout: float | None = None) -> AdminResult[str, CreateTopicResult]:
        """Create topics; per topic: :class:`CreateTopicResult` or e.g. ``TopicExistsError``.

        ``validate_only=True`` asks the controller to check the request without creating.

        Example::

            result = await admin.create_topics([NewTopic("payments", num_partitions=6, replication_factor=1)])
            result.all()   # raises TopicExistsError (or AdminBatchError naming each failure)
        """
        return await self._run(topic_calls.create_topics(self._core, new_topics, validate_only=validate_only,
                                                         timeout=timeout), timeout)

    async def delete_topics(self, topics: Iterable[str | uuid.UUID], *,
                            timeout: float | None = None) -> AdminResult[str | uuid.UUID, None]:
        """Delete topics by name or topic id (ids need Kafka 2.8+).

        Example::

            (await admin.create_topics([NewTopic("scratch", num_partitions=1, replication_factor=1)])).all()
            (await admin.delete_topics(["scratch"])).all()       # or topic ids: [uuid.UUID(...)]
        """
        return await self._run(topic_calls.delete_topics(self._core, topics, timeout=timeout), timeout)

    async def list_topics(self, *, list_internal: bool = False,
                          timeout: float | None = None) -> dict[str, TopicListing]:
        """Every topic the client may describe, ``{name: TopicListing}`` sorted by name
        (internal topics such as ``__consumer_offsets`` only with ``list_internal``).

        Example::

            topics = await admin.list_topics()
            assert "orders" in topics and "__consumer_offsets" not in topics
        """
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
        """Grow topics to a new partition count (a decrease fails that topic with INVALID_PARTITIONS).

        Example::

            (await admin.create_topics([NewTopic("growing", num_partitions=1, replication_factor=1)])).all()
            (await admin.create_partitions({"growing": 4})).all()         # or NewPartitions(4)
        """
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
        """Apply SET / DELETE / APPEND / SUBTRACT operations to each resource's configs.

        Example::

            orders = ConfigResource("topic", "orders")
            (await admin.incremental_alter_configs({orders: [AlterConfigOp.set("retention.ms", "3600000")]})).all()
            # .all() raises if a change was refused. On KRaft the brokers apply it moments
            # after the controller commits it, so a describe_configs() right away may
            # still show the old value.
        """
        return await self._run(configs.incremental_alter_configs(self._core, changes, validate_only=validate_only,
                                                                 timeout=timeout), timeout)

    async def list_config_resources(self, types: Iterable[ResourceType | str] | None = None, *,
                                    timeout: float | None = None) -> list[ConfigResource]:
        """Resources that have configs (KIP-1142, Kafka 4.1+); by default client metrics
        resources, or the given ``types``.

        Example::

            resources = await admin.list_config_resources(["topic"])
            assert ConfigResource("topic", "orders") in resources
        """
        return await self._run(configs.list_config_resources(self._core, types, timeout=timeout), timeout)

    # ------------------------------------------------------------ cluster

    async def describe_cluster(self, *, include_authorized_operations: bool = False,
                               include_fenced_brokers: bool = False,
                               timeout: float | None = None) -> ClusterDescription:
        """The cluster id, its brokers and the controller.

        Example::

            cluster = await admin.describe_cluster()
            print(cluster.cluster_id, [str(node) for node in cluster.nodes])
        """
        return await self._run(cluster.describe_cluster(self._core,
                                                        include_authorized_operations=include_authorized_operations,
                                                        include_fenced_brokers=include_fenced_brokers,
                                                        timeout=timeout), timeout)

    async def controller(self, *, timeout: float | None = None) -> Node | None:
        """The controller node as DescribeCluster reports it.

        Example::

            node = await admin.controller()
            print(node.id, node.host, node.port)
        """
        return (await self.describe_cluster(timeout=timeout)).controller

    async def describe_features(self, *, timeout: float | None = None) -> FeatureMetadata:
        """Finalized and supported feature levels (KIP-584).

        Example::

            features = await admin.describe_features()
            print(features.finalized["metadata.version"], features.supported["metadata.version"])
        """
        return await self._run(cluster.describe_features(self._core, timeout=timeout), timeout)

    async def update_features(self, updates: Mapping[str, FeatureUpdate | int], *, validate_only: bool = False,
                              timeout: float | None = None) -> AdminResult[str, None]:
        """Upgrade or downgrade finalized feature levels (``{"transaction.version": 2}``).

        Example::

            level = (await admin.describe_features()).finalized["transaction.version"]
            (await admin.update_features({"transaction.version": level}, validate_only=True)).all()
        """
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
        """Classic consumer-protocol (and simple) groups plus KIP-848 consumer groups.

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            await consumer.commit({tp: 1})                   # a group with offsets and no members
            groups = await admin.list_consumer_groups()
            assert consumer.config["group.id"] in [g.group_id for g in groups]
        """
        listed = await self.list_groups(states=states, types=types, timeout=timeout)
        return ListResult(listed.what, [g for g in listed if g.is_consumer_group], listed.by_broker)

    async def describe_consumer_groups(self, group_ids: Iterable[str], *, include_authorized_operations: bool = False,
                                       timeout: float | None = None) -> AdminResult[str, ConsumerGroupDescription]:
        """State, protocol, coordinator and members (with their assignments) of each group.

        Example::

            consumer.subscribe(["orders"])
            await consumer.poll(timeout=10.0)                # joins the group
            group = consumer.config["group.id"]
            description = (await admin.describe_consumer_groups([group]))[group].result()
            assert len(description.members) == 1
        """
        return await self._run(groups.describe_consumer_groups(
            self._core, group_ids, include_authorized_operations=include_authorized_operations, timeout=timeout),
            timeout)

    async def delete_groups(self, group_ids: Iterable[str], *, timeout: float | None = None) -> AdminResult[str, None]:
        """Delete groups (a group with members fails with NON_EMPTY_GROUP, per group).

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            await consumer.commit({tp: 1})
            (await admin.delete_groups([consumer.config["group.id"]])).all()
        """
        return await self._run(groups.delete_groups(self._core, group_ids, timeout=timeout), timeout)

    delete_consumer_groups = delete_groups

    async def list_consumer_group_offsets(
        self, groups_: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str], *,
        require_stable: bool = False, timeout: float | None = None,
    ) -> AdminResult[str, dict[TopicPartition, OffsetAndMetadata]]:
        """Committed offsets per group, ``{group: {partition: OffsetAndMetadata}}`` (all of a
        group's, or the partitions given for it).

        Example::

            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            await consumer.commit({tp: 1})
            group = consumer.config["group.id"]
            assert (await admin.list_consumer_group_offsets([group]))[group].result()[tp].offset == 1
        """
        return await self._run(groups.list_consumer_group_offsets(self._core, groups_, require_stable=require_stable,
                                                                  timeout=timeout), timeout)

    async def alter_consumer_group_offsets(self, group_id: str,
                                           offsets_: Mapping[TopicPartition, OffsetAndMetadata | int], *,
                                           timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Commit offsets for a group with no active members (the broker refuses while it has some).

        Example::

            tp = TopicPartition("orders", 0)
            (await admin.alter_consumer_group_offsets("billing-replay", {tp: 0})).all()
            assert (await admin.list_consumer_group_offsets(["billing-replay"]))["billing-replay"].result()[tp].offset == 0
        """
        return await self._run(groups.alter_consumer_group_offsets(self._core, group_id, offsets_, timeout=timeout),
                               timeout)

    async def delete_consumer_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition], *,
                                            timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Delete committed offsets of partitions the group no longer consumes.

        Example::

            tp = TopicPartition("orders", 0)
            (await admin.alter_consumer_group_offsets("retired", {tp: 1})).all()
            (await admin.delete_consumer_group_offsets("retired", [tp])).all()
        """
        return await self._run(groups.delete_consumer_group_offsets(self._core, group_id, partitions,
                                                                    timeout=timeout), timeout)

    async def remove_members_from_consumer_group(self, group_id: str, members: Iterable[MemberToRemove] | None = None,
                                                 *, reason: str | None = None,
                                                 timeout: float | None = None) -> AdminResult[MemberToRemove, None]:
        """Remove members from a classic group (``members=None``: every member).

        Example::

            consumer.subscribe(["orders"])
            await consumer.poll(timeout=10.0)                # a member of the group
            (await admin.remove_members_from_consumer_group(consumer.config["group.id"])).all()   # every member
        """
        return await self._run(groups.remove_members_from_consumer_group(self._core, group_id, members, reason=reason,
                                                                         timeout=timeout), timeout)

    # ------------------------------------------------------------ share groups

    async def describe_share_groups(self, group_ids: Iterable[str], *, include_authorized_operations: bool = False,
                                    timeout: float | None = None) -> AdminResult[str, ShareGroupDescription]:
        """State, coordinator and members (with their assignments) of each share group.

        Example::

            async with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "docs-share"}) as share:
                share.subscribe(["orders"])
                await share.poll(timeout=2.0)
                description = (await admin.describe_share_groups(["docs-share"]))["docs-share"].result()
                assert len(description.members) == 1
        """
        return await self._run(share_groups.describe_share_groups(
            self._core, group_ids, include_authorized_operations=include_authorized_operations, timeout=timeout),
            timeout)

    async def list_share_group_offsets(
        self, groups_: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str], *,
        timeout: float | None = None,
    ) -> AdminResult[str, dict[TopicPartition, SharePartitionOffset]]:
        """Start offsets (and lag, Kafka 4.1+) per share group and partition.

        Example::

            async with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "docs-share-list"}) as share:
                share.subscribe(["orders"])
                await share.poll(timeout=2.0)
            offsets = (await admin.list_share_group_offsets(["docs-share-list"]))["docs-share-list"].result()
            print({tp.partition: o.start_offset for tp, o in offsets.items()})
        """
        return await self._run(share_groups.list_share_group_offsets(self._core, groups_, timeout=timeout), timeout)

    async def alter_share_group_offsets(self, group_id: str, offsets_: Mapping[TopicPartition, int], *,
                                        timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Set the start offsets of an empty share group.

        Example::

            async with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "docs-share-alter"}) as share:
                share.subscribe(["orders"])
                await share.poll(timeout=2.0)
            (await admin.alter_share_group_offsets("docs-share-alter", {TopicPartition("orders", 0): 0})).all()
        """
        return await self._run(share_groups.alter_share_group_offsets(self._core, group_id, offsets_,
                                                                      timeout=timeout), timeout)

    async def delete_share_group_offsets(self, group_id: str, topics: Iterable[str], *,
                                         timeout: float | None = None) -> AdminResult[str, None]:
        """Forget an empty share group's state for whole topics.

        Example::

            async with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "docs-share-delete"}) as share:
                share.subscribe(["orders"])
                await share.poll(timeout=2.0)
            (await admin.delete_share_group_offsets("docs-share-delete", ["orders"])).all()
        """
        return await self._run(share_groups.delete_share_group_offsets(self._core, group_id, topics,
                                                                       timeout=timeout), timeout)

    # ------------------------------------------------------------ offsets and records

    async def list_offsets(self, specs: Mapping[TopicPartition, OffsetSpec | str | int], *,
                           isolation_level: IsolationLevel | str = IsolationLevel.READ_UNCOMMITTED,
                           timeout: float | None = None) -> AdminResult[TopicPartition, ListOffsetsResultInfo]:
        """Offsets per partition for earliest / latest / max-timestamp / a timestamp (ms).

        Example::

            tp = TopicPartition("orders", 0)
            offsets = (await admin.list_offsets({tp: OffsetSpec.latest()})).all()
            assert offsets[tp].offset == 1
        """
        return await self._run(offsets.list_offsets(self._core, specs, isolation_level=isolation_level,
                                                    timeout=timeout), timeout)

    async def delete_records(self, before: Mapping[TopicPartition, int], *,
                             timeout: float | None = None) -> AdminResult[TopicPartition, DeletedRecords]:
        """Delete records before the given offsets (-1: the high watermark, i.e. everything).

        Example::

            tp = TopicPartition("orders", 0)
            deleted = (await admin.delete_records({tp: 1})).all()      # -1: everything
            assert deleted[tp].low_watermark == 1
        """
        return await self._run(offsets.delete_records(self._core, before, timeout=timeout), timeout)

    # ------------------------------------------------------------ security

    async def create_acls(self, bindings: Iterable[AclBinding], *,
                          timeout: float | None = None) -> AdminResult[AclBinding, None]:
        """Create ACL bindings; per binding: None or its error.

        Example (needs secured_broker)::

            binding = AclBinding(ResourcePattern("topic", "orders"), AccessControlEntry("User:alice", "*", "read", "allow"))
            (await admin.create_acls([binding])).all()
        """
        return await self._run(acls.create_acls(self._core, bindings, timeout=timeout), timeout)

    async def describe_acls(self, acl_filter: AclBindingFilter | None = None, *,
                            timeout: float | None = None) -> list[AclBinding]:
        """Every ACL binding matching ``acl_filter`` (default: all).

        Example (needs secured_broker)::

            binding = AclBinding(ResourcePattern("topic", "invoices"), AccessControlEntry("User:bob", "*", "write", "allow"))
            (await admin.create_acls([binding])).all()
            assert binding in await admin.describe_acls(AclBindingFilter(resource_type="topic", name="invoices"))
        """
        return await self._run(acls.describe_acls(self._core, acl_filter, timeout=timeout), timeout)

    async def delete_acls(self, filters: Iterable[AclBindingFilter], *,
                          timeout: float | None = None) -> AdminResult[AclBindingFilter, list[AclBinding]]:
        """Delete the ACLs matching each filter; each filter's value is what it deleted.

        Example (needs secured_broker)::

            binding = AclBinding(ResourcePattern("group", "billing"), AccessControlEntry("User:carol", "*", "read", "allow"))
            (await admin.create_acls([binding])).all()
            deleted = (await admin.delete_acls([AclBindingFilter.for_binding(binding)])).all()
            assert list(deleted.values()) == [[binding]]
        """
        return await self._run(acls.delete_acls(self._core, filters, timeout=timeout), timeout)

    async def describe_user_scram_credentials(self, users: Iterable[str] | None = None, *,
                                              timeout: float | None = None
                                              ) -> AdminResult[str, UserScramCredentialsDescription]:
        """SCRAM mechanisms and iteration counts per user (never the credentials themselves).

        Example::

            (await admin.alter_user_scram_credentials([UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", "alice-secret")])).all()
            info = (await admin.describe_user_scram_credentials(["alice"]))["alice"].result()
            assert [c.mechanism for c in info.credentials] == [ScramMechanism.SCRAM_SHA_256]
        """
        return await self._run(scram.describe_user_scram_credentials(self._core, users, timeout=timeout), timeout)

    async def alter_user_scram_credentials(
        self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion], *,
        timeout: float | None = None,
    ) -> AdminResult[str, None]:
        """Upsert or delete SCRAM credentials; results are keyed by user name.

        Example::

            (await admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion("dave", "SCRAM-SHA-512", "dave-secret", iterations=8192),
            ])).all()
            (await admin.alter_user_scram_credentials([UserScramCredentialDeletion("dave", "SCRAM-SHA-512")])).all()
        """
        return await self._run(scram.alter_user_scram_credentials(self._core, alterations, timeout=timeout), timeout)

    async def describe_client_quotas(self, components: Iterable[ClientQuotaFilterComponent] = (), *,
                                     strict: bool = False, timeout: float | None = None
                                     ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """Quotas of the entities matching every component (none: all entities).

        Example::

            alice = ClientQuotaEntity(user="alice")
            (await admin.alter_client_quotas([ClientQuotaAlteration(alice, {"producer_byte_rate": 1048576.0})])).all()
            quotas = await admin.describe_client_quotas([ClientQuotaFilterComponent("user", "alice")])
            print(quotas)          # {ClientQuotaEntity(user=alice): {'producer_byte_rate': 1048576.0}}
        """
        return await self._run(quotas.describe_client_quotas(self._core, components, strict=strict,
                                                             timeout=timeout), timeout)

    async def alter_client_quotas(self, alterations: Iterable[ClientQuotaAlteration], *, validate_only: bool = False,
                                  timeout: float | None = None) -> AdminResult[ClientQuotaEntity, None]:
        """Set (a value) or remove (None) quota keys, per entity.

        Example::

            bob = ClientQuotaEntity(user="bob", **{"client-id": "reports"})
            (await admin.alter_client_quotas([ClientQuotaAlteration(bob, {"consumer_byte_rate": 2097152.0})])).all()
            (await admin.alter_client_quotas([ClientQuotaAlteration(bob, {"consumer_byte_rate": None})])).all()   # removed
        """
        return await self._run(quotas.alter_client_quotas(self._core, alterations, validate_only=validate_only,
                                                          timeout=timeout), timeout)

    # ------------------------------------------------------------ operations

    async def elect_leaders(self, election_type: ElectionType | str = ElectionType.PREFERRED,
                            partitions: Iterable[TopicPartition] | None = None, *,
                            timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Run preferred or unclean leader elections (``partitions=None``: every partition).

        Example::

            tp = TopicPartition("orders", 0)
            result = await admin.elect_leaders(ElectionType.PREFERRED, [tp])
            print(result[tp].error)        # ElectionNotNeededError: the preferred replica leads already
        """
        return await self._run(operations.elect_leaders(self._core, election_type, partitions, timeout=timeout),
                               timeout)

    async def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None], *,
                                            timeout: float | None = None) -> AdminResult[TopicPartition, None]:
        """Move partitions to new replica lists (None cancels an ongoing reassignment).

        Example::

            tp = TopicPartition("orders", 0)
            broker = (await admin.describe_cluster()).nodes[0].id
            (await admin.alter_partition_reassignments({tp: [broker]})).all()   # None cancels a running one
        """
        return await self._run(operations.alter_partition_reassignments(self._core, reassignments, timeout=timeout),
                               timeout)

    async def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None, *,
                                           timeout: float | None = None
                                           ) -> dict[TopicPartition, PartitionReassignment]:
        """Ongoing reassignments (of ``partitions``, or all).

        Example::

            assert await admin.list_partition_reassignments() == {}      # nothing is moving
        """
        return await self._run(operations.list_partition_reassignments(self._core, partitions, timeout=timeout),
                               timeout)

    async def describe_log_dirs(self, broker_ids: Iterable[int] | None = None, *,
                                timeout: float | None = None) -> AdminResult[int, dict[str, LogDirDescription]]:
        """Log directories of each broker (default: every broker) with replica sizes.

        Example::

            for broker, dirs in (await admin.describe_log_dirs()).all().items():
                for path, log_dir in dirs.items():
                    print(broker, path, len(log_dir.replicas))
        """
        return await self._run(operations.describe_log_dirs(self._core, broker_ids, timeout=timeout), timeout)

    async def describe_producers(self, partitions: Iterable[TopicPartition], *,
                                 timeout: float | None = None) -> AdminResult[TopicPartition, list[ProducerState]]:
        """Active idempotent and transactional producers per partition (from its leader).

        Example::

            tp = TopicPartition("orders", 0)
            await producer.send("orders", b"v", partition=0)     # an idempotent producer
            await producer.flush()
            states = (await admin.describe_producers([tp])).all()[tp]
            assert states and all(s.producer_id >= 0 for s in states)
        """
        return await self._run(operations.describe_producers(self._core, partitions, timeout=timeout), timeout)

    async def list_transactions(self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                                duration_ms: int | None = None, transactional_id_pattern: str | None = None,
                                timeout: float | None = None) -> ListResult[TransactionListing]:
        """Transactions of every broker's transaction coordinator, sorted by id; a
        :class:`ListResult` like :meth:`list_groups` (``.errors`` by broker id).

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-listed"})
            await tx.init_transactions()
            assert "docs-listed" in [t.transactional_id for t in await admin.list_transactions()]
            await tx.close()
        """
        return await self._run(txn.list_transactions(self._core, states=states, producer_ids=producer_ids,
                                                     duration_ms=duration_ms,
                                                     transactional_id_pattern=transactional_id_pattern,
                                                     timeout=timeout), timeout)

    async def describe_transactions(self, transactional_ids: Iterable[str], *,
                                    timeout: float | None = None) -> AdminResult[str, TransactionDescription]:
        """State, producer id and epoch, timeout and partitions of each transactional id.

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-described"})
            await tx.init_transactions()
            description = (await admin.describe_transactions(["docs-described"]))["docs-described"].result()
            assert description.state == "Empty"                          # no transaction open
            await tx.close()
        """
        return await self._run(txn.describe_transactions(self._core, transactional_ids, timeout=timeout), timeout)

    async def abort_transaction(self, spec: AbortTransactionSpec, *, timeout: float | None = None) -> None:
        """Abort a hanging transaction on one partition (as ``kafka-transactions abort``).

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-hanging"})
            await tx.init_transactions()
            tx.begin_transaction()
            await tx.send("orders", b"x", partition=0)            # a transaction left open
            await tx.flush()
            tp = TopicPartition("orders", 0)
            states = (await admin.describe_producers([tp])).all()[tp]
            hanging = next(s for s in states if s.current_transaction_start_offset is not None)
            # as kafka-transactions abort: an unknown coordinator epoch is 0
            spec = AbortTransactionSpec(tp, hanging.producer_id, hanging.producer_epoch, hanging.coordinator_epoch or 0)
            await admin.abort_transaction(spec)
            await tx.close(timeout=0)
        """
        await self._run(txn.abort_transaction(self._core, spec, timeout=timeout), timeout)

    async def fence_producers(self, transactional_ids: Iterable[str], *,
                              timeout: float | None = None) -> AdminResult[str, ProducerIdAndEpoch]:
        """Fence the current producer of each transactional id (KIP-664: its epoch is bumped).

        Example::

            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "docs-fenced"})
            await tx.init_transactions()
            (await admin.fence_producers(["docs-fenced"])).all()   # tx's next transactional call fails: fenced
            await tx.close()
        """
        return await self._run(txn.fence_producers(self._core, transactional_ids, timeout=timeout), timeout)
