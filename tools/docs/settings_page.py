"""The settings reference, generated from ``kafkalite.config``'s schema at build time.

One index per client kind (every setting it takes, its type and default for that kind,
and the settings of other kinds it refuses with the reason ``parse()`` gives), then one
entry per setting (a heading, so the site's search finds it by name): meaning, keyword
argument (snake_case alias), type, default per kind, valid values, the clients that
take it; kafkalite's own settings (not in the Java clients, ``config.KAFKALITE_ONLY``)
are marked.

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


def anchor(name: str) -> str:
    """The HTML id of a setting's entry (``linger-ms``)."""
    return name.replace(".", "-").replace("_", "-")


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


def _index(kind: str) -> list[str]:
    rows = ["| setting | type | default |", "|---|---|---|"]
    for s in sorted((s for s in config.SETTINGS if kind in s.clients), key=lambda s: s.name):
        mark = " (kafkalite only)" if s.name in config.KAFKALITE_ONLY else ""
        rows.append(f"| [`{s.name}`](#{anchor(s.name)}){mark} | {s.type} | {default_text(s, kind)} |")
    return rows


def _defaults(setting: config.Setting) -> str:
    kinds = [k for k, _, _ in KINDS if k in setting.clients]
    texts = {k: default_text(setting, k) for k in kinds}
    if len(set(texts.values())) == 1:
        return next(iter(texts.values()))
    return ", ".join(f"{text} ({kind.replace('_', ' ')})" for kind, text in texts.items())


def _entry(setting: config.Setting) -> list[str]:
    kinds = ", ".join(k.replace("_", " ") for k, _, _ in KINDS if k in setting.clients)
    valid = valid_text(setting)
    out = ["", f"### `{setting.name}` {{ #{anchor(setting.name)} }}", "",
           setting.doc, "",
           f"- **keyword argument**: `{setting.alias}`",
           f"- **type**: {setting.type}",
           f"- **default**: {_defaults(setting)}"]
    if valid:
        out.append(f"- **valid values**: {valid}")
    out.append(f"- **clients**: {kinds}")
    if setting.name in config.KAFKALITE_ONLY:
        out.append("- **kafkalite only**: the Java clients have no such setting")
    return out


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
        # Material's search ranks this page first for a setting's name (a guide that
        # mentions linger.ms ten times would otherwise come before its entry)
        "---", "search:", "  boost: 10", "---", "",
        "# Settings reference",
        "",
        "Generated from `src/kafkalite/config.py` when the site is built. Every client takes its "
        "settings with the Java client's names (`{\"linger.ms\": 5}`) or as keyword arguments with the "
        "snake_case alias each entry shows (`linger_ms=5`), with the Java client's defaults. An "
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
        out += ["", f"## {title}", "", f"{count} settings, taken by {classes}.", "", *_index(kind), *_refused(kind)]
    out += ["", "## Every setting", "",
            "Each setting once, with the clients that take it and its default for each."]
    for setting in sorted(config.SETTINGS, key=lambda s: s.name):
        out += _entry(setting)
    return "\n".join(out) + "\n"
