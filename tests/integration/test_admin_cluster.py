"""The admin client and ``kafkalite topics`` on the 3-node cluster, with nodes stopped
and paused: reassignments that really move replicas (throttled, so they can be seen
running and cancelled), preferred and unclean leader elections, log dirs of every
broker, offline and under-replicated partitions cross-checked with ``kafka-topics``,
and listings that stay useful while one broker does not answer.

The ``kafka_cluster`` fixture heals the cluster before each test; tests that change
broker configs undo them in ``finally``. Replica throttles (Kafka's own quota
mechanism, as ``kafka-reassign-partitions --throttle`` uses) keep a reassignment or a
catching-up follower slow for as long as a test needs to look at it: a throttled
leader stops serving the partition once its quota window is exceeded, which a few MB
of backlog guarantees.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from kafkalite import AdminClient
from kafkalite.admin.ops_types import ElectionType
from kafkalite.admin.results import AdminBatchError
from kafkalite.admin.types import AlterConfigOp, ConfigResource, NewTopic
from kafkalite.errors import (
    ElectionNotNeededError,
    KafkaTimeoutError,
    NoReassignmentInProgressError,
    PreferredLeaderNotAvailableError,
)
from kafkalite.testing.cluster import LocalCluster
from kafkalite.testing.topics import unique_topic_name, wait_for_topic
from kafkalite.testing.wire import KafkaSocket
from kafkalite.types import TopicPartition
from tests.integration.admin_support import kafkalite, produce, tool, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.cluster]

THROTTLE_BYTES_PER_S = "1024"
_BROKER_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
_TOPIC_THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@pytest.fixture
def admin(kafka_cluster: LocalCluster) -> Iterator[AdminClient]:
    # Short request timeout: a request to a paused node fails in seconds, not 30.
    with AdminClient({"bootstrap.servers": kafka_cluster.bootstrap, "request.timeout.ms": 5000}) as client:
        yield client


def create(admin: AdminClient, cluster: LocalCluster, assignment: dict[int, list[int]],
           config: dict[str, str] | None = None, hint: str = "adm-cluster") -> str:
    """A topic placed by ``assignment``, known with its leaders by every broker."""
    name = unique_topic_name(hint)
    admin.create_topics([NewTopic(name, replica_assignment=assignment, config=config or {})]).all()
    wait_for_topic(cluster.live_bootstrap(), name, timeout=60)
    return name


def describe(admin: AdminClient, topic: str) -> list:
    return admin.describe_topics([topic])[topic].result().partitions


def partition(admin: AdminClient, topic: str, index: int = 0):
    return describe(admin, topic)[index]


def backlog(bootstrap: str, topic: str, megabytes: int) -> None:
    """Append about ``megabytes`` MB to partition 0 (batches under the 1 MB message limit)."""
    value = b"x" * 30_000
    for _ in range(megabytes * 35 // 30 + 1):
        produce(bootstrap, topic, 0, [value] * 30)


def throttle(admin: AdminClient, brokers: list[int], topic: str) -> None:
    changes = {ConfigResource("broker", str(b)): [AlterConfigOp.set(k, THROTTLE_BYTES_PER_S) for k in _BROKER_THROTTLES]
               for b in brokers}
    changes[ConfigResource("topic", topic)] = [AlterConfigOp.set(k, "*") for k in _TOPIC_THROTTLES]
    admin.incremental_alter_configs(changes).all()


def unthrottle(admin: AdminClient, brokers: list[int]) -> None:
    admin.incremental_alter_configs({ConfigResource("broker", str(b)): [AlterConfigOp.delete(k)
                                                                        for k in _BROKER_THROTTLES]
                                     for b in brokers}).all()


def java_describe(cluster: LocalCluster, *args: str) -> dict[tuple[str, int], dict[str, str]]:
    """``kafka-topics --describe`` partition lines as {(topic, partition): {field: value}}."""
    out = tool(cluster, "kafka-topics", "--describe", *args, bootstrap=cluster.live_bootstrap())
    return _partition_lines(out)


def _partition_lines(text: str) -> dict[tuple[str, int], dict[str, str]]:
    found: dict[tuple[str, int], dict[str, str]] = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+): ?([^\t]*)", line))
        if "Partition" in fields and "Topic" in fields and "Leader" in fields:
            found[(fields["Topic"], int(fields["Partition"]))] = fields
    return found


# ---------------------------------------------------------------- reassignments


@pytest.mark.timeout(300)
def test_reassignment_runs_can_be_cancelled_and_completes(admin, kafka_cluster) -> None:
    topic = create(admin, kafka_cluster, {0: [1, 2]}, hint="reassign")
    tp = TopicPartition(topic, 0)
    backlog(kafka_cluster.bootstrap, topic, 3)
    throttle(admin, [1, 2, 3], topic)
    try:
        admin.alter_partition_reassignments({tp: [2, 3]}).all()

        # Running: broker 3 is being added, broker 1 removed; the replica set is the union.
        ongoing = admin.list_partition_reassignments()[tp]
        assert (ongoing.adding_replicas, ongoing.removing_replicas) == ([3], [1])
        assert sorted(ongoing.replicas) == [1, 2, 3]
        assert admin.list_partition_reassignments([tp]) == {tp: ongoing}
        java = tool(kafka_cluster, "kafka-reassign-partitions", "--list")
        assert f"{topic}-0: replicas: " in java and "adding: 3" in java and "removing: 1" in java
        during = partition(admin, topic)
        assert sorted(during.replicas) == [1, 2, 3] and 3 not in during.isr  # throttled: not caught up

        # Cancelled: back to brokers 1 and 2 (KRaft keeps the order of the reassignment's
        # replica list minus the adding ones: [2, 1]), nothing listed, nothing left to cancel.
        admin.alter_partition_reassignments({tp: None}).all()
        assert tp not in admin.list_partition_reassignments()
        wait_until(lambda: sorted(partition(admin, topic).replicas) == [1, 2], 60, "the cancel rolled back")
        again = admin.alter_partition_reassignments({tp: None})[tp].error
        assert isinstance(again, NoReassignmentInProgressError) and again.topic == topic

        admin.alter_partition_reassignments({tp: [2, 3]}).all()
        assert admin.list_partition_reassignments([tp])[tp].adding_replicas == [3]
    finally:
        unthrottle(admin, [1, 2, 3])

    # Unthrottled, broker 3 catches up and the move completes.
    wait_until(lambda: not admin.list_partition_reassignments([tp]), 120, "the reassignment to complete")
    done = wait_until(lambda: (p := partition(admin, topic)) and sorted(p.isr) == [2, 3] and p, 60, "ISR [2, 3]")
    assert done.replicas == [2, 3] and done.leader in (2, 3)
    java = java_describe(kafka_cluster, "--topic", topic)[(topic, 0)]
    assert (java["Replicas"], sorted(java["Isr"].split(","))) == ("2,3", ["2", "3"])


# ---------------------------------------------------------------- elections


@pytest.mark.timeout(300)
def test_preferred_election_moves_leadership_back(admin, kafka_cluster) -> None:
    preferred = 3
    topic = create(admin, kafka_cluster, {0: [preferred, 1, 2], 1: [preferred, 2, 1]}, hint="preferred")
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    assert [p.leader for p in describe(admin, topic)] == [preferred, preferred]
    not_needed = admin.elect_leaders(ElectionType.PREFERRED, tps)
    assert all(isinstance(not_needed[tp].error, ElectionNotNeededError) for tp in tps)

    node = kafka_cluster.node(preferred)
    node.stop()
    wait_until(lambda: all(p.leader not in (None, preferred) for p in describe(admin, topic)), 60, "leaders moved")
    node.restart()
    wait_until(lambda: all(preferred in p.isr for p in describe(admin, topic)), 120, "the restarted node in ISR")
    assert [p.leader for p in describe(admin, topic)] == [1, 2]  # no automatic move back within the test

    # One partition named, then every partition (partitions=None).
    elected = admin.elect_leaders(ElectionType.PREFERRED, [tps[0]])
    assert elected[tps[0]].ok, elected
    wait_until(lambda: partition(admin, topic, 0).leader == preferred, 30, "partition 0 led by node 3")
    everything = admin.elect_leaders("preferred")
    assert everything[tps[1]].ok, everything
    wait_until(lambda: [p.leader for p in describe(admin, topic)] == [preferred] * 2, 30, "both led by node 3")
    java = java_describe(kafka_cluster, "--topic", topic)
    assert [java[(topic, i)]["Leader"] for i in (0, 1)] == [str(preferred)] * 2
    assert isinstance(admin.elect_leaders("preferred", [tps[0]])[tps[0]].error, ElectionNotNeededError)


@pytest.mark.timeout(300)
def test_unclean_election_makes_an_out_of_sync_replica_leader(admin, kafka_cluster) -> None:
    # Leader 3, follower 2; node 1 stays up so two of the three KRaft voters always are.
    leader, follower = 3, 2
    topic = create(admin, kafka_cluster, {0: [leader, follower]}, {"min.insync.replicas": "1"}, hint="unclean")
    tp = TopicPartition(topic, 0)
    throttle(admin, [leader, follower], topic)
    try:
        kafka_cluster.node(follower).stop()
        wait_until(lambda: partition(admin, topic).isr == [leader], 60, "the stopped follower out of ISR")
        backlog(kafka_cluster.live_bootstrap(), topic, 3)  # the follower misses these ...
        kafka_cluster.node(follower).restart()

        def fetched() -> dict[int, int] | None:  # replica sizes once the follower has some
            dirs = admin.describe_log_dirs([leader, follower]).all()
            size = {b: sum(r.size for d in dirs[b].values() for t, r in d.replicas.items() if t == tp)
                    for b in dirs}
            return size if size[follower] > 0 else None

        # ... and, throttled, it fetches but cannot catch up: it stays out of the ISR.
        sizes = wait_until(fetched, 60, "the restarted follower fetching")
        assert sizes[follower] < sizes[leader] and partition(admin, topic).isr == [leader]

        kafka_cluster.node(leader).stop()
        offline = wait_until(lambda: (p := partition(admin, topic)).leader is None and p, 60, "no leader")
        # Kafka 4 with eligible leader replicas (KIP-966) empties the ISR and remembers the
        # last leader as "last known ELR"; either way the follower is not eligible.
        assert offline.isr in ([], [leader]) and offline.offline_replicas == [leader]

        # Only an unclean election can help: the preferred leader is down.
        preferred = admin.elect_leaders(ElectionType.PREFERRED, [tp])[tp].error
        assert isinstance(preferred, PreferredLeaderNotAvailableError) and preferred.partition == 0
        elected = admin.elect_leaders(ElectionType.UNCLEAN, [tp])
        assert elected[tp].ok, elected
        now = wait_until(lambda: (p := partition(admin, topic)).leader == follower and p, 30, "unclean leader")
        assert now.isr == [follower]
    finally:
        kafka_cluster.node(leader).restart()
        unthrottle(admin, [leader, follower])


# ---------------------------------------------------------------- log dirs


def test_describe_log_dirs_of_every_broker(admin, kafka_cluster) -> None:
    topic = create(admin, kafka_cluster, {0: [1, 2], 1: [2, 3]}, hint="logdirs")
    produce(kafka_cluster.bootstrap, topic, 0, [b"a" * 100] * 10)
    produce(kafka_cluster.bootstrap, topic, 1, [b"b" * 100] * 5)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)

    def replicas() -> dict[int, dict[TopicPartition, int]]:
        result = admin.describe_log_dirs()
        assert sorted(result) == [1, 2, 3]
        return {b: {tp: r.size for d in dirs.values() for tp, r in d.replicas.items() if tp.topic == topic}
                for b, dirs in result.all().items()}

    # Followers catch up: every replica of a partition ends up with the leader's size.
    sizes = wait_until(lambda: (r := replicas()) and r[2].get(tp0) == r[1].get(tp0) and
                       r[3].get(tp1) == r[2].get(tp1) and r, 60, "followers caught up")
    assert {b: sorted(tp.partition for tp in s) for b, s in sizes.items()} == {1: [0], 2: [0, 1], 3: [1]}
    assert sizes[1][tp0] > sizes[3][tp1] > 0
    only = admin.describe_log_dirs([3])
    assert list(only) == [3] and tp1 in next(iter(only[3].result().values())).replicas

    java = tool(kafka_cluster, "kafka-log-dirs", "--describe", "--broker-list", "1,2,3", "--topic-list", topic)
    report = __import__("json").loads(java.strip().splitlines()[-1])
    java_sizes = {b["broker"]: {p["partition"]: p["size"] for d in b["logDirs"] for p in d["partitions"]}
                  for b in report["brokers"]}
    assert java_sizes == {b: {f"{tp.topic}-{tp.partition}": n for tp, n in s.items()} for b, s in sizes.items()}


# ---------------------------------------------------------------- a node down


@pytest.mark.timeout(300)
def test_offline_and_under_replicated_partitions_while_a_node_is_down(admin, kafka_cluster) -> None:
    down = 3
    replicated = create(admin, kafka_cluster, {0: [1, 2, 3], 1: [3, 1, 2]}, hint="urp")
    single = create(admin, kafka_cluster, {0: [down], 1: [1]}, {"min.insync.replicas": "1"}, hint="offline")
    kafka_cluster.node(down).stop()
    wait_until(lambda: partition(admin, single).leader is None
               and all(down not in p.isr for p in describe(admin, replicated)), 60, "node 3 out of every ISR")

    urp = describe(admin, replicated)
    assert all(p.under_replicated and p.leader in (1, 2) for p in urp)
    assert [p.offline_replicas for p in urp] == [[down], [down]]
    gone, fine = describe(admin, single)
    assert (gone.leader, gone.replicas, gone.offline_replicas) == (None, [down], [down])
    assert fine.leader == 1 and not fine.under_replicated

    # kafkalite topics and kafka-topics list the same partitions for both filters. An
    # offline partition counts as under-replicated too: Kafka 4 (KIP-966) empties its ISR.
    pattern = f"{replicated}|{single}"
    under = {(replicated, 0), (replicated, 1)} | ({(single, 0)} if gone.under_replicated else set())
    for flag, expected in (("--under-replicated-partitions", under),
                           ("--unavailable-partitions", {(single, 0)})):
        ours = kafkalite("topics", "--bootstrap-server", kafka_cluster.live_bootstrap(), "--describe",
                         "--topic", pattern, flag)
        assert ours.returncode == 0, ours.stderr
        mine = _partition_lines(ours.stdout)
        java = java_describe(kafka_cluster, "--topic", pattern, flag)
        assert set(mine) == set(java) == expected, (ours.stdout, java)
        for key, fields in mine.items():
            for name in ("Leader", "Replicas"):
                assert fields[name] == java[key][name], (name, fields, java[key])
            assert sorted(fields["Isr"].split(",")) == sorted(java[key]["Isr"].split(","))
    as_json = kafkalite("topics", "--bootstrap-server", kafka_cluster.live_bootstrap(), "--describe", "--topic",
                        single, "--unavailable-partitions", "--json")
    (described,) = __import__("json").loads(as_json.stdout)
    assert [(p["partition"], p["leader"], p["offline_replicas"]) for p in described["partitions"]] == [(0, None, [3])]


# ---------------------------------------------------------------- a broker that does not answer

_COORDINATOR_TOPICS = ("__consumer_offsets", "__transaction_state")
# Each listing below gives up on the silent broker after this long; the others answer in
# milliseconds, so it only has to outlast a busy machine's slowest answer.
LISTING_TIMEOUT_S = 6.0


def _coordinators_settled(admin: AdminClient, cluster: LocalCluster) -> bool:
    """True once every group and transaction coordinator partition is led by its preferred
    replica, in the controller and in every broker's metadata (electing where needed).

    Earlier tests stop nodes, and a preferred election fails for a partition whose
    preferred replica is still catching up; the controller's automatic rebalance could
    then move a coordinator in the middle of the test. At the preferred leaders nothing
    is left to move."""
    partitions = [TopicPartition(t, p.partition) for t in _COORDINATOR_TOPICS for p in describe(admin, t)]
    elected = admin.elect_leaders(ElectionType.PREFERRED, partitions)
    if not all(isinstance(elected[tp].error, ElectionNotNeededError) for tp in partitions):
        return False
    with KafkaSocket.to(cluster.bootstrap) as conn:
        brokers = conn.metadata(list(_COORDINATOR_TOPICS)).brokers
    if sorted(brokers) != [b.node_id for b in cluster]:
        return False
    for host, port in brokers.values():
        with KafkaSocket(host, port, timeout=5.0) as conn:
            topics = conn.metadata(list(_COORDINATOR_TOPICS)).topics
        if any(p.leader != p.replicas[0] for t in _COORDINATOR_TOPICS for p in topics[t].partitions):
            return False
    return True


@pytest.mark.timeout(300)
def test_listings_are_partial_with_errors_while_a_broker_does_not_answer(admin, kafka_cluster,
                                                                        network_faults) -> None:
    """list_groups / list_transactions / describe_log_dirs ask every broker; one broker that
    does not answer costs exactly its own entries (named in .errors), never the others'.

    The broker is silenced by a black hole in front of it rather than paused: a paused
    (SIGSTOPped) broker misses its heartbeats and is fenced after broker.session.timeout.ms
    (4 s in the test clusters), in the middle of the listings; its coordinators then move
    to the other brokers, which answer COORDINATOR_LOAD_IN_PROGRESS while they load them, so
    what a listing returned depended on how fast a busy machine did that. Behind the black
    hole the broker stays in the cluster (its heartbeats and replication do not pass the
    proxy): the coordinators stay where they are and the gap is exactly the silent broker's.
    """
    topic = create(admin, kafka_cluster, {0: [1, 2, 3]}, hint="partial")
    tp = TopicPartition(topic, 0)
    # Both coordinator topics exist (they are created on first use) ...
    admin.alter_consumer_group_offsets(unique_topic_name("partial-warmup"), {tp: 0}).all()
    admin.fence_producers([unique_topic_name("partial-warmup")]).all()
    # ... and are led by their preferred replicas everywhere, before any group of ours exists.
    wait_until(lambda: _coordinators_settled(admin, kafka_cluster), 120, "coordinators at their preferred leaders")

    # Connections through the proxies (a fresh client: no coordinator cached from before).
    with AdminClient({"bootstrap.servers": network_faults.bootstrap, "request.timeout.ms": 5000}) as client:
        groups: list[str] = []
        coordinator: dict[str, int] = {}
        while len(groups) < 9 or len(set(coordinator.values())) < 2:  # the gap must be partial
            assert len(groups) < 90, f"every group lands on one coordinator: {coordinator}"
            batch = [unique_topic_name(f"partial-g{len(groups) + i}") for i in range(9)]
            for g in batch:
                client.alter_consumer_group_offsets(g, {tp: 0}).all()
            groups += batch
            coordinator |= {g: d.coordinator.id for g, d in client.describe_consumer_groups(batch).all().items()}
        txns = [unique_topic_name(f"partial-t{i}") for i in range(9)]
        client.fence_producers(txns).all()
        txn_coordinator = {t: d.coordinator_id for t, d in client.describe_transactions(txns).all().items()}
        # Two coordinators at least: the victim coordinates some of our groups, not all.
        victim = min(coordinator.values())
        assert set(groups) <= {g.group_id for g in client.list_groups().all()}
        assert set(txns) <= {t.transactional_id for t in client.list_transactions().all()}

        with network_faults[victim].black_hole():
            started = time.monotonic()
            listed = client.list_groups(timeout=LISTING_TIMEOUT_S)
            # The point of the timeout: a silent broker costs the call its timeout, not
            # request.timeout.ms per retry or default.api.timeout.ms (60 s); 5x the timeout.
            assert time.monotonic() - started < 5 * LISTING_TIMEOUT_S
            assert not listed.ok and set(listed.errors) == {victim}
            error = listed.errors[victim]
            assert isinstance(error, KafkaTimeoutError) and f"broker {victim}" in str(error)
            assert {g.group_id for g in listed} & set(groups) == {g for g in groups if coordinator[g] != victim}
            with pytest.raises(AdminBatchError) as failed:
                listed.all()
            assert set(failed.value.errors) == {victim}
            assert f"broker {victim}" in repr(listed) and "incomplete" in repr(listed)

            transactions = client.list_transactions(timeout=LISTING_TIMEOUT_S)
            assert set(transactions.errors) == {victim}
            assert ({t.transactional_id for t in transactions} & set(txns)
                    == {t for t in txns if txn_coordinator[t] != victim})

            dirs = client.describe_log_dirs(timeout=LISTING_TIMEOUT_S)
            assert set(dirs.errors) == {victim} and all(dirs[b].ok for b in (1, 2, 3) if b != victim)
