"""The blocking admin client (``kafkalite.AdminClient``).

The same calls as :class:`~kafkalite.admin.async_admin.AsyncAdminClient`, run on a
background engine thread: each method blocks until its result is ready, honours its
``timeout`` (seconds; default ``default.api.timeout.ms``) and Ctrl-C.

Calls on several items return an :class:`~kafkalite.admin.results.AdminResult`
(``{key: ItemResult}``; ``.all()`` returns the values or raises naming every failure);
calls with one answer return it or raise.

Example::

    from kafkalite import AdminClient, NewTopic

    with AdminClient({"bootstrap.servers": "127.0.0.1:9092"}) as admin:
        result = admin.create_topics([NewTopic("orders", num_partitions=6, replication_factor=1)])
        result.all()                                   # raises TopicExistsError if it exists
        print(admin.describe_topics(["orders"])["orders"].result().partitions)
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kafkalite.admin.async_admin import AsyncAdminClient
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
from kafkalite.errors import ClientClosedError
from kafkalite.metrics import MetricsSnapshot
from kafkalite.net.engine import EngineThread
from kafkalite.types import IsolationLevel, OffsetAndMetadata, TopicPartition

T = TypeVar("T")

# The engine enforces each call's deadline itself; the caller's wait gets this much
# more so that a result arriving right at the deadline is not mistaken for a hang.
_GRACE_S = 5.0


class AdminClient:
    """Manage topics, configs, groups, ACLs, quotas and more (blocking).

    Settings as for :class:`AsyncAdminClient`. Use it as a context manager or call
    :meth:`close`.
    """

    def __init__(self, config: Mapping[str, Any] | Config | None = None, **kwargs: Any) -> None:
        self._aio = AsyncAdminClient(config, **kwargs)
        self.config = self._aio.config
        self._engine = EngineThread(name="kafkalite-admin").start()
        self._closed = False

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self, timeout: float = 5.0) -> None:
        """Close connections and stop the engine thread (idempotent, bounded by ``timeout``)."""
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            self._engine.run(self._aio.close(), max(0.01, timeout / 2), "close")
        except Exception:
            pass
        finally:
            # Calls still running in other threads are cancelled (cancel_and_wait).
            self._engine.stop(max(0.0, deadline - time.monotonic()))

    def metrics(self) -> MetricsSnapshot:
        """Current metrics, ``{MetricName: value}``, with the Java admin client's names
        (connection-count, connection-creation-total, failed-authentication-total, ...)."""
        return self._aio.metrics()

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float | None, what: str) -> T:
        if self._closed:
            coro.close()
            raise ClientClosedError("the admin client is closed")
        budget = timeout if timeout is not None else self.config["default.api.timeout.ms"] / 1000.0
        return self._engine.run(coro, budget + _GRACE_S, what)

    def create_topics(
        self,
        new_topics: Iterable[NewTopic],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> AdminResult[str, CreateTopicResult]:
        """Create topics; per topic: :class:`CreateTopicResult` or e.g. ``TopicExistsError``."""
        return self._call(
            self._aio.create_topics(new_topics, validate_only=validate_only, timeout=timeout),
            timeout,
            "create_topics",
        )

    def delete_topics(
        self, topics: Iterable[str | uuid.UUID], *, timeout: float | None = None
    ) -> AdminResult[str | uuid.UUID, None]:
        """Delete topics by name or topic id."""
        return self._call(
            self._aio.delete_topics(topics, timeout=timeout), timeout, "delete_topics"
        )

    def list_topics(
        self, *, list_internal: bool = False, timeout: float | None = None
    ) -> dict[str, TopicListing]:
        return self._call(
            self._aio.list_topics(list_internal=list_internal, timeout=timeout),
            timeout,
            "list_topics",
        )

    def describe_topics(
        self,
        topics: Iterable[str],
        *,
        include_authorized_operations: bool = False,
        use_describe_topic_partitions: bool = False,
        partition_size_limit_per_response: int | None = None,
        timeout: float | None = None,
    ) -> AdminResult[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of each topic (``{name: TopicDescription}``).

        By default one Metadata request. ``use_describe_topic_partitions=True`` asks
        with DescribeTopicPartitions (Kafka 3.8+, KIP-966) instead, which also reports
        each partition's eligible leader replicas (``elr``, ``last_known_elr``) and
        pages through big topics ``partition_size_limit_per_response`` partitions at a
        time (default 2000, as kafka-topics); a broker without it is asked with
        Metadata (``elr`` stays None), like Java's admin client.

        Example::

            d = admin.describe_topics(["orders"], use_describe_topic_partitions=True)["orders"].result()
            [(p.partition, p.isr, p.elr) for p in d.partitions]
        """
        return self._call(
            self._aio.describe_topics(
                topics, include_authorized_operations=include_authorized_operations,
                use_describe_topic_partitions=use_describe_topic_partitions,
                partition_size_limit_per_response=partition_size_limit_per_response, timeout=timeout,
            ),
            timeout,
            "describe_topics",
        )

    def create_partitions(
        self,
        new_partitions: Mapping[str, NewPartitions | int],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> AdminResult[str, None]:
        """Grow topics to a new partition count (a decrease fails that topic with INVALID_PARTITIONS)."""
        return self._call(
            self._aio.create_partitions(
                new_partitions, validate_only=validate_only, timeout=timeout
            ),
            timeout,
            "create_partitions",
        )

    def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        config_names: Mapping[ConfigResource, Sequence[str]] | None = None,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        timeout: float | None = None,
    ) -> AdminResult[ConfigResource, dict[str, ConfigEntry]]:
        return self._call(
            self._aio.describe_configs(
                resources,
                config_names=config_names,
                include_synonyms=include_synonyms,
                include_documentation=include_documentation,
                timeout=timeout,
            ),
            timeout,
            "describe_configs",
        )

    def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> AdminResult[ConfigResource, None]:
        return self._call(
            self._aio.incremental_alter_configs(
                changes, validate_only=validate_only, timeout=timeout
            ),
            timeout,
            "incremental_alter_configs",
        )

    def list_config_resources(
        self, types: Iterable[ResourceType | str] | None = None, *, timeout: float | None = None
    ) -> list[ConfigResource]:
        return self._call(
            self._aio.list_config_resources(types, timeout=timeout),
            timeout,
            "list_config_resources",
        )

    def describe_cluster(
        self,
        *,
        include_authorized_operations: bool = False,
        include_fenced_brokers: bool = False,
        timeout: float | None = None,
    ) -> ClusterDescription:
        return self._call(
            self._aio.describe_cluster(
                include_authorized_operations=include_authorized_operations,
                include_fenced_brokers=include_fenced_brokers,
                timeout=timeout,
            ),
            timeout,
            "describe_cluster",
        )

    def controller(self, *, timeout: float | None = None) -> Node | None:
        """The controller node as DescribeCluster reports it."""
        return self._call(self._aio.controller(timeout=timeout), timeout, "controller")

    def describe_features(self, *, timeout: float | None = None) -> FeatureMetadata:
        return self._call(
            self._aio.describe_features(timeout=timeout), timeout, "describe_features"
        )

    def update_features(
        self,
        updates: Mapping[str, FeatureUpdate | int],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> AdminResult[str, None]:
        return self._call(
            self._aio.update_features(updates, validate_only=validate_only, timeout=timeout),
            timeout,
            "update_features",
        )

    def list_groups(
        self,
        *,
        states: Iterable[GroupState | str] | None = None,
        types: Iterable[GroupType | str] | None = None,
        timeout: float | None = None,
    ) -> ListResult[GroupListing]:
        """Groups of every broker, sorted by id.

        A :class:`ListResult` (a list): a broker that does not answer within ``timeout``
        is named in ``.errors`` while the groups of the others are still listed;
        ``.all()`` returns the list only if it is complete. Raises if no broker answers.

        Example::

            groups = admin.list_groups(states=["Stable"], timeout=10)
            if not groups.ok:
                print("incomplete:", groups.errors)
        """
        return self._call(
            self._aio.list_groups(states=states, types=types, timeout=timeout),
            timeout,
            "list_groups",
        )

    def list_consumer_groups(
        self,
        *,
        states: Iterable[GroupState | str] | None = None,
        types: Iterable[GroupType | str] | None = None,
        timeout: float | None = None,
    ) -> ListResult[GroupListing]:
        """Classic consumer-protocol (and simple) groups plus KIP-848 consumer groups."""
        return self._call(
            self._aio.list_consumer_groups(states=states, types=types, timeout=timeout),
            timeout,
            "list_consumer_groups",
        )

    def describe_consumer_groups(
        self,
        group_ids: Iterable[str],
        *,
        include_authorized_operations: bool = False,
        timeout: float | None = None,
    ) -> AdminResult[str, ConsumerGroupDescription]:
        return self._call(
            self._aio.describe_consumer_groups(
                group_ids,
                include_authorized_operations=include_authorized_operations,
                timeout=timeout,
            ),
            timeout,
            "describe_consumer_groups",
        )

    def delete_groups(
        self, group_ids: Iterable[str], *, timeout: float | None = None
    ) -> AdminResult[str, None]:
        return self._call(
            self._aio.delete_groups(group_ids, timeout=timeout), timeout, "delete_groups"
        )

    delete_consumer_groups = delete_groups

    def list_consumer_group_offsets(
        self,
        groups_: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str],
        *,
        require_stable: bool = False,
        timeout: float | None = None,
    ) -> AdminResult[str, dict[TopicPartition, OffsetAndMetadata]]:
        return self._call(
            self._aio.list_consumer_group_offsets(
                groups_, require_stable=require_stable, timeout=timeout
            ),
            timeout,
            "list_consumer_group_offsets",
        )

    def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets_: Mapping[TopicPartition, OffsetAndMetadata | int],
        *,
        timeout: float | None = None,
    ) -> AdminResult[TopicPartition, None]:
        return self._call(
            self._aio.alter_consumer_group_offsets(group_id, offsets_, timeout=timeout),
            timeout,
            "alter_consumer_group_offsets",
        )

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition], *, timeout: float | None = None
    ) -> AdminResult[TopicPartition, None]:
        return self._call(
            self._aio.delete_consumer_group_offsets(group_id, partitions, timeout=timeout),
            timeout,
            "delete_consumer_group_offsets",
        )

    def remove_members_from_consumer_group(
        self,
        group_id: str,
        members: Iterable[MemberToRemove] | None = None,
        *,
        reason: str | None = None,
        timeout: float | None = None,
    ) -> AdminResult[MemberToRemove, None]:
        return self._call(
            self._aio.remove_members_from_consumer_group(
                group_id, members, reason=reason, timeout=timeout
            ),
            timeout,
            "remove_members_from_consumer_group",
        )

    def describe_share_groups(
        self,
        group_ids: Iterable[str],
        *,
        include_authorized_operations: bool = False,
        timeout: float | None = None,
    ) -> AdminResult[str, ShareGroupDescription]:
        return self._call(
            self._aio.describe_share_groups(
                group_ids,
                include_authorized_operations=include_authorized_operations,
                timeout=timeout,
            ),
            timeout,
            "describe_share_groups",
        )

    def list_share_group_offsets(
        self,
        groups_: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str],
        *,
        timeout: float | None = None,
    ) -> AdminResult[str, dict[TopicPartition, SharePartitionOffset]]:
        return self._call(
            self._aio.list_share_group_offsets(groups_, timeout=timeout),
            timeout,
            "list_share_group_offsets",
        )

    def alter_share_group_offsets(
        self, group_id: str, offsets_: Mapping[TopicPartition, int], *, timeout: float | None = None
    ) -> AdminResult[TopicPartition, None]:
        return self._call(
            self._aio.alter_share_group_offsets(group_id, offsets_, timeout=timeout),
            timeout,
            "alter_share_group_offsets",
        )

    def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str], *, timeout: float | None = None
    ) -> AdminResult[str, None]:
        return self._call(
            self._aio.delete_share_group_offsets(group_id, topics, timeout=timeout),
            timeout,
            "delete_share_group_offsets",
        )

    def list_offsets(
        self,
        specs: Mapping[TopicPartition, OffsetSpec | str | int],
        *,
        isolation_level: IsolationLevel | str = IsolationLevel.READ_UNCOMMITTED,
        timeout: float | None = None,
    ) -> AdminResult[TopicPartition, ListOffsetsResultInfo]:
        return self._call(
            self._aio.list_offsets(specs, isolation_level=isolation_level, timeout=timeout),
            timeout,
            "list_offsets",
        )

    def delete_records(
        self, before: Mapping[TopicPartition, int], *, timeout: float | None = None
    ) -> AdminResult[TopicPartition, DeletedRecords]:
        return self._call(
            self._aio.delete_records(before, timeout=timeout), timeout, "delete_records"
        )

    def create_acls(
        self, bindings: Iterable[AclBinding], *, timeout: float | None = None
    ) -> AdminResult[AclBinding, None]:
        return self._call(self._aio.create_acls(bindings, timeout=timeout), timeout, "create_acls")

    def describe_acls(
        self, acl_filter: AclBindingFilter | None = None, *, timeout: float | None = None
    ) -> list[AclBinding]:
        return self._call(
            self._aio.describe_acls(acl_filter, timeout=timeout), timeout, "describe_acls"
        )

    def delete_acls(
        self, filters: Iterable[AclBindingFilter], *, timeout: float | None = None
    ) -> AdminResult[AclBindingFilter, list[AclBinding]]:
        return self._call(self._aio.delete_acls(filters, timeout=timeout), timeout, "delete_acls")

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None, *, timeout: float | None = None
    ) -> AdminResult[str, UserScramCredentialsDescription]:
        return self._call(
            self._aio.describe_user_scram_credentials(users, timeout=timeout),
            timeout,
            "describe_user_scram_credentials",
        )

    def alter_user_scram_credentials(
        self,
        alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion],
        *,
        timeout: float | None = None,
    ) -> AdminResult[str, None]:
        return self._call(
            self._aio.alter_user_scram_credentials(alterations, timeout=timeout),
            timeout,
            "alter_user_scram_credentials",
        )

    def describe_client_quotas(
        self,
        components: Iterable[ClientQuotaFilterComponent] = (),
        *,
        strict: bool = False,
        timeout: float | None = None,
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        return self._call(
            self._aio.describe_client_quotas(components, strict=strict, timeout=timeout),
            timeout,
            "describe_client_quotas",
        )

    def alter_client_quotas(
        self,
        alterations: Iterable[ClientQuotaAlteration],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> AdminResult[ClientQuotaEntity, None]:
        return self._call(
            self._aio.alter_client_quotas(
                alterations, validate_only=validate_only, timeout=timeout
            ),
            timeout,
            "alter_client_quotas",
        )

    def elect_leaders(
        self,
        election_type: ElectionType | str = ElectionType.PREFERRED,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout: float | None = None,
    ) -> AdminResult[TopicPartition, None]:
        return self._call(
            self._aio.elect_leaders(election_type, partitions, timeout=timeout),
            timeout,
            "elect_leaders",
        )

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        timeout: float | None = None,
    ) -> AdminResult[TopicPartition, None]:
        return self._call(
            self._aio.alter_partition_reassignments(reassignments, timeout=timeout),
            timeout,
            "alter_partition_reassignments",
        )

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, *, timeout: float | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        return self._call(
            self._aio.list_partition_reassignments(partitions, timeout=timeout),
            timeout,
            "list_partition_reassignments",
        )

    def describe_log_dirs(
        self, broker_ids: Iterable[int] | None = None, *, timeout: float | None = None
    ) -> AdminResult[int, dict[str, LogDirDescription]]:
        return self._call(
            self._aio.describe_log_dirs(broker_ids, timeout=timeout), timeout, "describe_log_dirs"
        )

    def describe_producers(
        self, partitions: Iterable[TopicPartition], *, timeout: float | None = None
    ) -> AdminResult[TopicPartition, list[ProducerState]]:
        return self._call(
            self._aio.describe_producers(partitions, timeout=timeout), timeout, "describe_producers"
        )

    def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int | None = None,
        transactional_id_pattern: str | None = None,
        timeout: float | None = None,
    ) -> ListResult[TransactionListing]:
        """Transactions of every broker's transaction coordinator, sorted by id; a
        :class:`ListResult` like :meth:`list_groups` (``.errors`` by broker id)."""
        return self._call(
            self._aio.list_transactions(
                states=states,
                producer_ids=producer_ids,
                duration_ms=duration_ms,
                transactional_id_pattern=transactional_id_pattern,
                timeout=timeout,
            ),
            timeout,
            "list_transactions",
        )

    def describe_transactions(
        self, transactional_ids: Iterable[str], *, timeout: float | None = None
    ) -> AdminResult[str, TransactionDescription]:
        return self._call(
            self._aio.describe_transactions(transactional_ids, timeout=timeout),
            timeout,
            "describe_transactions",
        )

    def abort_transaction(
        self, spec: AbortTransactionSpec, *, timeout: float | None = None
    ) -> None:
        return self._call(
            self._aio.abort_transaction(spec, timeout=timeout), timeout, "abort_transaction"
        )

    def fence_producers(
        self, transactional_ids: Iterable[str], *, timeout: float | None = None
    ) -> AdminResult[str, ProducerIdAndEpoch]:
        return self._call(
            self._aio.fence_producers(transactional_ids, timeout=timeout),
            timeout,
            "fence_producers",
        )
