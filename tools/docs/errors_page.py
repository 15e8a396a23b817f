"""The errors reference, generated from ``kafkalite.errors``' tree at build time.

Each error is listed with its place in the tree, whether it is retriable, fatal or
abortable (the class's defaults), the Kafka error code and Java exception it stands for,
when it happens (its docstring) and what to do, which follows from where it sits in the
tree (the same grouping the Java client uses).

    from tools.docs.errors_page import render
    markdown = render()
"""

from __future__ import annotations

import inspect

from kafkalite import errors


def _first_paragraph(cls: type) -> str:
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    para = doc.split("\n\n")[0].replace("\n", " ").strip()
    return para.replace("|", "\\|")


def what_to_do(cls: type[errors.KafkaError]) -> str:
    """Advice that follows from the class's place in the tree."""
    if cls.fatal_default:
        return "Fatal: close the client and create a new one (another instance took over, or access was revoked)."
    if cls.abortable_default:
        return "Abort the transaction (`abort_transaction()`), then go on with a new one."
    if issubclass(cls, errors.InvalidMetadataError):
        return "Retried by kafkalite after refreshing metadata; seen only when retries or the timeout ran out."
    if issubclass(cls, errors.RetriableError) or cls.retriable:
        return "Transient: kafkalite retries within `delivery.timeout.ms` / `default.api.timeout.ms`; " \
               "when it reaches you, try again later."
    if issubclass(cls, errors.AuthorizationError):
        return "Grant the principal the ACL the operation needs (see the admin guide's ACLs)."
    if issubclass(cls, errors.AuthenticationError):
        return "Check the security settings (credentials, mechanism, certificates)."
    if issubclass(cls, errors.ApplicationRecoverableError):
        return "Recover in the application (e.g. rejoin the group, re-create the client) and retry."
    if issubclass(cls, errors.InvalidOffsetError):
        return "Reset the position (`seek()`, `auto.offset.reset`)."
    if issubclass(cls, errors.ApiError):
        return "Not retriable: fix the request (its arguments, the topic or config it names) or the broker's setup."
    if issubclass(cls, (errors.ConfigError, errors.InvalidArgumentError)):
        return "Fix the setting or argument the message names."
    return "See the message: it names the resource concerned."


def _flags(cls: type[errors.KafkaError]) -> str:
    marks = [name for name, on in (("retriable", cls.retriable), ("fatal", cls.fatal_default),
                                   ("abortable", cls.abortable_default)) if on]
    return ", ".join(marks) or "-"


def _bases(cls: type) -> str:
    chain = [k.__name__ for k in cls.__mro__[1:] if issubclass(k, errors.KafkaError)]
    return " → ".join(chain) if chain else "-"


def render() -> str:
    """The whole page as markdown."""
    broker = sorted(errors.ERRORS_BY_CODE.values(), key=lambda c: c.code)
    client = [getattr(errors, n) for n in errors.__all__
              if inspect.isclass(getattr(errors, n)) and issubclass(getattr(errors, n), errors.KafkaError)
              and getattr(errors, n) not in broker]
    out = [
        "# Errors reference",
        "",
        "Generated from `kafkalite.errors` when the site is built. Every error kafkalite raises is a "
        "`KafkaError` with `retriable`, `fatal` and `abortable` attributes and the resource it concerns "
        "(`topic`, `partition`, `group_id`, `transactional_id`). Catch by intent:",
        "",
        "```python",
        "from kafkalite.errors import KafkaError, RetriableError, TopicAuthorizationError",
        "",
        "def describe(error: KafkaError) -> str:",
        "    if isinstance(error, TopicAuthorizationError):",
        "        return f\"no access to {error.topic}\"",
        "    if error.retriable:",
        "        return \"try again later\"",
        "    return \"fatal: close the client\" if error.fatal else str(error)",
        "",
        "print(describe(TopicAuthorizationError(topic=\"orders\")))",
        "```",
        "",
        "## Raised by kafkalite itself",
        "",
        "| error | is a | flags | when | what to do |",
        "|---|---|---|---|---|",
    ]
    for cls in client:
        out.append(f"| `{cls.__name__}` | {_bases(cls)} | {_flags(cls)} | {_first_paragraph(cls)} "
                   f"| {what_to_do(cls)} |")
    out += [
        "",
        "## Broker error codes",
        "",
        f"One class per Kafka error code ({len(broker)} codes), generated from Kafka's error list; an "
        "unknown code becomes `UnknownApiError` keeping the number. `error_for_code(code)` gives the "
        "class's instance.",
        "",
        "| code | error | Kafka name | flags | when | what to do |",
        "|---|---|---|---|---|---|",
    ]
    for cls in broker:
        out.append(f'| {cls.code} | <a id="{cls.__name__.lower()}"></a>`{cls.__name__}` | `{cls.name}` '
                   f"| {_flags(cls)} | {_first_paragraph(cls)} | {what_to_do(cls)} |")
    return "\n".join(out) + "\n"
