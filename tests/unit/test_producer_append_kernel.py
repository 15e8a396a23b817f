"""The producer's append path: C and pure Python give the same batches byte for byte.

No broker: a ProducerCore whose engine is not started, with metadata filled in by
hand, and a Producer shell around it (as benchmarks/micro_produce.py does), so every
batch stays in the accumulator and can be compared.
"""

from __future__ import annotations

import gc
import inspect
import os
import random
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import pytest

from kafkalite.errors import InvalidArgumentError
from kafkalite.producer import append_kernel
from kafkalite.producer.core import ProducerCore
from kafkalite.producer.futures import RecordFuture
from kafkalite.producer.producer import Producer
from kafkalite.protocol.records import RecordBatch
from tests.helpers.settings import resolve

# The C append path needs the C futures and builder, which the process only uses when
# the C kernels are active (not under KAFKALITE_PURE_PYTHON=1, which runs the rest of
# this file against the pure-Python path alone).
needs_c = pytest.mark.skipif(append_kernel.IMPLEMENTATION != "c",
                             reason="the C kernels are not built or not active (KAFKALITE_PURE_PYTHON=1)")
#: The C append path when it is the active one, else None.
ACTIVE_C = append_kernel.c_impl if append_kernel.IMPLEMENTATION == "c" else None
ROOT = Path(__file__).resolve().parents[2]


def make_producer(impl, partitions: int = 3, batch_size: int = 2000, **settings) -> Producer:
    cfg = resolve("producer", {"bootstrap.servers": "127.0.0.1:1", "batch.size": batch_size,
                               "buffer.memory": 64 << 20, **settings})
    core = ProducerCore(cfg, blocking=True)
    state = core.acc.update_topic("t", partitions, list(range(partitions)))
    state.sticky._rng = random.Random(7)  # the same sticky choices for both kernels
    core.appender = append_kernel.new_appender(core.acc, core.future_cls, core.size_check_threshold, impl)
    p = Producer.__new__(Producer)  # no engine: nothing is sent
    p._core = core
    p._appender = core.appender
    p._append = core.appender.append
    p._raw = core.raw
    p._engine = None
    if impl is append_kernel.c_impl and core.raw:
        p.send = impl.SendFunction(core.appender, p, Producer.send)
    return p


def workload(p: Producer, n: int = 3000) -> list[tuple[int, int]]:
    """A mix of everything send() takes; returns (partition, index) per record."""
    rng = random.Random(11)
    out = []
    cb = lambda md, err: None  # noqa: E731
    for i in range(n):
        ts = 1_700_000_000_000 + i // 3
        kind = rng.randrange(6)
        value = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        if kind == 0:
            f = p.send("t", value, timestamp=ts)
        elif kind == 1:
            f = p.send("t", value, key=b"k%d" % rng.randrange(50), timestamp=ts)
        elif kind == 2:
            f = p.send("t", None, key=b"tomb", timestamp=ts, callback=cb)
        elif kind == 3:
            f = p.send("t", value, partition=rng.randrange(3), timestamp=ts)
        elif kind == 4:
            f = p.send("t", value, timestamp=ts, headers=[("h", b"1"), ("n", None)])
        else:
            f = p.send(topic="t", timestamp=ts, value=value, key=None, callback=cb)
        out.append((f.partition, f._index))
    return out


def batches(p: Producer) -> list[list[bytes]]:
    return [[b.builder.build() for b in pq.batches] for pq in p._core.topics["t"].queues]


@needs_c
def test_c_and_python_append_paths_build_identical_batches():
    py = make_producer(append_kernel.python_impl)
    c = make_producer(append_kernel.c_impl)
    assert type(c.send).__name__ == "SendFunction"
    placed_py, placed_c = workload(py), workload(c)
    assert placed_py == placed_c
    built_py, built_c = batches(py), batches(c)
    assert built_py == built_c
    assert sum(len(q) for q in built_c) > 10  # several batches per partition
    # ... and they decode to what was sent, in order
    total = sum(len(RecordBatch(b).records()) for q in built_c for b in q)
    assert total == 3000


