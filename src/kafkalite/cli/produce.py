"""``kafkalite produce``: write lines from stdin or a file to a topic, one record per line.

Kafka's console producer options work: ``--property parse.key=true --property
key.separator=:``, ``parse.headers=true`` (``headers.delimiter``, ``headers.separator``,
``headers.key.separator``), ``null.marker``; ``--producer-property K=V``;
``--compression-codec``. Friendlier flags: ``--parse-key``/``--key-separator``,
``--header K=V`` (added to every record), ``--compression-type``, ``--file``,
``--transactional-id`` (all records in one transaction, committed at the end, aborted
on error or Ctrl-C), ``--sync`` (wait for each record).

Serializers: ``--key-serializer`` / ``--value-serializer`` bytes (default), str, int,
long, double, float32, json, or avro / json-schema / protobuf with a Schema Registry
(``--schema-registry-url``). Avro and JSON Schema lines are JSON, one record per line,
written with ``--value-schema-file order.avsc`` (or ``--value-schema TEXT``,
``--value-schema-id N``); Protobuf lines are JSON for ``--value-message-type
module:Class``. Confluent's console producer properties work too: ``--property
value.schema=...``, ``value.schema.file``, ``value.schema.id``, ``key.schema``,
``schema.registry.url``, ``auto.register``, ``use.latest.version``,
``value.subject.name.strategy``, ``basic.auth.user.info``.

Prints how many records were written (stderr, or JSON with --json); exit 1 if any
record failed. A topic that does not exist (or a --partition it lacks) fails at once
with exit 1 and one line naming it, rather than after max.block.ms.
"""

from __future__ import annotations

import argparse
import codecs
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

from kafkalite.cli.common import (
    EXIT_KAFKA,
    Progress,
    UsageError,
    client_settings,
    emit_json,
    error_line,
    parse_key_values,
)
from kafkalite.cli.serdes import (
    Encoder,
    add_registry_options,
    format_name,
    is_registry_property,
    read_schema,
    registry_settings,
    serde_settings,
)

# Confluent's console producer properties (kafka-avro-console-producer and friends),
# read by build_encoders() rather than the line reader.
SERDE_PROPERTIES = frozenset({
    "key.schema", "value.schema", "key.schema.file", "value.schema.file", "key.schema.id", "value.schema.id",
    "key.serializer", "value.serializer", "auto.register", "auto.register.schemas", "use.latest.version",
    "normalize.schemas", "key.subject.name.strategy", "value.subject.name.strategy",
})


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("produce", parents=[common], help="write records from stdin or a file",
                       description=__doc__)
    p.add_argument("--topic", required=True)
    p.add_argument("--file", metavar="PATH", help="read lines from this file instead of stdin")
    p.add_argument("--property", "--reader-property", dest="property", action="append", default=[], metavar="K=V",
                   help="line reader properties (parse.key, key.separator, parse.headers, ...)")
    p.add_argument("--producer-property", "--command-property", dest="producer_property", action="append",
                   default=[], metavar="K=V", help="producer setting")
    p.add_argument("--parse-key", action="store_true", help="split each line into key and value")
    p.add_argument("--key-separator", metavar="SEP", help="key/value separator (default tab; implies --parse-key)")
    p.add_argument("--header", action="append", default=[], metavar="K=V", help="header added to every record")
    p.add_argument("--partition", type=int, help="write every record to this partition")
    p.add_argument("--compression-type", "--compression-codec", dest="compression",
                   choices=["none", "gzip", "snappy", "lz4", "zstd"])
    p.add_argument("--acks", choices=["0", "1", "all", "-1"])
    p.add_argument("--transactional-id", metavar="ID", help="write everything in one transaction")
    p.add_argument("--sync", action="store_true", help="wait for each record's acknowledgement")
    p.add_argument("--progress", action="store_true", help="show progress on stderr even when not a terminal")
    g = p.add_argument_group("serializers")
    for side in ("key", "value"):
        g.add_argument(f"--{side}-serializer", metavar="FORMAT",
                       help=f"how a line's {side} is turned into bytes: bytes (default), str, int, long, double, "
                            "float32, json, avro, json-schema, protobuf")
        g.add_argument(f"--{side}-schema", metavar="TEXT", help=f"the {side}'s Avro or JSON schema (text)")
        g.add_argument(f"--{side}-schema-file", metavar="PATH",
                       help=f"the {side}'s schema from a file (.avsc for avro, .json for json-schema)")
        g.add_argument(f"--{side}-schema-id", type=int, metavar="N",
                       help=f"write the {side} with this registered schema (no registration)")
        g.add_argument(f"--{side}-message-type", metavar="MODULE:CLASS",
                       help=f"protobuf: the {side}'s generated message class")
    add_registry_options(p)
    p.set_defaults(handler=run)


