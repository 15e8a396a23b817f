"""What each client feature needs of a broker, and the one error when a broker lacks it.

kafkalite speaks to every Apache Kafka broker from 2.1 on (the range the Java 4.x client
promises, KIP-896). Most features only pick the highest version both sides speak; some
need an API (or an API version, or a finalized feature level) that older brokers do not
have. :data:`FEATURES` lists those, once: the code that uses a feature checks it here
(:func:`require`), and ``docs/compatibility.md`` is generated from the same table
(``tools/gen_compatibility.py``), so the documentation and the error say the same thing.

Where the Java client falls back to an older API (describing groups with DescribeGroups,
topics with Metadata, the cluster with Metadata), kafkalite does the same and the entry
says so (``fallback``); otherwise a missing feature fails at once with
:class:`~kafkalite.errors.UnsupportedFeatureError`, which names the feature, what the
broker lacks and the first release that has it:

>>> from kafkalite.net.versions import ApiVersionTable
>>> table = ApiVersionTable({})           # a broker that serves nothing we ask about
>>> try:
...     require(table, KIP848_GROUPS, broker="node 1 (127.0.0.1:9092)")
... except UnsupportedFeatureError as exc:
...     print(exc.minimum_release)
4.0
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kafkalite.errors import UnsupportedFeatureError
from kafkalite.net.versions import ApiVersionTable
from kafkalite.protocol.message import Message
from kafkalite.protocol.messages import API_NAMES
from kafkalite.protocol.messages.alter_client_quotas import AlterClientQuotasRequest
from kafkalite.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
)
from kafkalite.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
)
from kafkalite.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from kafkalite.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kafkalite.protocol.messages.create_topics import CreateTopicsRequest
from kafkalite.protocol.messages.describe_client_quotas import DescribeClientQuotasRequest
from kafkalite.protocol.messages.describe_cluster import DescribeClusterRequest
from kafkalite.protocol.messages.describe_producers import DescribeProducersRequest
from kafkalite.protocol.messages.describe_topic_partitions import DescribeTopicPartitionsRequest
from kafkalite.protocol.messages.describe_transactions import DescribeTransactionsRequest
from kafkalite.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
)
from kafkalite.protocol.messages.fetch import FetchRequest
from kafkalite.protocol.messages.get_telemetry_subscriptions import GetTelemetrySubscriptionsRequest
from kafkalite.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkalite.protocol.messages.join_group import JoinGroupRequest
from kafkalite.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
)
from kafkalite.protocol.messages.list_transactions import ListTransactionsRequest
from kafkalite.protocol.messages.offset_delete import OffsetDeleteRequest
from kafkalite.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from kafkalite.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest
from kafkalite.protocol.messages.update_features import UpdateFeaturesRequest


@dataclass(frozen=True)
class BrokerFeature:
    """One feature and what it needs of the broker.

    Attributes:
        name: what a user calls it (a setting, a method), as errors and docs name it.
        kip: the KIP that brought it.
        api: the request it needs, at ``min_version`` or later; None when only a
            finalized feature level is needed.
        feature_flag: a finalized cluster feature (KIP-584) that must be at
            ``feature_level`` or more, e.g. ``transaction.version``.
        since: the first Apache Kafka release that has it (and has it on by default,
            unless ``note`` says otherwise).
        fallback: what kafkalite does on an older broker, when it does not fail.
        note: more the user should know (preview releases, broker settings).
        related: other requests that came with the same release and are part of the
            feature (DescribeUserScramCredentials beside AlterUserScramCredentials).
    """

    name: str
    kip: str
    api: type[Message] | None
    since: str
    min_version: int = 0
    feature_flag: str | None = None
    feature_level: int = 0
    fallback: str | None = None
    note: str = ""
    related: tuple[type[Message], ...] = ()

    @property
    def needs(self) -> str:
        """What the broker must serve, in words (``ConsumerGroupHeartbeat v0+``)."""
        parts = []
        if self.api is not None:
            parts.append(f"{api_name(self.api)} v{self.min_version}+")
        if self.feature_flag is not None:
            parts.append(f"the {self.feature_flag} feature at level {self.feature_level}+")
        return " and ".join(parts)

    def missing(self, versions: ApiVersionTable) -> str | None:
        """What ``versions`` lacks of this feature, or None if the broker has it all."""
        if self.api is not None and not versions.supports(self.api, self.min_version):
            served = versions.broker_ranges.get(self.api.API_KEY)
            if served is None:
                return f"it does not serve {api_name(self.api)}"
            return (f"it serves {api_name(self.api)} v{served.min}-{served.max}, and this needs "
                    f"v{self.min_version}+")
        if self.feature_flag is not None and versions.feature_level(self.feature_flag) < self.feature_level:
            level = versions.feature_level(self.feature_flag)
            return f"its finalized {self.feature_flag} is {level}, and this needs {self.feature_level}"
        return None


def api_name(request_class: type[Message]) -> str:
    return API_NAMES.get(request_class.API_KEY, request_class.__name__)


KIP848_GROUPS = BrokerFeature(
    "group.protocol=consumer", "KIP-848", ConsumerGroupHeartbeatRequest, "4.0",
    note="3.7-3.9 have it as a preview when group.coordinator.rebalance.protocols includes consumer; "
         "use group.protocol=classic with older brokers")
SHARE_GROUPS = BrokerFeature(
    "share groups (ShareConsumer)", "KIP-932", ShareGroupHeartbeatRequest, "4.1", min_version=1,
    note="4.0 has an early-access version this client does not speak; the share.version feature "
         "must be enabled")
TRANSACTIONS_V2 = BrokerFeature(
    "transaction.version=2", "KIP-890", None, "4.0", feature_flag="transaction.version", feature_level=2,
    fallback="transactions v1 (the producer uses the level the cluster has finalized)")
FETCH_TOPIC_IDS = BrokerFeature(
    "topic ids in Fetch", "KIP-516", FetchRequest, "3.1", min_version=13,
    fallback="Fetch names topics (v12 and older)")
DESCRIBE_TOPIC_PARTITIONS = BrokerFeature(
    "describe_topics() by DescribeTopicPartitions", "KIP-966", DescribeTopicPartitionsRequest, "3.8",
    fallback="Metadata, as the Java admin client does (no eligible leader replicas)")
ELR = BrokerFeature(
    "eligible leader replicas in describe_topics()", "KIP-966", DescribeTopicPartitionsRequest, "4.1",
    feature_flag="eligible.leader.replicas.version", feature_level=1,
    fallback="the description has no eligible leader replicas",
    note="on by default for clusters made with 4.1 or later; 4.0 with eligible.leader.replicas.version=1")
CONSUMER_GROUP_DESCRIBE = BrokerFeature(
    "describe_consumer_groups() of KIP-848 groups", "KIP-848", ConsumerGroupDescribeRequest, "4.0",
    fallback="DescribeGroups, as the Java admin client does (classic groups)")
DESCRIBE_CLUSTER = BrokerFeature(
    "describe_cluster() by DescribeCluster", "KIP-700", DescribeClusterRequest, "2.8",
    fallback="Metadata, as the Java admin client does")
TELEMETRY_PUSH = BrokerFeature(
    "enable.metrics.push", "KIP-714", GetTelemetrySubscriptionsRequest, "3.7",
    fallback="no metrics are pushed (as the Java client, which pushes only to brokers that ask)")
STATIC_MEMBERSHIP = BrokerFeature(
    "group.instance.id (static membership)", "KIP-345", JoinGroupRequest, "2.3", min_version=5)
CREATE_TOPIC_DEFAULTS = BrokerFeature(
    "create_topics() with the broker's default partitions or replication factor (-1)", "KIP-464",
    CreateTopicsRequest, "2.4", min_version=4)
GROUP_METADATA_COMMIT = BrokerFeature(
    "send_offsets_to_transaction() with consumer.group_metadata()", "KIP-447", TxnOffsetCommitRequest, "2.5",
    min_version=3,
    note="pass the group id alone (a str) to commit without the group's fencing on older brokers")
INCREMENTAL_ALTER_CONFIGS = BrokerFeature(
    "incremental_alter_configs()", "KIP-339", IncrementalAlterConfigsRequest, "2.3")
OFFSET_DELETE = BrokerFeature(
    "delete_consumer_group_offsets()", "KIP-496", OffsetDeleteRequest, "2.4")
PARTITION_REASSIGNMENTS = BrokerFeature(
    "alter/list_partition_reassignments()", "KIP-455", ListPartitionReassignmentsRequest, "2.4",
    related=(AlterPartitionReassignmentsRequest,))
CLIENT_QUOTAS = BrokerFeature(
    "describe/alter_client_quotas()", "KIP-546", DescribeClientQuotasRequest, "2.6",
    related=(AlterClientQuotasRequest,))
SCRAM_CREDENTIALS = BrokerFeature(
    "describe/alter_user_scram_credentials()", "KIP-554", AlterUserScramCredentialsRequest, "2.7",
    related=(DescribeUserScramCredentialsRequest,))
PRODUCER_STATE = BrokerFeature(
    "describe_producers()", "KIP-664", DescribeProducersRequest, "2.8")
TRANSACTION_ADMIN = BrokerFeature(
    "describe_transactions()", "KIP-664", DescribeTransactionsRequest, "3.0")
LIST_TRANSACTIONS = BrokerFeature(
    "list_transactions()", "KIP-664", ListTransactionsRequest, "3.0")

UPDATE_FEATURES = BrokerFeature(
    "update_features()", "KIP-584", UpdateFeaturesRequest, "2.7")

#: Finalized feature levels (KIP-584) and the first release that can take each:
#: ``update_features({"transaction.version": 2})`` on an older broker names it.
FEATURE_LEVELS: dict[tuple[str, int], tuple[str, str]] = {
    ("transaction.version", 2): ("KIP-890", "4.0"),
    ("group.version", 1): ("KIP-848", "4.0"),
    ("eligible.leader.replicas.version", 1): ("KIP-966", "4.0"),
    ("share.version", 1): ("KIP-932", "4.1"),
    ("streams.version", 1): ("KIP-1071", "4.1"),
}


def feature_level(name: str, level: int) -> BrokerFeature:
    """The feature of finalizing ``name`` at ``level`` (for its error)."""
    kip, since = FEATURE_LEVELS.get((name, level), ("KIP-584", "?"))
    return BrokerFeature(f"{name}={level}", kip, None, since, feature_flag=name, feature_level=level)


def feature_level_missing(versions: ApiVersionTable, name: str, level: int) -> str | None:
    """Why the broker cannot finalize ``name`` at ``level`` (the range its release
    supports, from ApiVersions), or None if it can."""
    supported = versions.supported_features.get(name)
    if supported is None:
        return f"it knows no feature {name}"
    if not supported.min <= level <= supported.max:
        return f"it supports {name} levels {supported.min}-{supported.max}"
    return None


FEATURES: tuple[BrokerFeature, ...] = (
    KIP848_GROUPS, SHARE_GROUPS, TRANSACTIONS_V2, FETCH_TOPIC_IDS, DESCRIBE_TOPIC_PARTITIONS, ELR,
    CONSUMER_GROUP_DESCRIBE, DESCRIBE_CLUSTER, TELEMETRY_PUSH, STATIC_MEMBERSHIP, CREATE_TOPIC_DEFAULTS,
    GROUP_METADATA_COMMIT, INCREMENTAL_ALTER_CONFIGS,
    OFFSET_DELETE, PARTITION_REASSIGNMENTS, CLIENT_QUOTAS, SCRAM_CREDENTIALS, PRODUCER_STATE,
    TRANSACTION_ADMIN, LIST_TRANSACTIONS, UPDATE_FEATURES,
)
"""Every feature that needs more than Kafka 2.1 offers, in the order the docs list them."""


def unsupported(feature: BrokerFeature, why: str, *, broker: str | None = None,
                **context: object) -> UnsupportedFeatureError:
    """The error for a broker without ``feature``: ``why`` says what it lacks."""
    who = f"the broker {broker}" if broker else "the broker"
    hint = f" ({feature.note})" if feature.note else ""
    return UnsupportedFeatureError(
        f"{feature.name} ({feature.kip}) needs Apache Kafka {feature.since} or later: {who} cannot, "
        f"{why}{hint}",
        feature=feature.name, minimum_release=feature.since, broker=broker, **context)


def require(versions: ApiVersionTable, feature: BrokerFeature, *, broker: str | None = None,
            **context: object) -> None:
    """Raise :class:`UnsupportedFeatureError` unless ``versions`` (one broker's) has ``feature``."""
    why = feature.missing(versions)
    if why is not None:
        raise unsupported(feature, why, broker=broker, **context)


def feature_of(request_class: type[Message], min_version: int = 0) -> BrokerFeature | None:
    """The feature that a request (at ``min_version`` or later) is the whole of, if any: a
    broker without it then gets the feature's error rather than a bare version one."""
    for feature in FEATURES:
        if feature.feature_flag is not None:
            continue
        if (feature.api is request_class and feature.min_version <= min_version) or request_class in feature.related:
            return feature
    return None


def missing_features(versions: ApiVersionTable) -> Iterator[tuple[BrokerFeature, str]]:
    """Each feature this broker lacks, with what it lacks (for reports and ``doctor``)."""
    for feature in FEATURES:
        why = feature.missing(versions)
        if why is not None:
            yield feature, why
