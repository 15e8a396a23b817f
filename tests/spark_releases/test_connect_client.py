"""format("kafkalite") from the pure Spark Connect client: ``pyspark-client`` alone (no
JVM, no full PySpark) in a venv of its own, against a Spark Connect server whose Python
has kafkalite; batch and streaming (tools/spark_matrix/connect_client.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kafkalite import Producer
from tests.spark_cluster.test_cluster import read_all
from tests.spark_cluster.test_connect import connect_server  # noqa: F401  (the module's server fixture)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "tools" / "spark_matrix" / "connect_client.py"


def test_pyspark_client_alone_registers_and_uses_the_source(connect_server: Any, kafka_broker: Any,  # noqa: F811
                                                            topic_factory: Any, tmp_path: Path) -> None:
    setup = subprocess.run([sys.executable, str(CLIENT), "--setup-only"], capture_output=True, text=True,
                           timeout=900, check=False)
    assert setup.returncode == 0, setup.stderr[-4000:]
    python = json.loads(setup.stdout.strip().splitlines()[-1])["python"]
    bootstrap = kafka_broker.bootstrap
    source, sink, stream_sink = topic_factory(partitions=2), topic_factory(partitions=1), topic_factory(partitions=1)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(300):
            producer.send(source, f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 2)
        producer.flush()
    run = subprocess.run([python, str(CLIENT), "--url", connect_server.url, "--bootstrap", bootstrap,
                          "--source", source, "--sink", sink, "--stream-sink", stream_sink,
                          "--checkpoint", str(tmp_path / "ckpt"), "--expected", "300"],
                         capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-6000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["jars_installed"] is False and report["py4j_installed"] is False  # no JVM side on the client
    assert report["session"] == "pyspark.sql.connect.session"
    assert report["batch_rows"] == report["read_kafka_rows"] == 300
    assert report["stream_rows"] == 300
    want = Counter(f"v{i}".encode() for i in range(300))
    assert Counter(r.value for r in read_all(bootstrap, sink, 1)) == want
    assert Counter(r.value for r in read_all(bootstrap, stream_sink, 1)) == want
