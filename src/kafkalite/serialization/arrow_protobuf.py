"""Confluent-framed Protobuf columns <-> Arrow struct columns, as :mod:`.arrow` does for Avro.

Inside Spark's ``mapInArrow``, a binary ``value`` column of records written by a
Protobuf serializer (kafkalite's, confluent-kafka's, Java's) becomes a struct column
of the message's fields, and back::

    from kafkalite.serialization.arrow_protobuf import decode_protobuf_column, protobuf_to_arrow_schema
    from shop import orders_pb2

    out_type = protobuf_to_arrow_schema(orders_pb2.OrderPlaced)      # pyarrow struct type

    def decode(batches):
        for batch in batches:
            yield decode_protobuf_column(batch, "value", orders_pb2.OrderPlaced)

    df.mapInArrow(decode, "...key binary, value struct<...>")

Without a generated class on the executors, give ``registry=`` instead: the message
type is built from the schema the record's id names (a serialized
``FileDescriptorProto``, as kafkalite and confluent-kafka register it, with its
referenced files), at the path of the record's message indexes; the first record's
type is then the shape of the whole column.

Types follow Spark's ``from_protobuf``: int32 / sint32 / sfixed32 as int32, int64 /
sint64 / sfixed64 and uint32 as int64, uint64 as int64 (values above 2^63 wrap, as
Spark's default), float / double, bool, string, bytes as binary, enums as their value
name (string), messages as structs, ``repeated`` as lists, maps as Arrow maps,
``google.protobuf.Timestamp`` as a UTC microsecond timestamp and ``Duration`` as an
Arrow duration in microseconds. Every field is nullable: a message field, an
``optional`` field or a ``oneof`` member that is not set is null; a proto3 scalar
without presence has its value (0, "", false when not written) where Spark's
``from_protobuf`` gives null unless ``emit.default.values``. A recursive message is
refused (Spark needs ``recursive.fields.max.depth`` for those).

The column is built field by field (one Arrow array per field across all rows, no
per-row dict), so a nested message costs one Python attribute read per field per row.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.arrow_common import (
    RegistrySource,
    check_mode,
    registry_client,
    replace_column,
    require_pyarrow,
    row_error,
)
from kafkalite.serialization.errors import WireFormatError
from kafkalite.serialization.protobuf import message_indexes, message_name_at
from kafkalite.serialization.registry_client import SchemaRegistryClient
from kafkalite.serialization.registry_types import Schema
from kafkalite.serialization.wire import (
    decode_message_indexes,
    encode_message_indexes,
    frame,
    parse_header,
)

try:
    import pyarrow as pa
except ImportError:  # pragma: no cover - exercised only without the extra
    pa = None

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.descriptor import FieldDescriptor
    from google.protobuf.message import DecodeError, Message
except ImportError:  # pragma: no cover - exercised only without the extra
    Message = None

__all__ = [
    "decode_protobuf_column",
    "encode_protobuf_column",
    "protobuf_to_arrow_schema",
    "protobuf_to_struct",
    "struct_to_protobuf",
]

_TIMESTAMP = "google.protobuf.Timestamp"
_DURATION = "google.protobuf.Duration"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _require_protobuf() -> None:
    require_pyarrow()
    if Message is None:
        raise ConfigError("Protobuf column helpers need protobuf: pip install 'kafkalite[protobuf]'")


def _descriptor(message: Any) -> Any:
    if isinstance(message, type) and Message is not None and issubclass(message, Message):
        return message.DESCRIPTOR  # type: ignore[attr-defined]  # protoc classes have DESCRIPTOR (checked above)
    if hasattr(message, "fields") and hasattr(message, "full_name"):  # a Descriptor
        return message
    raise ConfigError(f"expected a generated Protobuf message class or descriptor, got {message!r}")


# -- the plan: one per message type, the Arrow type and how to build each field ---------


@dataclass
class _Field:
    name: str
    presence: bool  # null when not set (message fields, optional, oneof members)
    build: Callable[[list[Any]], Any]  # the field's values (None: null) -> an Arrow array


@dataclass
class _Plan:
    arrow_type: Any
    fields: list[_Field]


_SCALARS: dict[int, Callable[[], Any]] = {}


def _scalar_type(field: Any) -> Any:
    if not _SCALARS:
        t = FieldDescriptor
        _SCALARS.update({
            t.TYPE_INT32: pa.int32, t.TYPE_SINT32: pa.int32, t.TYPE_SFIXED32: pa.int32,
            t.TYPE_INT64: pa.int64, t.TYPE_SINT64: pa.int64, t.TYPE_SFIXED64: pa.int64,
            t.TYPE_UINT32: pa.int64, t.TYPE_FIXED32: pa.int64,
            t.TYPE_UINT64: pa.int64, t.TYPE_FIXED64: pa.int64,
            t.TYPE_FLOAT: pa.float32, t.TYPE_DOUBLE: pa.float64, t.TYPE_BOOL: pa.bool_,
            t.TYPE_STRING: pa.string, t.TYPE_BYTES: pa.binary, t.TYPE_ENUM: pa.string,
        })
    return _SCALARS[field.type]()


def _repeated(field: Any) -> bool:
    flag = getattr(field, "is_repeated", None)  # protobuf >= 6 has no FieldDescriptor.label
    if flag is not None:
        return bool(flag)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _is_message(field: Any) -> bool:
    return bool(field.type == FieldDescriptor.TYPE_MESSAGE or field.type == FieldDescriptor.TYPE_GROUP)


def _value_builder(field: Any, seen: tuple[str, ...]) -> tuple[Any, Callable[[list[Any]], Any]]:
    """(Arrow type, builder) for one value of ``field`` (an element when repeated)."""
    if _is_message(field):
        sub = field.message_type
        if sub.full_name == _TIMESTAMP:
            ts = pa.timestamp("us", tz="UTC")
            return ts, lambda vs: pa.array([None if v is None else v.seconds * 1_000_000 + v.nanos // 1000
                                            for v in vs], pa.int64()).cast(ts)
        if sub.full_name == _DURATION:
            du = pa.duration("us")
            return du, lambda vs: pa.array([None if v is None else v.seconds * 1_000_000 + int(v.nanos / 1000)
                                            for v in vs], pa.int64()).cast(du)
        plan = _plan(sub, seen)
        return plan.arrow_type, lambda vs: _struct(vs, plan)
    arrow_type = _scalar_type(field)
    if field.type == FieldDescriptor.TYPE_ENUM:
        names = {v.number: v.name for v in field.enum_type.values}
        return arrow_type, lambda vs: pa.array([None if v is None else names.get(v, str(v)) for v in vs], arrow_type)
    if field.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return arrow_type, lambda vs: pa.array([v - (1 << 64) if v is not None and v >= 1 << 63 else v
                                                for v in vs], arrow_type)
    return arrow_type, lambda vs: pa.array(vs, arrow_type)


def _field_builder(field: Any, seen: tuple[str, ...]) -> tuple[Any, Callable[[list[Any]], Any]]:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        entry = field.message_type
        key_type, keys = _value_builder(entry.fields_by_name["key"], seen)
        value_type, items = _value_builder(entry.fields_by_name["value"], seen)
        map_type = pa.map_(key_type, value_type)

        def build_map(vs: list[Any]) -> Any:
            flat_keys: list[Any] = []
            flat_values: list[Any] = []

            def extend(v: Any) -> None:
                for k in sorted(v):  # protobuf maps have no order; sorted keys make output repeatable
                    flat_keys.append(k)
                    flat_values.append(v[k])

            offsets, mask = _offsets(vs, flat_keys, extend)
            return pa.MapArray.from_arrays(offsets, keys(flat_keys), items(flat_values), type=map_type, mask=mask)

        return map_type, build_map
    element_type, element = _value_builder(field, seen)
    if not _repeated(field):
        return element_type, element
    list_type = pa.list_(element_type)

    def build_list(vs: list[Any]) -> Any:
        flat: list[Any] = []
        offsets, mask = _offsets(vs, flat, flat.extend)
        return pa.ListArray.from_arrays(offsets, element(flat), type=list_type, mask=mask)

    return list_type, build_list


def _offsets(vs: list[Any], flat: list[Any], extend: Callable[[Any], None]) -> tuple[Any, Any]:
    """(int32 offsets, null mask or None) of a list column; ``extend`` appends one value's items."""
    offsets = [0]
    nulls = []
    for v in vs:
        nulls.append(v is None)
        if v is not None:
            extend(v)
        offsets.append(len(flat))
    return pa.array(offsets, pa.int32()), (pa.array(nulls, pa.bool_()) if any(nulls) else None)


