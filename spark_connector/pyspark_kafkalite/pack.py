"""Pack a venv into a zip for ``spark.archives``, and unpack it for the driver.

Spark unpacks ``spark.archives`` into each executor's working directory. Its ``.tar``
unpacking refuses symbolic links that point out of the archive, and a venv's
``bin/python`` is one, so the archive is a zip in which links are followed (the
interpreter itself is stored) and file modes are kept (Spark's zip unpacking restores
them, so ``bin/python`` stays executable). See docs/spark.md, "Running on a cluster".

Usage::

    python -m pyspark_kafkalite.pack kafkalite_env kafkalite_env.zip
    python -m pyspark_kafkalite.pack --unpack kafkalite_env.zip environment
"""

from __future__ import annotations

import argparse
import stat
import zipfile
from pathlib import Path

from kafkalite.errors import ConfigError


def pack(venv: Path, archive: Path, *, compress: bool = False) -> Path:
    """Write ``venv`` (symbolic links followed, modes kept) to the zip ``archive``."""
    venv = Path(venv)
    if not (venv / "pyvenv.cfg").exists() or not (venv / "bin" / "python").exists():
        raise ConfigError(f"{venv} is not a venv (no pyvenv.cfg or bin/python): make one with "
                          "'python3 -m venv DIR' and install kafkalite, pyarrow and numpy into it")
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(archive, "w", method) as out:
        for path in sorted(venv.rglob("*")):
            if path.is_file():  # is_file() follows links; write() stores the target's bytes and mode
                out.write(path, path.relative_to(venv))
    return Path(archive)


def unpack(archive: Path, into: Path) -> Path:
    """Unpack ``archive`` into ``into`` with the file modes it records."""
    into = Path(into)
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            target = Path(zf.extract(info, into))
            mode = info.external_attr >> 16
            if mode:
                target.chmod(stat.S_IMODE(mode))
    return into


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Pack a venv for spark.archives, or unpack one.")
    parser.add_argument("source", type=Path, help="the venv directory (or, with --unpack, the zip)")
    parser.add_argument("target", type=Path, help="the zip to write (or, with --unpack, the directory)")
    parser.add_argument("--unpack", action="store_true")
    parser.add_argument("--compress", action="store_true", help="deflate (smaller, slower to unpack)")
    args = parser.parse_args(argv)
    if args.unpack:
        unpack(args.source, args.target)
    else:
        try:
            pack(args.source, args.target, compress=args.compress)
        except ConfigError as exc:
            parser.error(str(exc))
    return 0


if __name__ == "__main__":
    # The command's exit status (run as a script).
    raise SystemExit(main())
