"""Driver-side planning: which partitions, which offsets, how to split them into tasks.

Runs where Spark plans the query (the driver's Python worker), with one kafkalite
:class:`~kafkalite.AdminClient` for metadata and ListOffsets. Produces picklable
:class:`OffsetRange` ``(topic, partition, start, end)`` values, ``end`` exclusive.

* partitions come from ``subscribe`` (missing topics read as empty, as Spark's JVM
  connector does), ``subscribePattern`` (a full match of the topic name, Java's
  ``Pattern.matches``) or ``assign`` (a missing topic or partition is an error);
* offsets come from ``earliest`` / ``latest``, the JSON offsets (which must cover every
  partition read, as in Spark), timestamps through ListOffsets, or a consumer group's
  committed offsets (``startingOffsets=group``, OffsetFetch);
* pushed-down filters on ``topic``, ``partition`` and ``offset`` narrow the ranges
  exactly; a lower bound on ``timestamp`` moves each start to the first offset with
  that timestamp or later (ListOffsets), which never drops a matching record;
* ``maxRecordsPerPartition`` and ``minPartitions`` split ranges into more tasks.

Example::

    with Planner(opts) as planner:
        ranges = planner.batch_ranges(PushedFilters())
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite import AdminClient, TopicPartition
from kafkalite.admin.types import OffsetSpec as AdminOffsetSpec
from kafkalite.errors import (
    ConfigError,
    KafkaError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from pyspark_kafkalite.options import EARLIEST, LATEST, STARTING_FALLBACK, OffsetSpec, ReadOptions

log = logging.getLogger("pyspark_kafkalite")

TP = tuple[str, int]


@dataclass(frozen=True)
class OffsetRange:
    """Records ``start <= offset < end`` of one partition: one Spark task's input."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass
class PushedFilters:
    """What Spark pushed down, reduced to bounds (all conditions ANDed)."""

    topics: set[str] | None = None
    partitions: set[int] | None = None
    partition_min: int | None = None
    partition_max: int | None = None  # inclusive
    offset_min: int | None = None
    offset_max: int | None = None  # exclusive
    timestamp_min_ms: int | None = None
    contradiction: bool = False  # e.g. topic = 'a' AND topic = 'b'

    def allows(self, topic: str, partition: int) -> bool:
        if self.contradiction:
            return False
        if self.topics is not None and topic not in self.topics:
            return False
        if self.partitions is not None and partition not in self.partitions:
            return False
        if self.partition_min is not None and partition < self.partition_min:
            return False
        return not (self.partition_max is not None and partition > self.partition_max)

    def restrict_topics(self, values: Iterable[str]) -> None:
        new = set(values)
        self.topics = new if self.topics is None else self.topics & new

    def restrict_partitions(self, values: Iterable[int]) -> None:
        new = set(values)
        self.partitions = new if self.partitions is None else self.partitions & new

    def lower_partition(self, value: int) -> None:
        self.partition_min = value if self.partition_min is None else max(self.partition_min, value)

    def upper_partition(self, value: int) -> None:
        self.partition_max = value if self.partition_max is None else min(self.partition_max, value)

    def lower_offset(self, value: int) -> None:
        self.offset_min = value if self.offset_min is None else max(self.offset_min, value)

    def upper_offset(self, value: int) -> None:
        self.offset_max = value if self.offset_max is None else min(self.offset_max, value)

    def lower_timestamp(self, value_ms: int) -> None:
        self.timestamp_min_ms = value_ms if self.timestamp_min_ms is None else max(self.timestamp_min_ms, value_ms)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None,
                 max_records: int | None) -> list[OffsetRange]:
    """Split ranges for parallelism: at most ``max_records`` each, and, when there are
    fewer than ``min_partitions``, into parts in proportion to their sizes."""
    out = [r for r in ranges if r.size > 0]
    if max_records:
        pieces = []
        for r in out:
            start = r.start
            while start < r.end:
                stop = min(start + max_records, r.end)
                pieces.append(OffsetRange(r.topic, r.partition, start, stop))
                start = stop
        out = pieces
    if min_partitions and len(out) < min_partitions:
        total = sum(r.size for r in out)
        counts = [max(1, min(r.size, int(r.size / total * min_partitions + 0.5))) for r in out]
        while sum(counts) < min_partitions:
            # Rounding left too few: split the range with the most records per part again.
            i = max(range(len(out)), key=lambda j: out[j].size / counts[j])
            if out[i].size <= counts[i]:
                break  # every part is a single record already
            counts[i] += 1
        pieces = []
        for r, parts in zip(out, counts):
            remaining, start = r.size, r.start
            for i in range(parts):
                this = remaining // (parts - i)
                remaining -= this
                pieces.append(OffsetRange(r.topic, r.partition, start, start + this))
                start += this
        out = pieces
    return out


