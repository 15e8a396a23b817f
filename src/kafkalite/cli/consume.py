"""``kafkalite consume``: print records of a topic.

Kafka's console consumer options work: ``--from-beginning``, ``--group``,
``--partition`` with ``--offset`` (earliest, latest or a number), ``--max-messages``,
``--timeout-ms`` (stop after this long without a record), ``--isolation-level``,
``--consumer-property K=V``, and ``--property print.key=true`` (also print.timestamp,
print.headers, print.partition, print.offset, key.separator, line.separator).
Friendlier flags: ``--print-key``, ``--print-timestamp``, ``--print-headers``,
``--print-partition``, ``--print-offset``, ``--format text|json|hex|base64``.

Without ``--group`` (and without ``group.id`` in ``--consumer-property`` or
``--command-config``) it behaves like ``kafka-console-consumer``: it subscribes with a
generated group id ``console-consumer-NNNNN`` and does not commit (``enable.auto.commit``
is false unless you set it), so the throwaway group leaves no offsets behind. With
``--partition`` it reads that partition with no group at all. The number of records
printed goes to stderr on exit ("Processed a total of N messages"), also after Ctrl-C,
which is the normal way to stop (exit code 0).
"""

from __future__ import annotations

import argparse
import base64
import codecs
import json
import random
import sys
import time
from typing import Any

from kafkalite.cli.common import UsageError, client_settings, parse_key_values


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("consume", parents=[common], help="print records of a topic", description=__doc__)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", help="consumer group (commits its position)")
    p.add_argument("--from-beginning", action="store_true", help="start at the earliest offset (no committed one)")
    p.add_argument("--partition", type=int, help="read only this partition")
    p.add_argument("--offset", default=None, help="with --partition: earliest, latest or an offset")
    p.add_argument("--max-messages", type=int, metavar="N", help="stop after N records")
    p.add_argument("--timeout-ms", type=int, metavar="MS", help="stop after this long without a record")
    p.add_argument("--isolation-level", choices=["read_committed", "read_uncommitted"])
    p.add_argument("--consumer-property", "--command-property", dest="consumer_property", action="append",
                   default=[], metavar="K=V", help="consumer setting")
    p.add_argument("--property", "--formatter-property", dest="property", action="append", default=[], metavar="K=V",
                   help="print.key, print.timestamp, print.headers, print.partition, print.offset, key.separator")
    for what in ("key", "timestamp", "headers", "partition", "offset"):
        p.add_argument(f"--print-{what}", action="store_true", help=f"print each record's {what}")
    p.add_argument("--format", choices=["text", "json", "hex", "base64"], default=None,
                   help="how keys and values are printed (json: one object per line; default text)")
    p.set_defaults(handler=run)


class Printer:
    def __init__(self, args: argparse.Namespace) -> None:
        props = parse_key_values(args.property, "--property")
        known = {"print.key", "print.timestamp", "print.headers", "print.partition", "print.offset",
                 "key.separator", "line.separator", "headers.separator", "null.literal"}
        unknown = set(props) - known
        if unknown:
            raise UsageError(f"unknown --property {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")

        def flag(name: str) -> bool:
            return bool(getattr(args, f"print_{name}")) or props.get(f"print.{name}", "false") == "true"

        self.show = {n: flag(n) for n in ("key", "timestamp", "headers", "partition", "offset")}
        self.sep = codecs.decode(props.get("key.separator", "\t"), "unicode_escape")
        self.line_sep = codecs.decode(props.get("line.separator", "\n"), "unicode_escape")
        self.headers_sep = props.get("headers.separator", ",")
        self.null = props.get("null.literal", "null")
        self.format = args.format or ("json" if args.json else "text")

    def _text(self, data: bytes | None) -> Any:
        if data is None:
            return None if self.format == "json" else self.null
        if self.format == "hex":
            return data.hex()
        if self.format == "base64":
            return base64.b64encode(data).decode()
        return data.decode("utf-8", errors="backslashreplace")

    def line(self, r: Any) -> str:
        if self.format == "json":
            obj: dict[str, Any] = {"topic": r.topic, "partition": r.partition, "offset": r.offset,
                                   "timestamp": r.timestamp, "timestamp_type": int(r.timestamp_type),
                                   "key": self._text(r.key), "value": self._text(r.value),
                                   "headers": [[k, self._text(v)] for k, v in r.headers or ()]}
            return json.dumps(obj)
        parts = []
        if self.show["timestamp"]:
            kind = {0: "CreateTime", 1: "LogAppendTime"}.get(int(r.timestamp_type), "NoTimestampType")
            parts.append(f"{kind}:{r.timestamp}")
        if self.show["partition"]:
            parts.append(f"Partition:{r.partition}")
        if self.show["offset"]:
            parts.append(f"Offset:{r.offset}")
        if self.show["headers"]:
            hs = self.headers_sep.join(f"{k}:{self._text(v)}" for k, v in r.headers or ())
            parts.append(hs or "NO_HEADERS")
        if self.show["key"]:
            parts.append(self._text(r.key))
        parts.append(self._text(r.value))
        return self.sep.join(str(p) for p in parts)


