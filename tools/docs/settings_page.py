"""The settings reference, generated from ``kafkalite.config``'s schema at build time.

One table per client kind: every setting it takes with its type, default (per kind),
valid values, meaning and snake_case alias; kafkalite's own settings (not in the Java
clients, ``config.KAFKALITE_ONLY``) are marked, and each kind lists the settings of other
kinds it refuses, with the reason ``parse()`` gives.

    from tools.docs.settings_page import render
    markdown = render()
"""

from __future__ import annotations

from typing import Any

from kafkalite import config

KINDS = (
    (config.PRODUCER, "Producer", "`kafkalite.Producer`, `kafkalite.aio.Producer`"),
    (config.CONSUMER, "Consumer", "`kafkalite.Consumer`, `kafkalite.aio.Consumer`"),
    (config.SHARE_CONSUMER, "Share consumer", "`kafkalite.ShareConsumer`, `kafkalite.aio.ShareConsumer`"),
    (config.ADMIN, "Admin client", "`kafkalite.AdminClient`, `kafkalite.aio.AdminClient`"),
)


def anchor(kind: str, name: str) -> str:
    """The HTML id of a setting's row (``producer-linger-ms``)."""
    return f"{kind}-{name}".replace(".", "-").replace("_", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def default_text(setting: config.Setting, kind: str) -> str:
    """The default as a reader would write it in a settings dict."""
    value: Any = setting.default_for(kind)
    if value is None:
        return "*(none)*"
    if setting.type == "password":
        return "*(none)*" if not value else "*(set)*"
    if isinstance(value, bool):
        return f"`{'true' if value else 'false'}`"
    if isinstance(value, list):
        return "`[]`" if not value else "`" + ", ".join(map(str, value)) + "`"
    if value == "":
        return '`""`'
    return f"`{value}`"


def valid_text(setting: config.Setting) -> str:
    """Valid values: the choices, the range, or what a list holds."""
    if setting.choices:
        return ", ".join(f"`{c}`" for c in setting.choices)
    if setting.min is not None or setting.max is not None:
        low = "" if setting.min is None else f"{setting.min:g}"
        high = "" if setting.max is None else f"{setting.max:g}"
        return f"{low} .. {high}" if low and high else (f">= {low}" if low else f"<= {high}")
    if setting.type == "list":
        return "list of plugins (objects, classes or `module:attr`)" if setting.items == "object" \
            else "list of strings, or one comma-separated string"
    if setting.type == "object":
        return "an object, or `module:attr` naming one"
    if setting.type == "bool":
        return "`true` / `false` (also `\"true\"`, `1`, ...)"
    return ""


def _table(kind: str) -> list[str]:
    rows = ["| setting | type | default | valid values | meaning |", "|---|---|---|---|---|"]
    for s in sorted((s for s in config.SETTINGS if kind in s.clients), key=lambda s: s.name):
        mark = " **kafkalite only**" if s.name in config.KAFKALITE_ONLY else ""
        rows.append(
            f'| <a id="{anchor(kind, s.name)}"></a>`{s.name}`<br><small>`{s.alias}`</small>{mark} '
            f"| {s.type} | {default_text(s, kind)} | {_cell(valid_text(s))} | {_cell(s.doc)} |")
    return rows


def _refused(kind: str) -> list[str]:
    refused = sorted((s for s in config.SETTINGS if kind not in s.clients), key=lambda s: s.name)
    if not refused:
        return []
    rows = ["", f"Settings of other clients that a {kind.replace('_', ' ')} refuses "
            "(`ConfigError` with this reason):", "", "| setting | why |", "|---|---|"]
    for s in refused:
        rows.append(f"| `{s.name}` | {_cell(config._refusal(s, kind))} |")
    return rows


def render() -> str:
    """The whole page as markdown."""
    out = [
        "# Settings reference",
        "",
        "Generated from `src/kafkalite/config.py` when the site is built. Every client takes its "
        "settings with the Java client's names (`{\"linger.ms\": 5}`) or as keyword arguments with the "
        "snake_case alias shown under each name (`linger_ms=5`), with the Java client's defaults. An "
        "unknown setting, a wrong type or a value out of range fails at construction with a "
        "`kafkalite.errors.ConfigError` naming the key (and the nearest known name).",
        "",
        "Settings marked **kafkalite only** are not in the Java clients. Settings the schema does not "
        "know are refused, as are settings of another kind of client (listed under each kind).",
        "",
        "```python",
        "from kafkalite import Producer",
        "",
        "producer = Producer({\"bootstrap.servers\": \"127.0.0.1:9092\", \"linger.ms\": 5}, acks=\"all\")",
        "```",
    ]
    for kind, title, classes in KINDS:
        count = sum(1 for s in config.SETTINGS if kind in s.clients)
        out += ["", f"## {title}", "", f"{count} settings, taken by {classes}.", "", *_table(kind), *_refused(kind)]
    return "\n".join(out) + "\n"
