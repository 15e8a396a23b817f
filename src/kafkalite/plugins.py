"""Plugins named in settings: how they are loaded, configured and closed, in one place.

Several settings take application code: ``interceptor.classes`` (producer and
consumer), ``metric.reporters``, ``partition.assignment.strategy``, the
(de)serializers, ``partitioner.class``, the OpenTelemetry providers. Each accepts an
object, a class (instantiated without arguments) or a ``"module:attr"`` string, as
Java's ``getConfiguredInstances`` does for class names; what the plugin must offer
differs per setting and is checked by its own module. What they share is here:

* :func:`import_named` imports ``"module:attr"`` (and, where Java class names are
  allowed, ``"package.module.Attr"``); a failure is a
  :class:`~kafkalite.errors.ConfigError` naming the setting and the spec;
* :func:`instantiate` calls a class without arguments, with the same kind of error;
* :func:`configure_each` calls ``configure(...)`` on every plugin that has one;
* :func:`close_each` calls ``close()`` on every plugin that has one: a plugin that
  raises is logged and the others are still closed (Java's ``Utils.closeQuietly``).

Example::

    spec = "mypackage.audit:AuditInterceptor"
    interceptor = load("interceptor.classes", spec)     # imported, then instantiated
    configure_each([interceptor], config)
    ...
    close_each([interceptor], "interceptor", log)
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from typing import Any

from kafkalite.errors import ConfigError

__all__ = ["close_each", "configure_each", "import_named", "instantiate", "load"]


def import_named(setting: str, spec: str, *, dotted: bool = True) -> Any:
    """The attribute ``spec`` names: ``"module:attr"``, or with ``dotted`` also
    ``"package.module.attr"``. Raises :class:`ConfigError` naming ``setting``."""
    module_name, sep, attr = spec.partition(":")
    if not sep and dotted:
        module_name, _, attr = spec.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name.strip()), attr.strip())
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"setting '{setting}': cannot load {spec!r}: {exc}") from None


def instantiate(setting: str, cls: type, *,
                failures: tuple[type[BaseException], ...] = (TypeError,)) -> Any:
    """``cls()``; ``failures`` raised by it become a :class:`ConfigError` naming ``setting``
    (by default only ``TypeError``: the class needs arguments)."""
    try:
        return cls()
    except failures as exc:
        raise ConfigError(f"setting '{setting}': cannot instantiate {cls.__name__}: {exc}") from None


def load(setting: str, spec: Any, *, dotted: bool = True,
         failures: tuple[type[BaseException], ...] = (TypeError,)) -> Any:
    """A plugin from a setting's value: a ``"module:attr"`` string is imported
    (:func:`import_named`), a class instantiated (:func:`instantiate`), anything else
    returned as it is; checking what it offers is the caller's job."""
    if isinstance(spec, str):
        spec = import_named(setting, spec, dotted=dotted)
    if isinstance(spec, type):
        return instantiate(setting, spec, failures=failures)
    return spec


def configure_each(plugins: Iterable[Any], *args: Any) -> None:
    """``plugin.configure(*args)`` for every plugin that has ``configure``."""
    for plugin in plugins:
        configure = getattr(plugin, "configure", None)
        if callable(configure):
            configure(*args)


def close_each(plugins: Iterable[Any], what: str, log: logging.Logger) -> None:
    """``plugin.close()`` for every plugin that has ``close``; one that raises is logged
    (``closing <what> <plugin> failed``) and the others are closed still."""
    for plugin in plugins:
        close = getattr(plugin, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                log.exception("closing %s %r failed", what, plugin)
