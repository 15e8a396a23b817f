"""The built-in assignors by name, and ``partition.assignment.strategy`` resolved to assignors.

Java configs name assignors by protocol name (``range``, ``roundrobin``, ``sticky``,
``cooperative-sticky``) or by Java class name; a custom one is a class, an instance or
an importable ``"module.ClassName"``, checked here to have a ``name`` and ``assign()``
(Java's ``ConsumerPartitionAssignor.getAssignorInstances``). The registry lives apart
from :mod:`kafkalite.consumer.assignors.base` because the built-in assignors import
the base.

Example::

    from kafkalite.consumer.assignors import assignors_from_config, common_rebalance_protocol
    assignors = assignors_from_config("range,cooperative-sticky")
    common_rebalance_protocol(assignors)     # RebalanceProtocol.EAGER, until range goes
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import cast

from kafkalite.consumer.assignors.base import ConsumerPartitionAssignor, RebalanceProtocol
from kafkalite.consumer.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafkalite.consumer.assignors.range import RangeAssignor
from kafkalite.consumer.assignors.roundrobin import RoundRobinAssignor
from kafkalite.consumer.assignors.sticky import StickyAssignor
from kafkalite.errors import ConfigError
from kafkalite.plugins import instantiate

__all__ = ["JAVA_CLASS_NAMES", "assignor_by_name", "assignors_from_config", "common_rebalance_protocol"]

#: Java class names users copy from Java configs, mapped to our protocol names.
JAVA_CLASS_NAMES: dict[str, str] = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def _builtin_classes() -> dict[str, type[ConsumerPartitionAssignor]]:
    return {
        "range": RangeAssignor,
        "roundrobin": RoundRobinAssignor,
        "sticky": StickyAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }


_SETTING = "partition.assignment.strategy"


def _check_assignor(obj: object, origin: str) -> ConsumerPartitionAssignor:
    missing = [a for a in ("name", "assign") if not hasattr(obj, a)]
    if missing:
        raise ConfigError(
            f"{_SETTING}: {origin} is not a partition assignor (missing {', '.join(missing)})"
        )
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{_SETTING}: {origin} has no protocol name (set a non-empty `name`)")
    # A plugin is duck-typed, as Java's interface is implemented: it has name and assign().
    return cast(ConsumerPartitionAssignor, obj)


def assignor_by_name(name_or_class_or_instance: object) -> ConsumerPartitionAssignor:
    """Resolve one entry of ``partition.assignment.strategy`` to an assignor instance.

    Accepts the protocol names ``range``, ``roundrobin``, ``sticky`` and
    ``cooperative-sticky``; Java class names (``org.apache.kafka.clients.consumer.RangeAssignor``
    and the other three) so that Java configs work as they are; an assignor instance
    (returned as is); an assignor class (instantiated with no arguments); or an
    importable ``"package.module.ClassName"`` / ``"package.module:ClassName"``.

    Example::

        assignor_by_name("org.apache.kafka.clients.consumer.CooperativeStickyAssignor").name
        # 'cooperative-sticky'
    """
    value = name_or_class_or_instance
    if isinstance(value, str):
        text = value.strip()
        builtins = _builtin_classes()
        key = JAVA_CLASS_NAMES.get(text, text)
        if key in builtins:
            return builtins[key]()
        if "." in text or ":" in text:
            module_name, _, attr = text.rpartition(":") if ":" in text else text.rpartition(".")
            try:
                cls = getattr(importlib.import_module(module_name), attr)
            except (ImportError, AttributeError, ValueError) as exc:
                raise ConfigError(
                    f"{_SETTING}: cannot load assignor class {text!r} ({exc}); built-in names are "
                    f"{', '.join(builtins)}"
                ) from None
            return assignor_by_name(cls)
        raise ConfigError(
            f"{_SETTING}: unknown assignor {text!r}; use one of {', '.join(builtins)}, a Java "
            "assignor class name, or an importable 'module.ClassName'"
        )
    if isinstance(value, type):
        return _check_assignor(instantiate(_SETTING, value), value.__name__)
    return _check_assignor(value, repr(value))


def assignors_from_config(value: str | Iterable[object] | None) -> list[ConsumerPartitionAssignor]:
    """Resolve the whole ``partition.assignment.strategy`` value (a list or a
    comma-separated string) in order of preference; rejects an empty list and two
    assignors with the same protocol name."""
    items = [v for v in value.split(",") if v.strip()] if isinstance(value, str) else list(value or [])
    if not items:
        raise ConfigError(f"{_SETTING} must name at least one assignor when group.id is set")
    result: list[ConsumerPartitionAssignor] = []
    seen: set[str] = set()
    for item in items:
        assignor = assignor_by_name(item)
        if assignor.name in seen:
            raise ConfigError(f"{_SETTING} lists two assignors named {assignor.name!r}")
        seen.add(assignor.name)
        result.append(assignor)
    return result


def common_rebalance_protocol(assignors: Iterable[ConsumerPartitionAssignor]) -> RebalanceProtocol:
    """The rebalance protocol a member uses: the highest one supported by ALL its
    configured assignors (Java's ConsumerCoordinator rule), e.g. ``[range,
    cooperative-sticky]`` runs EAGER until range is removed from the list."""
    common: set[RebalanceProtocol] | None = None
    names = []
    for a in assignors:
        names.append(a.name)
        protocols = {RebalanceProtocol(p) for p in getattr(a, "supported_protocols", [RebalanceProtocol.EAGER])}
        common = protocols if common is None else common & protocols
    if not common:
        raise ConfigError(
            f"{_SETTING}: assignors {names} have no rebalance protocol in common"
        )
    return max(common)
