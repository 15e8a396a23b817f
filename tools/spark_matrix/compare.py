"""Read the same topics with Spark's JVM connector and with kafkalite; compare the DataFrames.

Runs inside the PySpark 4.0.0 venv (``tools/spark_matrix/jvm_connector.py``) with the JVM connector's
jars on ``spark.jars``. For each case the same options go to ``format("kafka")`` and
``format("kafkalite")`` (found by PySpark's own lookup: no registration call); the
schemas must be equal and the rows identical (sorted by topic, partition, offset).
Prints one JSON object; exits 1 if any case differs.

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--jars", required=True, help="comma-separated jar paths")
    parser.add_argument("--case", nargs=2, action="append", metavar=("NAME", "OPTIONS_JSON"), required=True)
    args = parser.parse_args(argv)

    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

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
            frames = {}
            for fmt in ("kafka", "kafkalite"):
                reader = spark.read.format(fmt)
                for k, v in options.items():
                    reader = reader.option(k, v)
                frames[fmt] = reader.load()
            jvm, ours = frames["kafka"], frames["kafkalite"]
            same_schema = jvm.schema == ours.schema
            jvm_rows, our_rows = rows_of(jvm), rows_of(ours)
            equal = same_schema and jvm_rows == our_rows
            first_diff = None
            if not equal:
                ok = False
                for a, b in zip(jvm_rows, our_rows):
                    if a != b:
                        first_diff = {"jvm": repr(a), "kafkalite": repr(b)}
                        break
            results.append({"case": name, "rows": len(jvm_rows), "kafkalite_rows": len(our_rows),
                            "same_schema": same_schema, "equal": equal, "first_difference": first_diff,
                            "jvm_schema": jvm.schema.simpleString(), "kafkalite_schema": ours.schema.simpleString()})
    finally:
        spark.stop()
    print(json.dumps({"pyspark": __import__("pyspark").__version__, "results": results}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
