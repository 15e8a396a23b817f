"""kafkalite.plugins: how settings that take application code load, configure and
close it (interceptors, reporters, serializers, partitioners, assignors, providers)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kafkalite.errors import ConfigError
from kafkalite.plugins import close_each, configure_each, import_named, instantiate, load
from kafkalite.producer.interceptors import load_interceptors

HERE = __name__


class Plugin:
    def __init__(self) -> None:
        self.configured: tuple[Any, ...] | None = None
        self.closed = False

    def configure(self, *args: Any) -> None:
        self.configured = args

    def close(self) -> None:
        self.closed = True


class NeedsArguments:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint


class FailsToBuild:
    def __init__(self) -> None:
        raise OSError("no such endpoint")


INSTANCE = Plugin()


def test_import_named_takes_module_colon_attr_and_dotted_names_where_allowed() -> None:
    assert import_named("s", f"{HERE}:Plugin") is Plugin
    assert import_named("s", f"{HERE}.Plugin") is Plugin
    with pytest.raises(ConfigError, match=rf"setting 's': cannot load '{HERE}.Plugin'"):
        import_named("s", f"{HERE}.Plugin", dotted=False)
    with pytest.raises(ConfigError, match="setting 's': cannot load 'kafkalite_no_such_module:x'"):
        import_named("s", "kafkalite_no_such_module:x")


def test_load_imports_strings_instantiates_classes_and_passes_objects_through() -> None:
    assert load("s", f"{HERE}:INSTANCE") is INSTANCE
    built = load("s", f"{HERE}:Plugin")
    assert isinstance(built, Plugin) and built is not INSTANCE
    assert isinstance(load("s", Plugin), Plugin)
    anything = object()
    assert load("s", anything) is anything


def test_a_class_that_cannot_be_built_is_refused_naming_the_setting() -> None:
    with pytest.raises(ConfigError, match="setting 'x.y': cannot instantiate NeedsArguments"):
        instantiate("x.y", NeedsArguments)
    with pytest.raises(OSError):  # only TypeError by default: other failures are the class's own
        instantiate("x.y", FailsToBuild)
    with pytest.raises(ConfigError, match="setting 'x.y': cannot instantiate FailsToBuild: no such endpoint"):
        instantiate("x.y", FailsToBuild, failures=(Exception,))


def test_configure_and_close_reach_every_plugin_that_has_the_method(caplog: pytest.LogCaptureFixture) -> None:
    class BadClose(Plugin):
        def close(self) -> None:
            raise RuntimeError("cannot flush")

    first, bad, last = Plugin(), BadClose(), Plugin()
    configure_each([first, object(), last], {"a": 1}, True)
    assert first.configured == ({"a": 1}, True) and last.configured == ({"a": 1}, True)
    caplog.set_level(logging.ERROR, logger="test.plugins")
    close_each([first, bad, object(), last], "widget", logging.getLogger("test.plugins"))
    assert first.closed and last.closed
    assert any("closing widget" in r.getMessage() and "cannot flush" in (r.exc_text or "") for r in caplog.records)


def test_a_producer_interceptor_class_without_hooks_is_refused_as_an_object_is() -> None:
    class NoHooks:
        pass

    for spec in (NoHooks, NoHooks()):
        with pytest.raises(ConfigError, match="neither on_send nor on_acknowledgement"):
            load_interceptors([spec], {})
