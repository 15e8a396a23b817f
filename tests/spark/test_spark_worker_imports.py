"""pyspark_kafkalite.worker_imports: the zip importers a Spark Python worker keeps re-read
their archive on importlib.invalidate_caches() only when it changed, and imports from a
changed archive still see the change."""

from __future__ import annotations

import importlib
import os
import sys
import zipfile
import zipimport
from pathlib import Path

import pytest
from pyspark_kafkalite.worker_imports import (
    WORKER_ENV,
    StableArchiveImporter,
    lighten_zip_importers,
)

LAZY_INVALIDATION = sys.version_info >= (3, 12)  # CPython gh-103200: nothing to lighten


def write_zip(path: Path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, source in modules.items():
            z.writestr(f"{name}.py", source)


def test_an_unchanged_archive_is_not_re_read_and_a_changed_one_is(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "shipped.zip"
    write_zip(archive, {"zipmod_first": "VALUE = 1\n"})
    monkeypatch.syspath_prepend(str(archive))
    try:
        import zipmod_first  # type: ignore[import-not-found]  # from the archive above

        assert zipmod_first.VALUE == 1
        # Outside a Spark worker (this process) nothing is touched.
        monkeypatch.delenv(WORKER_ENV, raising=False)
        assert lighten_zip_importers() == 0
        assert type(sys.path_importer_cache[str(archive)]) is zipimport.zipimporter

        monkeypatch.setenv(WORKER_ENV, "secret")
        swapped = lighten_zip_importers()
        importer = sys.path_importer_cache[str(archive)]
        if LAZY_INVALIDATION:
            assert swapped == 0 and type(importer) is zipimport.zipimporter
        else:
            assert swapped >= 1 and isinstance(importer, StableArchiveImporter)
            assert lighten_zip_importers() == 0  # idempotent
            files = importer._files  # type: ignore[attr-defined]  # zipimporter's directory
            importlib.invalidate_caches()
            assert importer._files is files  # type: ignore[attr-defined]  # not re-read

        # A changed archive (another size, a later mtime) is re-read: its new module imports.
        write_zip(archive, {"zipmod_first": "VALUE = 1\n", "zipmod_second": "VALUE = 2\n"})
        stat = archive.stat()
        os.utime(archive, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        importlib.invalidate_caches()
        import zipmod_second  # type: ignore[import-not-found]  # added to the archive above

        assert zipmod_second.VALUE == 2
    finally:
        for name in ("zipmod_first", "zipmod_second"):
            sys.modules.pop(name, None)
        sys.path_importer_cache.pop(str(archive), None)