class Planner:
    """Resolves the read options into offset ranges (driver side; a context manager)."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self.admin = AdminClient(opts.admin_settings())
        self.topic_ids: dict[str, uuid.UUID] = {}  # as the last partitions() saw them

    def ids(self) -> dict[str, uuid.UUID]:
        """The topic ids the last :meth:`partitions` saw (a re-created topic gets a new one)."""
        return dict(getattr(self, "topic_ids", {}))

    def close(self) -> None:
        self.admin.close()

    def __enter__(self) -> Planner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ partitions

    def partitions(self) -> list[TP]:
        """The partitions the options name, sorted."""
        opts = self.opts
        if opts.strategy == "assign":
            wanted = {t for t, _ in opts.assigned}
            known = self._describe(wanted, must_exist=True)
            for topic, p in opts.assigned:
                if p not in known[topic]:
                    raise UnknownTopicOrPartitionError(
                        f"option 'assign' names partition {p} of topic '{topic}', which has partitions "
                        f"0..{max(known[topic]) if known[topic] else -1}", topic=topic, partition=p)
            return list(opts.assigned)
        if opts.strategy == "subscribe":
            topics = set(opts.topics)
        else:
            regex = re.compile(opts.pattern or "")
            topics = {t for t in self.admin.list_topics() if regex.fullmatch(t)}
        found = self._describe(topics, must_exist=False)
        return sorted((t, p) for t, parts in found.items() for p in parts)

    def _describe(self, topics: set[str], *, must_exist: bool) -> dict[str, list[int]]:
        if not topics:
            return {}
        result = self.admin.describe_topics(sorted(topics))
        out: dict[str, list[int]] = {}
        for topic in sorted(topics):
            item = result[topic]
            if item.error is not None:
                if isinstance(item.error, UnknownTopicOrPartitionError):
                    if must_exist:
                        raise UnknownTopicOrPartitionError(
                            f"option 'assign' names topic '{topic}', which does not exist", topic=topic)
                    log.warning("kafkalite: topic '%s' does not exist; reading it as empty", topic)
                    continue
                raise item.error
            described = item.result()
            self.topic_ids[topic] = described.topic_id
            out[topic] = sorted(p.partition for p in described.partitions)
        return out

    def log_sizes(self, parts: Iterable[TP]) -> dict[TP, int]:
        """Stored bytes of each partition's log (DescribeLogDirs; the largest replica, future
        replicas of a move left out), for ``maxBytesPerTrigger``."""
        wanted = set(parts)
        if not wanted:
            return {}
        try:
            by_broker = self.admin.describe_log_dirs().all()
        except KafkaError as exc:
            raise ConfigError(f"option 'maxBytesPerTrigger' needs the log sizes of the partitions read "
                            f"(DescribeLogDirs, which needs the DESCRIBE permission on the CLUSTER resource), "
                            f"and the brokers refused: {exc}") from exc
        sizes: dict[TP, int] = {}
        for dirs in by_broker.values():
            for logdir in dirs.values():
                for tp, replica in logdir.replicas.items():
                    key = (tp.topic, tp.partition)
                    if key in wanted and not replica.is_future:
                        sizes[key] = max(sizes.get(key, 0), replica.size)
        return sizes

    # ------------------------------------------------------------ offsets

    def list_offsets(self, specs: Mapping[TP, int], *, skip_unknown: bool = False) -> dict[TP, int]:
        """ListOffsets: earliest (-2), latest (-1) or a timestamp per partition; -1 for a
        timestamp after the last record. ``skip_unknown`` leaves out partitions the
        brokers do not know (a topic deleted since its metadata was read) instead of
        failing: the stream reader treats them as gone."""
        if not specs:
            return {}
        request = {TopicPartition(t, p): AdminOffsetSpec(ts) for (t, p), ts in specs.items()}
        result = self.admin.list_offsets(request)
        out: dict[TP, int] = {}
        for tp, item in result.items():
            if item.error is not None:
                if skip_unknown and isinstance(item.error, UnknownTopicOrPartitionError):
                    log.info("kafkalite: %s-%d is gone (%s)", tp.topic, tp.partition, item.error)
                    continue
                raise item.error
            out[(tp.topic, tp.partition)] = item.result().offset
        return out

    def earliest(self, parts: Iterable[TP], *, skip_unknown: bool = False) -> dict[TP, int]:
        return self.list_offsets({tp: EARLIEST for tp in parts}, skip_unknown=skip_unknown)

    def latest(self, parts: Iterable[TP], *, skip_unknown: bool = False) -> dict[TP, int]:
        return self.list_offsets({tp: LATEST for tp in parts}, skip_unknown=skip_unknown)

    def current(self) -> tuple[dict[TP, int], dict[TP, int]]:
        """The latest and earliest offsets of the partitions read now; a partition that
        vanished between the metadata and ListOffsets (topic being deleted) is left out."""
        parts = self.partitions()
        latest = self.latest(parts, skip_unknown=True)
        earliest = self.earliest(latest, skip_unknown=True)
        return {tp: off for tp, off in latest.items() if tp in earliest}, earliest

    def resolve(self, spec: OffsetSpec, parts: list[TP], *, earliest: Mapping[TP, int],
                latest: Mapping[TP, int], starting: bool) -> dict[TP, int]:
        """Concrete offsets for ``spec`` on ``parts`` (JSON -2/-1 and timestamps resolved)."""
        if spec.kind == "group":
            return self.group_start(parts, earliest=earliest, latest=latest)
        if spec.kind == "earliest":
            return {tp: earliest[tp] for tp in parts}
        if spec.kind == "latest":
            return {tp: latest[tp] for tp in parts}
        if spec.kind == "offsets":
            self._check_covers(spec, parts)
            out = {}
            for tp in parts:
                off = spec.by_partition[tp]
                out[tp] = earliest[tp] if off == EARLIEST else latest[tp] if off == LATEST else off
            return out
        if spec.kind == "timestamp":
            stamps = {tp: int(spec.timestamp or 0) for tp in parts}
        else:
            self._check_covers(spec, parts)
            stamps = {tp: spec.by_partition[tp] for tp in parts}
        found = self.list_offsets(stamps)
        out = {}
        for tp in parts:
            off = found[tp]
            if off < 0:
                # No record at or after the timestamp.
                if starting and self.opts.timestamp_strategy == "error":
                    raise OffsetOutOfRangeError(
                        f"option '{spec.option}': no record of {tp[0]}-{tp[1]} has a timestamp at or after "
                        f"{stamps[tp]}; set startingOffsetsByTimestampStrategy=latest to start at the end "
                        "instead", topic=tp[0], partition=tp[1])
                off = latest[tp]
            out[tp] = off
        return out

    def committed(self, group: str, parts: list[TP]) -> dict[TP, int]:
        """The offsets ``group`` committed for ``parts`` (partitions without one left out)."""
        if not parts:
            return {}
        asked = {group: [TopicPartition(t, p) for t, p in parts]}
        answer = self.admin.list_consumer_group_offsets(asked)[group].result()
        return {(tp.topic, tp.partition): om.offset for tp, om in answer.items() if om.offset >= 0}

    def group_start(self, parts: list[TP], *, earliest: Mapping[TP, int],
                    latest: Mapping[TP, int]) -> dict[TP, int]:
        """``startingOffsets=group``: the committed offsets of ``kafka.group.id``; a partition
        without one starts as ``startingOffsetsFallback`` says (earliest, latest or error).

        A committed offset outside the partition's log (records deleted since, or a topic
        re-created) is data loss: an error with ``failOnDataLoss=true``, else the nearest
        offset that exists, with a warning (Java's consumer would apply
        ``auto.offset.reset`` there; a query names the loss instead of hiding it).
        """
        opts = self.opts
        group = opts.group_id or ""
        committed = self.committed(group, parts)
        missing = [tp for tp in parts if tp not in committed]
        if missing and opts.starting_fallback == "error":
            raise NoOffsetForPartitionError(
                f"consumer group '{group}' has no committed offset for {_names(missing)} (option "
                f"startingOffsets=group, {STARTING_FALLBACK}=error); commit offsets for them "
                f"(kafkalite groups --reset-offsets) or set {STARTING_FALLBACK} to earliest or latest",
                partitions=[TopicPartition(t, p) for t, p in missing], group_id=group)
        out: dict[TP, int] = {}
        for tp in parts:
            if tp not in committed:
                out[tp] = earliest[tp] if opts.starting_fallback == "earliest" else latest[tp]
                continue
            off = committed[tp]
            if earliest[tp] <= off <= latest[tp]:
                out[tp] = off
                continue
            where = (f"before the first offset that still exists ({earliest[tp]}): records were deleted"
                     if off < earliest[tp] else
                     f"after the end of the partition ({latest[tp]}): was the topic re-created?")
            message = f"consumer group '{group}' committed offset {off} for {tp[0]}-{tp[1]}, {where}"
            if opts.fail_on_data_loss:
                raise OffsetOutOfRangeError(f"{message}; option failOnDataLoss=true (set it to false to start at "
                                            "the nearest offset that exists)", topic=tp[0], partition=tp[1],
                                            group_id=group)
            log.warning("kafkalite: %s; starting at %d (failOnDataLoss=false)", message,
                        min(max(off, earliest[tp]), latest[tp]))
            out[tp] = min(max(off, earliest[tp]), latest[tp])
        log.info("kafkalite: starting at consumer group %s's offsets (%d partitions committed, %d from %s=%s)",
                 group, len(parts) - len(missing), len(missing), STARTING_FALLBACK, opts.starting_fallback)
        return out

    @staticmethod
    def _check_covers(spec: OffsetSpec, parts: list[TP]) -> None:
        given = set(spec.by_partition)
        wanted = set(parts)
        missing = sorted(wanted - given)
        extra = sorted(given - wanted)
        if missing or extra:
            problem = []
            if missing:
                problem.append(f"missing {_names(missing)}")
            if extra:
                problem.append(f"not read by this query: {_names(extra)}")
            raise ConfigError(f"option '{spec.option}' must give every partition read "
                              f"(-2 for earliest, -1 for latest); {'; '.join(problem)}")

    # ------------------------------------------------------------ batch

    def batch_ranges(self, filters: PushedFilters | None = None) -> list[OffsetRange]:
        """The offset ranges of a batch read, split into tasks."""
        opts = self.opts
        filters = filters or PushedFilters()
        parts = self.partitions()
        earliest = self.earliest(parts)
        latest = self.latest(parts)
        starts = self.resolve(opts.starting, parts, earliest=earliest, latest=latest, starting=True)
        ends = self.resolve(opts.ending, parts, earliest=earliest, latest=latest, starting=False)
        ranges = self.checked_ranges(parts, starts, ends, earliest=earliest, latest=latest,
                                     starting_option=opts.starting.option, ending_option=opts.ending.option)
        ranges = self.apply_filters(ranges, filters)
        return split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)

    def checked_ranges(self, parts: list[TP], starts: Mapping[TP, int], ends: Mapping[TP, int], *,
                       earliest: Mapping[TP, int], latest: Mapping[TP, int], starting_option: str,
                       ending_option: str) -> list[OffsetRange]:
        """One range per partition from ``starts`` to ``ends``, checked against the log: a
        start after its end or an end past the log is an error naming the options; a start
        before the first offset that exists is data loss (``failOnDataLoss``)."""
        opts = self.opts
        ranges = []
        for tp in parts:
            start, end = starts[tp], ends[tp]
            if start > end:
                raise ConfigError(
                    f"the starting offset {start} of {tp[0]}-{tp[1]} (option '{starting_option}') is after "
                    f"its ending offset {end} (option '{ending_option}')", topic=tp[0], partition=tp[1])
            if end > latest[tp]:
                raise ConfigError(
                    f"option '{ending_option}': offset {end} of {tp[0]}-{tp[1]} is beyond the end of the "
                    f"partition ({latest[tp]})", topic=tp[0], partition=tp[1])
            if start < earliest[tp]:
                lost = f"offsets {start}..{earliest[tp] - 1} of {tp[0]}-{tp[1]} were deleted"
                if opts.fail_on_data_loss:
                    raise OffsetOutOfRangeError(
                        f"{lost} (retention or delete_records); set failOnDataLoss=false to read what is left",
                        topic=tp[0], partition=tp[1])
                log.warning("kafkalite: %s; reading from %d (failOnDataLoss=false)", lost, earliest[tp])
                start = min(earliest[tp], end)
            ranges.append(OffsetRange(tp[0], tp[1], start, end))
        return ranges

    def apply_filters(self, ranges: list[OffsetRange], filters: PushedFilters) -> list[OffsetRange]:
        """Narrow ranges by the pushed-down filters (see the module doc)."""
        out = []
        for r in ranges:
            if not filters.allows(r.topic, r.partition):
                continue
            start, end = r.start, r.end
            if filters.offset_min is not None:
                start = max(start, filters.offset_min)
            if filters.offset_max is not None:
                end = min(end, filters.offset_max)
            if start < end:
                out.append(OffsetRange(r.topic, r.partition, start, end))
        if filters.timestamp_min_ms is not None and out:
            found = self.list_offsets({(r.topic, r.partition): filters.timestamp_min_ms for r in out})
            narrowed = []
            for r in out:
                first = found[(r.topic, r.partition)]
                start = r.end if first < 0 else max(r.start, first)
                if start < r.end:
                    narrowed.append(OffsetRange(r.topic, r.partition, start, r.end))
            out = narrowed
        return out


def _names(tps: Iterable[TP]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in tps)


def offsets_to_json(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    """``{(topic, partition): offset}`` → ``{"topic": {"partition": offset}}`` (a stream offset)."""
    out: dict[str, dict[str, int]] = {}
    for (t, p), off in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = int(off)
    return out


def offsets_from_json(value: Mapping[str, Any]) -> dict[TP, int]:
    """The inverse of :func:`offsets_to_json`."""
    out: dict[TP, int] = {}
    for t, parts in value.items():
        for p, off in parts.items():
            out[(t, int(p))] = int(off)
    return out
