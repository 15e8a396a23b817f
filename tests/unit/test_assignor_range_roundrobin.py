"""RangeAssignor and RoundRobinAssignor: Java's documented examples and test scenarios
(including KIP-881 rack-aware range), static members, and properties."""

from __future__ import annotations

from hypothesis import given, settings

from kafkalite.consumer.assignors import RangeAssignor, RoundRobinAssignor, Subscription
from kafkalite.types import TopicPartition as TP
from tests.helpers.assignors import check_valid, groups

RACKS = ["a", "b", "c", "d", "e", "f"]


def names(result) -> dict[str, str]:
    return {m: ", ".join(sorted(f"{tp.topic}-{tp.partition}" for tp in a.partitions)) for m, a in result.items()}


def test_range_java_doc_example() -> None:
    subs = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    assert names(RangeAssignor().assign({"t0": 3, "t1": 3}, subs)) == {
        "C0": "t0-0, t0-1, t1-0, t1-1", "C1": "t0-2, t1-2"}


def test_roundrobin_java_doc_examples() -> None:
    subs = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    assert names(RoundRobinAssignor().assign({"t0": 3, "t1": 3}, subs)) == {
        "C0": "t0-0, t0-2, t1-1", "C1": "t0-1, t1-0, t1-2"}
    subs = {"C0": Subscription(["t0"]), "C1": Subscription(["t0", "t1"]), "C2": Subscription(["t0", "t1", "t2"])}
    assert names(RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, subs)) == {
        "C0": "t0-0", "C1": "t1-0", "C2": "t1-1, t2-0, t2-1, t2-2"}


def test_static_members_keep_their_ranges_when_member_ids_change() -> None:
    ppt = {"t1": 5, "t2": 5}
    first = {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}
    second = {"consumer1": "instance1", "consumer5": "instance2", "consumer4": "instance3"}
    for assignor in (RangeAssignor(), RoundRobinAssignor()):
        by_instance = []
        for ids in (first, second):
            subs = {m: Subscription(["t1", "t2"], group_instance_id=i) for m, i in ids.items()}
            result = names(assignor.assign(ppt, subs))
            by_instance.append({ids[m]: v for m, v in result.items()})
        assert by_instance[0] == by_instance[1]
    assert by_instance[0] == {"instance1": "t1-0, t1-3, t2-1, t2-4", "instance2": "t1-1, t1-4, t2-2",
                              "instance3": "t1-2, t2-0, t2-3"}  # round robin's


def test_static_members_sort_before_dynamic_ones() -> None:
    subs = {"a": Subscription(["t"]), "b": Subscription(["t"], group_instance_id="y"),
            "c": Subscription(["t"], group_instance_id="x")}
    assert names(RangeAssignor().assign({"t": 3}, subs)) == {"c": "t-0", "b": "t-1", "a": "t-2"}


def java_racks(ppt: dict[str, int], replication: int, broker_racks: list[str]) -> dict[TP, set[str]]:
    """Replica racks as Java's AbstractPartitionAssignorTest lays them out: replica j of
    partition i of the k-th topic on broker (i + j + partitions before it) % brokers."""
    out: dict[TP, set[str]] = {}
    offset = 0
    for topic, n in ppt.items():
        for p in range(n):
            out[TP(topic, p)] = {broker_racks[(p + j + offset) % len(broker_racks)] for j in range(replication)}
        offset += n
    return out


def run_rack_case(ppt, replication, n_broker_racks, consumer_racks, consumer_topics) -> list[str]:
    subs = {f"consumer{i}": Subscription(t, rack_id=r) for i, (t, r) in enumerate(zip(consumer_topics, consumer_racks))}
    result = names(RangeAssignor().assign(ppt, subs, partition_racks=java_racks(ppt, replication, RACKS[:n_broker_racks])))
    return [result[f"consumer{i}"] for i in range(len(consumer_topics))]