_PLANS: dict[Any, _Plan] = {}


def _plan(descriptor: Any, seen: tuple[str, ...] = ()) -> _Plan:
    cached = _PLANS.get(descriptor)
    if cached is not None:
        return cached
    if descriptor.full_name in seen:
        chain = " -> ".join((*seen, descriptor.full_name))
        raise ConfigError(f"the Protobuf message {descriptor.full_name} is recursive ({chain}); "
                          "an Arrow struct cannot hold it")
    seen = (*seen, descriptor.full_name)
    arrow_fields = []
    fields = []
    for field in descriptor.fields:
        arrow_type, build = _field_builder(field, seen)
        arrow_fields.append(pa.field(field.name, arrow_type))
        repeated = _repeated(field)
        presence = not repeated and (_is_message(field) or field.containing_oneof is not None
                                     or bool(getattr(field, "has_presence", False)))
        fields.append(_Field(field.name, presence, build))
    plan = _Plan(pa.struct(arrow_fields), fields)
    _PLANS[descriptor] = plan
    return plan


def _struct(messages: list[Any], plan: _Plan) -> Any:
    nulls = [m is None for m in messages]
    children = []
    for f in plan.fields:
        name = f.name
        if f.presence:
            values = [getattr(m, name) if m is not None and m.HasField(name) else None for m in messages]
        else:
            values = [getattr(m, name) if m is not None else None for m in messages]
        children.append(f.build(values))
    mask = pa.array(nulls, pa.bool_()) if any(nulls) else None
    return pa.StructArray.from_arrays(children, fields=list(plan.arrow_type), mask=mask)


