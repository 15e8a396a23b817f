"""``kafkalite consume``: print records of a topic.

Kafka's console consumer options work: ``--from-beginning``, ``--group``,
``--partition`` with ``--offset`` (earliest, latest or a number), ``--max-messages``,
``--timeout-ms`` (stop after this long without a record), ``--isolation-level``,
``--consumer-property K=V``, and ``--property print.key=true`` (also print.timestamp,
print.headers, print.partition, print.offset, key.separator, line.separator).
Friendlier flags: ``--print-key``, ``--print-timestamp``, ``--print-headers``,
``--print-partition``, ``--print-offset``, ``--format text|json|hex|base64``.

Deserializers: ``--key-deserializer`` / ``--value-deserializer`` bytes (default), str,
int, long, double, float32, json, or avro / json-schema / protobuf, which fetch each
record's writer schema from the registry (``--schema-registry-url``) by the id in the
record and print the record as JSON (with ``--json``: as a JSON object in the line's
``key`` / ``value``). Kafka's ``--property key.deserializer=...`` and Confluent's
``--formatter io.confluent.kafka.formatter.AvroMessageFormatter``, ``--property
schema.registry.url=...``, ``print.schema.ids=true`` work too. A record that does not
decode stops the tool with one line naming its partition and offset (exit 1), or is
skipped with that line on stderr under ``--skip-message-on-error``.

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

from kafkalite.cli.common import (
    EXIT_KAFKA,
    UsageError,
    client_settings,
    error_line,
    parse_key_values,
    read_properties,
)
from kafkalite.cli.serdes import (
    Decoder,
    add_registry_options,
    format_name,
    is_registry_property,
    json_text,
    jsonable,
    registry_settings,
    serde_settings,
)
from kafkalite.errors import SerializationError


class DecodeFailed(Exception):
    """A record's key or value did not decode (the message names the record)."""


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
    p.add_argument("--formatter", metavar="CLASS",
                   help="Kafka's DefaultMessageFormatter, or Confluent's AvroMessageFormatter, "
                        "JsonSchemaMessageFormatter, ProtobufMessageFormatter (= --value-deserializer avro ...)")
    g = p.add_argument_group("deserializers")
    for side in ("key", "value"):
        g.add_argument(f"--{side}-deserializer", metavar="FORMAT",
                       help=f"how the {side} is read: bytes (default), str, int, long, double, float32, json, "
                            "avro, json-schema, protobuf")
        g.add_argument(f"--{side}-message-type", metavar="MODULE:CLASS",
                       help=f"protobuf: parse the {side} as this generated class (default: built from the "
                            "registry's schema)")
    g.add_argument("--skip-message-on-error", action="store_true",
                   help="a record that does not decode: report it on stderr and go on (default: stop, exit 1)")
    add_registry_options(p)
    p.set_defaults(handler=run)


# Kafka's and Confluent's formatter classes -> the value format they decode.
FORMATTERS = {"DefaultMessageFormatter": None, "AvroMessageFormatter": "avro",
              "JsonSchemaMessageFormatter": "json-schema", "ProtobufMessageFormatter": "protobuf"}
SERDE_PROPERTIES = {"key.deserializer", "value.deserializer", "print.schema.ids", "schema.id.separator",
                    "key.subject.name.strategy", "value.subject.name.strategy", "use.latest.version"}


def build_decoders(args: argparse.Namespace, props: dict[str, str],
                   command_config: dict[str, Any]) -> tuple[Decoder, Decoder]:
    """The key and value decoders from the options, Kafka's properties and --formatter."""
    formatter_format: str | None = None
    if args.formatter:
        simple = args.formatter.strip().rsplit(".", 1)[-1]
        if simple not in FORMATTERS:
            raise UsageError(f"unknown --formatter {args.formatter!r} (known: {', '.join(FORMATTERS)})")
        formatter_format = FORMATTERS[simple]
    registry = registry_settings(args, props, command_config)
    out = []
    for side in ("key", "value"):
        option = f"--{side}-deserializer"
        spec = getattr(args, f"{side}_deserializer") or props.get(f"{side}.deserializer")
        message_type = getattr(args, f"{side}_message_type")
        printed = side == "value" or args.print_key or props.get("print.key") == "true"
        if spec is None and formatter_format is not None and printed:
            # Confluent's schema formatters read the value, and the key too when it is
            # printed, unless a key.deserializer is given.
            spec = formatter_format
        if spec is None and message_type:
            spec = "protobuf"
        fmt = format_name(spec, option) if spec else "bytes"
        if message_type and fmt != "protobuf":
            raise UsageError(f"--{side}-message-type needs {option} protobuf")
        is_key = side == "key"
        out.append(Decoder(fmt, is_key, message_type=message_type, registry=registry,
                           settings=serde_settings(args, props, is_key, serializer=False)))
    return out[0], out[1]


