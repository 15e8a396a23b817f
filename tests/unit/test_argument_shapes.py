"""Every public method of the clients refuses an argument of the wrong shape, naming it.

A list where a mapping is documented, or a string where a list is, raises
InvalidArgumentTypeError (a TypeError) naming the method and the parameter before
anything is sent (kafkalite/arguments.py). The test walks the public API as the settings
test walks every setting: each public method of both fronts of each client, each of its
parameters annotated with container types, called with the wrong shape.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

import kafkalite
from kafkalite import aio
from kafkalite.arguments import Shape, shape_of, shapes_of
from kafkalite.errors import InvalidArgumentTypeError
from tools.docs.public_api import public_members

# No broker listens there: nothing is sent, the check comes first.
BOOT = {"bootstrap.servers": "127.0.0.1:1", "group.id": "shapes"}
CLIENTS = ("Producer", "Consumer", "ShareConsumer", "AdminClient")


def wrong_value(shape: Shape) -> Any:
    """A value of the wrong shape: a list where only a mapping fits, else a string."""
    if shape.mapping and not shape.collection:
        return ["x"]
    return b"x" if shape.string else "x"


def cases() -> Iterator[tuple[str, str, Shape]]:
    for name in CLIENTS:
        cls = getattr(kafkalite, name)
        for method, fn in public_members(cls):
            if isinstance(fn, property):
                continue
            for shape in shapes_of(inspect.unwrap(fn)):
                yield name, method, shape


def message(client: str, method: str, shape: Shape) -> str:
    """The start of the error: the method as defined (an alias names its original) and the parameter."""
    defined = inspect.unwrap(getattr(getattr(kafkalite, client), method)).__name__
    return rf"^{defined}\(\): '{shape.name}' must be"


CASES = list(cases())


def _settings(name: str) -> dict[str, Any]:
    return {k: v for k, v in BOOT.items() if k != "group.id" or "Consumer" in name}


def test_the_walk_finds_the_container_parameters() -> None:
    found = {(c, m, s.name) for c, m, s in CASES}
    assert ("AdminClient", "describe_configs", "config_names") in found
    assert ("AdminClient", "describe_topics", "topics") in found
    assert ("Consumer", "commit", "offsets") in found
    assert ("Producer", "send_offsets_to_transaction", "offsets") in found
    assert len(found) > 40


@pytest.mark.parametrize(("client", "method", "shape"), CASES, ids=[f"{c}.{m}.{s.name}" for c, m, s in CASES])
def test_blocking_front_refuses_wrong_shape(client: str, method: str, shape: Shape) -> None:
    with getattr(kafkalite, client)(_settings(client)) as instance, \
            pytest.raises(InvalidArgumentTypeError, match=message(client, method, shape)):
        getattr(instance, method)(**{shape.name: wrong_value(shape)})


async def test_asyncio_front_refuses_wrong_shape() -> None:
    for client in CLIENTS:
        instance = getattr(aio, client)(_settings(client))
        try:
            for name, method, shape in CASES:
                if name != client:
                    continue
                with pytest.raises(InvalidArgumentTypeError, match=message(client, method, shape)):
                    result = getattr(instance, method)(**{shape.name: wrong_value(shape)})
                    if inspect.isawaitable(result):
                        await result
        finally:
            await asyncio.wait_for(instance.close(), 30)


def test_describe_configs_names_the_parameter() -> None:
    # the case the issue found: a list of names where a mapping per resource is typed
    from kafkalite.admin import ConfigResource

    with kafkalite.AdminClient(_settings("AdminClient")) as admin, \
            pytest.raises(TypeError, match="'config_names' must be a mapping"):
        admin.describe_configs([ConfigResource("topic", "orders")], config_names=["retention.ms"])


@pytest.mark.parametrize(("annotation", "value", "ok"), [
    ("Mapping[str, int] | None", None, True),
    ("Mapping[str, int] | None", {"a": 1}, True),
    ("Mapping[str, int] | None", [("a", 1)], False),
    ("Iterable[str]", ["a"], True),
    ("Iterable[str]", ("a",), True),
    ("Iterable[str]", "a", False),
    ("Iterable[str]", {"a": 1}, False),
    ("Iterable[str] | str", "a", True),
    ("Iterable[TopicPartition]", 3, False),
    ("Mapping[str, Iterable[TopicPartition] | None] | Iterable[str]", ["g"], True),
    ("Mapping[str, Iterable[TopicPartition] | None] | Iterable[str]", "g", False),
])
def test_shape_rules(annotation: str, value: Any, ok: bool) -> None:
    shape = shape_of("p", 0, annotation)
    assert shape is not None
    assert shape.fits(value) is ok


def test_other_annotations_are_not_checked_here() -> None:
    assert shape_of("p", 0, "int") is None
    assert shape_of("p", 0, "Any") is None
    assert shape_of("p", 0, "TopicPartition | Iterable[TopicPartition]") is None