def protobuf_to_arrow_schema(message: Any) -> Any:
    """The Arrow struct type of a generated message class (or a message descriptor)."""
    _require_protobuf()
    return _plan(_descriptor(message)).arrow_type


# -- message types from the registry --------------------------------------------------


class _RegistryTypes:
    """Message classes built from registered schemas, by (schema id, message indexes)."""

    def __init__(self, client: SchemaRegistryClient) -> None:
        self.client = client
        self.pool = descriptor_pool.DescriptorPool()
        self.classes: dict[tuple[int, tuple[int, ...]], type] = {}

    def message_class(self, schema_id: int, indexes: tuple[int, ...]) -> type:
        key = (schema_id, indexes)
        cls = self.classes.get(key)
        if cls is None:
            schema = self.client.get_schema(schema_id)
            if schema.schema_type != "PROTOBUF":
                raise SerializationError(f"schema id {schema_id} is a {schema.schema_type} schema, not PROTOBUF",
                                         schema_id=schema_id)
            self._add(schema, schema_id)
            full_name = message_name_at(schema.schema_str, list(indexes))
            if full_name is None:
                raise WireFormatError(f"message indexes {list(indexes)} point to no message of schema id {schema_id}")
            cls = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(full_name))
            self.classes[key] = cls
        return cls

    def _add(self, schema: Schema, schema_id: int | None) -> str:
        try:
            proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema.schema_str, validate=True))
        except (binascii.Error, ValueError, DecodeError):
            what = f"schema id {schema_id}" if schema_id is not None else "a referenced schema"
            raise ConfigError(
                f"{what} is .proto text (as Java's serializer registers it), which kafkalite cannot compile: "
                "pass the generated message class (message_type=)") from None
        try:
            return str(self.pool.FindFileByName(proto.name).name)
        except KeyError:
            pass
        for ref in schema.references:
            self._add(self.client.get_version(ref.subject, ref.version).schema, None)
        for dep in proto.dependency:
            self._add_known(dep)
        self.pool.Add(proto)
        return str(proto.name)

    def _add_known(self, name: str) -> None:
        """A well-known file (google/protobuf/...) the registry does not hold: from protobuf itself."""
        try:
            self.pool.FindFileByName(name)
            return
        except KeyError:
            pass
        from google.protobuf import (  # noqa: F401  # imported for their files in the default pool
            any_pb2,
            duration_pb2,
            empty_pb2,
            field_mask_pb2,
            struct_pb2,
            timestamp_pb2,
            wrappers_pb2,
        )
        try:
            known = descriptor_pool.Default().FindFileByName(name)
        except KeyError:
            raise ConfigError(f"the Protobuf schema imports {name!r}, which neither the registry's references "
                              "nor protobuf's well-known types hold") from None
        proto = descriptor_pb2.FileDescriptorProto()
        known.CopyToProto(proto)
        for dep in proto.dependency:
            self._add_known(dep)
        self.pool.Add(proto)


