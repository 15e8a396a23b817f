"""A griffe extension: the Sphinx roles of kafkalite's docstrings as markdown code.

The docstrings are read in the source as well as on the site, and use Sphinx's roles
(``:class:`~kafkalite.errors.KafkaTimeoutError```, ``:meth:`undo```); MkDocs would show
them as text. This writes each one as inline code: the last part of the name with ``~``,
the whole name otherwise, as Sphinx shows them.

    mkdocs.yml: plugins: mkdocstrings: handlers: python: options:
        extensions: [tools/docs/griffe_roles.py:SphinxRoles]
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")


def as_code(text: str) -> str:
    """``text`` with every Sphinx role written as inline code."""
    def code(m: re.Match[str]) -> str:
        name = m.group(2).strip()
        return f"`{name.rsplit('.', 1)[-1] if m.group(1) else name}`"
    return _ROLE.sub(code, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles in every object's docstring as it is loaded."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = as_code(obj.docstring.value)
