"""Serializer options of ``kafkalite produce`` / ``consume``: turning input lines into key
and value bytes, and record bytes into printable values.

Formats (``--key-serializer`` / ``--value-serializer``, ``--key-deserializer`` /
``--value-deserializer``): the built-ins of :mod:`kafkalite.serialization` (``bytes``,
``str``, ``int``, ``long``, ``float``/``double``, ``float32``, ``json``) and the
Schema Registry formats ``avro``, ``json-schema`` and ``protobuf``. Java class names
work too (``org.apache.kafka.common.serialization.StringSerializer``,
``io.confluent.kafka.serializers.KafkaAvroSerializer`` ...), so commands copied from
Kafka's and Confluent's tools keep working.

Like Confluent's console tools (their message readers and formatters serialize
themselves and hand bytes to a byte-array producer), the console tools serialize here
and the producer and consumer see bytes: an input line that does not fit its schema is
reported with its line number before anything of it is sent, and a record that does
not decode is reported with its partition and offset.

Example::

    kafkalite produce --bootstrap-server $B --topic orders --value-serializer avro \\
        --value-schema-file order.avsc --schema-registry-url http://127.0.0.1:8081 < orders.jsonl
    kafkalite consume --bootstrap-server $B --topic orders --from-beginning \\
        --value-deserializer avro --schema-registry-url http://127.0.0.1:8081
"""

from __future__ import annotations

import argparse
import base64
import datetime
import decimal
import importlib
import io
import json
import sys
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkalite.cli.common import UsageError, parse_key_values
from kafkalite.errors import ConfigError, SerializationError

if TYPE_CHECKING:
    from kafkalite.serialization import Serializer

BUILTINS = ("bytes", "str", "string", "int", "integer", "long", "float", "double", "float32", "json")
SCHEMA_FORMATS = ("avro", "json-schema", "protobuf")

# Java class names of Kafka's and Confluent's serdes -> our names.
_JAVA = {
    "ByteArray": "bytes", "Bytes": "bytes", "ByteBuffer": "bytes", "String": "str", "Integer": "int",
    "Long": "long", "Double": "double", "Float": "float32", "KafkaAvro": "avro",
    "KafkaJsonSchema": "json-schema", "KafkaProtobuf": "protobuf", "KafkaJson": "json",
}
_ALIASES = {"string": "str", "integer": "int", "float": "double", "jsonschema": "json-schema",
            "json_schema": "json-schema", "proto": "protobuf"}


def format_name(spec: str, option: str) -> str:
    """The canonical format for ``spec`` (a name or a Java class name); usage error otherwise."""
    text = spec.strip()
    simple = text.rsplit(".", 1)[-1]
    for suffix in ("Serializer", "Deserializer"):
        if "." in text and simple.endswith(suffix) and simple[: -len(suffix)] in _JAVA:
            return _JAVA[simple[: -len(suffix)]]
    name = text.lower()
    name = _ALIASES.get(name, name)
    if name in BUILTINS or name in SCHEMA_FORMATS:
        return name
    known = ", ".join(sorted({*(_ALIASES.get(b, b) for b in BUILTINS), "float32", *SCHEMA_FORMATS}))
    raise UsageError(f"unknown {option} {spec!r} (known: {known}, or a Java serde class name)")


def add_registry_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Schema Registry (avro, json-schema, protobuf)")
    g.add_argument("--schema-registry-url", metavar="URL",
                   help="registry URL(s), comma-separated (or schema.registry.url in --property/--command-config)")
    g.add_argument("--schema-registry-property", action="append", default=[], metavar="K=V",
                   help="registry client setting: basic.auth.user.info=user:secret, "
                        "bearer.auth.token=..., ssl.ca.location=..., max.retries=... (repeatable)")
    g.add_argument("--subject-name-strategy", metavar="NAME",
                   help="topic (default), record or topic_record (or a Confluent strategy class name)")


def registry_key(name: str) -> str | None:
    from kafkalite.serialization.registry_http import registry_key as key

    return key(name)


