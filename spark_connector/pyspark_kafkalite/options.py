"""The connector's options, parsed and checked once, with no Spark and no broker.

The names and meanings are those of Spark's own Kafka source and sink
(``format("kafka")``), so that switching is a rename of the format: ``subscribe`` /
``subscribePattern`` / ``assign``, ``startingOffsets`` / ``endingOffsets`` (``earliest``,
``latest`` or JSON ``{"topic": {"0": 23, "1": -2}}`` with -2 = earliest, -1 = latest),
the timestamp variants, ``minPartitions``, ``maxRecordsPerPartition``,
``failOnDataLoss``, ``includeHeaders``, the streaming limits and every ``kafka.*``
client setting. Every error is a :class:`kafkalite.errors.ConfigError` that names the
option and says what is accepted.

Spark hands options over in a case-insensitive dict whose keys come lower-cased, so
every lookup here is by lower-case name.

Example::

    opts = ReadOptions.parse({"kafka.bootstrap.servers": "127.0.0.1:9092",
                              "subscribe": "orders,payments"})
    opts.topics          # ("orders", "payments")
    opts.consumer_settings()["bootstrap.servers"]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalite.config import lookup
from kafkalite.errors import ConfigError
from pyspark_kafkalite.tracing import check_tracer_option

EARLIEST = -2
LATEST = -1
#: startingOffsets=group: where a partition without a committed offset starts.
STARTING_FALLBACK = "startingOffsetsFallback"

# Client settings the connector owns (JVM connector: KafkaSourceProvider rejects them too).
_SOURCE_FORBIDDEN = {
    "auto.offset.reset": "set startingOffsets instead",
    "key.deserializer": "keys are always returned as binary: cast or decode the 'key' column",
    "value.deserializer": "values are always returned as binary: cast or decode the 'value' column",
    "enable.auto.commit": "the connector tracks offsets itself (commit to a group with kafka.group.id)",
    "interceptor.classes": "interceptors are not supported by the connector",
}
_SINK_FORBIDDEN = {
    "key.serializer": "write the 'key' column as binary or string",
    "value.serializer": "write the 'value' column as binary or string",
    "interceptor.classes": "interceptors are not supported by the connector",
}

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def _get(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name.lower())
    if value is None:
        return None
    return str(value)


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = _get(options, name)
    if value is None:
        return default
    text = value.strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigError(f"option '{name}' must be true or false, got {value!r}")


def _int(options: Mapping[str, str], name: str, minimum: int = 1) -> int | None:
    value = _get(options, name)
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        raise ConfigError(f"option '{name}' must be an integer, got {value!r}") from None
    if number < minimum:
        raise ConfigError(f"option '{name}' must be >= {minimum}, got {number}")
    return number


def parse_duration_ms(name: str, value: str) -> int:
    """``"15m"``, ``"30s"``, ``"500ms"``, ``"2h"`` or plain milliseconds → milliseconds."""
    match = _DURATION.match(value)
    if not match:
        raise ConfigError(f"option '{name}' must be a duration such as '15m', '30s' or '500ms', got {value!r}")
    unit = (match.group(2) or "ms").lower()
    return int(match.group(1)) * _DURATION_MS[unit]


def _json_object(name: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"option '{name}' is not valid JSON ({exc.msg} at character {exc.pos}): {text!r}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"option '{name}' must be a JSON object such as "
                          f'{{"topic": {{"0": 23}}}}, got {text!r}')
    return value


def parse_partition_map(name: str, text: str) -> dict[tuple[str, int], int]:
    """``{"t": {"0": 23, "1": -2}}`` → ``{("t", 0): 23, ("t", 1): -2}`` (offsets or timestamps)."""
    out: dict[tuple[str, int], int] = {}
    for topic, parts in _json_object(name, text).items():
        if not isinstance(parts, dict):
            raise ConfigError(f"option '{name}': topic '{topic}' must map partitions to numbers, "
                              f"e.g. {{\"{topic}\": {{\"0\": 23}}}}")
        for part, number in parts.items():
            try:
                partition = int(part)
            except (TypeError, ValueError):
                raise ConfigError(f"option '{name}': partition {part!r} of topic '{topic}' is not an integer") from None
            if isinstance(number, bool) or not isinstance(number, int):
                raise ConfigError(f"option '{name}': the value for {topic}-{partition} must be an integer, "
                                  f"got {number!r}")
            if partition < 0:
                raise ConfigError(f"option '{name}': partition {partition} of topic '{topic}' is negative")
            out[(topic, partition)] = number
    return out


def parse_assign(text: str) -> tuple[tuple[str, int], ...]:
    """``{"t": [0, 1]}`` → ``(("t", 0), ("t", 1))``."""
    value = _json_object("assign", text)
    out: list[tuple[str, int]] = []
    for topic, parts in value.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in parts):
            raise ConfigError(f"option 'assign': topic '{topic}' must map to a list of partition numbers, "
                              f'e.g. {{"{topic}": [0, 1]}}')
        for p in parts:
            if p < 0:
                raise ConfigError(f"option 'assign': partition {p} of topic '{topic}' is negative")
            out.append((topic, p))
    if not out:
        raise ConfigError("option 'assign' names no partitions")
    return tuple(sorted(set(out)))


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: ``kind`` is earliest, latest, offsets, timestamp(s) or
    group (``startingOffsets=group``: the committed offsets of ``kafka.group.id``).

    ``by_partition`` holds the JSON offsets (-2/-1 allowed) or per-partition timestamps;
    ``timestamp`` the one timestamp of ``startingTimestamp`` / ``endingTimestamp``.
    """

    kind: str  # earliest | latest | offsets | timestamp | timestamps | group
    option: str
    by_partition: Mapping[tuple[str, int], int] = field(default_factory=dict)
    timestamp: int | None = None