@needs_c
def test_sticky_partition_switches_the_same_way():
    py = make_producer(append_kernel.python_impl, partitions=5, batch_size=1000)
    c = make_producer(append_kernel.c_impl, partitions=5, batch_size=1000)
    for p in (py, c):
        for i in range(2000):
            p.send("t", b"x" * 100, timestamp=1_700_000_000_000 + i)
    assert batches(py) == batches(c)
    counts = [sum(len(RecordBatch(b).records()) for b in q) for q in batches(c)]
    assert sum(counts) == 2000 and sum(1 for n in counts if n) >= 3  # it did move around


@pytest.mark.parametrize("impl", [append_kernel.python_impl] + ([ACTIVE_C] if ACTIVE_C else []), ids=lambda m: m.__name__)
def test_declines_leave_everything_to_the_general_path(impl):
    p = make_producer(impl)
    appender = p._appender
    first = appender.append("t", None, b"v", None, None, None)
    if impl is append_kernel.c_impl:
        assert first is None  # no open batch yet: only the general path starts batches
    else:
        assert first is not None and first._index == 0  # through RecordAccumulator.append, which starts it
    f = p.send("t", b"v")
    assert appender.append("t", None, b"v", None, None, None) is not None
    for bad in (("other", None, b"v", None, None, None),       # unknown topic
                ("t", "str", b"v", None, None, None),          # not bytes
                ("t", None, bytearray(b"v"), None, None, None),
                ("t", None, b"v", 7, None, None),              # partition out of range
                ("t", None, b"v", None, -1, None),             # bad timestamp
                ("t", None, b"v", None, 1.5, None)):
        assert appender.append(*bad) is None
    appender.enabled = False
    assert appender.append("t", None, b"v", None, None, None) is None
    assert f.partition == p._core.topics["t"].sticky.current


@needs_c
def test_send_function_takes_send_arguments_like_the_method():
    p = make_producer(append_kernel.c_impl)
    p.send("t", b"first")
    f = p.send(value=b"v", topic="t", key=b"k", timestamp=1_700_000_000_000)
    assert isinstance(f, RecordFuture) and f._timestamp == 1_700_000_000_000
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        p.send("t", b"v", nope=1)
    with pytest.raises(TypeError):
        p.send("t", b"v", None, None, None, None, None, "extra")
    with pytest.raises(TypeError, match="multiple values"):
        p.send("t", b"v", value=b"w")
    assert str(inspect.signature(p.send)).startswith("(topic: 'str', value: 'Any' = None")
    assert "Append a record" in p.send.__doc__
    # no reference cycle through the installed send: dropping the producer frees it at once
    ref = weakref.ref(p)
    gc.disable()
    try:
        del p
        assert ref() is None
    finally:
        gc.enable()


@needs_c
def test_a_send_function_outliving_its_producer_says_so():
    # The C send holds its producer by a weak reference (PyWeakref_GetRef from 3.13,
    # PyWeakref_GetObject before): once the producer is gone, the general path refuses.
    p = make_producer(append_kernel.c_impl)
    send = p.send
    assert inspect.ismethod(send.__wrapped__) and send.__wrapped__.__self__ is p
    del p
    gc.collect()
    assert not inspect.ismethod(send.__wrapped__)  # the plain function, nothing to bind
    with pytest.raises(ReferenceError, match="the producer no longer exists"):
        send("t", b"v", nope=1)  # not the common case: the general path, through the weakref


@needs_c
def test_c_futures_have_the_python_methods():
    p = make_producer(append_kernel.c_impl)
    p.send("t", b"a")
    f = p.send("t", b"b", timestamp=5)
    assert type(f) is append_kernel.c_impl.RecordFuture is RecordFuture
    assert not f.done() and "pending" in repr(f) and f.topic == "t"
    batch = f._batch
    batch.complete(100, -1, None)
    md = f.result(0)
    assert (md.topic, md.offset, md.timestamp, md.serialized_value_size) == ("t", 101, 5, 1)
    seen = []
    f.add_done_callback(seen.append)
    assert seen == [f]


def test_fast_lock():
    lock = append_kernel.FastLock()
    assert lock.acquire(False) and not lock.acquire(False)
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()
    with lock:
        assert lock.locked()
    assert not lock.locked()
    # mutual exclusion between threads, with waits (the GIL is given up while waiting)
    counter = [0]

    def work():
        for _ in range(2000):
            with lock:
                v = counter[0]
                if v % 97 == 0:
                    threading.Event().wait(0.0001)  # let the other thread try meanwhile
                counter[0] = v + 1

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert counter[0] == 6000


