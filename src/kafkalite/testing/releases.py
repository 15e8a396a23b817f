"""The Apache Kafka releases the harness keeps, and how each one runs (KRaft or ZooKeeper).

Every release from 2.1 to 4.x can be started (``LocalBroker("2.8.2")``) once it has a
lock (``tools/lock_kafka.py``); the releases below are the ones the project keeps a lock
for and tests against, chosen to cover the protocol's changes. The mode follows the
release: ZooKeeper only before 3.3 (KRaft was a preview there), both from 3.3 to 3.9
(:data:`KEPT` says which one the harness picks), KRaft only from 4.0 on.

>>> mode_for("2.8.2"), mode_for("3.9.1"), mode_for("4.4.0")
('zookeeper', 'kraft', 'kraft')
>>> modes_of("3.6.2")
('zookeeper', 'kraft')
"""

from __future__ import annotations

from dataclasses import dataclass

ZOOKEEPER = "zookeeper"
KRAFT = "kraft"


class ModeError(ValueError):
    """A release cannot run in the mode asked for."""


@dataclass(frozen=True)
class KeptRelease:
    """A release the project keeps a lock for and runs its version matrix against.

    Attributes:
        version: e.g. ``"2.1.1"``.
        mode: the mode the harness runs it in unless told otherwise.
        why: what it brings to the matrix (the protocol changes it stands for).
        in_ci: CI runs the functional matrix against it (the others: the documented
            full matrix command, ``python -m tests.matrix``).
    """

    version: str
    mode: str
    why: str
    in_ci: bool = False


KEPT: tuple[KeptRelease, ...] = (
    KeptRelease("2.1.1", ZOOKEEPER, in_ci=True, why=(
        "the oldest broker the Java 4.x client supports (KIP-896): no static membership, "
        "IncrementalAlterConfigs, DescribeCluster, OffsetDelete or default replication factor "
        "in CreateTopics; zstd and KIP-320 leader epochs in Fetch are new")),
    KeptRelease("2.8.2", ZOOKEEPER, why=(
        "the last 2.x: flexible versions (KIP-482) on most APIs, topic ids in Metadata (KIP-516), "
        "DescribeCluster, DescribeProducers, SCRAM and client-quota admin APIs, fetch from followers (KIP-392)")),
    KeptRelease("3.0.2", ZOOKEEPER, why=(
        "the first 3.x: DescribeTransactions / ListTransactions (KIP-664), "
        "ListOffsets max timestamp (KIP-734); no topic ids in Fetch yet (3.1)")),
    KeptRelease("3.6.2", ZOOKEEPER, why=(
        "a ZooKeeper cluster with the late 3.x protocol: topic ids in Fetch, KIP-890 part 1 "
        "verification, no KIP-848, KIP-714 or DescribeTopicPartitions")),
    KeptRelease("3.9.1", KRAFT, why=(
        "the last 3.x, KRaft: KIP-848 as a preview turned off by default (UNSUPPORTED_VERSION "
        "answers), KIP-714 push, DescribeTopicPartitions, transactions v1 only")),
    KeptRelease("4.0.0", KRAFT, why=(
        "the first release without ZooKeeper: KIP-896 drops old request versions, KIP-848 "
        "groups on by default, transactions v2 (KIP-890), share groups only as early access")),
    KeptRelease("4.4.0", KRAFT, in_ci=True, why=(
        "the newest and the harness's default: share groups, OffsetCommit/OffsetFetch by topic "
        "id, request arrays of at most 1,000,000 elements and 10,000 tagged fields")),
)
"""The releases kept, oldest first."""

KEPT_VERSIONS: tuple[str, ...] = tuple(r.version for r in KEPT)
OLDEST_KAFKA_VERSION = KEPT[0].version
"""The oldest release kafkalite supports and tests (ZooKeeper mode)."""


def release_of(version: str) -> tuple[int, int]:
    """A release's ``(major, minor)``, for comparing releases.

    >>> release_of("2.8.2") < release_of("3.0.0")
    True
    """
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def modes_of(version: str) -> tuple[str, ...]:
    """The modes the harness can run ``version`` in, the default first."""
    release = release_of(version)
    if release < (2, 1):
        raise ModeError(f"Kafka {version} is older than 2.1, the oldest release kafkalite supports")
    if release < (3, 3):
        return (ZOOKEEPER,)
    if release >= (4, 0):
        return (KRAFT,)
    kept = next((r for r in KEPT if r.version == version), None)
    default = kept.mode if kept is not None else KRAFT
    return (default, ZOOKEEPER if default == KRAFT else KRAFT)


def mode_for(version: str, asked: str | None = None) -> str:
    """The mode to run ``version`` in: ``asked`` if the release has it, else its default.

    >>> mode_for("3.6.2", "kraft")
    'kraft'
    >>> mode_for("4.4.0", "zookeeper")
    Traceback (most recent call last):
    ...
    kafkalite.testing.releases.ModeError: Kafka 4.4.0 runs in KRaft mode only (ZooKeeper mode ended with 3.9)
    """
    modes = modes_of(version)
    if asked is None:
        return modes[0]
    if asked not in (ZOOKEEPER, KRAFT):
        raise ModeError(f"unknown mode {asked!r}: use {ZOOKEEPER!r} or {KRAFT!r}")
    if asked not in modes:
        if asked == ZOOKEEPER:
            raise ModeError(f"Kafka {version} runs in KRaft mode only (ZooKeeper mode ended with 3.9)")
        raise ModeError(f"Kafka {version} runs in ZooKeeper mode only here (KRaft is production-ready from 3.3)")
    return asked
