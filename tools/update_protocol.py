#!/usr/bin/env python3
"""Take a Kafka release's protocol data into ``tools/kafka-protocol/``: its message specs
and its error table. Then ``python tools/generate.py`` regenerates the code from them.

The specs are the ``common/message/*.json`` files inside that release's ``kafka-clients``
jar; the error table is read from the jar's ``Errors`` enum by ``tools/DumpErrors.java``
(compiled and run here with the harness's Java). The jars come from the harness's
checksummed cache (``python -m kafkalite.testing fetch VERSION``), so the data is
exactly the release's.

Usage::

    python tools/update_protocol.py 4.4.0
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from kafkalite.testing.distribution import KafkaDistribution
from kafkalite.testing.java import find_java, find_javac

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tools" / "kafka-protocol"
HEADER = "code\tname\texception\tretriable\tinheritance\n"


def _jar(dist: KafkaDistribution, artifact: str) -> Path:
    for path in dist.classpath():
        if path.name.startswith(f"{artifact}-") and path.name[len(artifact) + 1].isdigit():
            return path
    raise SystemExit(f"Kafka {dist.version} has no {artifact} jar in its lock")


def take_specs(clients: Path) -> int:
    target = DATA / "message"
    for old in target.glob("*.json"):  # a spec the release dropped goes too
        old.unlink()
    count = 0
    with zipfile.ZipFile(clients) as jar:
        for name in jar.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                (target / Path(name).name).write_bytes(jar.read(name))
                count += 1
    return count


def dump_errors(dist: KafkaDistribution) -> int:
    java = find_java()
    classpath = [str(_jar(dist, "kafka-clients")), str(_jar(dist, "slf4j-api"))]
    with tempfile.TemporaryDirectory(prefix="kafkalite-errors-") as tmp:
        subprocess.run([str(find_javac(java)), "-d", tmp, "-cp", ":".join(classpath),
                        str(ROOT / "tools" / "DumpErrors.java")], check=True)
        out = subprocess.run([str(java.executable), "-cp", ":".join([*classpath, tmp]), "DumpErrors"],
                             check=True, capture_output=True, text=True).stdout
    (DATA / "errors.tsv").write_text(HEADER + out)
    return len(out.splitlines())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("version", help="the Kafka release, e.g. 4.4.0 (it needs a lock: tools/lock_kafka.py)")
    args = parser.parse_args(argv)
    dist = KafkaDistribution(args.version).ensure()
    specs = take_specs(_jar(dist, "kafka-clients"))
    errors = dump_errors(dist)
    print(f"Kafka {args.version}: {specs} message specs and {errors} error codes in {DATA}; "
          "now run python tools/generate.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
