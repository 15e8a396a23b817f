"""What ``otel.tracer.provider`` / ``otel.meter.provider`` accept: objects, 'global',
'module:attr' (an object or a function, built once per process), and clear errors."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from kafkalite.errors import ConfigError
from kafkalite.otel.metrics import resolve_meter_provider
from kafkalite.otel.providers import resolve_provider
from kafkalite.otel.tracing import Tracing

HERE = __name__
PROVIDER = TracerProvider()
METER_PROVIDER = MeterProvider()
NOT_A_PROVIDER = 42
built: list[Any] = []


def build_provider() -> TracerProvider:
    provider = TracerProvider()
    built.append(provider)
    return provider


def broken_factory() -> TracerProvider:
    raise RuntimeError("no exporter endpoint")


def tracer(value: Any) -> Any:
    return resolve_provider("otel.tracer.provider", value, "get_tracer", trace.get_tracer_provider)


def test_objects_and_global() -> None:
    assert tracer(PROVIDER) is PROVIDER
    assert tracer("global") is trace.get_tracer_provider()
    assert tracer(" GLOBAL ") is trace.get_tracer_provider()
    assert resolve_meter_provider("global") is metrics.get_meter_provider()
    assert resolve_meter_provider(METER_PROVIDER) is METER_PROVIDER


def test_module_attr_names_an_object_or_a_function_called_once_per_process() -> None:
    assert tracer(f"{HERE}:PROVIDER") is PROVIDER
    assert resolve_meter_provider(f"{HERE}:METER_PROVIDER") is METER_PROVIDER
    first = tracer(f"{HERE}:build_provider")
    assert tracer(f" {HERE}:build_provider ") is first is Tracing(f"{HERE}:build_provider").provider
    assert built == [first]


@pytest.mark.parametrize(("value", "message"), [
    ("globl", "setting 'otel.tracer.provider' must be a TracerProvider, 'global' or 'module:attr' naming one, "
              "got 'globl'"),
    (object(), "setting 'otel.tracer.provider' must be a TracerProvider (with get_tracer()), 'global' or "
               "'module:attr', got object"),
    ("kafkalite_no_such_module:provider", "setting 'otel.tracer.provider': cannot load "
                                          "'kafkalite_no_such_module:provider': No module named"),
    (f"{HERE}:missing", f"setting 'otel.tracer.provider': cannot load '{HERE}:missing': module"),
    (f"{HERE}:NOT_A_PROVIDER", f"setting 'otel.tracer.provider': '{HERE}:NOT_A_PROVIDER' is not a "
                               "TracerProvider (no get_tracer()) nor a function returning one, got int"),
    (f"{HERE}:METER_PROVIDER", "is not a TracerProvider (no get_tracer())"),
    (f"{HERE}:broken_factory", f"setting 'otel.tracer.provider': '{HERE}:broken_factory' failed to build a "
                               "TracerProvider: RuntimeError('no exporter endpoint')"),
])
def test_bad_values_are_config_errors_naming_the_setting(value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        tracer(value)
    assert message in str(info.value)


def test_meter_provider_errors_name_their_setting() -> None:
    with pytest.raises(ConfigError, match=r"setting 'otel.meter.provider': .*is not a MeterProvider \(no get_meter"):
        resolve_meter_provider(f"{HERE}:PROVIDER")
    with pytest.raises(ConfigError, match="setting 'otel.meter.provider' must be a MeterProvider, 'global'"):
        resolve_meter_provider("prometheus")
