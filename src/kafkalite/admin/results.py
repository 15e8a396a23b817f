"""Per-item results of admin calls: one failed item never hides the others.

Every admin call that acts on several items (topics, partitions, groups, config
resources, ACL filters, users ...) returns an :class:`AdminResult`: a read-only mapping
from each item's key (as the caller named it) to an :class:`ItemResult`, which holds
either the item's value or its typed :class:`~kafkalite.errors.KafkaError`. The call
itself only raises for what concerns the whole call (bad arguments, a closed client);
broker errors, timeouts and retriable errors that never cleared land on their items.

The blocking and asyncio clients return the same objects (the async call returns them
when every item is settled), so code reads the same in both:

Example::

    result = admin.create_topics([NewTopic("a", 3), NewTopic("b", 1)])
    for name, item in result.items():
        print(name, "ok" if item.ok else item.error)
    result["a"].result()          # the value, or raises the item's error
    result.all()                  # {name: value}, or raises AdminBatchError naming every failure
    result.raise_on_error()       # same check, returns the AdminResult for chaining
    result.errors                 # {name: error} of the failed items only

Item keys are the natural ones: topic names for topic calls, ``TopicPartition`` for
partition calls, group ids, :class:`~kafkalite.admin.types.ConfigResource` for config
calls, the filter or binding object for ACL calls, user names for SCRAM calls.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from kafkalite.errors import KafkaError

K = TypeVar("K")
V = TypeVar("V")


class ItemResult(Generic[V]):
    """The outcome of one item: a value or an error (future-like names: ``result()``,
    ``exception()``, so code written for confluent-kafka's futures reads the same)."""

    __slots__ = ("_error", "_value")

    def __init__(self, value: V | None = None, error: KafkaError | None = None) -> None:
        self._value = value
        self._error = error

    @property
    def ok(self) -> bool:
        return self._error is None

    @property
    def error(self) -> KafkaError | None:
        return self._error

    @property
    def value(self) -> V | None:
        """The value (None for a failed item; use :meth:`result` to raise instead)."""
        return self._value

    def result(self) -> V:
        """The value, or raise the item's error."""
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def exception(self) -> KafkaError | None:
        return self._error

    def __repr__(self) -> str:
        return f"ItemResult(error={self._error!r})" if self._error else f"ItemResult({self._value!r})"


class AdminBatchError(KafkaError):
    """Raised by :meth:`AdminResult.all` when some items failed.

    ``errors`` maps each failed item's key to its error; ``results`` is the whole
    :class:`AdminResult`, so the successful items stay reachable.
    """

    def __init__(self, what: str, errors: Mapping[Any, KafkaError], results: AdminResult[Any, Any]) -> None:
        self.errors = dict(errors)
        self.results = results
        first = next(iter(self.errors.values()))
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        super().__init__(f"{what}: {len(self.errors)} of {len(results)} failed; {first}{more}")
        # Retriable only if every failure is.
        self.retriable = all(e.retriable for e in self.errors.values())  # type: ignore[misc]


class AdminResult(Mapping[K, ItemResult[V]], Generic[K, V]):
    """Read-only mapping ``key -> ItemResult`` (see the module doc)."""

    def __init__(self, what: str, items: Mapping[K, ItemResult[V]]) -> None:
        self.what = what
        self._items = dict(items)

    def __getitem__(self, key: K) -> ItemResult[V]:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def ok(self) -> bool:
        """True when every item succeeded."""
        return all(item.ok for item in self._items.values())

    @property
    def errors(self) -> dict[K, KafkaError]:
        return {k: item.error for k, item in self._items.items() if item.error is not None}

    @property
    def succeeded(self) -> dict[K, V]:
        """The values of the items that succeeded."""
        return {k: item.value for k, item in self._items.items() if item.ok}  # type: ignore[misc]

    def all(self) -> dict[K, V]:
        """Every item's value, or raise :class:`AdminBatchError` naming each failure."""
        self.raise_on_error()
        return self.succeeded

    def raise_on_error(self) -> AdminResult[K, V]:
        errors = self.errors
        if errors:
            if len(errors) == 1 and len(self._items) == 1:
                raise next(iter(errors.values()))
            raise AdminBatchError(self.what, errors, self)
        return self

    def __repr__(self) -> str:
        return f"AdminResult({self.what}, {self._items!r})"
