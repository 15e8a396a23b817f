"""Time the client-side assignors on large groups (run on a quiet machine).

    .venv/bin/python benchmarks/assignors.py                 # full size
    .venv/bin/python benchmarks/assignors.py --partitions 200 --members 10 --repeat 1

Scenarios per assignor: a fresh group (nobody owns anything), a rebalance after one
member left (everyone else owns its previous partitions), and a rebalance after one
member joined; each with identical subscriptions and with different subscriptions
(each member subscribes to a random half of the topics). Prints the best of --repeat
runs in milliseconds.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from kafkalite.consumer.assignors import (
    Assignment,
    ConsumerPartitionAssignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
)
from kafkalite.consumer.assignors.sticky import encode_sticky_user_data


def _topics(partitions: int, n_topics: int) -> dict[str, int]:
    per, extra = divmod(partitions, n_topics)
    return {f"topic-{i:03d}": per + (1 if i < extra else 0) for i in range(n_topics)}


def _subscriptions(members: int, topics: list[str], mixed: bool, rng: random.Random) -> dict[str, list[str]]:
    if not mixed:
        return {f"member-{i:04d}": list(topics) for i in range(members)}
    return {f"member-{i:04d}": rng.sample(topics, max(1, len(topics) // 2)) for i in range(members)}


def _with_owned(assignor: ConsumerPartitionAssignor, topics_of: dict[str, list[str]],
                previous: dict[str, Assignment], generation: int) -> dict[str, Subscription]:
    subs = {}
    for member, topics in topics_of.items():
        owned = previous[member].partitions if member in previous else []
        if isinstance(assignor, StickyAssignor):
            subs[member] = Subscription(topics, user_data=encode_sticky_user_data(owned, generation))
        else:
            subs[member] = Subscription(topics, owned_partitions=list(owned), generation_id=generation)
    return subs


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(42)
    ppt = _topics(args.partitions, args.topics)
    assignors: list[ConsumerPartitionAssignor] = [
        RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), CooperativeStickyAssignor()
    ]
    print(f"{args.partitions} partitions in {args.topics} topics, {args.members} members; "
          f"best of {args.repeat} (ms)")
    print(f"{'assignor':<20}{'subscriptions':<14}{'fresh':>10}{'one left':>10}{'one joined':>12}")
    for mixed in (False, True):
        topics_of = _subscriptions(args.members, list(ppt), mixed, rng)
        for assignor in assignors:
            fresh_subs = {m: Subscription(t) for m, t in topics_of.items()}
            fresh = _best(lambda a=assignor, s=fresh_subs: a.assign(ppt, s), args.repeat)
            previous = assignor.assign(ppt, fresh_subs)
            left = dict(topics_of)
            left.pop(next(iter(left)))
            left_subs = _with_owned(assignor, left, previous, 1)
            one_left = _best(lambda a=assignor, s=left_subs: a.assign(ppt, s), args.repeat)
            joined = dict(topics_of)
            joined["member-new"] = list(ppt) if not mixed else rng.sample(list(ppt), len(ppt) // 2)
            joined_subs = _with_owned(assignor, joined, previous, 1)
            one_joined = _best(lambda a=assignor, s=joined_subs: a.assign(ppt, s), args.repeat)
            kind = "different" if mixed else "identical"
            print(f"{assignor.name:<20}{kind:<14}{fresh:>10.1f}{one_left:>10.1f}{one_joined:>12.1f}")


if __name__ == "__main__":
    main()
