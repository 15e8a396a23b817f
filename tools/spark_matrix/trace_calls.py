"""Record which stream-reader methods a PySpark version calls, in which order, with what.

A stand-in Python data source with the same shape as ``pyspark_kafkalite``'s stream
reader (``latestOffset(start=None, limit=None)``, ``SupportsTriggerAvailableNow`` where
PySpark has it, ``getDefaultReadLimit`` giving ``ReadMaxRows``) over a counter that grows
with wall time, so no broker is needed. Every call (method, arguments, result) goes to a
JSON-lines file; the script prints the calls of each scenario:

* ``fresh``: a new query, processing-time trigger (1 s), until 3 micro-batches ran;
* ``restart``: the same checkpoint again, 2 more micro-batches;
* ``rerun``: the last batch's commit file removed (a query killed after it planned the
  batch), restarted: Spark re-runs that batch;
* ``available-now``: a new checkpoint, ``trigger(availableNow=True)``.

Run it with the python of a matrix venv (``tools/spark_matrix/matrix.py`` makes them)::

    .venv-pyspark/4.0.0/bin/python tools/spark_matrix/trace_calls.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import LongType, StructField, StructType

try:
    from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow

    BASES: tuple[type, ...] = (SupportsTriggerAvailableNow,)
except ImportError:  # PySpark < 4.2
    ReadMaxRows = None  # type: ignore[assignment,misc]
    BASES = ()

RATE = 1000  # counter units per second
LIMIT = 700  # the "maxOffsetsPerTrigger" of the stand-in reader


def _log(path: str, call: str, **fields: Any) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"call": call, **fields}) + "\n")


def _now() -> int:
    return int(time.time() * RATE) % 10_000_000


class TraceReader(DataSourceStreamReader, *BASES):  # type: ignore[misc]
    def __init__(self, path: str) -> None:
        self.path = path
        self.target: int | None = None  # Trigger.AvailableNow's end

    def initialOffset(self) -> dict[str, int]:
        out = {"n": _now()}
        _log(self.path, "initialOffset", result=out)
        return out

    def getDefaultReadLimit(self) -> Any:
        limit = ReadMaxRows(LIMIT) if ReadMaxRows is not None else None
        _log(self.path, "getDefaultReadLimit", result=repr(limit))
        return limit

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = _now()
        _log(self.path, "prepareForTriggerAvailableNow", target=self.target)

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        now = _now()
        if start is not None and ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            now = min(now, start["n"] + limit.max_rows)
        out = {"n": min(now, self.target) if self.target is not None else now}
        _log(self.path, "latestOffset", start=start, limit=repr(limit), result=out)
        return out

    def reportLatestOffset(self) -> dict[str, int]:
        _log(self.path, "reportLatestOffset")
        return {"n": _now()}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        _log(self.path, "partitions", start=start, end=end)
        return [InputPartition(None)]

    def read(self, partition: InputPartition) -> Any:
        return iter([(1,)])

    def commit(self, end: dict[str, int]) -> None:
        _log(self.path, "commit", end=end)

    def stop(self) -> None:
        _log(self.path, "stop")


class TraceSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafkalite_trace"

    def schema(self) -> StructType:
        return StructType([StructField("x", LongType())])

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        _log(self.options["log"], "streamReader")
        return TraceReader(self.options["log"])


def run(spark: Any, log: str, checkpoint: str, sink: str, batches: int | None) -> None:
    stream = spark.readStream.format("kafkalite_trace").option("log", log).load()
    writer = stream.writeStream.format("parquet").option("path", sink).option("checkpointLocation", checkpoint)
    if batches is None:
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination(120)
    else:
        query = writer.trigger(processingTime="1 second").start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = len([p for p in query.recentProgress if p["numInputRows"]])
            if done >= batches:
                break
            query.awaitTermination(0.2)
        query.stop()
    if query.exception() is not None:
        print(f"query failed: {query.exception()}", file=sys.stderr)


def show(log: str, scenario: str) -> None:
    print(f"--- {scenario}")
    lines = Path(log).read_text().splitlines() if Path(log).exists() else []
    if len(lines) > 40:
        print(f"  ({len(lines)} calls; the first 40)")
    for line in lines[:40]:
        entry = json.loads(line)
        call = entry.pop("call")
        print(f"  {call}({', '.join(f'{k}={v}' for k, v in entry.items())})")
    Path(log).unlink(missing_ok=True)


def main() -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(TraceSource)
    print(f"pyspark {pyspark.__version__}")
    work = Path(tempfile.mkdtemp(prefix="trace-calls-"))
    log = str(work / "calls.jsonl")
    try:
        checkpoint, sink = str(work / "ckpt"), str(work / "out")
        run(spark, log, checkpoint, sink, 3)
        show(log, "fresh")
        run(spark, log, checkpoint, sink, 2)
        show(log, "restart")
        commits = sorted(Path(checkpoint, "commits").glob("[0-9]*"), key=lambda p: int(p.name))
        commits[-1].unlink()
        commits[-1].with_name(f".{commits[-1].name}.crc").unlink(missing_ok=True)  # Hadoop's checksum file
        run(spark, log, checkpoint, sink, 1)
        show(log, f"rerun (commit {commits[-1].name} removed)")
        run(spark, log, str(work / "ckpt-an"), str(work / "out-an"), None)
        show(log, "available-now")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
