"""Nothing lost silently at exit: producers a program never closed, in real
subprocesses. When the broker answers, the records are delivered at exit (or when
asyncio.run() shuts its loop down); when it does not, the exit waits at most
exit.flush.timeout.ms and reports per topic what was not delivered."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time

import pytest

from tests.integration.producer_support import read_back

pytestmark = pytest.mark.broker

BLOCKING = """
import sys
from kafkalite import Producer
p = Producer({{"bootstrap.servers": "{bootstrap}", "linger.ms": 600000, "batch.size": 1000000{extra}}})
p.send("{topic_a}", b"first"); p.flush(30)     # the topics' metadata is known
for i in range(100): p.send("{topic_a}", b"a%d" % i)
for i in range(30): p.send("{topic_b}", b"b%d" % i)
print("buffered", flush=True)
sys.stdin.readline()                           # the test breaks the network now, or not
"""

ASYNC_RUN = """
import asyncio, sys
from kafkalite.aio import Producer
async def main():
    p = Producer({{"bootstrap.servers": "{bootstrap}", "linger.ms": 600000, "batch.size": 1000000{extra}}})
    await p.send("{topic_a}", b"first"); await p.flush(30)
    for i in range(40): await p.send("{topic_a}", b"a%d" % i)
    print("buffered", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
asyncio.run(main())
print("asyncio.run returned", flush=True)
"""

RUN_UNTIL_COMPLETE = """
import asyncio
from kafkalite.aio import Producer
loop = asyncio.new_event_loop()
producer = Producer({{"bootstrap.servers": "{bootstrap}", "linger.ms": 600000, "batch.size": 1000000}})
async def main():
    await producer.send("{topic_a}", b"first"); await producer.flush(30)
    for i in range(25): await producer.send("{topic_a}", b"a%d" % i)
loop.run_until_complete(main())
print("buffered; the loop is stopped, not closed", flush=True)
"""


def _run(script: str, *, before_exit=None, **fmt: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``script`` until it says 'buffered', call ``before_exit()``, let it exit."""
    code = textwrap.dedent(script).format(extra=fmt.pop("extra", ""), **fmt)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    assert "buffered" in line, (line, proc.stderr.read() if proc.stderr else "")
    if before_exit is not None:
        before_exit()
    started = time.monotonic()
    try:
        out, err = proc.communicate("go\n", timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, line + out, err), time.monotonic() - started


def _values(bootstrap: str, topic: str) -> list[bytes]:
    return [r.value for rs in read_back(bootstrap, topic).values() for r in rs]


def test_buffered_records_are_delivered_at_exit(kafka_broker, topic_factory) -> None:
    a, b = topic_factory(), topic_factory()
    done, _ = _run(BLOCKING, bootstrap=kafka_broker.bootstrap, topic_a=a, topic_b=b)
    assert done.returncode == 0, done.stderr
    assert _values(kafka_broker.bootstrap, a) == [b"first"] + [b"a%d" % i for i in range(100)]
    assert len(_values(kafka_broker.bootstrap, b)) == 30
    assert "its 130 record(s) were delivered at exit" in done.stderr
    assert "not delivered" not in done.stderr


def test_unreachable_broker_exit_is_bounded_and_reports_per_topic(kafka_cluster, network_faults,
                                                                 unique_topic) -> None:
    a = kafka_cluster.create_topic(unique_topic + "-a", 1)
    b = kafka_cluster.create_topic(unique_topic + "-b", 1)
    done, took = _run(BLOCKING, bootstrap=network_faults.bootstrap, topic_a=a, topic_b=b,
                      extra=', "exit.flush.timeout.ms": 2000', before_exit=network_faults.black_hole)
    network_faults.heal()
    assert done.returncode == 0, done.stderr
    assert "130 record(s) were not delivered at exit (" in done.stderr
    assert f"{a}: 100" in done.stderr and f"{b}: 30" in done.stderr
    assert "exit.flush.timeout.ms=2000" in done.stderr and "ERROR" not in done.stdout
    assert 1.5 <= took < 15  # waited for the flush, and no longer than its bound (+ start-up)
    # The flush sent them into the hole: unacknowledged, but the broker may get them once
    # the proxy forwards again; the report says so, and they are there once or not at all.
    sent = re.search(r"(\d+) of them sent without an acknowledgement \(the broker may have them\)", done.stderr)
    assert sent is not None and 100 <= int(sent.group(1)) <= 130  # topic a's leader was connected
    assert _values(kafka_cluster.bootstrap, a) in ([b"first"], [b"first"] + [b"a%d" % i for i in range(100)])


def test_the_off_switch_reports_at_once(kafka_broker, topic_factory) -> None:
    a, b = topic_factory(), topic_factory()
    done, took = _run(BLOCKING, bootstrap=kafka_broker.bootstrap, topic_a=a, topic_b=b,
                      extra=', "exit.flush.timeout.ms": 0')
    assert done.returncode == 0, done.stderr
    assert "130 record(s) were not delivered at exit (" in done.stderr
    assert f"{a}: 100" in done.stderr and f"{b}: 30" in done.stderr
    assert took < 8
    assert _values(kafka_broker.bootstrap, a) == [b"first"]


def test_asyncio_run_returning_delivers_what_the_producer_buffered(kafka_broker, topic_factory) -> None:
    a = topic_factory()
    done, _ = _run(ASYNC_RUN, bootstrap=kafka_broker.bootstrap, topic_a=a, topic_b="")
    assert done.returncode == 0, done.stderr
    assert "asyncio.run returned" in done.stdout
    assert len(_values(kafka_broker.bootstrap, a)) == 41
    assert "were delivered when its event loop shut down" in done.stderr


def test_asyncio_run_with_an_unreachable_broker_reports(kafka_cluster, network_faults, unique_topic) -> None:
    a = kafka_cluster.create_topic(unique_topic, 1)
    done, took = _run(ASYNC_RUN, bootstrap=network_faults.bootstrap, topic_a=a, topic_b="",
                      extra=', "exit.flush.timeout.ms": 1500', before_exit=network_faults.black_hole)
    network_faults.heal()
    assert done.returncode == 0, done.stderr
    assert f"40 record(s) were not delivered when its event loop shut down ({a}: 40)" in done.stderr
    assert took < 15


def test_a_stopped_loop_is_run_once_more_at_exit(kafka_broker, topic_factory) -> None:
    a = topic_factory()
    done, _ = _run(RUN_UNTIL_COMPLETE, bootstrap=kafka_broker.bootstrap, topic_a=a)
    assert done.returncode == 0, done.stderr
    assert len(_values(kafka_broker.bootstrap, a)) == 26
    assert "its 25 record(s) were delivered at exit" in done.stderr
