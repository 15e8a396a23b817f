"""Spark's JVM Kafka connector next to kafkalite: the PySpark 4.0.0 entry of the version matrix
plus the connector's jars.

Maven Central has a matched set of the JVM connector only for Spark 4.0.0
(``spark-sql-kafka-0-10_2.13`` and ``spark-token-provider-kafka-0-10_2.13``; later
versions lack the token provider there), so the side-by-side runs
(``tests/spark/test_spark_jvm_parity.py``, ``benchmarks/spark_throughput.py``) use the
matrix's PySpark 4.0.0 venv (``tools/spark_matrix/matrix.py``: ``.venv-pyspark/4.0.0``).

The connector's jars and their dependencies are fetched from Maven Central by file
(no Ivy, no Maven: Ivy's local-m2 resolver fails when ``~/.m2`` holds a POM without
its jar) and checked against the pinned SHA-256 and SHA-1 below, into
``~/.cache/kafkalite/spark-jars/4.0.0``. Spark's own jars already provide the rest of
kafka-clients' dependencies (lz4, snappy, zstd-jni, slf4j).

Usage::

    python tools/spark_matrix/jvm_connector.py          # create/update; prints the venv's python and jars
    python tools/spark_matrix/jvm_connector.py --json   # the same as JSON (what the tests read)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

from kafkalite.testing.distribution import MAVEN_CENTRAL, Artifact, download_artifact, file_lock
from kafkalite.testing.paths import cache_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matrix import ensure_venv  # tools/ is no package: this folder is on sys.path

PYSPARK_VERSION = "4.0.0"

#: The JVM connector for Spark 4.0.0 and its compile dependencies that Spark lacks.
JARS = (
    Artifact("org.apache.spark", "spark-sql-kafka-0-10_2.13", "4.0.0",
             sha256="33a3b8b04df4a2e43c9d5bf8ca5972936a1ac662f2714e014d00ef6f27468bf3", size=467590,
             sha1="7f3974645d9b7b9ca8ff570baaa0c5d84a23b85e"),
    Artifact("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", "4.0.0",
             sha256="f2be3b76f9e6cbe63379d4e4e0dc14f59dbf056ae2ad16ff15ac108004c86767", size=64975,
             sha1="bb6fa56777661c2860cc5a9b7361fb1db7255554"),
    Artifact("org.apache.kafka", "kafka-clients", "3.9.0",
             sha256="15c1e137f2c2c94398e27abc4060a03b6bde10bf9fac15e8f70c02320b202f18", size=9204801,
             sha1="e87443101adb03975297788cf7f2b5387c3cfe2d"),
    Artifact("org.apache.commons", "commons-pool2", "2.12.0",
             sha256="6d3bd18df8410f3e31b031aca582cc109342358a62a2759ebd0c4cdf30d06f8b", size=150048,
             sha1="458563f69fbdaebf7daadfe10dc3a22e42a7de50"),
)


def fetch_jars() -> list[Path]:
    """The JVM connector's jars, downloaded once and verified (cached)."""
    folder = cache_dir() / "spark-jars" / PYSPARK_VERSION
    folder.mkdir(parents=True, exist_ok=True)
    repo = os.environ.get("KAFKALITE_MAVEN_REPO") or MAVEN_CENTRAL
    paths = []
    with file_lock(folder / ".lock"):
        for artifact in JARS:
            target = folder / artifact.filename
            if not target.exists() or _sha256(target) != artifact.sha256:
                download_artifact(artifact, f"{repo.rstrip('/')}/{artifact.repository_path}", target)
            paths.append(target)
    return paths


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the python and jars as JSON")
    args = parser.parse_args(argv)
    python = ensure_venv(PYSPARK_VERSION, quiet=args.json)
    jars = fetch_jars()
    if args.json:
        print(json.dumps({"python": str(python), "jars": [str(j) for j in jars]}))
    else:
        print(f"python: {python}")
        for jar in jars:
            print(f"jar:    {jar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