def is_registry_property(name: str) -> bool:
    """A registry setting in a shared properties file or ``--property``: ``schema.registry.*``,
    or the ``basic.auth.*`` / ``bearer.auth.*`` names Confluent's tools take unprefixed.
    (Unprefixed names like ``request.timeout.ms`` belong to the Kafka client there.)"""
    if name.startswith(("basic.auth.", "bearer.auth.")):
        return registry_key(name) is not None
    return name.startswith("schema.registry.") and registry_key(name) is not None


def registry_settings(args: argparse.Namespace, props: Mapping[str, str],
                      command_config: Mapping[str, Any]) -> dict[str, Any]:
    """Registry client settings: --command-config, then --property, then the explicit options."""
    conf: dict[str, Any] = {}
    for source in (command_config, props, parse_key_values(args.schema_registry_property,
                                                           "--schema-registry-property")):
        explicit = source is not command_config and source is not props
        for k, v in source.items():
            if is_registry_property(k) or (explicit and registry_key(k) is not None):
                conf[k] = v
            elif explicit:
                from kafkalite.serialization.registry_http import PREFIX, REGISTRY_SETTINGS, suggest

                known = [PREFIX + "url", *REGISTRY_SETTINGS]
                raise UsageError(f"unknown --schema-registry-property {k!r}" + suggest(k, known))
    if args.schema_registry_url:
        conf = {k: v for k, v in conf.items() if registry_key(k) != "url"}
        conf["schema.registry.url"] = args.schema_registry_url
    return conf


def serde_settings(args: argparse.Namespace, props: Mapping[str, str], is_key: bool,
                   serializer: bool) -> dict[str, Any]:
    """Serde settings (strategy, auto.register.schemas, use.latest.version) for one side."""
    side = "key" if is_key else "value"
    out: dict[str, Any] = {}
    strategy = props.get(f"{side}.subject.name.strategy") or args.subject_name_strategy
    if strategy:
        out["subject.name.strategy"] = strategy
    latest = props.get("use.latest.version")
    if latest is not None:
        out["use.latest.version"] = latest
    if serializer:
        auto = props.get("auto.register.schemas", props.get("auto.register"))
        if auto is not None:
            out["auto.register.schemas"] = auto
        if props.get("normalize.schemas") is not None:
            out["normalize.schemas"] = props["normalize.schemas"]
    return out