ALL3 = ["t1", "t2", "t3"]


def test_kip881_uniform_subscription() -> None:
    ppt = {"t1": 6, "t2": 7, "t3": 2}
    racks3 = RACKS[:3]
    assert run_rack_case(ppt, 1, 3, racks3, [ALL3] * 3) == [
        "t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]
    assert run_rack_case(ppt, 2, 3, racks3, [ALL3] * 3) == [
        "t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0", "t1-4, t1-5, t2-5, t2-6"]
    # all replicas on all racks: nothing to gain, plain range
    assert run_rack_case(ppt, 3, 3, racks3, [ALL3] * 3) == [
        "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"]


def test_kip881_non_equal_subscription() -> None:
    ppt = {"t1": 6, "t2": 7, "t3": 2}
    topics = [ALL3, ALL3, ["t1", "t3"]]
    assert run_rack_case(ppt, 1, 3, RACKS[:3], topics) == [
        "t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0", "t1-2, t1-5, t3-1"]
    assert run_rack_case(ppt, 2, 3, RACKS[:3], topics) == [
        "t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0", "t1-4, t1-5"]


def test_kip881_co_partitioning_wins_over_rack_alignment() -> None:
    ppt = {"t1": 5, "t2": 5, "t3": 5}
    plain = ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"]
    assert run_rack_case(ppt, 1, 3, RACKS[:3], [ALL3] * 3) == plain
    topics = [ALL3, ALL3, ["t1", "t3"]]
    assert run_rack_case(ppt, 1, 3, RACKS[:3], topics) == [
        "t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t3-4"]
    assert run_rack_case(ppt, 2, 3, RACKS[:3], topics) == [
        "t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3", "t1-1, t1-4, t3-1, t3-4"]


def test_kip881_co_partitioned_groups_of_topics() -> None:
    ppt = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    racks = ["a", "b", "b", "a"]
    topics = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    assert run_rack_case(ppt, 1, 2, racks, topics) == [
        "t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5", "t3-1, t4-1", "t3-0, t4-0"]
    every = [["t1", "t2", "t3", "t4"]] * 4
    assert run_rack_case(ppt, 1, 2, racks, every) == [
        "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1", "t1-5, t2-5", "t1-4, t2-4"]
    assert run_rack_case(ppt, 1, 3, racks, every) == [
        "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1", "t1-2, t2-2", "t1-5, t2-5"]


def test_no_rack_awareness_without_both_sides() -> None:
    ppt = {"t1": 6, "t2": 7, "t3": 2}
    plain = ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"]
    assert run_rack_case(ppt, 1, 3, [None, None, None], [ALL3] * 3) == plain
    assert run_rack_case(ppt, 1, 3, ["d", "e", "f"], [ALL3] * 3) == plain  # no overlap
    subs = {f"c{i}": Subscription(ALL3, rack_id=r) for i, r in enumerate("abc")}
    assert list(names(RangeAssignor().assign(ppt, subs)).values()) == plain  # no partition racks


@given(groups(with_owned=False))
@settings(max_examples=200)
def test_range_and_roundrobin_assign_everything_once(case) -> None:
    ppt, subs = case
    for assignor in (RangeAssignor(), RoundRobinAssignor()):
        check_valid(ppt, subs, assignor.assign(ppt, subs))


@given(groups(with_owned=False, same_subscriptions=True))
@settings(max_examples=200)
def test_roundrobin_balanced_and_range_balanced_per_topic(case) -> None:
    ppt, subs = case
    rr = RoundRobinAssignor().assign(ppt, subs)
    counts = [len(a.partitions) for a in rr.values()]
    assert max(counts) - min(counts) <= 1
    for topic in next(iter(subs.values())).topics:
        per = [sum(tp.topic == topic for tp in a.partitions) for a in RangeAssignor().assign(ppt, subs).values()]
        assert max(per) - min(per) <= 1