_REGISTRY_TYPES: dict[int, _RegistryTypes] = {}


def _registry_types(client: SchemaRegistryClient) -> _RegistryTypes:
    found = _REGISTRY_TYPES.get(id(client))
    if found is None or found.client is not client:
        found = _RegistryTypes(client)
        _REGISTRY_TYPES[id(client)] = found
    return found


# -- columns -------------------------------------------------------------------------


def protobuf_to_struct(
    values: Any,
    message_type: Any = None,
    *,
    registry: RegistrySource = None,
    mode: str = "FAILFAST",
) -> Any:
    """Decode a binary Arrow array of Confluent-framed Protobuf into a struct array.

    Args:
        values: a ``pyarrow`` binary array or chunked array; nulls (tombstones) become
            null structs.
        message_type: the generated class every record is parsed as (older and newer
            versions of the message parse by field number). Without it, ``registry``
            is needed and the first record's registered type is the shape.
        registry: a :class:`SchemaRegistryClient` or its settings (only needed
            without ``message_type``).
        mode: ``"FAILFAST"`` raises :class:`SerializationError` naming the row;
            ``"PERMISSIVE"`` returns null for records that do not decode.

    Example::

        structs = protobuf_to_struct(batch.column("value"), orders_pb2.OrderPlaced)
    """
    _require_protobuf()
    mode = check_mode(mode)
    client = registry_client(registry)
    if message_type is None and client is None:
        raise ConfigError("protobuf_to_struct needs a message_type or a registry")
    cls: Any = message_type
    if cls is not None:
        _descriptor(cls)
    types = _registry_types(client) if client is not None and cls is None else None
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    messages: list[Any] = []
    for row, data in enumerate(values.to_pylist()):
        if data is None:
            messages.append(None)
            continue
        try:
            schema_id, pos = parse_header(data)
            indexes, pos = decode_message_indexes(data, pos)
            if cls is None and types is not None:
                cls = types.message_class(schema_id, tuple(indexes))
            message = cls()
            message.ParseFromString(data[pos:])
            messages.append(message)
        except ConfigError:  # not this row's fault: a schema kafkalite cannot use
            raise
        except Exception as exc:
            if mode == "PERMISSIVE":
                messages.append(None)
                continue
            raise row_error(exc, row, "Protobuf") from None
    if cls is None:  # every row was null
        return pa.nulls(len(messages), pa.struct([]))
    return _struct(messages, _plan(_descriptor(cls)))


_SETTERS: dict[Any, dict[str, tuple[str, Any]]] = {}


def _setters(descriptor: Any) -> dict[str, tuple[str, Any]]:
    """Field name -> (how to set it, descriptor), once per message type (encoding's hot loop)."""
    found = _SETTERS.get(descriptor)
    if found is None:
        found = {}
        for field in descriptor.fields:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                kind = "map_message" if _is_message(field.message_type.fields_by_name["value"]) else "map"
                found[field.name] = (kind, field.message_type.fields_by_name["value"])
            elif _repeated(field):
                found[field.name] = ("repeated_message" if _is_message(field) else "repeated", field)
            elif _is_message(field):
                found[field.name] = ("message", field)
            elif field.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
                found[field.name] = ("unsigned", field)
            else:
                found[field.name] = ("scalar", field)
        _SETTERS[descriptor] = found
    return found


def _fill(message: Any, value: dict[str, Any]) -> None:
    """Set a message's fields from an Arrow ``to_pylist`` struct value."""
    setters = _setters(message.DESCRIPTOR)
    for name, v in value.items():
        if v is None:
            continue
        found = setters.get(name)
        if found is None:
            raise SerializationError(f"{message.DESCRIPTOR.full_name} has no field {name!r}", field=name)
        kind, field = found
        if kind == "scalar":
            setattr(message, name, v)
        elif kind == "message":
            _set_message(getattr(message, name), v)
        elif kind == "repeated":
            getattr(message, name).extend(v if field.type != FieldDescriptor.TYPE_UINT64
                                          else [_unsigned(field, x) for x in v])
        elif kind == "repeated_message":
            target = getattr(message, name)
            for x in v:
                _set_message(target.add(), x)
        elif kind == "unsigned":
            setattr(message, name, _unsigned(field, v))
        else:  # a map: Arrow gives (key, value) pairs
            target = getattr(message, name)
            for k, x in (v.items() if isinstance(v, dict) else v):
                if kind == "map_message":
                    _set_message(target[k], x)
                else:
                    target[k] = _unsigned(field, x)