def import_class(path: str, option: str) -> type:
    """``package.module:Class`` (or ``package.module.Class``) -> the class."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise UsageError(f"{option} must be module:Class, got {path!r}")
    if "" not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: modules in the current directory
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"{option} {path!r}: cannot import it ({exc})") from None
    if not isinstance(obj, type):
        raise UsageError(f"{option} {path!r} is not a class")
    return obj


def read_schema(text: str | None, path: str | None, option: str) -> str | None:
    if text is not None and path is not None:
        raise UsageError(f"give either {option} or {option}-file, not both")
    if path is None:
        return text
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {option}-file {path}: {exc.strerror}") from None


def _config_error(exc: Exception) -> UsageError:
    return UsageError(str(exc))


# ------------------------------------------------------------------ produce side


class Encoder:
    """Turns one side (key or value) of an input line into bytes.

    ``encode(topic, text, headers, line)`` returns the bytes (None stays None). A line
    that does not parse or fit the schema raises :class:`UsageError` naming the line;
    registry failures raise the registry's :class:`SerializationError`.
    """

    def __init__(self, fmt: str, is_key: bool, *, topic: str, schema: str | None = None,
                 schema_id: int | None = None, message_type: str | None = None,
                 registry: Mapping[str, Any] | None = None, settings: Mapping[str, Any] | None = None) -> None:
        self.fmt = fmt
        self.topic = topic
        self.side = "key" if is_key else "value"
        self.option = f"--{self.side}-serializer"
        self._serializer: Serializer
        self._avro_parsed: Any = None
        self._message_class: Any = None
        conf = {**(registry or {}), **(settings or {})}
        if schema_id is not None:
            conf["use.schema.id"] = schema_id
        if fmt in BUILTINS:
            from kafkalite.serialization import BUILTIN_SERIALIZERS

            if schema or schema_id is not None or message_type:
                raise UsageError(f"a {self.side} schema needs {self.option} avro, json-schema or protobuf, not {fmt}")
            self._serializer = BUILTIN_SERIALIZERS[fmt]()
            return
        if fmt != "protobuf" and schema is None and schema_id is None and not conf.get("use.latest.version"):
            raise UsageError(f"{self.option} {fmt} needs a schema: --{self.side}-schema-file PATH, "
                             f"--{self.side}-schema TEXT (or --property {self.side}.schema=...), "
                             f"--{self.side}-schema-id N or --property use.latest.version=true")
        if not any(registry_key(k) == "url" for k in conf) and "use.schema.id" not in conf:
            raise UsageError(f"{self.option} {fmt} needs --schema-registry-url")
        try:
            if fmt != "protobuf":
                text = schema if schema is not None else self._registered(conf, schema_id)
            if fmt == "avro":
                from kafkalite.serialization import AvroSerializer
                from kafkalite.serialization.avro import as_schema, parse_avro_schema

                avro = AvroSerializer(text, conf, is_key=is_key)
                self._serializer = avro
                self._avro_parsed = parse_avro_schema(as_schema(text), avro.registry)
            elif fmt == "json-schema":
                from kafkalite.serialization import JsonSchemaSerializer

                self._serializer = JsonSchemaSerializer(text, conf, is_key=is_key)
            else:
                if not message_type:
                    raise UsageError(
                        f"{self.option} protobuf needs the message class generated by protoc: "
                        f"--{self.side}-message-type module:Class (.proto text cannot be compiled here)")
                from kafkalite.serialization import ProtobufSerializer

                self._message_class = import_class(message_type, f"--{self.side}-message-type")
                self._serializer = ProtobufSerializer(self._message_class, conf, is_key=is_key)
        except ConfigError as exc:
            raise _config_error(exc) from None
        except SerializationError as exc:  # an invalid schema given on the command line
            raise UsageError(f"{self.side} schema: {exc}") from None

    def _registered(self, conf: Mapping[str, Any], schema_id: int | None) -> str:
        """The schema text of ``schema_id`` (or, with use.latest.version, of the latest version)."""
        from kafkalite.serialization import SchemaRegistryClient

        registry_conf = {k: v for k, v in conf.items() if registry_key(k) is not None}
        if not registry_conf:
            raise UsageError(f"--{self.side}-schema-id needs --schema-registry-url")
        client = SchemaRegistryClient(registry_conf)
        try:
            if schema_id is not None:
                return client.get_schema(schema_id).schema_str
            # use.latest.version: the serializer writes with the subject's latest schema;
            # the text is only needed to check lines locally.
            from kafkalite.serialization.strategies import resolve_strategy

            strategy = resolve_strategy(conf.get("subject.name.strategy"))
            try:
                subject = strategy(self.topic, self.side == "key", None)
            except Exception:  # record strategies need the record's name
                raise UsageError(f"--property use.latest.version=true needs --{self.side}-schema-file "
                                 f"(or --{self.side}-schema-id) unless the subject is per topic") from None
            return client.get_latest_version(subject).schema.schema_str
        finally:
            client.close()

    def parse(self, text: str, line: int) -> Any:
        """The value a line's text stands for, per the format."""
        fmt = self.fmt
        try:
            if fmt in ("bytes",):
                return text.encode("utf-8")
            if fmt == "str":
                return text
            if fmt in ("int", "long"):
                return int(text.strip())
            if fmt in ("double", "float32"):
                return float(text.strip())
            if fmt == "protobuf":
                from google.protobuf import json_format

                return json_format.Parse(text, self._message_class())
            return json.loads(text)
        except ValueError as exc:
            what = {"int": "an integer", "long": "an integer", "double": "a number", "float32": "a number"}.get(
                fmt, "JSON" if fmt != "protobuf" else "JSON for " + self._message_class.DESCRIPTOR.full_name)
            detail = "" if fmt in ("int", "long", "double", "float32") else f": {exc}"
            raise UsageError(f"line {line}: the {self.side} {_clip(text)!r} is not {what} "
                             f"({self.option} {fmt}){detail}") from None

    def encode(self, topic: str, text: str | None, headers: list[tuple[str, bytes | None]], line: int) -> bytes | None:
        if text is None:
            return None
        value = self.parse(text, line)
        try:
            return self._serializer.serialize(topic, value, headers)
        except SerializationError as exc:
            from kafkalite.serialization.errors import SchemaRegistryError, SchemaValidationError

            if isinstance(exc, SchemaValidationError) and self._avro_parsed is not None:
                converted = self._avro_json(text)
                if converted is not None:
                    try:
                        return self._serializer.serialize(topic, converted, headers)
                    except SchemaValidationError:
                        pass
            if isinstance(exc, SchemaRegistryError):
                raise
            raise UsageError(f"line {line}: the {self.side} does not fit: {exc}") from None

    def _avro_json(self, text: str) -> Any:
        """Avro's own JSON encoding (unions as {"type": value}, bytes as \\u00XX), as
        kafka-avro-console-producer reads it: the same line in that form."""
        import fastavro

        try:
            return next(iter(fastavro.json_reader(io.StringIO(text), self._avro_parsed)))
        except Exception:  # not Avro JSON either: the first error is reported
            return None

    def close(self) -> None:
        close = getattr(self._serializer, "close", None)
        if close is not None:
            close()


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


