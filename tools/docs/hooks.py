"""MkDocs hooks (``mkdocs.yml``: ``hooks:``): the pages generated at build time.

* checks the public API first: a public name no page shows, a public class, function,
  method or property without a docstring, or without an example (an ``Example::``
  block), fails the build (``public_api.uncovered`` / ``undocumented``,
  ``docstring_examples.example_problems``);
* adds the generated pages: the API reference (``reference/api/*.md``), the settings
  and errors references, the benchmark charts (PNG files drawn with matplotlib from
  ``benchmarks/results/*.json``), the compatibility table (``docs/data/compatibility.yaml``),
  and the repository's own markdown files the guides link to (``CONTRIBUTING.md``,
  ``benchmarks/README.md`` and ``HISTORY.md``), which stay the source;
* rewrites links that leave ``docs/`` (``../CONTRIBUTING.md``, ``../src/...``): to the
  page made from that file, or to the file in the repository on GitHub; a link to a file
  that does not exist is left alone, so ``--strict`` still fails on it.

Nothing generated is written into ``docs/``.
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, ROOT / "src", ROOT / "spark_connector"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from mkdocs.config.defaults import MkDocsConfig  # noqa: E402
from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402
from mkdocs.structure.pages import Page  # noqa: E402

from tools.docs import (  # noqa: E402
    api_pages,
    charts,
    compat_page,
    docstring_examples,
    errors_page,
    public_api,
    settings_page,
)

#: Repository markdown files outside docs/ shown on the site: source path -> page path.
MIRRORED = {"CONTRIBUTING.md": "contributing.md", "benchmarks/README.md": "benchmarks/index.md",
            "benchmarks/HISTORY.md": "benchmarks/history.md"}
_LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Fail at once when the public API is not fully shown and documented."""
    problems = [f"public name shown on no API page: {n}" for n in public_api.uncovered()]
    problems += [f"public API without a docstring: {n}" for n in public_api.undocumented()]
    problems += docstring_examples.example_problems()
    if problems:
        raise PluginError("the API reference is incomplete:\n  " + "\n  ".join(problems))
    return config


def _add(files: Files, config: MkDocsConfig, uri: str, content: str | bytes) -> None:
    files.append(File.generated(config, uri, content=content))


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add every generated page and image."""
    for page in public_api.PAGES:
        _add(files, config, f"reference/api/{page.slug}.md", api_pages.render(page))
    _add(files, config, "reference/settings.md", settings_page.render())
    _add(files, config, "reference/errors.md", errors_page.render())
    _add(files, config, "reference/compatibility.md", compat_page.render(ROOT / "docs" / "data" / "compatibility.yaml"))
    chart_page, images = charts.render(ROOT / "benchmarks" / "results")
    _add(files, config, "benchmarks/charts.md", chart_page)
    for name, png in images.items():
        _add(files, config, f"benchmarks/charts/{name}", png)
    for source, uri in MIRRORED.items():
        _add(files, config, uri, (ROOT / source).read_text(encoding="utf-8"))
    return files


def _source_of(page: Page) -> str:
    """The page's file as a path in the repository."""
    uri = page.file.src_uri
    for source, mirrored in MIRRORED.items():
        if mirrored == uri:
            return source
    return f"docs/{uri}"


def rewrite_links(markdown: str, source: str, page_uri: str, repo_url: str) -> str:
    """Links to repository files outside ``docs/`` point to their page, or to GitHub."""
    pages = {src: uri for src, uri in MIRRORED.items()}

    def fix(m: re.Match[str]) -> str:
        target = m.group(2)
        if "://" in target or target.startswith(("mailto:", "/")):
            return m.group(0)
        in_repo = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        if in_repo.startswith("docs/") and not source.startswith("docs/"):
            new = posixpath.relpath(in_repo[len("docs/"):], posixpath.dirname(page_uri) or ".")
        elif in_repo in pages:
            new = posixpath.relpath(pages[in_repo], posixpath.dirname(page_uri) or ".")
        elif in_repo.startswith("docs/") or in_repo.startswith(".."):
            return m.group(0)  # a docs page (mkdocs checks it) or outside the repository
        elif (ROOT / in_repo).exists():
            new = f"{repo_url.rstrip('/')}/blob/main/{in_repo}"
        else:
            return m.group(0)  # broken: mkdocs --strict reports it
        return f"{m.group(1)}{new}{m.group(3) or ''}{m.group(4)}"

    return _LINK.sub(fix, markdown)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Rewrite links that leave ``docs/`` (see the module doc)."""
    return rewrite_links(markdown, _source_of(page), page.file.src_uri, str(config.extra["repository"]))
