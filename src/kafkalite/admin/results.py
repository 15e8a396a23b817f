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

Calls that ask every broker for a listing (``list_groups``, ``list_transactions``)
return a :class:`ListResult`: the list of what the brokers that answered know, with
``errors`` naming each broker that did not.

Item keys are the natural ones: topic names for topic calls, ``TopicPartition`` for
partition calls, group ids, :class:`~kafkalite.admin.types.ConfigResource` for config
calls, the filter or binding object for ACL calls, user names for SCRAM calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar, cast

from kafkalite.errors import KafkaError

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class ItemResult(Generic[V]):
    """The outcome of one item: a value or an error (future-like names: ``result()``,
    ``exception()``, so code written for confluent-kafka's futures reads the same).

    Example::

        result = admin.describe_topics(["orders", "missing"])
        assert result["orders"].ok and not result["missing"].ok
    """

    __slots__ = ("_error", "_value")

    def __init__(self, value: V | None = None, error: KafkaError | None = None) -> None:
        self._value = value
        self._error = error

    @property
    def ok(self) -> bool:
        """True when the item succeeded.

        Example::

            assert admin.describe_topics(["orders"])["orders"].ok
        """
        return self._error is None

    @property
    def error(self) -> KafkaError | None:
        """The item's error, or None when it succeeded.

        Example::

            item = admin.describe_topics(["missing"])["missing"]
            assert isinstance(item.error, UnknownTopicOrPartitionError)
        """
        return self._error

    @property
    def value(self) -> V | None:
        """The value (None for a failed item; use :meth:`result` to raise instead).

        Example::

            assert admin.describe_topics(["missing"])["missing"].value is None      # no raising
        """
        return self._value

    def result(self) -> V:
        """The value, or raise the item's error.

        Example::

            description = admin.describe_topics(["orders"])["orders"].result()     # raises the item's error
            assert description.name == "orders"
        """
        if self._error is not None:
            raise self._error
        # No error: the item holds its value (None for calls that give none).
        return cast(V, self._value)

    def exception(self) -> KafkaError | None:
        """The item's error, or None (``concurrent.futures.Future.exception()``'s name).

        Example::

            assert admin.describe_topics(["orders"])["orders"].exception() is None
        """
        return self._error

    def __repr__(self) -> str:
        # Short on purpose: a value such as CreateTopicResult carries every topic config.
        if self._error is not None:
            return f"ItemResult(error: {_short_error(self._error)})"
        if self._value is None:
            return "ItemResult(ok)"
        return f"ItemResult(ok: {_short_value(self._value)})"


class AdminBatchError(KafkaError):
    """Raised by :meth:`AdminResult.all` when some items failed.

    ``errors`` maps each failed item's key to its error; ``results`` is the whole
    :class:`AdminResult`, so the successful items stay reachable.

    Example::

        try:
            admin.describe_topics(["missing-1", "missing-2"]).all()
        except AdminBatchError as exc:
            print(sorted(exc.errors))                  # ['missing-1', 'missing-2']
    """

    def __init__(self, what: str, errors: Mapping[Any, KafkaError], results: AdminResult[Any, Any]) -> None:
        self.errors = dict(errors)
        self.results = results
        first = next(iter(self.errors.values()))
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        super().__init__(f"{what}: {len(self.errors)} of {len(results)} failed; {first}{more}")
        # Retriable only if every failure is.
        self.retriable = all(e.retriable for e in self.errors.values())


