"""Read the same topics with Spark's JVM connector and with kafkalite; compare the DataFrames.

Runs inside a PySpark venv with a matched JVM connector (``tools/spark_matrix/jvm_connector.py``:
4.0.0 or 3.5.7) with the connector's jars on ``spark.jars``. For each case the same
options go to ``format("kafka")``, to ``format("kafkalite")`` (found by PySpark's own
lookup: no registration call; only where PySpark has the Python Data Source API) and to
``pyspark_kafkalite.read_kafka`` (every release); the schemas must be equal and the rows
identical (sorted by topic, partition, offset). Prints one JSON object; exits 1 if any
case differs.

    .venv-pyspark/4.0.0/bin/python tools/spark_matrix/compare.py --bootstrap 127.0.0.1:9092 \\
        --jars a.jar,b.jar --case subscribe '{"subscribe": "t1,t2", "includeHeaders": "true"}'
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def rows_of(df: Any) -> list[tuple[Any, ...]]:
    out = []
    for r in df.collect():
        values = []
        for v in r:
            if isinstance(v, list):
                v = [tuple(e) for e in v]
            values.append(v)
        out.append(tuple(values))
    names = df.columns
    ti, pi, oi = names.index("topic"), names.index("partition"), names.index("offset")
    return sorted(out, key=lambda t: (t[ti], t[pi], t[oi]))


def _load(spark: Any, fmt: str, options: dict[str, str]) -> Any:
    reader = spark.read.format(fmt)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--jars", required=True, help="comma-separated jar paths")
    parser.add_argument("--case", nargs=2, action="append", metavar=("NAME", "OPTIONS_JSON"), required=True)
    args = parser.parse_args(argv)

    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark_kafkalite import has_datasource_api, read_kafka

    spark = (SparkSession.builder.master("local[2]").appName("kafkalite-vs-jvm")
             .config("spark.jars", args.jars)
             .config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    results = []
    ok = True
    try:
        for name, options_json in args.case:
            options = {"kafka.bootstrap.servers": args.bootstrap, **json.loads(options_json)}
            frames = {"kafka": _load(spark, "kafka", options)}
            if has_datasource_api():
                frames["kafkalite"] = _load(spark, "kafkalite", options)
            frames["read_kafka"] = read_kafka(spark, options)
            jvm = frames.pop("kafka")
            jvm_rows = rows_of(jvm)
            result: dict[str, Any] = {"case": name, "rows": len(jvm_rows), "jvm_schema": jvm.schema.simpleString(),
                                      "compared": sorted(frames), "equal": True, "same_schema": True}
            for label, ours in frames.items():
                same_schema = jvm.schema == ours.schema
                our_rows = rows_of(ours)
                equal = same_schema and jvm_rows == our_rows
                result[f"{label}_rows"] = len(our_rows)
                result["same_schema"] = result["same_schema"] and same_schema
                result["equal"] = result["equal"] and equal
                if not equal:
                    ok = False
                    result[f"{label}_schema"] = ours.schema.simpleString()
                    for a, b in zip(jvm_rows, our_rows):
                        if a != b:
                            result[f"{label}_first_difference"] = {"jvm": repr(a), label: repr(b)}
                            break
            results.append(result)
    finally:
        spark.stop()
    print(json.dumps({"pyspark": __import__("pyspark").__version__, "results": results}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
