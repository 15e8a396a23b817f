"""What the Avro, Protobuf and JSON Schema Arrow column helpers share: the pyarrow
check, the registry argument, the decode mode, replacing a batch's column, and naming
the Kafka record (topic, partition, offset) of a row that does not decode.

A decode helper raises a :class:`SerializationError` carrying the failing ``row``
(``exc.context["row"]``); :func:`locate` adds the record's topic, partition and
offset when the batch has those columns, as every batch that
``format("kafkalite")`` reads has::

    SerializationError: row 1 of the Protobuf column does not decode: ...
    (topic 'clicks' partition 2, offset 5124)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.errors import ConfigError, SerializationError
from kafkalite.serialization.registry_client import SchemaRegistryClient

try:
    import pyarrow as pa
except ImportError:  # pragma: no cover - exercised only without the extra
    pa = None

__all__ = ["RegistrySource", "check_mode", "locate", "registry_client", "replace_column", "require_pyarrow"]

RegistrySource = SchemaRegistryClient | Mapping[str, Any] | str | None


def require_pyarrow() -> None:
    if pa is None:
        raise ConfigError("Arrow helpers need pyarrow: pip install 'kafkalite[spark]' (or pyarrow)")


_CLIENTS: dict[Any, SchemaRegistryClient] = {}


def registry_client(registry: RegistrySource) -> SchemaRegistryClient | None:
    """A client for a client, its settings, or its URL (None stays None).

    Settings give the same client on every call (inside ``mapInArrow`` each batch
    passes the same dict), so its schema cache lasts as long as the Python worker.
    """
    if registry is None or isinstance(registry, SchemaRegistryClient):
        return registry
    try:
        key: Any = registry if isinstance(registry, str) else tuple(sorted(registry.items()))
        hash(key)
    except TypeError:  # a setting that is not hashable (a callable's closure ...): no sharing
        return SchemaRegistryClient(registry)
    client = _CLIENTS.get(key)
    if client is None:
        client = _CLIENTS[key] = SchemaRegistryClient(registry)
    return client


def check_mode(mode: str) -> str:
    upper = mode.upper()
    if upper not in ("FAILFAST", "PERMISSIVE"):
        raise ConfigError(f"mode must be FAILFAST or PERMISSIVE, got {mode!r}")
    return upper


def row_error(exc: Exception, row: int, what: str) -> SerializationError:
    """The error for ``row`` of a ``what`` column (a SerializationError keeps its type)."""
    if isinstance(exc, SerializationError):
        exc.message = f"row {row} of the {what} column: {exc.message}"
        exc.context["row"] = row
        return exc
    return SerializationError(f"row {row} of the {what} column does not decode: {exc}", row=row)


def locate(exc: SerializationError, batch: Any) -> SerializationError:
    """Name the Kafka record of ``exc``'s row when ``batch`` has topic/partition/offset."""
    row = exc.context.get("row")
    names = batch.schema.names
    if not isinstance(row, int) or not 0 <= row < batch.num_rows:
        return exc
    found = {c: batch.column(names.index(c))[row].as_py() for c in ("topic", "partition", "offset") if c in names}
    if "offset" in found:
        exc.context["offset"] = found["offset"]
        exc.with_context(resource=f"offset {found['offset']}")
    return exc.with_context(topic=found.get("topic"), partition=found.get("partition"))


def replace_column(batch: Any, column: str, name: str | None, convert: Callable[[Any], Any]) -> Any:
    """``batch`` with ``column`` replaced by ``convert(column)`` (or that added as ``name``)."""
    require_pyarrow()
    index = batch.schema.get_field_index(column)
    if index < 0:
        raise ConfigError(f"the batch has no column {column!r}; it has {batch.schema.names}")
    try:
        converted = convert(batch.column(index))
    except SerializationError as exc:
        raise locate(exc, batch) from None
    if name is None:
        return batch.set_column(index, column, converted)
    return batch.append_column(name, converted)
