"""The API reference pages: mkdocstrings directives for each entry of ``public_api.PAGES``.

Classes and functions are rendered by mkdocstrings from their docstrings, under the path
of the module that defines them (``kafkalite.Producer`` is
``kafkalite.producer.producer.Producer``, the asyncio one
``kafkalite.producer.async_producer.AsyncProducer``); constants as a table of their values.

    from tools.docs.api_pages import render
    markdown = render(PAGES[0])
"""

from __future__ import annotations

import inspect
from typing import Any

from tools.docs.public_api import FIXTURES_MODULE, ApiPage, fixtures


def _target(obj: Any) -> str | None:
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return f"{obj.__module__}.{obj.__qualname__}"
    return None


def _heading(module: str, name: str, obj: Any) -> str:
    real = _target(obj)
    front = "asyncio" if module == "kafkalite.aio" else ""
    shown = f"{module}.{name}"
    return f"## `{shown}`" + (f" ({front})" if front else "") + (
        f"\n\nDefined in `{real.rsplit('.', 1)[0]}`." if real and not real.endswith(f".{name}") else "")


def render(page: ApiPage) -> str:
    """The page's markdown."""
    out = [f"# {page.title}", "", page.intro, ""]
    constants: list[tuple[str, Any]] = []
    for entry in page.entries:
        for name, obj in entry.resolved():
            target = _target(obj)
            if target is None:
                constants.append((f"{entry.module}.{name}", obj))
                continue
            out += [_heading(entry.module, name, obj), "", f"::: {target}", "    options:",
                    "      heading_level: 3", "      show_root_heading: false", ""]
    if page.slug == "testing":
        out += ["## pytest fixtures", "",
                f"Registered by the `{FIXTURES_MODULE}` plugin when `kafkalite[testing]` is installed.", ""]
        for name, _ in fixtures():
            out += [f"::: {FIXTURES_MODULE}.{name}", "    options:", "      heading_level: 3",
                    "      show_root_heading: true", "      show_root_full_path: false", ""]
    if constants:
        out += ["## Constants", "", "| name | value |", "|---|---|"]
        for name, value in constants:
            text = repr(value).replace("|", "\\|")
            out.append(f"| `{name}` | `{text[:120]}{'...' if len(text) > 120 else ''}` |")
    return "\n".join(out) + "\n"