def run(args: argparse.Namespace) -> int | None:
    printer = Printer(args)
    if args.offset is not None and args.partition is None:
        raise UsageError("--offset needs --partition")
    if args.partition is not None and args.group:
        raise UsageError("--partition reads without a group; drop --group")
    extra = parse_key_values(args.consumer_property, "--consumer-property")
    if args.group:
        given = extra.get("group.id")
        if given is not None and given != args.group:
            raise UsageError(f"--group {args.group!r} and --consumer-property group.id={given} differ")
        extra["group.id"] = args.group
    if args.partition is not None and "group.id" in extra:
        raise UsageError("--partition reads without a group; drop group.id")
    if args.from_beginning:
        extra["auto.offset.reset"] = "earliest"
    if args.isolation_level:
        extra["isolation.level"] = args.isolation_level
    settings = client_settings(args, extra)
    settings.setdefault("client.id", "console-consumer")  # as kafka-console-consumer names itself
    subscribe = args.partition is None
    if args.partition is not None:
        settings.pop("group.id", None)  # a group.id in a shared --command-config: not used with --partition
    elif not settings.get("group.id"):
        # kafka-console-consumer (ConsoleConsumerOptions): a throwaway group
        # "console-consumer-" + nextInt(100000), with auto commit off unless asked for,
        # so the group and its offsets do not linger in the coordinator.
        settings["group.id"] = f"console-consumer-{random.randrange(100000)}"
        settings.setdefault("enable.auto.commit", "false")
    from kafkalite.config import BY_NAME, CONSUMER

    settings = {k: v for k, v in settings.items() if k not in BY_NAME or CONSUMER in BY_NAME[k].clients}
    from kafkalite.consumer.consumer import Consumer
    from kafkalite.errors import ConfigError, UnknownTopicOrPartitionError
    from kafkalite.types import TopicPartition

    try:
        consumer = Consumer(settings)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    count = 0
    out = sys.stdout
    try:
        # Check the topic first: a subscription to a missing topic would wait forever.
        partitions = consumer.partitions_for(args.topic, timeout=args.timeout)
        if not partitions:
            raise UnknownTopicOrPartitionError("this topic does not exist", topic=args.topic)
        if subscribe:
            consumer.subscribe([args.topic])
        else:
            tp = TopicPartition(args.topic, args.partition)
            if tp not in partitions:
                raise UnknownTopicOrPartitionError(
                    f"topic has {len(partitions)} partitions", topic=args.topic, partition=args.partition)
            consumer.assign([tp])
            _position(consumer, args, [tp])
        last = time.monotonic()
        while args.max_messages is None or count < args.max_messages:
            records = consumer.poll(timeout=0.5)
            if records:
                last = time.monotonic()
            elif args.timeout_ms is not None and (time.monotonic() - last) * 1000 >= args.timeout_ms:
                break
            for r in records:
                out.write(printer.line(r) + printer.line_sep)
                count += 1
                if args.max_messages is not None and count >= args.max_messages:
                    break
            out.flush()
    except KeyboardInterrupt:
        pass  # the normal way to stop: print the total below, exit 0
    finally:
        try:
            consumer.close(10)
        except Exception:
            pass
        sys.stderr.write(f"Processed a total of {count} messages\n")
        sys.stderr.flush()
    return None


def _position(consumer: Any, args: argparse.Namespace, partitions: list[Any]) -> None:
    offset = args.offset
    if offset is None:
        if args.from_beginning:
            consumer.seek_to_beginning(partitions)
        else:
            consumer.seek_to_end(partitions)
        return
    if offset == "earliest":
        consumer.seek_to_beginning(partitions)
    elif offset == "latest":
        consumer.seek_to_end(partitions)
    else:
        try:
            n = int(offset)
        except ValueError:
            raise UsageError(f"--offset must be earliest, latest or a number, got {offset!r}") from None
        if n < 0:
            raise UsageError(f"--offset must be >= 0, got {n}")
        for tp in partitions:
            consumer.seek(tp, n)
