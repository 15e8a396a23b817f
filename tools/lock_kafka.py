#!/usr/bin/env python3
"""Generate ``src/kafkalite/testing/locks/kafka-<version>.json`` for one Kafka release.

The lock lists every jar needed to run that release's broker (``kafka.Kafka`` in
KRaft mode), its storage format tool and Kafka's own Java command-line tools, with
each jar's size and sha256, plus the main class of each tool as found in those jars.
``kafkalite.testing`` downloads exactly these files from Maven Central and checks
them; users never need Maven. Only maintainers run this script, when pinning a new
release.

How: write a small pom (kept as ``tools/broker-pom-<version>.xml`` for reading and
re-running by hand) that depends on the release's top-level artifacts plus an SLF4J
logging backend, let Maven resolve the runtime dependency tree
(``dependency:list``), hash the resolved jars, cross-check each against the ``.sha1``
Maven Central publishes, and look up the tool main classes inside the jars.

Usage::

    python tools/lock_kafka.py 4.3.1
    python tools/lock_kafka.py 3.9.1 --no-remote-check
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LOCK_DIR = REPO_ROOT / "src" / "kafkalite" / "testing" / "locks"
POM_DIR = REPO_ROOT / "tools"
CENTRAL = "https://repo1.maven.org/maven2"
SCALA = "2.13"
# Kafka was first built for Scala 2.13 in 2.4.0; older releases are locked with 2.12.
OLD_SCALA = "2.12"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

# Top-level artifacts. The broker (kafka_2.13) already pulls most of the rest as
# runtime dependencies; naming them keeps the lock honest if a release reshuffles.
# Artifacts a release does not publish (e.g. share-coordinator before 4.0) are
# skipped after a HEAD request.
TOP_LEVEL = [
    "kafka_{scala}",
    "kafka-tools",
    "kafka-clients",
    "kafka-server",
    "kafka-server-common",
    "kafka-storage",
    "kafka-metadata",
    "kafka-raft",
    "kafka-group-coordinator",
    "kafka-transaction-coordinator",
    "kafka-share-coordinator",
    "kafka-coordinator-common",
]

# Script name (as in Kafka's bin/) -> candidate main classes, newest location first.
# Classes moved from Scala core (kafka.*) to the Java tools module over 3.x/4.x; the
# lock records the one present in this release's jars.
TOOL_CANDIDATES: dict[str, list[str]] = {
    "kafka-server-start": ["kafka.Kafka"],
    "kafka-storage": ["org.apache.kafka.tools.StorageTool", "kafka.tools.StorageTool"],
    "kafka-topics": ["org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"],
    "kafka-configs": ["org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"],
    "kafka-console-consumer": [
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "kafka.tools.ConsoleConsumer",
    ],
    "kafka-console-producer": ["org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"],
    "kafka-console-share-consumer": ["org.apache.kafka.tools.consumer.ConsoleShareConsumer"],
    "kafka-consumer-groups": [
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "kafka.admin.ConsumerGroupCommand",
    ],
    "kafka-share-groups": ["org.apache.kafka.tools.consumer.group.ShareGroupCommand"],
    "kafka-acls": ["org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand"],
    "kafka-producer-perf-test": ["org.apache.kafka.tools.ProducerPerformance"],
    "kafka-consumer-perf-test": [
        "org.apache.kafka.tools.ConsumerPerformance",
        "kafka.tools.ConsumerPerformance",
    ],
    "kafka-features": ["org.apache.kafka.tools.FeatureCommand", "kafka.admin.FeatureCommand"],
    # ZooKeeper mode (releases before 4.0): the ZooKeeper server the release depends on.
    "zookeeper-server-start": ["org.apache.zookeeper.server.quorum.QuorumPeerMain"],
    "kafka-metadata-quorum": ["org.apache.kafka.tools.MetadataQuorumCommand"],
    "kafka-broker-api-versions": [
        "org.apache.kafka.tools.BrokerApiVersionsCommand",
        "kafka.admin.BrokerApiVersionsCommand",
    ],
    "kafka-get-offsets": ["org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"],
    "kafka-transactions": ["org.apache.kafka.tools.TransactionsCommand"],
    "kafka-delete-records": [
        "org.apache.kafka.tools.DeleteRecordsCommand",
        "kafka.admin.DeleteRecordsCommand",
    ],
    "kafka-leader-election": [
        "org.apache.kafka.tools.LeaderElectionCommand",
        "kafka.admin.LeaderElectionCommand",
    ],
    "kafka-reassign-partitions": [
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "kafka.admin.ReassignPartitionsCommand",
    ],
    "kafka-log-dirs": ["org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand"],
    "kafka-dump-log": ["org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"],
    "kafka-client-metrics": ["org.apache.kafka.tools.ClientMetricsCommand"],
    "kafka-verifiable-producer": ["org.apache.kafka.tools.VerifiableProducer"],
    "kafka-verifiable-consumer": ["org.apache.kafka.tools.VerifiableConsumer"],
}
# Tools every pinned release must have; a lock without them is refused. A release
# needs kafka-storage (KRaft, 2.8+) or zookeeper-server-start (before 4.0), or both.
REQUIRED_TOOLS = [
    "kafka-server-start",
    "kafka-topics",
    "kafka-configs",
    "kafka-console-consumer",
    "kafka-console-producer",
    "kafka-consumer-groups",
    "kafka-acls",
    "kafka-producer-perf-test",
    "kafka-consumer-perf-test",
]

_LIST_LINE = re.compile(
    r"^\s*(?P<group>[^:\s]+):(?P<artifact>[^:]+):(?P<ext>[^:]+):(?:(?P<classifier>[^:]+):)?"
    r"(?P<version>[^:]+):(?P<scope>compile|runtime|provided|system|test):(?P<path>/\S+?\.jar)"
)


def _exists(url: str) -> bool:
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=30):
            return True
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise


def _pom(version: str, artifacts: list[tuple[str, str, str]]) -> str:
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in artifacts
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by tools/lock_kafka.py {version}: the runtime closure of this pom is the
     jar set of src/kafkalite/testing/locks/kafka-{version}.json. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.kafkalite.lock</groupId>
  <artifactId>kafka-broker-{version}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def _resolve(pom: Path, workdir: Path) -> list[dict[str, str]]:
    out = workdir / "deps.txt"
    cmd = [
        "mvn", "-B", "-q", "-f", str(pom),
        f"{DEPENDENCY_PLUGIN}:list",
        "-DincludeScope=runtime",
        "-DoutputAbsoluteArtifactFilename=true",
        "-DexcludeTransitive=false",
        f"-DoutputFile={out}",
    ]
    subprocess.run(cmd, check=True)
    rows = []
    for line in out.read_text().splitlines():
        m = _LIST_LINE.match(line)
        if m and m["ext"] == "jar":
            rows.append(m.groupdict())
    if not rows:
        raise SystemExit(f"no jars parsed from {out}:\n{out.read_text()}")
    return rows


def _logging_additions(rows: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    """The SLF4J backend Kafka's own distribution ships, which its poms leave out.

    Kafka 4 logs through log4j2 (log4j-core is a runtime dependency of kafka-server)
    behind slf4j-api 1.7, so it needs log4j-slf4j-impl; Kafka 3.x ships reload4j, whose
    binding kafka-tools already brings.
    """
    by_name = {(r["group"], r["artifact"]): r["version"] for r in rows}
    core = by_name.get(("org.apache.logging.log4j", "log4j-core"))
    if core and ("org.apache.logging.log4j", "log4j-slf4j-impl") not in by_name:
        return [("org.apache.logging.log4j", "log4j-slf4j-impl", core)]
    return []


def _sha(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _remote_path(row: dict[str, str]) -> str:
    name = f"{row['artifact']}-{row['version']}"
    if row.get("classifier"):
        name += f"-{row['classifier']}"
    return f"{row['group'].replace('.', '/')}/{row['artifact']}/{row['version']}/{name}.jar"


def _find_tools(jars: list[Path]) -> dict[str, str]:
    classes: set[str] = set()
    for jar in jars:
        with zipfile.ZipFile(jar) as z:
            classes.update(
                n[: -len(".class")].replace("/", ".") for n in z.namelist() if n.endswith(".class")
            )
    tools = {}
    for script, candidates in TOOL_CANDIDATES.items():
        found = next((c for c in candidates if c in classes), None)
        if found:
            tools[script] = found
    missing = [t for t in REQUIRED_TOOLS if t not in tools]
    if "kafka-storage" not in tools and "zookeeper-server-start" not in tools:
        missing.append("kafka-storage or zookeeper-server-start")
    if missing:
        raise SystemExit(f"required tools not found in the jars: {missing}")
    return tools


def scala_for(version: str) -> str:
    """The Scala build a release is locked with: 2.13 from Kafka 2.4 on, 2.12 before."""
    major, minor = (int(x) for x in version.split(".")[:2])
    return SCALA if (major, minor) >= (2, 4) else OLD_SCALA


def lock(version: str, remote_check: bool) -> Path:
    scala = scala_for(version)
    top = [
        ("org.apache.kafka", a, version)
        for a in (name.format(scala=scala) for name in TOP_LEVEL)
        if _exists(f"{CENTRAL}/org/apache/kafka/{a}/{version}/{a}-{version}.pom")
    ]
    with tempfile.TemporaryDirectory(prefix="kafkalite-lock-") as tmp:
        work = Path(tmp)
        pom = work / "pom.xml"
        pom.write_text(_pom(version, top))
        rows = _resolve(pom, work)
        extra = _logging_additions(rows)
        if extra:
            pom.write_text(_pom(version, top + extra))
            rows = _resolve(pom, work)
        shutil.copy(pom, POM_DIR / f"broker-pom-{version}.xml")

    artifacts = []
    seen_files: dict[str, str] = {}
    for row in sorted(rows, key=lambda r: (r["group"], r["artifact"], r["classifier"] or "")):
        path = Path(row["path"])
        entry = {
            "group": row["group"],
            "artifact": row["artifact"],
            "version": row["version"],
            "size": path.stat().st_size,
            "sha256": _sha(path, "sha256"),
        }
        if row.get("classifier"):
            entry["classifier"] = row["classifier"]
        remote = _remote_path(row)
        # The cache keeps jars in one flat folder, so file names must be unique.
        filename = remote.rsplit("/", 1)[1]
        if filename in seen_files:
            raise SystemExit(f"two artifacts share the file name {filename}: {seen_files[filename]}")
        seen_files[filename] = remote
        if remote_check:
            with urllib.request.urlopen(f"{CENTRAL}/{remote}.sha1", timeout=30) as r:
                published = r.read().decode().split()[0].strip().lower()
            if published != _sha(path, "sha1"):
                raise SystemExit(f"{remote}: local jar does not match Maven Central's .sha1")
        artifacts.append(entry)

    tools = _find_tools([Path(r["path"]) for r in rows])
    document = {
        "kafka_version": version,
        "scala_version": scala,
        "generated_by": "tools/lock_kafka.py",
        "repository": CENTRAL,
        "tools": tools,
        "artifacts": artifacts,
    }
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    target = LOCK_DIR / f"kafka-{version}.json"
    target.write_text(json.dumps(document, indent=1) + "\n")
    total = sum(a["size"] for a in artifacts)
    print(f"wrote {target}: {len(artifacts)} jars, {total / 1e6:.1f} MB, {len(tools)} tools")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="+", help="Kafka release(s), e.g. 4.3.1")
    parser.add_argument(
        "--no-remote-check",
        action="store_true",
        help="skip comparing each jar with the .sha1 Maven Central publishes",
    )
    args = parser.parse_args(argv)
    for version in args.versions:
        lock(version, remote_check=not args.no_remote_check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