def _unsigned(field: Any, v: Any) -> Any:
    """An int64 column value back to uint64 (the read side wrapped values above 2^63)."""
    if field.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64) and isinstance(v, int) and v < 0:
        return v + (1 << 64)
    return v


def _set_message(message: Any, v: Any) -> None:
    full_name = message.DESCRIPTOR.full_name
    if full_name == _TIMESTAMP:
        micros = (v - _EPOCH) // datetime.timedelta(microseconds=1) if isinstance(v, datetime.datetime) else int(v)
        message.seconds, rest = divmod(micros, 1_000_000)
        message.nanos = rest * 1000
    elif full_name == _DURATION:
        micros = v // datetime.timedelta(microseconds=1) if isinstance(v, datetime.timedelta) else int(v)
        sign = -1 if micros < 0 else 1
        seconds, rest = divmod(abs(micros), 1_000_000)
        message.seconds, message.nanos = sign * seconds, sign * rest * 1000
    else:
        message.SetInParent()  # an empty struct is a set (empty) message, not an unset one
        _fill(message, v)


def struct_to_protobuf(
    values: Any,
    message_type: Any,
    *,
    schema_id: int | None = None,
    registry: RegistrySource = None,
    subject: str | None = None,
) -> Any:
    """Encode a struct Arrow array as Confluent-framed Protobuf (a binary array).

    The schema id is ``schema_id``, or the id of the message's file registered under
    ``subject`` in ``registry`` (registered if missing, its imports as references, as
    :class:`~kafkalite.serialization.ProtobufSerializer` does). Null structs stay null.
    """
    _require_protobuf()
    descriptor = _descriptor(message_type)
    if not isinstance(message_type, type):
        raise ConfigError("struct_to_protobuf needs the generated message class")
    if schema_id is None:
        client = registry_client(registry)
        if client is None or subject is None:
            raise ConfigError("struct_to_protobuf needs schema_id, or registry and subject")
        from kafkalite.serialization.protobuf import ProtobufSerializer

        serializer = ProtobufSerializer(message_type, registry=client)
        schema_id = client.register_schema(subject, serializer._schema_for(subject, descriptor.file))
    indexes = encode_message_indexes(message_indexes(descriptor))
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    out: list[bytes | None] = []
    for row, value in enumerate(values.to_pylist()):
        if value is None:
            out.append(None)
            continue
        message = message_type()
        try:
            _fill(message, value)
            payload = message.SerializeToString()
        except SerializationError as exc:
            exc.message = f"row {row} does not match {descriptor.full_name}: {exc.message}"
            raise
        except Exception as exc:
            raise SerializationError(f"row {row} does not match {descriptor.full_name}: {exc}") from None
        out.append(frame(schema_id, payload, indexes))
    return pa.array(out, type=pa.binary())


def decode_protobuf_column(batch: Any, column: str = "value", message_type: Any = None, *,
                           registry: RegistrySource = None, mode: str = "FAILFAST", name: str | None = None) -> Any:
    """A RecordBatch with ``column`` (Protobuf bytes) replaced by its struct (or added as ``name``).

    A record that does not decode (``FAILFAST``) raises naming its row, and its topic,
    partition and offset when the batch has those columns.
    """
    return replace_column(batch, column, name,
                          lambda c: protobuf_to_struct(c, message_type, registry=registry, mode=mode))


def encode_protobuf_column(batch: Any, column: str, message_type: Any, *, schema_id: int | None = None,
                           registry: RegistrySource = None, subject: str | None = None,
                           name: str | None = None) -> Any:
    """A RecordBatch with the struct ``column`` replaced by its Protobuf bytes (or added as ``name``)."""
    return replace_column(batch, column, name, lambda c: struct_to_protobuf(
        c, message_type, schema_id=schema_id, registry=registry, subject=subject))
