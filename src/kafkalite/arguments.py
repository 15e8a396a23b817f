"""Arguments of the wrong shape are refused at the public API, naming the parameter.

A list where a mapping is documented (``describe_configs(config_names=["retention.ms"])``)
or a string where a list is (``describe_topics("orders")``, which would ask for the
topics ``o``, ``r``, ``d`` ...) would otherwise be misread silently. The clients' front
classes derive from :class:`ShapeChecked`: every public method of theirs with a
parameter annotated only with container types (``Mapping``, ``Iterable``, ``Sequence``
..., ``None``, and ``str`` where a single name is allowed) checks that argument's shape
before it runs, and raises :class:`~kafkalite.errors.InvalidArgumentTypeError` (a
``TypeError``) naming the method and the parameter. Parameters with any other type are
not checked here (their values are checked where they are used), and methods without
such parameters are not wrapped at all, so ``send()`` and ``poll()`` cost nothing more.

The annotations are read as text (modules use ``from __future__ import annotations``),
so nothing is evaluated at import.

Example::

    from kafkalite import AdminClient

    with AdminClient({"bootstrap.servers": "127.0.0.1:9092"}) as admin:
        admin.describe_configs([resource], config_names=["retention.ms"])
        # InvalidArgumentTypeError: describe_configs(): 'config_names' must be a mapping
        # or None (Mapping[ConfigResource, Sequence[str]] | None), not list
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import InvalidArgumentTypeError

_MAPPINGS = frozenset({"Mapping", "MutableMapping", "dict"})
_COLLECTIONS = frozenset({"Iterable", "Sequence", "Collection", "list", "set", "frozenset", "tuple",
                          "AbstractSet", "MutableSequence"})
_MISSING = object()


@dataclass(frozen=True)
class Shape:
    """What one parameter accepts, from its annotation."""

    name: str
    position: int  # index among the positional arguments after self; -1: keyword-only
    annotation: str
    mapping: bool  # a Mapping is accepted
    collection: bool  # an iterable that is not a str / bytes / mapping is accepted
    string: bool  # a str is accepted (a single name)
    none: bool

    def fits(self, value: Any) -> bool:
        """Whether ``value`` has a shape the annotation allows."""
        if value is None:
            return self.none
        if isinstance(value, Mapping):
            # a mapping iterates its keys: where only a collection is documented it is a mistake
            return self.mapping
        if isinstance(value, (str, bytes)):
            return isinstance(value, str) and self.string
        return self.collection and isinstance(value, Iterable)

    @property
    def expected(self) -> str:
        """What the parameter takes, in words."""
        kinds = (["a mapping"] if self.mapping else []) + (["a list or other collection"] if self.collection else [])
        kinds += ["a single str"] if self.string else []
        kinds += ["None"] if self.none else []
        return " or ".join(kinds)


def _split_union(annotation: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(annotation):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(annotation[start:i].strip())
            start = i + 1
    parts.append(annotation[start:].strip())
    return parts


def shape_of(name: str, position: int, annotation: Any) -> Shape | None:
    """The shape a parameter's annotation asks for, or None when it is not only containers."""
    if not isinstance(annotation, str):
        return None
    mapping = collection = string = none = False
    for part in _split_union(annotation):
        outer = part.split("[", 1)[0].strip().rsplit(".", 1)[-1]
        if outer in _MAPPINGS:
            mapping = True
        elif outer in _COLLECTIONS:
            collection = True
        elif outer == "None":
            none = True
        elif outer == "str":
            string = True
        else:
            return None  # another type: checked where it is used
    if not (mapping or collection):
        return None
    return Shape(name, position, annotation, mapping, collection, string, none)


def shapes_of(fn: Callable[..., Any]) -> list[Shape]:
    """The checked parameters of a function (its first parameter, self, left out)."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    out = []
    for i, p in enumerate(params):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        position = i if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else -1
        shape = shape_of(p.name, position, p.annotation)
        if shape is not None:
            out.append(shape)
    return out


def _check(where: str, shapes: list[Shape], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for shape in shapes:
        if 0 <= shape.position < len(args):
            value = args[shape.position]
        else:
            value = kwargs.get(shape.name, _MISSING)
            if value is _MISSING:
                continue
        if not shape.fits(value):
            raise InvalidArgumentTypeError(
                f"{where}(): '{shape.name}' must be {shape.expected} ({shape.annotation}), "
                f"not {type(value).__name__}")


def checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` checking the shape of its container parameters first (``fn`` itself if none)."""
    shapes = shapes_of(fn)
    if not shapes:
        return fn
    where = fn.__name__
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def checked_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            _check(where, shapes, args, kwargs)
            return await fn(self, *args, **kwargs)
        return checked_async

    @functools.wraps(fn)
    def checked_sync(self: Any, *args: Any, **kwargs: Any) -> Any:
        _check(where, shapes, args, kwargs)
        return fn(self, *args, **kwargs)
    return checked_sync


class ShapeChecked:
    """Base of the clients' fronts: their public methods check their arguments' shapes.

    Each class deriving from it has its own public methods wrapped by :func:`checked`
    when it is defined (the bases' methods are wrapped where the bases are defined).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(value):
                wrapped = checked(value)
                if wrapped is not value:
                    setattr(cls, name, wrapped)
