"""Incremental batch reads for scheduled jobs: each run reads what arrived since the last.

:func:`read_kafka_incremental` is what a job uses where a streaming query on a Python
source cannot run (Spark 3.5, which lacks the Python Data Source API) or is not wanted
(a job scheduled every hour). Each call reads from the offsets committed in its
checkpoint (:mod:`pyspark_kafkalite.checkpoint`) up to the latest offsets, or less with
``maxOffsetsPerTrigger`` / ``maxBytesPerTrigger`` (shared across partitions by
:mod:`pyspark_kafkalite.admission`, as a micro-batch is), and returns the DataFrame with
a :class:`CommitStep`. The batch's offsets are recorded before the DataFrame is
returned; the step records its end only when the caller calls it, after the write
succeeded. A run that fails before committing is re-run with the same offsets and the
same batch number.

Exactly once, with a sink that keeps one result per batch number (an idempotent
sink)::

    df, commit = read_kafka_incremental(spark, "/data/checkpoints/orders", options)
    (df.withColumn("batch_id", F.lit(commit.batch_id))
       .write.mode("overwrite").parquet(f"/data/orders/batch={commit.batch_id}"))
    commit()

A crash between the write and ``commit()`` re-runs batch ``commit.batch_id`` with the
same records, and the overwrite replaces the first attempt's output.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from kafkalite.errors import ConfigError, OffsetOutOfRangeError
from pyspark_kafkalite.admission import byte_limit, bytes_per_offset, lowest, rate_limit
from pyspark_kafkalite.checkpoint import CheckpointState, OffsetsFile
from pyspark_kafkalite.frames import frame_of_ranges, plain_options
from pyspark_kafkalite.options import ReadOptions
from pyspark_kafkalite.planning import TP, Planner, split_ranges

log = logging.getLogger("pyspark_kafkalite")

__all__ = ["CommitStep", "Increment", "read_kafka_incremental"]

#: Options that make no sense for a run that reads up to the latest offsets, and why.
_NOT_FOR_INCREMENTAL = {
    "endingOffsets": "each run reads up to the latest offsets (bound it with maxOffsetsPerTrigger)",
    "endingTimestamp": "each run reads up to the latest offsets (bound it with maxOffsetsPerTrigger)",
    "endingOffsetsByTimestamp": "each run reads up to the latest offsets (bound it with maxOffsetsPerTrigger)",
    "minOffsetsPerTrigger": "the job's schedule decides when a run happens; a run reads what is there",
    "maxTriggerDelay": "the job's schedule decides when a run happens; a run reads what is there",
}


class CommitStep:
    """Records a batch's end offsets in the checkpoint: call it after the write succeeded.

    ``batch_id`` numbers the batches of a checkpoint from 0; a re-run of a batch that was
    not committed has the same number and the same offsets. ``start`` and ``end`` are the
    batch's offsets per ``(topic, partition)`` (``end`` exclusive).
    """

    def __init__(self, store: OffsetsFile, batch_id: int, start: dict[TP, int], end: dict[TP, int]) -> None:
        self.store = store
        self.batch_id = batch_id
        self.start = dict(start)
        self.end = dict(end)
        self.committed = False

    @property
    def records(self) -> int:
        """How many offsets the batch spans (records, plus any transaction markers or compacted gaps)."""
        return sum(max(0, off - self.start.get(tp, off)) for tp, off in self.end.items())

    def __call__(self) -> None:
        if self.committed:
            return
        self.store.commit(self.batch_id, self.end)
        self.committed = True

    def __repr__(self) -> str:
        return f"CommitStep(batch_id={self.batch_id}, records={self.records}, committed={self.committed})"


class Increment(NamedTuple):
    """What :func:`read_kafka_incremental` returns: ``df, commit = ...``."""

    df: Any
    commit: CommitStep


def read_kafka_incremental(spark: Any, checkpoint: str | os.PathLike[str], options: Mapping[str, Any]) -> Increment:
    """The records that arrived since the last committed run; see the module doc.

    ``checkpoint`` is a directory on a filesystem the driver can write (created when
    missing). ``options`` are the streaming source's: the first run starts at
    ``startingOffsets`` (default ``latest``, as a streaming query does; ``earliest``,
    JSON offsets, timestamps or ``group``), later runs at the committed offsets; a
    partition that appears later is read from its earliest offset. ``maxOffsetsPerTrigger``
    and ``maxBytesPerTrigger`` bound one run. A checkpoint written for other topics (its
    offsets name partitions the options do not read) is an error.

    Example (not run: needs a Spark session; tests/spark runs the data source)::

        df, commit = read_kafka_incremental(spark, "/data/checkpoints/orders",
                                            {"kafka.bootstrap.servers": "127.0.0.1:9092",
                                             "subscribe": "orders", "startingOffsets": "earliest",
                                             "maxOffsetsPerTrigger": "100000"})
        df.write.mode("append").parquet("/data/orders")
        commit()
    """
    plain = plain_options(options)
    lowered = {k.lower() for k in plain}
    for name, why in _NOT_FOR_INCREMENTAL.items():
        if name.lower() in lowered:
            raise ConfigError(f"option '{name}' does not apply to read_kafka_incremental: {why}")
    opts = ReadOptions.parse(plain, streaming=True)
    store = OffsetsFile(checkpoint)
    state = store.load()
    _check_topic_set(store, state, opts)
    with Planner(opts) as planner:
        latest, earliest = planner.current()
        if state.planned is not None:
            batch, start, end = state.planned.batch, state.planned.start, state.planned.end
            log.info("kafkalite: re-reading batch %d of %s, which was planned and not committed", batch,
                     store.directory)
            starting_option = f"checkpoint {store.path} (batch {batch})"
        else:
            batch = state.next_batch
            if state.committed is None:
                parts = sorted(latest)
                start = planner.resolve(opts.starting, parts, earliest=earliest, latest=latest, starting=True)
                starting_option = opts.starting.option
            else:
                _report_vanished(opts, sorted(tp for tp in state.committed if tp not in latest))
                start = _truncated(opts, {tp: state.committed.get(tp, earliest[tp]) for tp in latest}, latest)
                starting_option = f"checkpoint {store.path}"
            end = _limit(planner, opts, start, latest, earliest)
            store.plan(batch, start, end)
        parts = sorted(tp for tp in end if tp in latest)
        _report_vanished(opts, sorted(tp for tp in end if tp not in latest))
        ranges = planner.checked_ranges(parts, {tp: start.get(tp, earliest[tp]) for tp in parts}, end,
                                        earliest=earliest, latest=latest, starting_option=starting_option,
                                        ending_option=f"checkpoint {store.path} (batch {batch})")
    ranges = split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
    return Increment(frame_of_ranges(spark, opts, ranges), CommitStep(store, batch, start, end))


def _limit(planner: Planner, opts: ReadOptions, start: dict[TP, int], latest: dict[TP, int],
           earliest: dict[TP, int]) -> dict[TP, int]:
    """The batch's end: the latest offsets, bounded by the per-trigger limits."""
    ends = [dict(latest)]
    if opts.max_offsets_per_trigger:
        ends.append(rate_limit(start, latest, opts.max_offsets_per_trigger))
    if opts.max_bytes_per_trigger:
        rate = bytes_per_offset(planner.log_sizes(sorted(latest)), earliest, latest)
        ends.append(byte_limit(start, latest, rate, opts.max_bytes_per_trigger))
    return lowest(*ends)


