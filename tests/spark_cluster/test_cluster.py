"""format("kafkalite") on a real Spark standalone cluster: executors are JVMs of their own
with their own Python workers; a streaming query loses an executor and its driver and
still ends with every record exactly once in its parquet sink."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kafkalite import AdminClient, Consumer, OffsetSpec, Producer, TopicPartition
from kafkalite.testing.spark import SparkStandaloneCluster
from tests.integration.consumer_support import wait_until
from tests.spark_cluster.conftest import run_job, start_job

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(600)]

#: wait for both executors before the first task (one core each: tasks land on both).
#: On a standalone master the ratio counts against ``spark.cores.max`` (Spark's
#: StandaloneSchedulerBackend expects ``cores.max`` cores, 0 when unset, so without it the
#: ratio is met at once and every task may run on whichever executor registered first).
BOTH_EXECUTORS = ["--conf", "spark.cores.max=2",
                  "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
                  "--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=240s"]


def read_all(bootstrap: str, topic: str, partitions: int) -> list[Any]:
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with Consumer({"bootstrap.servers": bootstrap}) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(tps)
        ends = consumer.end_offsets(tps)
        out: list[Any] = []
        deadline = time.monotonic() + 120
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, "could not read the topic back"
            out += consumer.poll(1.0)
    return out


def test_batch_read_and_write_run_on_the_executors(spark_cluster: SparkStandaloneCluster, kafka_broker: Any,
                                                   topic_factory: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink = topic_factory(partitions=4), topic_factory(partitions=2)
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 20}) as producer:
        for i in range(20_000):
            producer.send(source, f"v{i}".encode(), key=f"k{i % 97}".encode(), partition=i % 4,
                          headers=[("n", str(i).encode())])
    [summary] = run_job(spark_cluster, "batch", spark_cluster.master_url, bootstrap, source, sink,
                        *BOTH_EXECUTORS, log=tmp_path / "driver.log")
    assert summary["rows"] == 20_000
    # Two executors (one per worker), neither of them the driver.
    assert len(summary["executor_jvms"]) == 2 and -1 not in summary["executor_jvms"]
    assert os.getpid() not in summary["python_pids"]
    written = Counter((r.key, r.value, tuple(r.headers)) for r in read_all(bootstrap, sink, 2))
    assert written == Counter((f"k{i % 97}".encode(), f"v{i}".encode(), (("n", str(i).encode()),))
                              for i in range(20_000))


def sink_rows(output: Path) -> list[str]:
    """The ids in the parquet sink's committed files: the file sink's own log
    (``_spark_metadata``: the last compaction plus later batches) says which files
    belong to committed micro-batches, as Spark's reader of that directory does."""
    log_dir = output / "_spark_metadata"
    entries: dict[int, Path] = {}
    compact = -1
    for f in log_dir.iterdir():
        if f.name.startswith("."):
            continue
        batch = int(f.name.split(".")[0])
        entries[batch] = f
        if f.name.endswith(".compact"):
            compact = max(compact, batch)
    files: set[str] = set()
    for batch in sorted(b for b in entries if b >= compact):
        for line in entries[batch].read_text().splitlines()[1:]:
            entry = json.loads(line)
            if entry["action"] == "add":
                files.add(entry["path"])
            else:
                files.discard(entry["path"])
    ids: list[str] = []
    for path in files:
        ids += pq.read_table(path.removeprefix("file:")).column("id").to_pylist()
    return ids


def test_stream_keeps_every_record_exactly_once_through_executor_loss_and_driver_restart(
        spark_cluster: SparkStandaloneCluster, kafka_broker: Any, topic_factory: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    source = topic_factory(partitions=4)
    output, checkpoint, stop_file = tmp_path / "out", tmp_path / "ckpt", tmp_path / "stop.json"
    acked: list[str] = []
    stop_producing = threading.Event()

    def produce() -> None:  # steadily, ~400 records/s, every id acknowledged
        with Producer({"bootstrap.servers": bootstrap, "linger.ms": 10}) as producer:
            n = 0
            while not stop_producing.is_set():
                futures = [(f"id-{n + i}", producer.send(source, f"id-{n + i}".encode(), partition=(n + i) % 4))
                           for i in range(40)]
                for rid, fut in futures:
                    fut.result(timeout=30)
                    acked.append(rid)
                n += 40
                time.sleep(0.1)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    args = ("stream", spark_cluster.master_url, bootstrap, source, str(output), str(checkpoint), str(stop_file),
            "--max-offsets", "1500")
    batches: list[dict[str, Any]] = []

    def follow(proc: Any) -> threading.Thread:
        def run() -> None:
            for line in proc.stdout:
                if line.startswith("{"):
                    batches.append(json.loads(line))
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def batches_after(seen: int, log: Path) -> Any:
        def enough() -> bool:
            # A driver that exited is reported at once, with its log, not after the wait.
            assert driver.poll() is None, f"the driver exited with {driver.returncode}: " \
                f"{batches[seen:]}\n{log.read_text()[-4000:]}"
            return len([b for b in batches[seen:] if b.get("rows")]) >= 3
        return enough

    driver = start_job(spark_cluster, *args, log=tmp_path / "driver-1.log")
    try:
        follow(driver)
        wait_until(batches_after(0, tmp_path / "driver-1.log"), 240, what="three micro-batches")
        # Lose an executor while batches run: its tasks are retried on the other one
        # (and on the replacement the worker starts).
        victim = spark_cluster.kill_executor()
        seen = len(batches)
        wait_until(batches_after(seen, tmp_path / "driver-1.log"), 240,
                   what="three micro-batches after the executor was lost")
        assert victim not in spark_cluster.executor_pids()
        # Kill the driver mid-stream and start it again from the checkpoint.
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
        driver = start_job(spark_cluster, *args, log=tmp_path / "driver-2.log")
        follow(driver)
        seen = len(batches)
        wait_until(batches_after(seen, tmp_path / "driver-2.log"), 240,
                   what="three micro-batches after the driver restarted")
        stop_producing.set()
        producer.join(60)
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            tps = [TopicPartition(source, p) for p in range(4)]
            listed = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps})
            ends = {str(tp.partition): listed[tp].result().offset for tp in tps}
        stop_file.write_text(json.dumps(ends))
        assert driver.wait(300) == 0, (tmp_path / "driver-2.log").read_text()[-4000:]
    finally:
        stop_producing.set()
        if driver.poll() is None:
            driver.kill()
    assert sum(int(v) for v in ends.values()) == len(acked)
    ids = Counter(sink_rows(output))
    duplicated = {i: n for i, n in ids.items() if n > 1}
    missing = set(acked) - set(ids)
    assert not duplicated and not missing, (f"{len(duplicated)} duplicated (e.g. {list(duplicated)[:5]}), "
                                            f"{len(missing)} missing (e.g. {sorted(missing)[:5]})")
    assert len(ids) == len(acked)
