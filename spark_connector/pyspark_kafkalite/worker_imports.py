"""Keep the ``importlib.invalidate_caches()`` PySpark runs before every task cheap.

PySpark's Python worker calls ``importlib.invalidate_caches()`` at the start of every
task (``pyspark.worker_util.setup_spark_files`` in 4.x, ``pyspark.worker.main`` in 3.5,
after it puts the task's files on ``sys.path``), and so do the driver's Python workers
that plan and commit a Python data source write (``pyspark.sql.worker.*``). On Python 3.10 and 3.11 that makes every ``zipimport.zipimporter`` in
``sys.path_importer_cache`` re-read its archive's central directory there and then
(CPython gh-103200; 3.12 re-reads lazily, on the next lookup). A pip-installed PySpark's
workers import ``pyspark`` from ``pyspark.zip``, with one importer per imported
subpackage (14 in a write task), and a Spark jar is on their path too: measured in
PySpark 4.0's workers on Python 3.11, 80-100 ms of a task's CPU every task, more than
kafkalite's own write of a 167k-row task (40-50 ms), before Spark hands the task any row.

:func:`lighten_zip_importers` swaps each such importer for a
:class:`StableArchiveImporter`, which re-reads its archive only when the archive's size
or modification time changed since it last read it: what a changed archive needs, and
nothing when it did not change. It acts only in Spark's Python workers (the processes
Spark starts with ``PYTHON_WORKER_FACTORY_SECRET`` in their environment: task workers
and the driver's planning ones; never the user's own driver process), on Python < 3.12,
and is idempotent. The write path calls it in its task, in ``writer()`` and in
``commit()``, so from the second write on none of these pays the re-reads.

Example (what a write task runs first)::

    from pyspark_kafkalite.worker_imports import lighten_zip_importers
    lighten_zip_importers()        # a no-op outside Spark's Python workers and on Python >= 3.12
"""

from __future__ import annotations

import os
import sys
import zipimport

__all__ = ["WORKER_ENV", "StableArchiveImporter", "lighten_zip_importers"]


def _stamp(archive: str) -> tuple[int, int] | None:
    try:
        st = os.stat(archive)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class StableArchiveImporter(zipimport.zipimporter):
    """A ``zipimporter`` whose ``invalidate_caches()`` re-reads the archive only when it
    changed (size or modification time) since it was last read."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._stamp = _stamp(self.archive)

    def invalidate_caches(self) -> None:
        stamp = _stamp(self.archive)
        if stamp is not None and stamp == self._stamp:
            return
        self._stamp = stamp
        super().invalidate_caches()


#: Set by Spark's PythonWorkerFactory in the environment of every Python worker it starts.
WORKER_ENV = "PYTHON_WORKER_FACTORY_SECRET"


def lighten_zip_importers(*, in_worker: bool | None = None) -> int:
    """Swap the path importers of zip archives for :class:`StableArchiveImporter`; how
    many were swapped. ``in_worker`` None: only in a Spark Python worker (:data:`WORKER_ENV`)."""
    if sys.version_info >= (3, 12):
        return 0  # gh-103200: invalidate_caches() no longer reads the archive
    if not ((WORKER_ENV in os.environ) if in_worker is None else in_worker):
        return 0
    swapped = 0
    cache = sys.path_importer_cache
    for path, finder in list(cache.items()):
        if type(finder) is not zipimport.zipimporter:
            continue
        try:
            cache[path] = StableArchiveImporter(path)
        except zipimport.ZipImportError:
            continue  # the archive is gone or broken: leave Python's own importer
        swapped += 1
    return swapped