def _truncated(opts: ReadOptions, start: dict[TP, int], latest: dict[TP, int]) -> dict[TP, int]:
    """A committed offset past its partition's end (truncated after an unclean leader
    election, or the topic re-created): data loss (``failOnDataLoss``), else start at the end."""
    out = dict(start)
    for tp, off in sorted(start.items()):
        if tp in latest and off > latest[tp]:
            message = (f"{tp[0]}-{tp[1]} now ends at offset {latest[tp]}, before the committed offset {off} "
                       "(truncated, or the topic was deleted and re-created)")
            if opts.fail_on_data_loss:
                raise OffsetOutOfRangeError(f"{message}; option failOnDataLoss=true (set it to false to go on "
                                            "from the new end)", topic=tp[0], partition=tp[1])
            log.warning("kafkalite: %s; going on from %d (failOnDataLoss=false)", message, latest[tp])
            out[tp] = latest[tp]
    return out


def _report_vanished(opts: ReadOptions, gone: list[TP]) -> None:
    if not gone:
        return
    names = ", ".join(f"{t}-{p}" for t, p in gone)
    if opts.fail_on_data_loss:
        raise OffsetOutOfRangeError(f"partitions {names} no longer exist (topic deleted?); option "
                                    "failOnDataLoss=true (set it to false to go on without them)",
                                    topic=gone[0][0], partition=gone[0][1])
    log.warning("kafkalite: partitions %s no longer exist (failOnDataLoss=false)", names)


def _check_topic_set(store: OffsetsFile, state: CheckpointState, opts: ReadOptions) -> None:
    """A checkpoint holds the offsets of the topics it was written for; other options
    would silently start those topics over, so they are refused."""
    recorded: set[TP] = set(state.committed or {})
    if state.planned is not None:
        recorded |= set(state.planned.end)
    foreign = sorted(tp for tp in recorded if not opts.reads(tp))
    if not foreign:
        return
    names = ", ".join(f"{t}-{p}" for t, p in foreign[:10]) + (" ..." if len(foreign) > 10 else "")
    now = {"subscribe": ",".join(opts.topics), "subscribePattern": opts.pattern or "",
           "assign": ", ".join(f"{t}-{p}" for t, p in opts.assigned)}[opts.strategy]
    raise ConfigError(
        f"checkpoint {store.directory} holds offsets for {names}, which option '{opts.strategy}' ({now!r}) does "
        "not read: it was written by a job reading another topic set. Run with the options it was written "
        "with, or give the changed job a new checkpoint (startingOffsets says where that one begins)",
        topic=foreign[0][0])