@pytest.mark.timeout(300)
def test_the_pure_python_path_passes_the_producer_unit_tests():
    """The whole producer (bases, append path, futures) without the C extension."""
    env = dict(os.environ, KAFKALITE_PURE_PYTHON="1")
    check = subprocess.run(
        [sys.executable, "-c", "from kafkalite.producer import append_kernel as a; "
                               "from kafkalite.producer.futures import RecordFuture as F; "
                               "print(a.IMPLEMENTATION, F.__mro__[1].__module__)"],
        env=env, capture_output=True, text=True, check=True)
    assert check.stdout.split() == ["python", "kafkalite.producer._append_py"]
    tests = sorted(str(t) for t in (ROOT / "tests" / "unit").glob("test_producer_*.py")
                   if t.name != Path(__file__).name)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests,
                           str(ROOT / "tests" / "unit" / "test_records.py")],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout


@pytest.mark.parametrize("impl", [append_kernel.python_impl] + ([ACTIVE_C] if ACTIVE_C else []), ids=lambda m: m.__name__)
def test_send_many_builds_what_send_builds(impl):
    rng = random.Random(3)
    values = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200))) for _ in range(2500)]
    keys = [None if i % 7 == 0 else b"k%d" % (i % 31) for i in range(2500)]
    one, many = make_producer(impl), make_producer(impl)
    ts = 1_700_000_000_000
    for k, v in zip(keys, values):
        one.send("t", v, k, timestamp=ts)
    outcome = many.send_many("t", values, keys, timestamp=ts)
    assert batches(one) == batches(many)
    assert len(outcome) == 2500 and not outcome.done()
    # every record is in exactly one run, in order
    runs = list(outcome._runs())
    assert sum(r[3] for r in runs) == 2500 and [r[2] for r in runs] == sorted(r[2] for r in runs)
    # unkeyed to one partition, with a tuple and a generator
    assert len(many.send_many("t", tuple(values[:10]), partition=2)) == 10
    assert len(many.send_many("t", (v for v in values[:10]))) == 10
    with pytest.raises(InvalidArgumentError, match=r"send_many\(\): 3 keys for 2 values"):
        many.send_many("t", [b"a", b"b"], [b"1", b"2", b"3"])


def test_send_many_outcome_reports_each_failed_record():
    impl = ACTIVE_C or append_kernel.python_impl
    p = make_producer(impl)
    outcome = p.send_many("t", [b"x" * 100] * 300, [b"k%d" % (i % 3) for i in range(300)])
    assert len({id(b) for b, _, _ in outcome._spans}) >= 3
    error = KeyError("boom")
    failed_batch = outcome._spans[1][0]
    for batch, _, _ in outcome._spans:
        batch.complete(0, -1, error if batch is failed_batch else None)
    assert outcome.done()
    failures = outcome.failures(0)
    assert failures and all(e is error for _, e in failures)
    failed = {i for i, _ in failures}
    expect = {start + j for b, _, start, count in outcome._runs() if b is failed_batch for j in range(count)}
    assert failed == expect
    assert outcome.exception(0) is error
    with pytest.raises(KeyError):
        outcome.result(0)


def test_send_many_with_serializers_and_non_bytes_values():
    impl = ACTIVE_C or append_kernel.python_impl
    p = make_producer(impl, **{"value.serializer": "str", "key.serializer": "str"})
    outcome = p.send_many("t", ["a", "bb", "ccc"], ["1", "2", "3"], timestamp=5)
    q = make_producer(impl)
    q.send_many("t", [b"a", b"bb", b"ccc"], [b"1", b"2", b"3"], timestamp=5)
    assert batches(p) == batches(q) and len(outcome) == 3
    plain = make_producer(impl)
    plain.send_many("t", [bytearray(b"x"), memoryview(b"y"), b"z"], timestamp=5)  # general path converts
    assert [r.value for r in RecordBatch(batches(plain)[plain._core.topics["t"].sticky.current][0]).records()] \
        == [b"x", b"y", b"z"]