def _offset_spec(options: Mapping[str, str], which: str, default: str, *, streaming: bool) -> OffsetSpec:
    """startingX / endingX, in Spark's order of precedence: the single timestamp, the
    per-partition timestamps, then the offsets."""
    ts_name = f"{which}Timestamp"
    by_ts_name = f"{which}OffsetsByTimestamp"
    off_name = f"{which}Offsets"
    ts = _get(options, ts_name)
    if ts is not None:
        try:
            stamp = int(ts.strip())
        except ValueError:
            raise ConfigError(f"option '{ts_name}' must be a timestamp in milliseconds, got {ts!r}") from None
        if stamp < 0:
            raise ConfigError(f"option '{ts_name}' must be >= 0, got {stamp}")
        return OffsetSpec("timestamp", ts_name, timestamp=stamp)
    by_ts = _get(options, by_ts_name)
    if by_ts is not None:
        stamps = parse_partition_map(by_ts_name, by_ts)
        for (topic, partition), stamp in stamps.items():
            if stamp < 0:
                raise ConfigError(f"option '{by_ts_name}': timestamp {stamp} for {topic}-{partition} is negative")
        return OffsetSpec("timestamps", by_ts_name, by_partition=stamps)
    text = _get(options, off_name)
    if text is None:
        return OffsetSpec(default, off_name)
    lowered = text.strip().lower()
    if lowered == "group" and which == "starting":
        return OffsetSpec("group", off_name)
    if lowered in ("earliest", "latest"):
        if which == "ending" and lowered == "earliest":
            raise ConfigError("option 'endingOffsets' cannot be 'earliest' (use 'latest' or JSON offsets)")
        if which == "starting" and lowered == "latest" and not streaming:
            raise ConfigError("option 'startingOffsets' cannot be 'latest' for a batch query "
                              "(use 'earliest', JSON offsets or a timestamp)")
        return OffsetSpec(lowered, off_name)
    offsets = parse_partition_map(off_name, text)
    for (topic, partition), off in offsets.items():
        if off < EARLIEST:
            raise ConfigError(f"option '{off_name}': offset {off} for {topic}-{partition} is invalid "
                              "(use >= 0, -2 for earliest or -1 for latest)")
        if which == "ending" and off == EARLIEST:
            raise ConfigError(f"option 'endingOffsets': -2 (earliest) is not allowed, for {topic}-{partition}")
        if which == "starting" and off == LATEST and not streaming:
            raise ConfigError(f"option 'startingOffsets': -1 (latest) is not allowed in a batch query, "
                              f"for {topic}-{partition}")
    return OffsetSpec("offsets", off_name, by_partition=offsets)