# ------------------------------------------------------------------ consume side


class Decoder:
    """Turns one side of a record into a value to print (None stays None)."""

    def __init__(self, fmt: str, is_key: bool, *, message_type: str | None = None,
                 registry: Mapping[str, Any] | None = None, settings: Mapping[str, Any] | None = None) -> None:
        self.fmt = fmt
        self.side = "key" if is_key else "value"
        #: Print as JSON text (structured formats), not as the raw string.
        self.structured = fmt in ("json", *SCHEMA_FORMATS)
        self._dynamic: DynamicProtobuf | None = None
        conf = {**(registry or {}), **(settings or {})}
        has_registry = any(registry_key(k) == "url" for k in conf)
        try:
            if fmt in BUILTINS:
                from kafkalite.serialization import BUILTIN_DESERIALIZERS

                self._deserializer: Any = BUILTIN_DESERIALIZERS[fmt]()
            elif fmt == "protobuf" and message_type:
                from kafkalite.serialization import ProtobufDeserializer

                self._deserializer = ProtobufDeserializer(
                    import_class(message_type, f"--{self.side}-message-type"), is_key=is_key)
            elif not has_registry:
                raise UsageError(f"--{self.side}-deserializer {fmt} needs --schema-registry-url "
                                 "(the writer's schema is fetched by the id in each record)")
            elif fmt == "avro":
                from kafkalite.serialization import AvroDeserializer

                self._deserializer = AvroDeserializer(conf, is_key=is_key)
            elif fmt == "json-schema":
                from kafkalite.serialization import JsonSchemaDeserializer

                self._deserializer = JsonSchemaDeserializer(conf, is_key=is_key)
            else:
                self._dynamic = DynamicProtobuf(conf)
                self._deserializer = None
        except ConfigError as exc:
            raise _config_error(exc) from None

    def decode(self, topic: str, data: bytes | None, headers: Any) -> Any:
        if data is None:
            return None
        if self._dynamic is not None:
            return self._dynamic.deserialize(topic, data)
        return self._deserializer.deserialize(topic, data, headers)

    def close(self) -> None:
        for obj in (self._deserializer, self._dynamic):
            close = getattr(obj, "close", None)
            if close is not None:
                close()


def jsonable(value: Any) -> Any:
    """A decoded value as plain JSON types.

    Avro ``bytes``/``fixed`` become strings of code points U+0000-U+00FF (Avro's JSON
    encoding, so the line can be produced again); decimals become strings (no
    precision lost), dates and times ISO 8601, UUIDs their text, Protobuf messages
    their canonical JSON mapping (``MessageToDict``).
    """
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("latin-1")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if hasattr(value, "DESCRIPTOR") and hasattr(value, "ListFields"):
        from google.protobuf import json_format

        return json_format.MessageToDict(value)
    return str(value)


