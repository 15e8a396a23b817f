"""Streaming reads: ``spark.readStream.format("kafkalite")``.

Offsets are ``{"topic": {"partition": offset}}`` (JSON in Spark's checkpoint). Each
micro-batch reads ``[start, end)`` per partition with the batch reader's tasks.

* partitions found after the query started (new partitions, or new topics matching
  ``subscribePattern``) are read from their earliest offset;
* ``startingOffsets=group`` starts a new query at ``kafka.group.id``'s committed
  offsets (``planning.Planner.group_start``); then the checkpoint rules, as always;
* ``maxOffsetsPerTrigger`` caps a micro-batch (shared across partitions in proportion
  to their backlog, as Spark's JVM connector does), ``maxBytesPerTrigger`` too, by an
  estimate from the log sizes (``admission.py``); ``minOffsetsPerTrigger`` waits
  for that many new records, but never longer than ``maxTriggerDelay`` (default 15m);
* ``Trigger.AvailableNow`` reads what exists when the query starts, in micro-batches
  bounded by the limits, on PySpark >= 4.2 (which gives Python sources admission
  control and AvailableNow). PySpark 4.0 / 4.1 run AvailableNow (and Once) as a single
  micro-batch for Python sources; the limits still bound it, so such a run reads at
  most ``maxOffsetsPerTrigger`` records and the next run goes on from there (a warning
  says so; processing-time triggers are bounded the same way on every version);
* ``failOnDataLoss``: offsets deleted before they were read, a partition that went
  backwards (truncation) or disappeared, a topic re-created (its topic id changed
  while the query ran) fail the query naming the option; with ``false`` the query
  logs a warning and goes on with what is left (a re-created topic from its start);
* a checkpoint with offsets of topics the options no longer read (``subscribe``
  changed) fails on the driver naming the cause and the fix;
* with ``kafka.group.id`` (or ``groupIdPrefix``, which makes ``<prefix>-<uuid>``) the
  offsets of every completed micro-batch are committed to that consumer group, so
  lag tools (``kafka-consumer-groups``) show the query's progress. Spark's checkpoint
  stays the source of truth for restarts; the group is for monitoring.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from kafkalite import OffsetAndMetadata, TopicPartition
from kafkalite.errors import ConfigError, OffsetOutOfRangeError
from pyspark_kafkalite.admission import byte_limit, bytes_per_offset, lowest, rate_limit
from pyspark_kafkalite.ledger import MicroBatchLedger
from pyspark_kafkalite.options import ReadOptions
from pyspark_kafkalite.partitions import KafkaInputPartition, read_partition
from pyspark_kafkalite.planning import (
    TP,
    OffsetRange,
    Planner,
    offsets_from_json,
    offsets_to_json,
    split_ranges,
)
from pyspark_kafkalite.shipping import ShippedToTasks

log = logging.getLogger("pyspark_kafkalite")

try:  # PySpark >= 4.2: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        ReadMinRows,
        SupportsTriggerAvailableNow,
    )

    _AVAILABLE_NOW_BASES: tuple[type, ...] = (SupportsTriggerAvailableNow,)
except ImportError:  # PySpark 4.0 / 4.1
    ReadAllAvailable = ReadLimit = ReadMaxRows = ReadMinRows = None  # type: ignore[assignment,misc]  # absent before 4.2
    _AVAILABLE_NOW_BASES = ()
try:  # the read limit Spark shows for maxBytesPerTrigger alone; the reader applies the bytes itself
    from pyspark.sql.streaming.datasource import ReadMaxBytes
except ImportError:
    ReadMaxBytes = None  # type: ignore[assignment,misc]  # a PySpark without it

__all__ = ["ADMISSION_CONTROL", "KafkaLiteStreamReader", "rate_limit"]

#: PySpark passes a start and a read limit to latestOffset (4.2+) and runs
#: Trigger.AvailableNow in bounded micro-batches for Python sources.
ADMISSION_CONTROL = ReadMaxRows is not None


class KafkaLiteStreamReader(ShippedToTasks, DataSourceStreamReader, *_AVAILABLE_NOW_BASES):  # type: ignore[misc]  # bases by version
    """Micro-batch planning on the driver; the tasks read like the batch reader's."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._planner: Planner | None = None
        self._target: dict[TP, int] | None = None  # Trigger.AvailableNow's end
        self.ledger = MicroBatchLedger()  # where Spark's query stands (see ledger.py)
        self._latest: dict[TP, int] | None = None
        self._last_batch_time = time.monotonic()
        self._warned_single_batch = False
        self._committed: dict[TP, int] | None = None
        self._topic_ids: dict[str, uuid.UUID] = {}  # to see a topic deleted and re-created
        self._recreated: dict[TP, int] = {}  # partitions of re-created topics -> the old offset to leave
        self.data_loss_events = 0
        self.group_id = opts.group_id
        if self.group_id is None and opts.group_id_prefix:
            self.group_id = f"{opts.group_id_prefix}-{uuid.uuid4()}"
            log.info("kafkalite: committing this query's progress to consumer group %s", self.group_id)

    # The planner holds an admin client (threads, sockets): never pickled to tasks.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_planner"] = None
        return state

    @property
    def planner(self) -> Planner:
        if self._planner is None:
            self._planner = Planner(self.opts)
        return self._planner

    # ------------------------------------------------------------ offsets

    def initialOffset(self) -> dict[str, Any]:
        return offsets_to_json(self.ledger.initial(self._resolve_initial))

    def _resolve_initial(self) -> dict[TP, int]:
        planner = self.planner
        parts = planner.partitions()
        earliest = planner.earliest(parts)
        latest = planner.latest(parts)
        return planner.resolve(self.opts.starting, parts, earliest=earliest, latest=latest, starting=True)

    def _current(self) -> tuple[dict[TP, int], dict[TP, int]]:
        return self.planner.current()

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: remember what exists now; never read past it."""
        latest, _ = self._current()
        self._target = latest

    def getDefaultReadLimit(self) -> Any:
        if ReadMaxRows is None:
            return None
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.max_bytes_per_trigger:
            if ReadMaxBytes is not None:
                return ReadMaxBytes(self.opts.max_bytes_per_trigger)
            # Any limit but ReadAllAvailable: _limit applies maxBytesPerTrigger either way.
            return ReadMaxRows(2**63 - 1)
        if self.opts.min_offsets_per_trigger:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, Any]:
        """The end of the next micro-batch (``start`` and ``limit`` from PySpark >= 4.2)."""
        latest, earliest = self._current()
        self._latest = dict(latest)
        if start is not None:
            self._check_topic_set(offsets_from_json(start))
        begin = self.ledger.next_start(offsets_from_json(start) if start is not None else None)
        if begin is not None:
            # Spark plans a micro-batch only after the one before it completed, so its
            # start is processed: commit it too (Spark calls commit() for the last batch
            # only when it plans another, which Trigger.AvailableNow never does).
            self._commit_group(offsets_to_json(begin))
        else:
            # A new query on PySpark < 4.2: latestOffset() comes before initialOffset().
            begin = self.ledger.initial(self._resolve_initial)
        if start is None:
            self._warn_single_batch_triggers()
        if self._target is not None:
            # AvailableNow: partitions that appeared later are not read; nothing past the
            # target, nor before the start (startingOffsets=latest resolves after the target).
            latest = {tp: min(off, max(self._target[tp], begin.get(tp, 0))) for tp, off in latest.items()
                      if tp in self._target}
        for tp in latest:
            begin.setdefault(tp, earliest[tp])  # a new partition starts at its earliest offset
        end = self._limit(self._effective_begin(begin, latest, earliest), latest, limit, earliest)
        # Partitions that vanished keep their offset (partitions() reports the loss).
        for tp, off in begin.items():
            end.setdefault(tp, off)
        self.ledger.returned(end)
        return offsets_to_json(end)

    def _effective_begin(self, begin: dict[TP, int], latest: dict[TP, int],
                         earliest: dict[TP, int]) -> dict[TP, int]:
        """Where the limits count a partition's backlog from.

        A topic whose id changed since this reader last saw it was deleted and
        re-created: its new log is read from its earliest offset (``partitions()``
        reports the loss). A partition that went back otherwise (truncated, or
        re-created before this reader saw the old id) ends the batch at its new end,
        where ``partitions()`` reports the loss, instead of staying at an offset the
        new log may reach much later.
        """
        ids = self.planner.ids()
        for topic, topic_id in ids.items():
            old = self._topic_ids.get(topic)
            if old is not None and old != topic_id:
                for tp, off in begin.items():
                    if tp[0] == topic:
                        self._recreated[tp] = off
                log.warning("kafkalite: topic '%s' was deleted and re-created (topic id %s, was %s)",
                            topic, topic_id, old)
        self._topic_ids.update(ids)
        effective = dict(begin)
        for tp, off in begin.items():
            if tp not in latest:
                continue
            if self._recreated.get(tp) == off:
                effective[tp] = earliest[tp]
            elif latest[tp] < off:
                effective[tp] = latest[tp]
        return effective

    def _check_topic_set(self, offsets: dict[TP, int]) -> None:
        """Offsets Spark names (its checkpoint's) for topics the options no longer read:
        the query was restarted with another topic set, which Spark cannot carry over."""
        foreign = sorted({tp for tp in offsets if not self.opts.reads(tp)})
        if not foreign:
            return
        opts = self.opts
        names = ", ".join(f"{t}-{p}" for t, p in foreign)
        now = {"subscribe": ",".join(opts.topics), "subscribePattern": opts.pattern or "",
               "assign": ", ".join(f"{t}-{p}" for t, p in opts.assigned)}[opts.strategy]
        raise ConfigError(
            f"this query's checkpoint holds offsets for {names}, which option '{opts.strategy}' ({now!r}) no "
            "longer reads: the query was restarted with a different topic set. Restart it with the "
            f"'{opts.strategy}' it was started with, or start the changed query with a new "
            "checkpointLocation (startingOffsets says where it begins; startingOffsets=group with "
            "kafka.group.id carries on from the offsets this query committed to its group)",
            topic=foreign[0][0])

    def _warn_single_batch_triggers(self) -> None:
        opts = self.opts
        if self._warned_single_batch or not (opts.max_offsets_per_trigger or opts.min_offsets_per_trigger
                                             or opts.max_bytes_per_trigger):
            return
        self._warned_single_batch = True
        import pyspark

        log.warning("kafkalite: PySpark %s gives Python data sources no admission control: "
                    "maxOffsetsPerTrigger/maxBytesPerTrigger/minOffsetsPerTrigger bound every micro-batch, and "
                    "Trigger.AvailableNow or Trigger.Once (a single micro-batch for Python sources on "
                    "this PySpark) read at most one bounded micro-batch per run; PySpark >= 4.2 "
                    "reads all that is available in bounded micro-batches", pyspark.__version__)

    def _limit(self, begin: dict[TP, int], latest: dict[TP, int], limit: Any,
               earliest: dict[TP, int]) -> dict[TP, int]:
        opts = self.opts
        if ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable):
            return dict(latest)
        # PySpark without admission control passes no limit: the options apply as they are.
        available = sum(max(0, latest[tp] - begin.get(tp, latest[tp])) for tp in latest)
        if opts.min_offsets_per_trigger and available < opts.min_offsets_per_trigger and self._target is None:
            waited_ms = (time.monotonic() - self._last_batch_time) * 1000
            if waited_ms < opts.max_trigger_delay_ms:
                return {tp: begin.get(tp, off) for tp, off in latest.items()}
        self._last_batch_time = time.monotonic()
        ends = [dict(latest)]
        if opts.max_offsets_per_trigger:
            ends.append(rate_limit(begin, latest, opts.max_offsets_per_trigger))
        if opts.max_bytes_per_trigger:
            # The log's real end (not AvailableNow's target): the size covers all of it.
            log_end = self._latest if self._latest is not None else latest
            rate = bytes_per_offset(self.planner.log_sizes(sorted(log_end)), earliest, log_end)
            ends.append(byte_limit(begin, latest, rate, opts.max_bytes_per_trigger))
        return lowest(*ends)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return offsets_to_json(self._latest) if self._latest is not None else None

    # ------------------------------------------------------------ micro-batches

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        stop = offsets_from_json(end)
        self._check_topic_set(offsets_from_json(start))
        self._check_topic_set(stop)
        self.ledger.planned(offsets_from_json(start), stop)
        begin = self.ledger.batch_start(offsets_from_json(start), stop)
        if begin == stop:
            return []
        opts = self.opts
        planner = self.planner
        latest, earliest = planner.current()
        current = set(latest)
        ranges = []
        for tp, until in sorted(stop.items()):
            if tp not in current:
                self._data_loss(f"partition {tp[0]}-{tp[1]} no longer exists (topic deleted?)", tp)
                continue
            frm = begin.get(tp, earliest[tp])
            if tp in self._recreated and self._recreated.pop(tp) == frm:
                self._data_loss(f"topic '{tp[0]}' was deleted and re-created: records of the old {tp[0]}-{tp[1]} "
                                f"from offset {frm} on that this query had not read are lost; the new topic is "
                                f"read from offset {earliest[tp]}", tp)
                frm = earliest[tp]
            if frm < earliest[tp]:
                self._data_loss(f"offsets {frm}..{earliest[tp] - 1} of {tp[0]}-{tp[1]} were deleted before "
                                "they were read", tp)
                frm = earliest[tp]
            if until > latest[tp]:
                self._data_loss(f"{tp[0]}-{tp[1]} now ends at {latest[tp]}, before offset {until} "
                                "(truncated)", tp)
                until = latest[tp]
            if until < frm:
                self._data_loss(f"{tp[0]}-{tp[1]} went back from offset {frm} to {until} (truncated, or the "
                                "topic was deleted and re-created); offsets before it are skipped", tp)
                continue
            if until > frm:
                ranges.append(OffsetRange(tp[0], tp[1], frm, until))
        ranges = split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
        return [KafkaInputPartition.of(r) for r in ranges]

    def _data_loss(self, message: str, tp: TP) -> None:
        self.data_loss_events += 1
        if self.opts.fail_on_data_loss:
            raise OffsetOutOfRangeError(f"{message}; option failOnDataLoss=true (set it to false to go on "
                                        "with what is left)", topic=tp[0], partition=tp[1])
        log.warning("kafkalite: %s (failOnDataLoss=false; %d data-loss events in this query run)", message,
                    self.data_loss_events)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.opts, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark finished every micro-batch up to ``end``: tell the consumer group."""
        self.ledger.committed(offsets_from_json(end))
        self._commit_group(end)

    def _commit_group(self, end: dict[str, Any]) -> None:
        if not self.group_id:
            return
        processed = offsets_from_json(end)
        if processed == self._committed:
            return
        offsets = {TopicPartition(t, p): OffsetAndMetadata(off) for (t, p), off in processed.items()}
        try:
            self.planner.admin.alter_consumer_group_offsets(self.group_id, offsets).raise_on_error()
            self._committed = processed
        except Exception as exc:  # monitoring only: the checkpoint is what restarts use
            log.warning("kafkalite: committing progress to group %s failed: %s", self.group_id, exc)

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()
            self._planner = None
