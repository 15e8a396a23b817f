"""Every assignor gives the same assignment in every process.

Any member of a group can be elected leader, and a new leader must not reshuffle the
group, so an assignor's result may depend only on its input, never on the process it
runs in. Python randomises string hashing per process (``PYTHONHASHSEED``), so set and
dict iteration over strings (and TopicPartitions, which hash their topic) differs from
one process to the next: these tests run the assignors in subprocesses with different
hash seeds on fixed inputs and require identical results. Some inputs are built through
sets inside the subprocess, so even the order in which the assignor receives topics and
owned partitions follows the hash seed; the result still may not change.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

HASH_SEEDS = ["0", "1", "2", "42", "31337", "4294967295"]

# Runs in the subprocess: reads the cases as JSON on stdin, prints the results as JSON.
_RUNNER = r"""
import json, sys
from kafkalite.consumer.assignors import assignor_by_name, Subscription
from kafkalite.consumer.assignors.sticky import encode_sticky_user_data
from kafkalite.types import TopicPartition as TP

out = {}
for case in json.load(sys.stdin):
    hashed = case["hash_ordered_inputs"]
    racks = None
    if case["racks"] is not None:
        racks = {TP(t, int(p)): set(r) for t, p, r in case["racks"]}
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        subs = {}
        members = list(case["members"].items())
        if hashed:  # the dict order the assignor sees follows this process's hash seed
            members = [(m, case["members"][m]) for m in set(case["members"])]
        for member, m in members:
            topics = list(set(m["topics"])) if hashed else list(m["topics"])
            owned = [TP(t, p) for t, p in m["owned"]]
            if hashed:
                owned = list(set(owned))
            gen = m["generation"]
            if name == "sticky":
                data = encode_sticky_user_data(owned, gen if gen >= 0 else None) if owned else None
                subs[member] = Subscription(topics, data, rack_id=m["rack"])
            else:
                subs[member] = Subscription(topics, None, owned, gen, rack_id=m["rack"])
        result = assignor_by_name(name).assign(dict(case["partitions"]), subs, partition_racks=racks)
        out[case["name"] + "/" + name] = {
            member: [[tp.topic, tp.partition] for tp in a.partitions] for member, a in sorted(result.items())
        }
print(json.dumps(out, sort_keys=True))
"""


def _member(topics: list[str], owned: list[tuple[str, int]] = (), generation: int = -1,  # type: ignore[assignment]
            rack: str | None = None) -> dict[str, Any]:
    return {"topics": topics, "owned": [list(tp) for tp in owned], "generation": generation, "rack": rack}


def _random_case(name: str, seed: int, members: int, topics: int, max_partitions: int,
                 racks: bool, hashed: bool) -> dict[str, Any]:
    """A fixed pseudo-random group: mixed subscriptions, owned partitions with
    conflicting claims of equal and different generations, optional racks."""
    rng = random.Random(seed)
    partitions = {f"topic-{rng.choice('abcdefgh')}{i}": rng.randint(1, max_partitions) for i in range(topics)}
    names = list(partitions)
    everything = [(t, p) for t, n in partitions.items() for p in range(n)]
    group = {}
    for i in range(members):
        mine = rng.sample(names, rng.randint(1, len(names)))
        owned = rng.sample(everything, rng.randint(0, len(everything) // 2))
        group[f"consumer-{rng.randint(0, 99)}-{i}"] = _member(
            mine, owned, rng.choice([-1, 5, 6]) if owned else -1,
            rng.choice(["r0", "r1", "r2"]) if racks else None)
    rack_map = None
    if racks:
        rack_map = [[t, p, rng.sample(["r0", "r1", "r2"], rng.randint(1, 2))] for t, p in everything]
    return {"name": name, "partitions": partitions, "members": group, "racks": rack_map,
            "hash_ordered_inputs": hashed}


def _cases() -> list[dict[str, Any]]:
    # The hypothesis case whose result used to depend on the process: a partition
    # claimed twice in one generation, and a member that can keep t0-1 only if another
    # gives up t0-2 for t1's partitions.
    doubly_claimed = {
        "name": "doubly-claimed",
        "partitions": {"t0": 3, "t1": 2, "t2": 1},
        "members": {
            "member-0": _member(["t0"]),
            "member-1": _member(["t0"]),
            "member-2": _member(["t0", "t2"], [("t0", 0), ("t0", 1)], 3),
            "member-3": _member(["t0", "t1"], [("t0", 0), ("t0", 2)], 3),
        },
        "racks": None,
        "hash_ordered_inputs": True,
    }
    identical = {
        "name": "identical-rebalance",
        "partitions": {"orders": 7, "payments": 5, "audit": 3},
        "members": {
            "c-1": _member(["orders", "payments", "audit"], [("orders", p) for p in range(7)], 9),
            "c-2": _member(["audit", "orders", "payments"], [("payments", p) for p in range(5)], 9),
            "c-3": _member(["payments", "audit", "orders"]),
            "c-4": _member(["orders", "audit", "payments"], [("audit", 0), ("audit", 1)], 8),
        },
        "racks": None,
        "hash_ordered_inputs": True,
    }
    return [
        doubly_claimed,
        identical,
        _random_case("mixed-small", 11, members=5, topics=4, max_partitions=5, racks=False, hashed=True),
        _random_case("mixed-large", 12, members=40, topics=12, max_partitions=30, racks=False, hashed=True),
        _random_case("mixed-racks", 13, members=12, topics=6, max_partitions=9, racks=True, hashed=True),
        _random_case("fixed-order", 14, members=25, topics=8, max_partitions=20, racks=False, hashed=False),
    ]


def _run(cases: list[dict[str, Any]], hash_seed: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER], input=json.dumps(cases), capture_output=True, text=True,
        env=env, cwd=ROOT, timeout=90, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@pytest.mark.timeout(300)
def test_same_assignment_under_every_hash_seed() -> None:
    cases = _cases()
    results = {seed: _run(cases, seed) for seed in HASH_SEEDS}
    reference = results[HASH_SEEDS[0]]
    assert len(reference) == 4 * len(cases)
    for seed, result in results.items():
        differing = sorted(k for k in reference if result.get(k) != reference[k])
        assert not differing, f"PYTHONHASHSEED={seed} changes {differing}"


def test_hash_seed_really_changes_set_order() -> None:
    """The test above only proves something if the seeds do reorder sets of strings."""
    code = "print(list({'member-0', 'member-1', 'member-2', 'member-3', 't0', 't1', 't2'}))"
    orders = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env=dict(os.environ, PYTHONHASHSEED=seed), timeout=60).stdout
        for seed in HASH_SEEDS
    }
    assert len(orders) > 1