def _unescape(text: str) -> str:
    return codecs.decode(text, "unicode_escape") if "\\" in text else text


class LineReader:
    """Kafka's console producer line format: ``[headers<delim>][key<sep>]value``."""

    def __init__(self, props: dict[str, str], parse_key: bool, key_separator: str | None) -> None:
        self.parse_key = parse_key or key_separator is not None or props.get("parse.key", "false") == "true"
        self.key_separator = _unescape(key_separator or props.get("key.separator", "\t"))
        self.parse_headers = props.get("parse.headers", "false") == "true"
        self.headers_delimiter = _unescape(props.get("headers.delimiter", "\t"))
        self.headers_separator = _unescape(props.get("headers.separator", ","))
        self.headers_key_separator = _unescape(props.get("headers.key.separator", ":"))
        self.null_marker = props.get("null.marker")
        self.ignore_error = props.get("ignore.error", "false") == "true"
        known = {"parse.key", "key.separator", "parse.headers", "headers.delimiter", "headers.separator",
                 "headers.key.separator", "null.marker", "ignore.error"}
        unknown = {k for k in set(props) - known - SERDE_PROPERTIES if not is_registry_property(k)}
        if unknown:
            raise UsageError(f"unknown --property {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
        if not self.key_separator:
            raise UsageError("key.separator must not be empty")

    def _text(self, text: str) -> str | None:
        return None if self.null_marker is not None and text == self.null_marker else text

    def _bytes(self, text: str) -> bytes | None:
        return None if self.null_marker is not None and text == self.null_marker else text.encode("utf-8")

    def parse(self, line: str, number: int) -> tuple[str | None, str | None, list[tuple[str, bytes | None]]]:
        """``(key text, value text, headers)`` of one line (None: the null marker)."""
        headers: list[tuple[str, bytes | None]] = []
        rest = line
        if self.parse_headers:
            head, sep, rest = line.partition(self.headers_delimiter)
            if not sep:
                raise UsageError(f"line {number}: no headers delimiter {self.headers_delimiter!r} in {line!r}")
            for item in (h for h in head.split(self.headers_separator) if h):
                k, _, v = item.partition(self.headers_key_separator)
                headers.append((k, self._bytes(v)))
        if self.parse_key:
            k, sep, value = rest.partition(self.key_separator)
            if not sep:
                if not self.ignore_error:
                    raise UsageError(f"line {number}: no key separator {self.key_separator!r} in {line!r}")
                return None, self._text(rest), headers
            return self._text(k), self._text(value), headers
        return None, self._text(rest), headers


def _lines(stream: TextIO) -> Iterator[str]:
    for line in stream:
        yield line[:-1] if line.endswith("\n") else line


def build_encoders(args: argparse.Namespace, props: dict[str, str],
                   command_config: dict[str, Any]) -> tuple[Encoder, Encoder]:
    """The key and value encoders from the serializer options and Confluent's properties."""
    registry = registry_settings(args, props, command_config)
    out = []
    for side in ("key", "value"):
        spec = getattr(args, f"{side}_serializer") or props.get(f"{side}.serializer")
        option = f"--{side}-serializer"
        text = getattr(args, f"{side}_schema")
        path = getattr(args, f"{side}_schema_file")
        if text is None and path is None:
            text, path = props.get(f"{side}.schema"), props.get(f"{side}.schema.file")
        schema_id: Any = getattr(args, f"{side}_schema_id")
        if schema_id is None and props.get(f"{side}.schema.id") is not None:
            try:
                schema_id = int(props[f"{side}.schema.id"])
            except ValueError:
                raise UsageError(f"--property {side}.schema.id must be a number, "
                                 f"got {props[f'{side}.schema.id']!r}") from None
        schema = read_schema(text, path, f"--{side}-schema")
        message_type = getattr(args, f"{side}_message_type")
        if spec is None and (schema is not None or schema_id is not None):
            spec = "avro"  # like kafka-avro-console-producer: a schema alone means Avro
        if spec is None and message_type:
            spec = "protobuf"
        fmt = format_name(spec, option) if spec else "bytes"
        is_key = side == "key"
        out.append(Encoder(fmt, is_key, topic=args.topic, schema=schema, schema_id=schema_id,
                           message_type=message_type, registry=registry,
                           settings=serde_settings(args, props, is_key, serializer=True)))
    return out[0], out[1]


def run(args: argparse.Namespace) -> int | None:
    props = parse_key_values(args.property, "--property")
    reader = LineReader(props, args.parse_key, args.key_separator)
    static_headers: list[tuple[str, bytes | None]] = [
        (k, v.encode()) for k, v in parse_key_values(args.header, "--header").items()]
    settings = client_settings(args, parse_key_values(args.producer_property, "--producer-property"))
    for name, setting in (("compression.type", args.compression), ("acks", args.acks),
                          ("transactional.id", args.transactional_id)):
        if setting is not None:
            settings[name] = setting
    from kafkalite.config import PRODUCER, settings_for

    key_encoder, value_encoder = build_encoders(args, props, settings)
    settings = {k: v for k, v in settings_for(PRODUCER, settings).items() if not is_registry_property(k)}
    try:
        return _produce(args, reader, static_headers, settings, key_encoder, value_encoder)
    finally:
        key_encoder.close()
        value_encoder.close()


def _produce(args: argparse.Namespace, reader: LineReader, static_headers: list[tuple[str, bytes | None]],
             settings: dict[str, Any], key_encoder: Encoder, value_encoder: Encoder) -> int | None:
    from kafkalite import Producer
    from kafkalite.errors import ConfigError

    try:
        producer = Producer(settings)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    try:
        check_topic(settings, args.topic, args.partition,
                    args.timeout if args.timeout is not None else producer.config["max.block.ms"] / 1000.0)
    except BaseException:
        producer.close(5)
        raise
    stream: TextIO
    try:
        stream = open(args.file, encoding="utf-8") if args.file else sys.stdin  # noqa: SIM115
    except OSError as exc:
        producer.close(5)
        raise UsageError(f"cannot read --file {args.file}: {exc.strerror}") from None
    progress = Progress("records sent", True if args.progress else None)
    sent = failed = 0
    first_error: list[BaseException] = []

    def on_done(metadata: Any, error: BaseException | None) -> None:
        nonlocal failed
        if error is not None:
            failed += 1
            if not first_error:
                first_error.append(error)

    committed = stopped = False
    try:
        if args.transactional_id:
            producer.init_transactions()
            producer.begin_transaction()
        for number, line in enumerate(_lines(stream), 1):
            key_text, value_text, headers = reader.parse(line, number)
            headers = static_headers + headers
            key = key_encoder.encode(args.topic, key_text, headers, number)
            value = value_encoder.encode(args.topic, value_text, headers, number)
            future = producer.send(args.topic, value=value, key=key, partition=args.partition,
                                   headers=headers or None, callback=on_done)
            sent += 1
            progress.step()
            if args.sync:
                try:
                    future.result(timeout=settings_timeout(producer))
                except Exception:
                    pass
        producer.flush()
        if args.transactional_id:
            if failed:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
                committed = True
    except BaseException:
        stopped = True
        if args.transactional_id and not committed:
            try:
                producer.abort_transaction()
            except Exception:
                pass
        raise
    finally:
        progress.done()
        if stream is not sys.stdin:
            stream.close()
        producer.close(10)
        if sent or not stopped or args.json:
            # Stopped at the first line (bad input, registry down): the error is the one line.
            _summary(args, sent, failed, committed)
    if first_error:
        error_line(str(first_error[0]))
        return EXIT_KAFKA
    return None


#: how long a topic that a broker may be auto-creating is looked up again before it counts as missing
AUTO_CREATE_WAIT_S = 5.0


def check_topic(settings: dict[str, Any], topic: str, partition: int | None, timeout: float) -> None:
    """Fail fast, naming the topic, when it does not exist (or lacks ``partition``).

    Without this a producer waits ``max.block.ms`` (60 s) for metadata of a topic that
    will never appear. The topic is looked up as Java's ``KafkaConsumer.partitionsFor``
    does (a public :class:`kafkalite.Consumer` with the connection settings), and a topic
    that is missing is reported within a few seconds. The lookup allows auto-creation like
    Java's producer, so a broker with ``auto.create.topics.enable=true`` creates the
    topic; a KRaft broker answers before its controller has (UNKNOWN_TOPIC_OR_PARTITION),
    so the lookup is repeated for up to :data:`AUTO_CREATE_WAIT_S` before the topic counts
    as missing (Java's producer would wait all of max.block.ms).
    Bounded by ``timeout`` (``--timeout``, default max.block.ms) while no broker answers.
    """
    from kafkalite import Consumer
    from kafkalite.config import ALL, settings_for
    from kafkalite.errors import UnknownTopicOrPartitionError

    # Only what every client kind takes (connection, security): the producer's own
    # settings mean nothing to the consumer that looks the topic up.
    lookup_settings = {**settings_for(ALL, settings), "allow.auto.create.topics": True}
    with Consumer(lookup_settings) as consumer:
        partitions = consumer.partitions_for(topic, timeout=timeout)
        deadline = time.monotonic() + min(timeout, AUTO_CREATE_WAIT_S)
        while not partitions and time.monotonic() < deadline:
            time.sleep(0.25)  # between metadata lookups: the controller creating the topic
            partitions = consumer.partitions_for(topic, timeout=timeout)
    if not partitions:
        raise UnknownTopicOrPartitionError(
            "Topic does not exist and the broker does not create topics automatically"
            " (create it with 'kafkalite topics --create')", topic=topic)
    count = len(partitions)
    if partition is not None and not 0 <= partition < count:
        raise UnknownTopicOrPartitionError(f"--partition {partition} does not exist (the topic has {count})",
                                           topic=topic, partition=partition)


def _summary(args: argparse.Namespace, sent: int, failed: int, committed: bool) -> None:
    ok = sent - failed
    if args.transactional_id and not committed:
        ok = 0  # an aborted transaction's records are never read by read_committed consumers
    if args.json:
        emit_json({"topic": args.topic, "produced": ok, "failed": failed,
                   "transaction": None if not args.transactional_id else ("committed" if committed else "aborted")})
    else:
        sys.stderr.write(f"Produced {ok} record(s) to {args.topic}"
                         + (f"; {failed} failed" if failed else "")
                         + ("; the transaction was aborted" if args.transactional_id and not committed else "")
                         + "\n")


def settings_timeout(producer: Any) -> float:
    return float(producer.config["delivery.timeout.ms"]) / 1000.0 + 5.0
