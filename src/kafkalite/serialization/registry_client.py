"""A client of the Confluent Schema Registry REST API (and compatible servers).

Works with Confluent's Schema Registry and with Apicurio Registry's ``/apis/ccompat/v7``
(what ``kafkalite.testing`` runs). Everything it learns is cached, so serializers
ask the registry once per schema and deserializers once per schema id:

* schema id -> schema (ids never change meaning),
* (subject, schema) -> id and version (from register / lookup),
* (subject, version) -> registered schema, for numbered versions,
* subject -> latest version, for ``latest.cache.ttl.sec`` (default: for ever).

Example::

    from kafkalite.serialization import Schema, SchemaRegistryClient

    registry = SchemaRegistryClient({"schema.registry.url": "http://127.0.0.1:8081"})
    schema_id = registry.register_schema("orders-value", Schema(avro_text, "AVRO"))
    registry.get_schema(schema_id).schema_str == avro_text        # True
    registry.test_compatibility("orders-value", Schema(newer_text)).is_compatible

Errors are :class:`~kafkalite.serialization.errors.SchemaRegistryError` subclasses
naming the subject, version or id; see :mod:`kafkalite.serialization.errors`.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any, Generic, TypeVar

from kafkalite.serialization.errors import (
    SchemaRegistryError,
    SubjectNotFoundError,
    UnknownSchemaIdError,
    VersionNotFoundError,
)
from kafkalite.serialization.registry_http import RegistrySettings, RestClient
from kafkalite.serialization.registry_types import (
    CompatibilityResult,
    RegisteredSchema,
    Schema,
)

__all__ = ["SchemaRegistryClient"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

COMPATIBILITY_LEVELS = (
    "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE",
)


class _LRU(Generic[K, V]):
    """A small thread-safe LRU map (the caches must not grow without bound)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def discard_if(self, predicate: Any) -> None:
        with self._lock:
            for key in [k for k in self._data if predicate(k)]:
                del self._data[key]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def _subject_path(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


class SchemaRegistryClient:
    """Confluent-compatible Schema Registry client with caching and retries.

    Args:
        config: the registry settings (``schema.registry.url``, auth, TLS, retries,
            caches; see :mod:`kafkalite.serialization.registry_http`), or just the URL.

    Thread-safe: one client may serve all the serializers and deserializers of a
    process (they then share its caches).

    Example (needs schema_registry)::

        registry = SchemaRegistryClient({"schema.registry.url": registry_url, "max.retries": 2})
        schema_id = registry.register_schema("users-value", Schema('"string"'))
        assert registry.get_schema(schema_id).schema_str == '"string"'
    """

    def __init__(self, config: Mapping[str, Any] | str) -> None:
        if isinstance(config, str):
            config = {"url": config}
        self.settings = RegistrySettings.parse(config)
        self._rest = RestClient(self.settings)
        capacity = self.settings.cache_capacity
        self._by_id: _LRU[int, Schema] = _LRU(capacity)
        self._by_schema: _LRU[tuple[str, Schema, bool], RegisteredSchema] = _LRU(capacity)
        self._by_version: _LRU[tuple[str, int], RegisteredSchema] = _LRU(capacity)
        self._latest: _LRU[str, tuple[float, RegisteredSchema]] = _LRU(capacity)

    def __repr__(self) -> str:
        return f"SchemaRegistryClient({', '.join(self.settings.urls)!r})"

    @property
    def url(self) -> str:
        """The first configured URL.

        Example::

            assert SchemaRegistryClient("http://registry.example:8081").url == "http://registry.example:8081"
        """
        return self.settings.urls[0]

    # -- schemas and ids ---------------------------------------------------------

    def register_schema(self, subject: str, schema: Schema, normalize: bool = False) -> int:
        """Register ``schema`` under ``subject`` (a no-op if it is there); return its id.

        Raises:
            IncompatibleSchemaError: the subject's compatibility rule refuses it.
            InvalidSchemaError: the registry cannot parse it (or a reference).

        Example (needs schema_registry)::

            first = registry.register_schema("registered-value", Schema('"string"'))
            assert registry.register_schema("registered-value", Schema('"string"')) == first   # already there
        """
        return self.register_schema_full_response(subject, schema, normalize).schema_id

    def register_schema_full_response(self, subject: str, schema: Schema, normalize: bool = False) -> RegisteredSchema:
        """Like :meth:`register_schema`, returning the id and, when known, the version.

        Example (needs schema_registry)::

            registered = registry.register_schema_full_response("full-value", Schema('"string"'))
            print(registered.schema_id, registered.version)
        """
        key = (subject, schema, normalize)
        cached = self._by_schema.get(key)
        if cached is not None:
            return cached
        answer = self._rest.request(
            "POST", f"/subjects/{_subject_path(subject)}/versions", schema.to_json(),
            query={"normalize": normalize} if normalize else None,
            not_found=SubjectNotFoundError, context={"subject": subject})
        schema_id = int(answer["id"])
        version = int(answer.get("version", -1)) if isinstance(answer, dict) else -1
        registered = RegisteredSchema(schema_id, schema, subject, version)
        self._by_schema.put(key, registered)
        self._by_id.put(schema_id, schema)
        return registered

    def lookup_schema(self, subject: str, schema: Schema, normalize: bool = False,
                      deleted: bool = False) -> RegisteredSchema:
        """The id and version of ``schema`` under ``subject``, without registering it.

        Raises:
            SubjectNotFoundError: no such subject.
            SchemaNotFoundError: the subject has no version with this schema.

        Example (needs schema_registry)::

            registry.register_schema("looked-up-value", Schema('"string"'))
            found = registry.lookup_schema("looked-up-value", Schema('"string"'))
            assert found.version == 1
        """
        key = (subject, schema, normalize)
        cached = self._by_schema.get(key)
        if cached is not None and cached.version >= 0:
            return cached
        answer = self._rest.request(
            "POST", f"/subjects/{_subject_path(subject)}", schema.to_json(),
            query={"normalize": normalize or None, "deleted": deleted or None},
            context={"subject": subject})
        registered = RegisteredSchema.from_json(answer, subject)
        # Keep the caller's text: the registry may answer with a normalized copy.
        registered = RegisteredSchema(registered.schema_id, schema, registered.subject, registered.version)
        self._by_schema.put(key, registered)
        self._by_id.put(registered.schema_id, schema)
        return registered

    def get_schema(self, schema_id: int, subject_name: str | None = None, fmt: str | None = None) -> Schema:
        """The schema with this global id (cached for ever: ids never change meaning).

        Raises:
            UnknownSchemaIdError: no schema has this id.

        Example (needs schema_registry)::

            schema_id = registry.register_schema("numbers-value", Schema('"double"'))
            assert registry.get_schema(schema_id).schema_str == '"double"'     # cached for ever
        """
        cached = self._by_id.get(schema_id)
        if cached is not None and fmt is None:
            return cached
        answer = self._rest.request(
            "GET", f"/schemas/ids/{int(schema_id)}", query={"subject": subject_name, "format": fmt},
            not_found=UnknownSchemaIdError, context={"schema_id": schema_id})
        schema = Schema.from_json(answer)
        if fmt is None:
            self._by_id.put(schema_id, schema)
        return schema

    def get_subjects_by_schema_id(self, schema_id: int, deleted: bool = False) -> list[str]:
        """The subjects that use the schema with this id.

        Example (needs schema_registry)::

            schema_id = registry.register_schema("shared-value", Schema('"float"'))
            assert "shared-value" in registry.get_subjects_by_schema_id(schema_id)
        """
        try:
            return list(self._rest.request(
                "GET", f"/schemas/ids/{int(schema_id)}/subjects", query={"deleted": deleted or None},
                not_found=UnknownSchemaIdError, context={"schema_id": schema_id}))
        except UnknownSchemaIdError as exc:
            if exc.error_code > 0:
                raise
            # Apicurio's ccompat API has only the /versions form of this call.
            return sorted({s for s, _ in self.get_subject_versions_by_schema_id(schema_id, deleted)})

    def get_subject_versions_by_schema_id(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """The (subject, version) pairs that use the schema with this id.

        Example (needs schema_registry)::

            schema_id = registry.register_schema("pairs-value", Schema('"bytes"'))
            assert ("pairs-value", 1) in registry.get_subject_versions_by_schema_id(schema_id)
        """
        answer = self._rest.request(
            "GET", f"/schemas/ids/{int(schema_id)}/versions", query={"deleted": deleted or None},
            not_found=UnknownSchemaIdError, context={"schema_id": schema_id})
        return [(str(entry["subject"]), int(entry["version"])) for entry in answer]

    def get_schema_types(self) -> list[str]:
        """The schema types the registry supports (``["AVRO", "JSON", "PROTOBUF"]``).

        Example (needs schema_registry)::

            assert "AVRO" in registry.get_schema_types()
        """
        return list(self._rest.request("GET", "/schemas/types"))

    # -- subjects and versions -----------------------------------------------------

    def get_subjects(self, deleted: bool = False) -> list[str]:
        """Every subject (``deleted=True`` includes soft-deleted ones).

        Example (needs schema_registry)::

            registry.register_schema("listed-value", Schema('"string"'))
            assert "listed-value" in registry.get_subjects()
        """
        return list(self._rest.request("GET", "/subjects", query={"deleted": deleted or None}))

    def get_versions(self, subject: str, deleted: bool = False) -> list[int]:
        """The version numbers of ``subject``, oldest first.

        Example (needs schema_registry)::

            registry.register_schema("counted-value", Schema('"string"'))
            assert registry.get_versions("counted-value") == [1]
        """
        return [int(v) for v in self._rest.request(
            "GET", f"/subjects/{_subject_path(subject)}/versions", query={"deleted": deleted or None},
            not_found=SubjectNotFoundError, context={"subject": subject})]

    def get_version(self, subject: str, version: int | str = "latest", deleted: bool = False) -> RegisteredSchema:
        """One version of a subject (``"latest"`` or a number); numbered ones are cached.

        Example (needs schema_registry)::

            registry.register_schema("versioned-value", Schema('"string"'))
            assert registry.get_version("versioned-value", 1).schema.schema_str == '"string"'
        """
        if version == "latest":
            return self.get_latest_version(subject)
        number = int(version)
        cached = self._by_version.get((subject, number))
        if cached is not None and not deleted:
            return cached
        answer = self._rest.request(
            "GET", f"/subjects/{_subject_path(subject)}/versions/{number}", query={"deleted": deleted or None},
            not_found=VersionNotFoundError, context={"subject": subject, "version": number})
        registered = RegisteredSchema.from_json(answer, subject)
        self._by_version.put((subject, number), registered)
        self._by_id.put(registered.schema_id, registered.schema)
        return registered

    def get_latest_version(self, subject: str) -> RegisteredSchema:
        """The newest version of ``subject``, reused for ``latest.cache.ttl.sec``.

        Example (needs schema_registry)::

            registry.register_schema("latest-value", Schema('"string"'))
            assert registry.get_latest_version("latest-value").version == 1
        """
        ttl = self.settings.latest_ttl_s
        cached = self._latest.get(subject)
        if cached is not None and (ttl < 0 or time.monotonic() - cached[0] < ttl):
            return cached[1]
        answer = self._rest.request(
            "GET", f"/subjects/{_subject_path(subject)}/versions/latest",
            not_found=SubjectNotFoundError, context={"subject": subject, "version": "latest"})
        registered = RegisteredSchema.from_json(answer, subject)
        self._latest.put(subject, (time.monotonic(), registered))
        self._by_version.put((subject, registered.version), registered)
        self._by_id.put(registered.schema_id, registered.schema)
        return registered

    def get_referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the schemas that reference this subject version.

        Example (needs schema_registry)::

            registry.register_schema("shop.Id", Schema('{"type": "fixed", "name": "Id", "namespace": "shop", "size": 4}'))
            user = Schema('{"type": "record", "name": "User", "fields": [{"name": "id", "type": "shop.Id"}]}',
                          references=(SchemaReference("shop.Id", "shop.Id", 1),))
            user_id = registry.register_schema("users-ref-value", user)
            assert user_id in registry.get_referenced_by("shop.Id", 1)
        """
        return [int(v) for v in self._rest.request(
            "GET", f"/subjects/{_subject_path(subject)}/versions/{int(version)}/referencedby",
            not_found=VersionNotFoundError, context={"subject": subject, "version": version})]

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete a subject (``permanent=True``: hard-delete a soft-deleted one).

        Returns the versions deleted. A hard delete needs a soft delete first
        (Confluent's rule); ``permanent=True`` does both.

        Example (needs schema_registry)::

            registry.register_schema("temporary-value", Schema('"string"'))
            assert registry.delete_subject("temporary-value") == [1]          # soft: the versions deleted
            registry.delete_subject("temporary-value", permanent=True)        # then hard
        """
        path = f"/subjects/{_subject_path(subject)}"
        context = {"subject": subject}
        if permanent:
            try:
                self._rest.request("DELETE", path, not_found=SubjectNotFoundError, context=context)
            except SchemaRegistryError as exc:
                if exc.error_code not in (40401, 40404):
                    raise  # else already soft-deleted
        answer = self._rest.request("DELETE", path, query={"permanent": permanent or None},
                                    not_found=SubjectNotFoundError, context=context)
        self._forget_subject(subject)
        return [int(v) for v in answer or ()]

    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> int:
        """Soft-delete one version (``permanent=True``: soft then hard); return its number.

        Example (needs schema_registry)::

            registry.register_schema("draft-value", Schema('"string"'))
            assert registry.delete_version("draft-value", 1) == 1
        """
        path = f"/subjects/{_subject_path(subject)}/versions/{version}"
        context = {"subject": subject, "version": version}
        if permanent:
            try:
                self._rest.request("DELETE", path, not_found=VersionNotFoundError, context=context)
            except SchemaRegistryError as exc:
                if exc.error_code not in (40402, 40406):
                    raise  # else already soft-deleted
        answer = self._rest.request("DELETE", path, query={"permanent": permanent or None},
                                    not_found=VersionNotFoundError, context=context)
        self._forget_subject(subject)
        return int(answer)

    def _forget_subject(self, subject: str) -> None:
        self._latest.discard_if(lambda k: k == subject)
        self._by_version.discard_if(lambda k: k[0] == subject)
        self._by_schema.discard_if(lambda k: k[0] == subject)

    # -- compatibility -------------------------------------------------------------

    def test_compatibility(self, subject: str, schema: Schema, version: int | str = "latest") -> CompatibilityResult:
        """Would ``schema`` be accepted as a new version of ``subject``?

        Compares with ``version`` (default the latest) under the subject's rule. A
        subject that does not exist yet accepts anything. The result is true when
        compatible; ``messages`` explains a refusal when the registry says why.

        Example (needs schema_registry)::

            registry.register_schema("evolving-value", Schema('{"type": "record", "name": "E", "fields": []}'))
            newer = Schema('{"type": "record", "name": "E", "fields": [{"name": "x", "type": "int", "default": 0}]}')
            assert registry.test_compatibility("evolving-value", newer).is_compatible
        """
        try:
            answer = self._rest.request(
                "POST", f"/compatibility/subjects/{_subject_path(subject)}/versions/{version}",
                schema.to_json(), query={"verbose": True},
                not_found=SubjectNotFoundError, context={"subject": subject, "version": version})
        except (SubjectNotFoundError, VersionNotFoundError):
            return CompatibilityResult(True)
        messages = answer.get("messages") or ()
        return CompatibilityResult(bool(answer.get("is_compatible")), tuple(str(m) for m in messages))

    def get_compatibility(self, subject: str | None = None) -> str:
        """The compatibility level of ``subject`` (its own, else the global one).

        Example (needs schema_registry)::

            registry.register_schema("levels-value", Schema('"string"'))
            print(registry.get_compatibility("levels-value"))       # the global level: BACKWARD by default
        """
        path = f"/config/{_subject_path(subject)}" if subject else "/config"
        query = {"defaultToGlobal": True} if subject else None
        context = {"subject": subject} if subject else {}
        try:
            answer = self._rest.request("GET", path, query=query, not_found=SubjectNotFoundError, context=context)
        except SubjectNotFoundError:
            if subject is None:
                raise
            return self.get_compatibility(None)
        return str(answer.get("compatibilityLevel") or answer.get("compatibility"))

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        """Set the compatibility level of ``subject`` (or the global one); return it.

        Example (needs schema_registry)::

            registry.register_schema("strict-value", Schema('"string"'))
            assert registry.set_compatibility("FULL", "strict-value") == "FULL"
        """
        level = level.upper()
        if level not in COMPATIBILITY_LEVELS:
            raise SchemaRegistryError(
                f"unknown compatibility level {level!r}; one of {', '.join(COMPATIBILITY_LEVELS)}",
                subject=subject)
        path = f"/config/{_subject_path(subject)}" if subject else "/config"
        answer = self._rest.request("PUT", path, {"compatibility": level},
                                    context={"subject": subject} if subject else {})
        return str(answer.get("compatibility") or answer.get("compatibilityLevel") or level)

    def delete_compatibility(self, subject: str) -> None:
        """Drop the subject's own level (it follows the global one again).

        Example (needs schema_registry)::

            registry.register_schema("relaxed-value", Schema('"string"'))
            registry.set_compatibility("NONE", "relaxed-value")
            registry.delete_compatibility("relaxed-value")   # follows the global level again
        """
        self._rest.request("DELETE", f"/config/{_subject_path(subject)}",
                           not_found=SubjectNotFoundError, context={"subject": subject})

    # -- lifecycle -----------------------------------------------------------------

    def clear_caches(self) -> None:
        """Forget everything cached (the next calls ask the registry again).

        Example (needs schema_registry)::

            registry.register_schema("cached-value", Schema('"string"'))
            registry.clear_caches()                       # the next calls ask the registry again
            assert registry.get_versions("cached-value") == [1]
        """
        for cache in (self._by_id, self._by_schema, self._by_version, self._latest):
            cache.clear()

    def close(self) -> None:
        """Release the client (it holds no connection between calls; caches are cleared).

        Example (needs schema_registry)::

            client = SchemaRegistryClient(registry_url)
            client.get_subjects()
            client.close()
        """
        self.clear_caches()

    def __enter__(self) -> SchemaRegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
