"""Spark's JVM Kafka connector next to kafkalite: an entry of the version matrix plus the
connector's jars for the same Spark version.

Maven Central has a matched set of the JVM connector (``spark-sql-kafka-0-10`` and
``spark-token-provider-kafka-0-10``) for Spark 4.0.0 (Scala 2.13; later 4.x versions
lack the token provider there) and, of the 3.5 line, for 3.5.7 (Scala 2.12; 3.5.8 and
3.5.9 are not there), so the side-by-side runs (``tests/spark/test_spark_jvm_parity.py``,
``benchmarks/spark_throughput.py``) use the matrix's PySpark 4.0.0 and 3.5.7 venvs
(``tools/spark_matrix/matrix.py``: ``.venv-pyspark/<version>``).

The connector's jars and their dependencies are fetched from Maven Central by file
(no Ivy, no Maven: Ivy's local-m2 resolver fails when ``~/.m2`` holds a POM without
its jar) and checked against the pinned SHA-256 and SHA-1 below, into
``~/.cache/kafkalite/spark-jars/<version>``. Spark's own jars already provide the rest of
kafka-clients' dependencies (lz4, snappy, zstd-jni, slf4j).

Usage::

    python tools/spark_matrix/jvm_connector.py          # create/update; prints the venv's python and jars
    python tools/spark_matrix/jvm_connector.py --json   # the same as JSON (what the tests read)
    python tools/spark_matrix/jvm_connector.py --pyspark 3.5.7 --json   # the Spark 3.5 pair
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
JARS_4_0 = (
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
#: The JVM connector for Spark 3.5.7 (its POM's kafka-clients and commons-pool2 versions).
JARS_3_5 = (
    Artifact("org.apache.spark", "spark-sql-kafka-0-10_2.12", "3.5.7",
             sha256="184f8bd4a3cd22299c49090d88b894f81fd7546b4ee64879519a0d76a685dbb8", size=432670,
             sha1="b21bf0ed4083462696a2eabad735f638fb7a7e6a"),
    Artifact("org.apache.spark", "spark-token-provider-kafka-0-10_2.12", "3.5.7",
             sha256="9701914db5c6d09628b58d2d2c1ccd2c9ea28f32f83dd6cb21f98b8237531ff4", size=56810,
             sha1="4410ead23fc3f50cabccb70e9156c41d4c247e2d"),
    Artifact("org.apache.kafka", "kafka-clients", "3.4.1",
             sha256="9d0a9058c8ede79db6e54ae378ed16fe8d1bead2894635a4aa6aa0b7981668c6", size=5050443,
             sha1="a2f55251deb3d31a21903a0cfbd4d1fa6b7463ca"),
    Artifact("org.apache.commons", "commons-pool2", "2.11.1",
             sha256="ea0505ee7515e58b1ac0e686e4d1a5d9f7d808e251a61bc371aa0595b9963f83", size=145516,
             sha1="8970fd110c965f285ed4c6e40be7630c62db6f68"),
)
#: The PySpark releases with a matched JVM connector, and its jars.
JARS = {"4.0.0": JARS_4_0, "3.5.7": JARS_3_5}


def fetch_jars(version: str = PYSPARK_VERSION) -> list[Path]:
    """The JVM connector's jars for PySpark ``version``, downloaded once and verified (cached)."""
    folder = cache_dir() / "spark-jars" / version
    folder.mkdir(parents=True, exist_ok=True)
    repo = os.environ.get("KAFKALITE_MAVEN_REPO") or MAVEN_CENTRAL
    paths = []
    with file_lock(folder / ".lock"):
        for artifact in JARS[version]:
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
    parser.add_argument("--pyspark", default=PYSPARK_VERSION, choices=sorted(JARS),
                        help=f"the PySpark release (default {PYSPARK_VERSION})")
    args = parser.parse_args(argv)
    python = ensure_venv(args.pyspark, quiet=args.json)
    jars = fetch_jars(args.pyspark)
    if args.json:
        print(json.dumps({"python": str(python), "jars": [str(j) for j in jars]}))
    else:
        print(f"python: {python}")
        for jar in jars:
            print(f"jar:    {jar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
