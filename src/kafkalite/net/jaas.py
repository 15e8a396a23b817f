"""Java's ``sasl.jaas.config`` line, parsed (no I/O).

The Java client configures its login module with one JAAS entry::

    <LoginModuleClass> <required|requisite|sufficient|optional> name=value ...;

Values are quoted (``keyTab="/etc/kafka/client.keytab"``, backslash escapes) or bare
words (``useKeyTab=true``), like Kafka's own ``JaasConfig`` reads them. kafkalite reads
the options of the module it stands in for: ``username``/``password`` (PLAIN, SCRAM),
Krb5LoginModule's (GSSAPI), OAuthBearerLoginModule's (OAUTHBEARER).

>>> entry = parse_jaas('com.sun.security.auth.module.Krb5LoginModule required '
...                    'useKeyTab=true keyTab="/k/alice.keytab" principal="alice@EXAMPLE.COM";')
>>> entry.module_name, entry.flag, entry.options["useKeyTab"], entry.options["keyTab"]
('Krb5LoginModule', 'required', 'true', '/k/alice.keytab')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkalite.errors import ConfigError

_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True)
class JaasEntry:
    """One login module entry: class, control flag and options."""

    module: str
    flag: str
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def module_name(self) -> str:
        """The class name without its package (``Krb5LoginModule``)."""
        return self.module.rsplit(".", 1)[-1]

    def flag_option(self, name: str, default: bool = False) -> bool:
        """A boolean option (``true``/``false``, any case); ConfigError otherwise."""
        value = self.options.get(name)
        if value is None:
            return default
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(f"sasl.jaas.config: option {name} must be true or false, got {value!r}")


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: word, string, '=', ';'."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "=;":
            out.append((c, c))
            i += 1
        elif c in "\"'":
            quote, i, chars = c, i + 1, []
            while i < n and text[i] != quote:
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                chars.append(text[i])
                i += 1
            if i >= n:
                raise ConfigError("sasl.jaas.config: a quoted value is not closed")
            out.append(("string", "".join(chars)))
            i += 1
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in "=;\"'":
                i += 1
            out.append(("word", text[start:i]))
    return out


def parse_jaas(text: str) -> JaasEntry:
    """Parse a ``sasl.jaas.config`` value holding exactly one login module, as Kafka requires."""
    tokens = _tokens(text)
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise ConfigError("sasl.jaas.config must read '<LoginModule class> required option=\"value\" ...;'")
    module, flag = tokens[0][1], tokens[1][1].lower()
    if flag not in _FLAGS:
        raise ConfigError(f"sasl.jaas.config: control flag {tokens[1][1]!r} is not one of {', '.join(_FLAGS)}")
    options: dict[str, str] = {}
    i = 2
    while i < len(tokens) and tokens[i][0] != ";":
        if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "=" \
                or tokens[i + 2][0] not in ("word", "string"):
            raise ConfigError(f"sasl.jaas.config: expected name=value after {module}, near {tokens[i][1]!r}")
        options[tokens[i][1]] = tokens[i + 2][1]
        i += 3
    if i >= len(tokens):
        raise ConfigError("sasl.jaas.config must end with ';'")
    if i + 1 < len(tokens):
        raise ConfigError("sasl.jaas.config must hold exactly one login module (Kafka clients take one)")
    return JaasEntry(module, flag, options)


def jaas_entry(cfg: Mapping[str, object]) -> JaasEntry | None:
    """The parsed ``sasl.jaas.config`` of resolved settings (None when unset)."""
    text = cfg["sasl.jaas.config"]
    return parse_jaas(text) if isinstance(text, str) and text.strip() else None
