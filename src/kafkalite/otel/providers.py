"""The values ``otel.tracer.provider`` and ``otel.meter.provider`` take.

* a provider object (a ``TracerProvider`` / ``MeterProvider``, anything with
  ``get_tracer()`` / ``get_meter()``);
* ``"global"``: OpenTelemetry's global provider (whatever ``opentelemetry-instrument``
  or the application's own setup installed);
* ``"module:attr"``: a provider, or a function without arguments returning one, found in
  an importable module. This is the form for places that pass settings as strings only
  (the Spark connector's ``kafka.*`` options, configuration files): the module builds
  the provider with its exporters, in whichever process the client runs (a Spark
  executor's Python worker, say). A function is called once per process and its
  provider shared by every client naming it.

Every other value is a :class:`~kafkalite.errors.ConfigError` naming the setting.

Example::

    # myapp/telemetry.py
    def tracer_provider():
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        return provider

    Producer({..., "otel.tracer.provider": "myapp.telemetry:tracer_provider"})
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kafkalite.errors import ConfigError
from kafkalite.plugins import import_named

__all__ = ["resolve_provider"]

_loaded: dict[tuple[str, str], Any] = {}  # ("module:attr", method) -> provider, one per process
_lock = threading.Lock()


def resolve_provider(setting: str, value: Any, method: str, global_provider: Callable[[], Any]) -> Any:
    """The provider ``value`` of ``setting`` stands for (see the module doc).

    Args:
        setting: the setting's name, for errors.
        value: what the setting holds.
        method: what a provider must have (``get_tracer`` or ``get_meter``).
        global_provider: returns OpenTelemetry's global provider.
    """
    kind = "TracerProvider" if method == "get_tracer" else "MeterProvider"
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == "global":
            return global_provider()
        if ":" not in text:
            raise ConfigError(f"setting '{setting}' must be a {kind}, 'global' or 'module:attr' naming one, "
                              f"got {value!r}")
        with _lock:
            provider = _loaded.get((text, method))
            if provider is None:
                provider = _loaded[(text, method)] = _load(setting, text, method, kind)
        return provider
    if not callable(getattr(value, method, None)):
        raise ConfigError(f"setting '{setting}' must be a {kind} (with {method}()), 'global' or 'module:attr', "
                          f"got {type(value).__name__}")
    return value


def _load(setting: str, spec: str, method: str, kind: str) -> Any:
    found = import_named(setting, spec, dotted=False)
    if not callable(getattr(found, method, None)) and callable(found):
        try:
            found = found()
        except Exception as exc:
            raise ConfigError(f"setting '{setting}': {spec!r} failed to build a {kind}: {exc!r}") from exc
    if not callable(getattr(found, method, None)):
        raise ConfigError(f"setting '{setting}': {spec!r} is not a {kind} (no {method}()) nor a function "
                          f"returning one, got {type(found).__name__}")
    return found
