"""Regenerate the Python classes of the .proto files used by tests and examples.

    .venv/bin/python tools/gen_test_protos.py          # rewrite the *_pb2.py / .pyi files
    .venv/bin/python tools/gen_test_protos.py --check  # exit 1 if any is out of date

Uses protoc from the grpcio-tools wheel (part of the dev extra), with the repository
root as the include path, so an import of "tests/helpers/schemas/common.proto" becomes
the Python import ``tests.helpers.schemas.common_pb2`` (and the same for examples/,
whose include path is examples/ itself). The generated code needs a protobuf runtime
at least as new as that protoc.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (include root, the .proto files below it)
SETS = [
    (ROOT, sorted((ROOT / "tests" / "helpers" / "schemas").glob("*.proto"))),
    (ROOT / "examples", sorted((ROOT / "examples" / "shop").glob("*.proto"))),
]


def generate(out: Path) -> list[Path]:
    """Run protoc for every set into ``out`` (mirroring the layout); return the outputs."""
    from grpc_tools import protoc  # dev dependency

    well_known = Path(protoc.__file__).parent / "_proto"
    made: list[Path] = []
    for include, protos in SETS:
        if not protos:
            continue
        target = out / include.relative_to(ROOT)
        target.mkdir(parents=True, exist_ok=True)
        args = ["protoc", f"-I{include}", f"-I{well_known}", f"--python_out={target}", f"--pyi_out={target}",
                *(str(p.relative_to(include)) for p in protos)]
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", *args[1:]], check=True, cwd=include)
        for p in protos:
            stem = p.relative_to(include).with_suffix("")
            made += [target / f"{stem}_pb2.py", target / f"{stem}_pb2.pyi"]
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare with the committed files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stale = []
        for made in generate(Path(tmp)):
            committed = ROOT / made.relative_to(tmp)
            if not committed.exists() or committed.read_bytes() != made.read_bytes():
                stale.append(committed)
                if not args.check:
                    shutil.copyfile(made, committed)
    for path in stale:
        print(("out of date: " if args.check else "wrote ") + str(path.relative_to(ROOT)))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