class Printer:
    def __init__(self, args: argparse.Namespace, props: dict[str, str] | None = None,
                 decoders: tuple[Decoder, Decoder] | None = None) -> None:
        if props is None:
            props = parse_key_values(args.property, "--property")
        known = {"print.key", "print.timestamp", "print.headers", "print.partition", "print.offset",
                 "key.separator", "line.separator", "headers.separator", "null.literal"}
        unknown = {k for k in set(props) - known - SERDE_PROPERTIES if not is_registry_property(k)}
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
        self.key_decoder, self.value_decoder = decoders or (Decoder("bytes", True), Decoder("bytes", False))
        self.schema_ids = props.get("print.schema.ids", "false") == "true"
        self.schema_id_sep = codecs.decode(props.get("schema.id.separator", "\t"), "unicode_escape")

    def _decoded(self, decoder: Decoder, r: Any, data: bytes | None) -> Any:
        """A record's key or value through its decoder, as text (or, in JSON lines, a JSON value)."""
        if decoder.fmt == "bytes":
            return self._text(data)
        try:
            value = decoder.decode(r.topic, data, r.headers)
        except SerializationError as exc:
            text = str(exc) if f"topic '{r.topic}'" in str(exc) else f"{exc} (topic '{r.topic}')"
            raise DecodeFailed(f"cannot deserialize the {decoder.side} at partition {r.partition}, offset "
                               f"{r.offset} with {decoder.fmt}: {text}") from None
        if self.format == "json":
            return jsonable(value)
        if value is None:
            return self.null
        return json_text(value) if decoder.structured else str(value)

    def _schema_id(self, decoder: Decoder, data: bytes | None) -> int | None:
        if decoder.fmt not in ("avro", "json-schema", "protobuf") or data is None or len(data) < 5:
            return None
        return int.from_bytes(data[1:5], "big")

    def _text(self, data: bytes | None) -> Any:
        if data is None:
            return None if self.format == "json" else self.null
        if self.format == "hex":
            return data.hex()
        if self.format == "base64":
            return base64.b64encode(data).decode()
        return data.decode("utf-8", errors="backslashreplace")

    def line(self, r: Any) -> str:
        # A key that is not printed is not decoded (nor can it fail).
        key = self._decoded(self.key_decoder, r, r.key) if self.show["key"] or self.format == "json" else None
        value = self._decoded(self.value_decoder, r, r.value)
        if self.format == "json":
            obj: dict[str, Any] = {"topic": r.topic, "partition": r.partition, "offset": r.offset,
                                   "timestamp": r.timestamp, "timestamp_type": int(r.timestamp_type),
                                   "key": key, "value": value,
                                   "headers": [[k, self._text(v)] for k, v in r.headers or ()]}
            if self.schema_ids:
                obj["key_schema_id"] = self._schema_id(self.key_decoder, r.key)
                obj["value_schema_id"] = self._schema_id(self.value_decoder, r.value)
            return json.dumps(obj, ensure_ascii=False)
        parts: list[Any] = []
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
            parts.append(key)
            key_id = self._schema_id(self.key_decoder, r.key) if self.schema_ids else None
            if key_id is not None:
                parts[-1] = f"{key}{self.schema_id_sep}{key_id}"
        value_id = self._schema_id(self.value_decoder, r.value) if self.schema_ids else None
        parts.append(value if value_id is None else f"{value}{self.schema_id_sep}{value_id}")
        return self.sep.join(str(p) for p in parts)


def run(args: argparse.Namespace) -> int | None:
    props = parse_key_values(args.property, "--property")
    command_config: dict[str, Any] = read_properties(args.command_config) if args.command_config else {}
    decoders = build_decoders(args, props, command_config)
    try:
        return _consume(args, Printer(args, props, decoders))
    finally:
        for decoder in decoders:
            decoder.close()


def _consume(args: argparse.Namespace, printer: Printer) -> int | None:
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
    from kafkalite.config import CONSUMER, settings_for

    settings = {k: v for k, v in settings_for(CONSUMER, settings).items() if not is_registry_property(k)}
    from kafkalite import Consumer
    from kafkalite.errors import ConfigError, UnknownTopicOrPartitionError
    from kafkalite.types import TopicPartition

    try:
        consumer = Consumer(settings)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    count = 0
    failed = False
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
                try:
                    line = printer.line(r)
                except DecodeFailed as exc:
                    error_line(str(exc))
                    if args.skip_message_on_error:
                        continue
                    failed = True
                    break
                # Counted before it is written: a Ctrl-C that lands inside the write (the
                # line may be out already) must not leave a printed record uncounted.
                count += 1
                out.write(line + printer.line_sep)
                if args.max_messages is not None and count >= args.max_messages:
                    break
            out.flush()
            if failed:
                break
    except KeyboardInterrupt:
        pass  # the normal way to stop: print the total below, exit 0
    finally:
        try:
            consumer.close(10)
        except Exception:
            pass
        sys.stderr.write(f"Processed a total of {count} messages\n")
        sys.stderr.flush()
    return EXIT_KAFKA if failed else None


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
