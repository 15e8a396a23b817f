"""The offsets file of :func:`pyspark_kafkalite.read_kafka_incremental`: what each run read.

One JSON file, ``<checkpoint>/kafkalite-offsets.json``, on a filesystem the driver
reads and writes (a local disk, or a mounted volume on a managed runtime). It holds

* ``committed``: the last batch whose write succeeded, ``{"batch": n, "offsets": {...}}``
  (the offsets to start the next batch from), and
* ``planned``: the batch being processed, ``{"batch": n + 1, "start": ..., "end": ...}``,
  written *before* the DataFrame is returned. A run that fails before its commit leaves
  it there, and the next run reads exactly those offsets again under the same batch
  number: that is what makes a re-run safe, and exactly once with a sink that keeps one
  result per batch number (Spark's own streaming checkpoint keeps an offset log and a
  commit log for the same reason).

Every change replaces the file atomically (write a temporary file, ``fsync``,
``os.replace``), so a crash leaves the old state or the new one, never half a file.
Offsets are ``{"topic": {"partition": offset}}``, as in a Spark streaming checkpoint.

Example::

    store = OffsetsFile("/data/checkpoints/orders")
    state = store.load()          # CheckpointState(committed=None, planned=None) at first
    store.plan(0, start, end)
    store.commit(0, end)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalite.errors import ConfigError
from pyspark_kafkalite.planning import TP, offsets_from_json, offsets_to_json

FILE_NAME = "kafkalite-offsets.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class PlannedBatch:
    """A batch whose offsets are fixed: ``start <= offset < end`` per partition."""

    batch: int
    start: dict[TP, int]
    end: dict[TP, int]


@dataclass(frozen=True)
class CheckpointState:
    committed_batch: int | None
    committed: dict[TP, int] | None
    planned: PlannedBatch | None

    @property
    def next_batch(self) -> int:
        return 0 if self.committed_batch is None else self.committed_batch + 1


class OffsetsFile:
    """The checkpoint's offsets file (see the module doc)."""

    def __init__(self, checkpoint: str | os.PathLike[str]) -> None:
        if not isinstance(checkpoint, (str, os.PathLike)) or not str(checkpoint).strip():
            raise ConfigError(f"the checkpoint must be a directory path, got {checkpoint!r}")
        self.directory = Path(checkpoint)
        self.path = self.directory / FILE_NAME

    def load(self) -> CheckpointState:
        if not self.path.exists():
            return CheckpointState(None, None, None)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("version") != FORMAT_VERSION:
                raise ConfigError(f"checkpoint file {self.path} has format version {data.get('version')!r}; this "
                                  f"kafkalite reads version {FORMAT_VERSION}")
            committed = data.get("committed")
            planned = data.get("planned")
            return CheckpointState(
                committed_batch=int(committed["batch"]) if committed else None,
                committed=offsets_from_json(committed["offsets"]) if committed else None,
                planned=PlannedBatch(int(planned["batch"]), offsets_from_json(planned["start"]),
                                     offsets_from_json(planned["end"])) if planned else None)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"checkpoint file {self.path} is not a kafkalite offsets file ({exc!r})") from None

    def plan(self, batch: int, start: dict[TP, int], end: dict[TP, int]) -> None:
        """Record the offsets of ``batch`` before it is processed."""
        state = self.load()
        self._write(state, {"batch": batch, "start": offsets_to_json(start), "end": offsets_to_json(end)})

    def commit(self, batch: int, end: dict[TP, int]) -> None:
        """Record that ``batch`` was processed: the next batch starts at ``end``."""
        state = self.load()
        if state.planned is None or state.planned.batch != batch:
            where = "nothing" if state.planned is None else f"batch {state.planned.batch}"
            raise ConfigError(f"cannot commit batch {batch} to checkpoint {self.directory}: it has {where} planned "
                              "(another run of this job committed or re-planned it meanwhile; each checkpoint is "
                              "for one job run at a time)")
        self._write(CheckpointState(batch, end, None), None)

    def _write(self, state: CheckpointState, planned: dict[str, Any] | None) -> None:
        committed = (None if state.committed is None else
                     {"batch": state.committed_batch, "offsets": offsets_to_json(state.committed)})
        text = json.dumps({"version": FORMAT_VERSION, "committed": committed, "planned": planned}, indent=1)
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        with temporary.open("w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path)
