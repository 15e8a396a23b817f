"""The decoder fuzzer (``python -m tools.fuzz``): its oracle catches what it must, and a
short run over every target (~35 s on both cores) finds no crash. The long run
(>= 10^6 inputs) is documented in docs/testing.md with its figures."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.errors import CorruptRecordsError, KafkaTimeoutError
from tools.fuzz.engine import Limits, init_worker, make_case, run_case, select_targets, uninstall
from tools.fuzz.mutate import mutate
from tools.fuzz.targets import Target, all_targets

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def _oracle() -> Iterator[None]:
    init_worker()  # SIGPROF handler, tracemalloc, decompression accounting
    yield
    uninstall()


def _target(run, overhead: int = 0) -> Target:
    return Target("test", "test", lambda: [b"seed"], run, overhead=overhead)


def test_typed_errors_pass_and_anything_else_is_a_crash() -> None:
    limits = Limits()

    def corrupt(data, rng):
        raise CorruptRecordsError("bad batch")

    def index_error(data, rng):
        return data[100]

    def other_kafka_error(data, rng):
        raise KafkaTimeoutError("not a decoding error")

    assert run_case(_target(lambda d, r: len(d)), b"x", False, random.Random(), limits).outcome == "ok"
    assert run_case(_target(corrupt), b"x", False, random.Random(), limits).outcome == "typed:CorruptRecordsError"
    assert run_case(_target(corrupt), b"seed", True, random.Random(), limits).outcome == \
        "crash:valid-input-rejected"
    assert run_case(_target(index_error), b"x", False, random.Random(), limits).outcome == "crash:IndexError"
    assert run_case(_target(other_kafka_error), b"x", False, random.Random(), limits).outcome == \
        "crash:KafkaTimeoutError"


def test_a_hang_and_a_length_trusting_allocation_are_crashes() -> None:
    def spin(data, rng):
        while True:
            pass

    def trusts_length(data, rng):
        return bytearray(int.from_bytes(data[:4], "big"))  # allocates what the field says

    started = time.monotonic()
    case = run_case(_target(spin), b"x", False, random.Random(), Limits(time_s=0.2))
    # A hang is cut off at its time limit (0.2 s), not waited out (generous bound).
    assert case.outcome == "crash:hang" and time.monotonic() - started < 5
    case = run_case(_target(trusts_length), b"\x01\x00\x00\x00", False, random.Random(), Limits())
    assert case.outcome == "crash:allocation" and case.peak >= 1 << 24
    # A fixed, declared overhead (a connection's receive buffer) is allowed.
    case = run_case(_target(trusts_length, overhead=1 << 21), b"\x00\x10\x00\x00", False, random.Random(),
                    Limits())
    assert case.outcome == "ok"


def test_inputs_are_reproducible_from_seed_and_index() -> None:
    families = [(1.0, select_targets(None))]
    first = make_case(42, 1234, families)
    again = make_case(42, 1234, families)
    assert first[0] is again[0] and first[1] == again[1]
    assert make_case(42, 1235, families)[1] != first[1] or make_case(42, 1235, families)[0] is not first[0]


def test_every_decoder_family_is_a_target() -> None:
    names = {t.name for t in all_targets()}
    assert {"records:py", "records-inner:py", "records-compressed:py", "fetch:py", "frames"} <= names
    from kafkalite.protocol.record_codec import c_impl

    if c_impl is not None:
        assert {"records:c", "records-inner:c", "records-compressed:c", "fetch:c"} <= names
    # Every response at every version the client knows.
    from kafkalite.protocol.messages import APIS, response_class

    for api_key in APIS:
        cls = response_class(api_key)
        for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
            assert f"msg:{cls.__name__}:v{version}" in names


def test_seeds_are_valid_and_mutations_change_them() -> None:
    rng = random.Random(7)
    for target in all_targets():
        for seed in target.seeds:
            case = run_case(target, seed, True, rng, Limits())
            assert not case.outcome.startswith("crash:"), (target.name, case)
    seed = all_targets()[0].seeds[-1]
    assert sum(mutate(seed, random.Random(i)) != seed for i in range(100)) > 90


@pytest.mark.timeout(180)
def test_short_fuzz_run_finds_no_crash(tmp_path: Path) -> None:
    report = tmp_path / "fuzz.json"
    done = subprocess.run(
        [sys.executable, "-m", "tools.fuzz", "--seconds", "35", "--workers", "2", "--seed",
         str(int(time.time()) % 100_000), "--quiet", "--report", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=170)
    total = json.loads(report.read_text())
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [k for k in total["outcomes"] if k.startswith("crash:")]
    assert total["inputs"] >= 5000, total["inputs"]
    assert set(total["families"]) == {"messages", "records", "frames"}
    assert total["longest_cpu"]["value"] < total["limits"]["time_s"]