def split_client_settings(options: Mapping[str, str], client: str,
                          forbidden: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options that apply to ``client`` ('consumer', 'producer', 'admin').

    A name kafkalite does not know is an error (with the nearest known name); a known
    setting of another client kind is left out (Spark passes the same options to
    every client, as the JVM connector does).
    """
    out: dict[str, str] = {}
    for key, value in options.items():
        k = key.lower()
        if not k.startswith("kafka."):
            continue
        name = k[len("kafka."):]
        if name in forbidden:
            raise ConfigError(f"option 'kafka.{name}' is not supported: {forbidden[name]}")
        setting = lookup(name)
        if setting is None:
            from kafkalite.config import _suggest

            raise ConfigError(f"option 'kafka.{name}' is not a Kafka client setting{_suggest(name, client)}")
        if client in setting.clients:
            out[setting.name] = value
    if "bootstrap.servers" not in out:
        raise ConfigError("option 'kafka.bootstrap.servers' is required (e.g. '127.0.0.1:9092')")
    return out


@dataclass(frozen=True)
class ReadOptions:
    """Everything a read (batch or streaming) needs, validated."""

    raw: Mapping[str, str]
    strategy: str  # subscribe | subscribePattern | assign
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[tuple[str, int], ...] = ()
    starting: OffsetSpec = OffsetSpec("earliest", "startingOffsets")
    ending: OffsetSpec = OffsetSpec("latest", "endingOffsets")
    timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    poll_timeout_ms: int = 120_000
    group_id: str | None = None
    group_id_prefix: str | None = None
    starting_fallback: str = "latest"  # startingOffsets=group: a partition the group never committed
    max_bytes_per_trigger: int | None = None
    streaming: bool = False

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool | None = False) -> ReadOptions:
        """Check ``options`` (raises ConfigError naming the option).

        ``streaming=None`` when the kind of query is not known yet (``schema()`` at
        ``load()``): the checks that differ between batch and streaming wait.
        """
        raw = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
        given = [name for name in ("subscribe", "subscribePattern", "assign") if _get(raw, name) is not None]
        if len(given) != 1:
            what = "none was given" if not given else f"got {', '.join(given)}"
            raise ConfigError("exactly one of the options 'subscribe', 'subscribePattern' or 'assign' "
                              f"must be set; {what}")
        strategy = given[0]
        value = _get(raw, strategy) or ""
        topics: tuple[str, ...] = ()
        pattern = None
        assigned: tuple[tuple[str, int], ...] = ()
        if strategy == "subscribe":
            topics = tuple(t.strip() for t in value.split(",") if t.strip())
            if not topics:
                raise ConfigError("option 'subscribe' names no topic (a comma-separated list of topics)")
        elif strategy == "subscribePattern":
            if not value.strip():
                raise ConfigError("option 'subscribePattern' is empty (a regular expression for topic names)")
            try:
                re.compile(value)
            except re.error as exc:
                raise ConfigError(f"option 'subscribePattern' is not a valid regular expression: {exc}") from None
            pattern = value
        else:
            assigned = parse_assign(value)
        starting = _offset_spec(raw, "starting", "latest" if streaming else "earliest",
                                streaming=streaming is not False)
        ending = _offset_spec(raw, "ending", "latest", streaming=streaming is not False)
        if streaming:
            for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
                if _get(raw, name) is not None:
                    raise ConfigError(f"option '{name}' is for batch queries only; a streaming query has no end")
        strategy_ts = (_get(raw, "startingOffsetsByTimestampStrategy") or "error").strip().lower()
        if strategy_ts not in ("error", "latest"):
            raise ConfigError("option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
                              f"got {strategy_ts!r}")
        fallback = (_get(raw, STARTING_FALLBACK) or "latest").strip().lower()
        if fallback not in ("earliest", "latest", "error"):
            raise ConfigError(f"option '{STARTING_FALLBACK}' must be 'earliest', 'latest' or 'error', "
                              f"got {fallback!r}")
        delay = _get(raw, "maxTriggerDelay")
        poll = _int(raw, "kafkaConsumer.pollTimeoutMs")
        opts = cls(
            raw=raw,
            strategy=strategy,
            topics=topics,
            pattern=pattern,
            assigned=assigned,
            starting=starting,
            ending=ending,
            timestamp_strategy=strategy_ts,
            fail_on_data_loss=_bool(raw, "failOnDataLoss", True),
            include_headers=_bool(raw, "includeHeaders", False),
            min_partitions=_int(raw, "minPartitions"),
            max_records_per_partition=_int(raw, "maxRecordsPerPartition"),
            max_offsets_per_trigger=_int(raw, "maxOffsetsPerTrigger"),
            min_offsets_per_trigger=_int(raw, "minOffsetsPerTrigger"),
            max_trigger_delay_ms=parse_duration_ms("maxTriggerDelay", delay) if delay is not None else 15 * 60_000,
            poll_timeout_ms=poll if poll is not None else 120_000,
            group_id=_get(raw, "kafka.group.id"),
            group_id_prefix=_get(raw, "groupIdPrefix"),
            starting_fallback=fallback,
            max_bytes_per_trigger=_int(raw, "maxBytesPerTrigger"),
            streaming=bool(streaming),
        )
        opts._check_group_start()
        if streaming is False:
            for name in ("maxBytesPerTrigger",):
                if _get(raw, name) is not None:
                    raise ConfigError(f"option '{name}' is for streaming queries only; a batch read has no "
                                      "triggers (bound it with endingOffsets)")
        if (opts.min_offsets_per_trigger and opts.max_offsets_per_trigger
                and opts.min_offsets_per_trigger > opts.max_offsets_per_trigger):
            raise ConfigError(f"option 'minOffsetsPerTrigger' ({opts.min_offsets_per_trigger}) is larger than "
                              f"'maxOffsetsPerTrigger' ({opts.max_offsets_per_trigger})")
        opts.consumer_settings()  # unknown or forbidden kafka.* settings fail now, at analysis
        check_tracer_option(raw)
        return opts

    def reads(self, tp: tuple[str, int]) -> bool:
        """Whether these options read partition ``tp`` (by name: it need not exist)."""
        if self.strategy == "subscribe":
            return tp[0] in self.topics
        if self.strategy == "subscribePattern":
            return re.fullmatch(self.pattern or "", tp[0]) is not None
        return tp in self.assigned

    def _check_group_start(self) -> None:
        """``startingOffsets=group`` needs the group; its fallback option needs the mode."""
        if self.starting.kind != "group":
            if _get(self.raw, STARTING_FALLBACK) is not None:
                raise ConfigError(f"option '{STARTING_FALLBACK}' applies only with startingOffsets=group "
                                  f"(the starting position here comes from option '{self.starting.option}')")
            return
        if not self.group_id:
            hint = (" ('groupIdPrefix' makes a new group, which has no committed offsets)"
                    if self.group_id_prefix else "")
            raise ConfigError("option 'startingOffsets' is 'group': set 'kafka.group.id' to the consumer group "
                              f"whose committed offsets the query starts from{hint}")

    def consumer_settings(self) -> dict[str, Any]:
        """Settings for the consumers that read ranges: no group, nothing automatic."""
        settings: dict[str, Any] = split_client_settings(self.raw, "consumer", _SOURCE_FORBIDDEN)
        settings.pop("group.id", None)  # positions are ours; no coordinator work in tasks
        settings.pop("group.instance.id", None)
        settings["enable.auto.commit"] = False
        settings["auto.offset.reset"] = "none"  # an out-of-range offset is data loss, never a silent jump
        return settings

    def admin_settings(self) -> dict[str, Any]:
        """Settings for the driver's admin client (listing offsets, committing progress)."""
        return split_client_settings(self.raw, "admin", _SOURCE_FORBIDDEN)


@dataclass(frozen=True)
class WriteOptions:
    """Everything a write needs, validated."""

    raw: Mapping[str, str]
    topic: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        raw = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
        topic = _get(raw, "topic")
        if topic is not None and not topic.strip():
            raise ConfigError("option 'topic' is empty")
        opts = cls(raw=raw, topic=topic.strip() if topic else None)
        opts.producer_settings()
        check_tracer_option(raw)
        return opts

    def producer_settings(self) -> dict[str, Any]:
        """Producer settings from ``kafka.*``. Idempotence is the producer's default (on);
        it is not forced, so ``kafka.acks=1`` still works (idempotence then turns off,
        as the Java client does when it was not asked for explicitly)."""
        return split_client_settings(self.raw, "producer", _SINK_FORBIDDEN)