def json_text(value: Any) -> str:
    """Compact JSON, as Confluent's formatters print records."""
    return json.dumps(jsonable(value), ensure_ascii=False, separators=(",", ":"))


class DynamicProtobuf:
    """Decodes Confluent-framed Protobuf without generated classes.

    The writer's schema (a base64 ``FileDescriptorProto``, as kafkalite and
    confluent-kafka register it) and its references are fetched from the registry and
    built into a private descriptor pool; each record's message indexes pick the
    message type. ``.proto`` text schemas (registered by Java clients) need the
    generated class instead (``--value-message-type``).
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        from google.protobuf import descriptor_pool

        from kafkalite.serialization import SchemaRegistryClient

        self.registry = SchemaRegistryClient({k: v for k, v in conf.items() if registry_key(k) is not None})
        self.pool = descriptor_pool.DescriptorPool()
        self._classes: dict[tuple[int, tuple[int, ...]], Any] = {}

    def close(self) -> None:
        self.registry.close()

    def deserialize(self, topic: str, data: bytes) -> Any:
        from google.protobuf.message import DecodeError

        from kafkalite.serialization.errors import SchemaRegistryError, WireFormatError
        from kafkalite.serialization.wire import decode_message_indexes, parse_header

        schema_id, pos = parse_header(data, topic=topic)
        indexes, pos = decode_message_indexes(data, pos)
        key = (schema_id, tuple(indexes))
        cls = self._classes.get(key)
        if cls is None:
            try:
                cls = self._class_for(schema_id, list(indexes), topic)
            except SchemaRegistryError as exc:
                raise exc.with_context(topic=topic) from None
            self._classes[key] = cls
        message = cls()
        try:
            message.ParseFromString(bytes(memoryview(data)[pos:]))
        except (DecodeError, RuntimeError, ValueError) as exc:
            raise WireFormatError(f"the Protobuf payload does not decode as {message.DESCRIPTOR.full_name} "
                                  f"(schema id {schema_id}): {exc}", topic=topic) from None
        return message

    def _class_for(self, schema_id: int, indexes: list[int], topic: str) -> Any:
        from google.protobuf import message_factory

        schema = self.registry.get_schema(schema_id)
        file = self._add(schema, schema_id, topic)
        level = list(file.message_types_by_name.values())
        descriptor = None
        for i in indexes:
            if i >= len(level):
                from kafkalite.serialization.errors import WireFormatError

                raise WireFormatError(f"message indexes {indexes} point to no message of schema id {schema_id}",
                                      topic=topic)
            descriptor = level[i]
            level = list(descriptor.nested_types)
        return message_factory.GetMessageClass(descriptor)

    def _add(self, schema: Any, schema_id: int | None, topic: str) -> Any:
        import binascii

        from google.protobuf import descriptor_pb2, descriptor_pool
        from google.protobuf.message import DecodeError

        for ref in schema.references:
            try:
                self.pool.FindFileByName(ref.name)
            except KeyError:
                self._add(self.registry.get_version(ref.subject, ref.version).schema, None, topic)
        try:
            proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema.schema_str, validate=True))
        except (binascii.Error, ValueError, DecodeError):
            raise SerializationError(
                f"schema id {schema_id} is .proto text (registered by a Java client), which cannot be compiled "
                "here: pass the generated class with --key-message-type / --value-message-type module:Class",
                topic=topic) from None
        for dep in proto.dependency:
            try:
                self.pool.FindFileByName(dep)
            except KeyError:
                try:  # well-known imports (google/protobuf/*.proto) come with the protobuf package
                    known = descriptor_pool.Default().FindFileByName(dep)
                except KeyError:
                    raise SerializationError(f"schema id {schema_id} imports {dep}, which is not among its "
                                             "references", topic=topic) from None
                fdp = descriptor_pb2.FileDescriptorProto()
                known.CopyToProto(fdp)
                self.pool.Add(fdp)
        try:
            return self.pool.FindFileByName(proto.name)
        except KeyError:
            self.pool.Add(proto)
            return self.pool.FindFileByName(proto.name)