class AdminResult(Mapping[K, ItemResult[V]], Generic[K, V]):
    """Read-only mapping ``key -> ItemResult`` (see the module doc).

    Example::

        result = admin.describe_topics(["orders", "missing"])
        for name, item in result.items():
            print(name, item.ok)
    """

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
        """True when every item succeeded.

        Example::

            assert not admin.describe_topics(["orders", "missing"]).ok
        """
        return all(item.ok for item in self._items.values())

    @property
    def errors(self) -> dict[K, KafkaError]:
        """``{key: KafkaError}`` of the items that failed (empty when all succeeded).

        Example::

            errors = admin.describe_topics(["orders", "missing"]).errors
            assert list(errors) == ["missing"]
        """
        return {k: item.error for k, item in self._items.items() if item.error is not None}

    @property
    def succeeded(self) -> dict[K, V]:
        """The values of the items that succeeded.

        Example::

            found = admin.describe_topics(["orders", "missing"]).succeeded
            assert list(found) == ["orders"]
        """
        return {k: item.result() for k, item in self._items.items() if item.ok}

    def all(self) -> dict[K, V]:
        """Every item's value, or raise :class:`AdminBatchError` naming each failure.

        Example::

            descriptions = admin.describe_topics(["orders"]).all()      # raises if any item failed
            assert list(descriptions) == ["orders"]
        """
        self.raise_on_error()
        return self.succeeded

    def raise_on_error(self) -> AdminResult[K, V]:
        """Raise when an item failed, else return this result (to chain).

        One failed item of a one-item call raises that item's own error (e.g.
        ``TopicExistsError``); otherwise ``AdminBatchError`` naming every failure.

        Example::

            created = admin.create_topics([NewTopic("invoices", 3, 1)]).raise_on_error()
            try:
                admin.create_topics([NewTopic("invoices", 3, 1)]).raise_on_error()
            except TopicExistsError as exc:    # one item: its own error, not AdminBatchError
                print(exc)
        """
        errors = self.errors
        if errors:
            if len(errors) == 1 and len(self._items) == 1:
                raise next(iter(errors.values()))
            raise AdminBatchError(self.what, errors, self)
        return self

    def __repr__(self) -> str:
        """One short line: ``AdminResult(create_topics: 'orders' ok, 'audit' TopicExistsError)``.

        Up to :data:`_REPR_ITEMS` items are named; beyond that only counts and the first
        failures. Values are left out (use ``result.all()`` or ``result[key].value``).
        """
        items = list(self._items.items())
        if not items:
            return f"AdminResult({self.what}: no items)"
        failed = [(k, item) for k, item in items if not item.ok]
        if len(items) <= _REPR_ITEMS:
            body = ", ".join(f"{_short_key(k)} {'ok' if item.ok else type(item.error).__name__}"
                             for k, item in items)
        else:
            body = f"{len(items) - len(failed)} ok, {len(failed)} failed"
            if failed:
                shown = ", ".join(f"{_short_key(k)} {type(item.error).__name__}" for k, item in failed[:_REPR_ITEMS])
                body += ": " + shown + (", ..." if len(failed) > _REPR_ITEMS else "")
        return f"AdminResult({self.what}: {body})"



class ListResult(list[T]):
    """The answer of a call that asks every broker (``list_groups``, ``list_transactions``):
    a list of what the brokers that answered know, plus ``errors`` for those that did not.

    One broker that is down never hides what the others know (Java's
    ``ListConsumerGroupsResult`` has ``valid()`` and ``errors()`` for the same reason).
    It is a plain list, so ``for g in admin.list_groups()`` reads the same; check
    ``.ok`` / ``.errors``, or call ``.all()`` to get the list only when it is complete.

    Example::

        groups = admin.list_groups(timeout=5)
        for broker, error in groups.errors.items():     # {broker id: KafkaError}
            print(f"broker {broker} did not answer: {error}")
        names = [g.group_id for g in groups]            # what the others know
        complete = groups.all()                         # or raise AdminBatchError
    """

    def __init__(self, what: str, values: Iterable[T], by_broker: AdminResult[int, Any]) -> None:
        super().__init__(values)
        self.what = what
        self.by_broker = by_broker

    @property
    def errors(self) -> dict[int, KafkaError]:
        """``{broker id: error}`` of the brokers that did not answer.

        Example::

            assert admin.list_groups().errors == {}      # {broker id: error} of brokers that did not answer
        """
        return self.by_broker.errors

    @property
    def ok(self) -> bool:
        """True when every broker answered (the list is complete).

        Example::

            assert admin.list_groups().ok
        """
        return self.by_broker.ok

    def raise_on_error(self) -> ListResult[T]:
        """Raise :class:`AdminBatchError` (``.errors`` by broker) unless every broker answered.

        Example::

            groups = admin.list_groups().raise_on_error()   # the same list, once it is complete
        """
        if not self.ok:
            raise AdminBatchError(self.what, self.errors, self.by_broker)
        return self

    def all(self) -> list[T]:
        """The complete list as a plain list, or raise :class:`AdminBatchError`.

        Example::

            groups = admin.list_groups().all()           # raises if a broker did not answer
            print([g.group_id for g in groups])
        """
        self.raise_on_error()
        return list(self)

    def __repr__(self) -> str:
        if self.ok:
            return super().__repr__()
        failed = ", ".join(f"broker {b} {type(e).__name__}" for b, e in self.errors.items())
        return f"ListResult({self.what}: {len(self)} listed, incomplete: {failed})"


_REPR_ITEMS = 5
_REPR_WIDTH = 80


def _clip(text: str, width: int = _REPR_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _short_key(key: Any) -> str:
    """Item keys as people write them: 'orders', orders-0, topic 'orders', 1."""
    return repr(key) if isinstance(key, str) else _clip(str(key), 60)


def _short_error(error: BaseException) -> str:
    return f"{type(error).__name__}: {_clip(str(error))}"


def _short_value(value: Any) -> str:
    """The value's repr when it is short, else its type (and size for containers)."""
    text = repr(value)
    if len(text) <= _REPR_WIDTH:
        return text
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return f"{type(value).__name__} of {len(value)}"
    return f"{type(value).__name__}(...)"
