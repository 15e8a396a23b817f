"""The built documentation site, opened in headless Chromium.

Needs the site built into site/ (``bash scripts/docs.sh``; ``bash scripts/ci/docs.sh``
builds it and runs this) and Debian's ``chromium`` (installed by scripts/docs.sh as
root), driven through Playwright's Python API with ``executable_path``: no browser is
downloaded. The site is served on loopback by this test.

It loads the home page, a guide, the Producer API page and the settings reference and
fails on any console error, page error, failed request or image that did not load; it
searches for ``linger.ms`` and follows the result to the settings entry; it saves
screenshots of the home page, the Producer API page, the settings reference and a
benchmark chart into docs/screenshots/ (committed, so a reviewer sees what was checked).
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "site"
SHOTS = ROOT / "docs" / "screenshots"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAGES = {"home": "", "guide": "producer/", "producer-api": "reference/api/producer/",
         "settings": "reference/settings/", "charts": "benchmarks/charts/"}


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("Debian's chromium is not installed: run bash scripts/docs.sh as root, "
                           "or apt-get install chromium")
    return found


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    if not (SITE / "index.html").exists():
        raise RuntimeError("site/ is not built: run bash scripts/docs.sh first")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, name="docs-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=chromium(), headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()


class PageProblems:
    """Console errors, page errors, failed requests and HTTP errors seen by one page."""

    def __init__(self, page: Any) -> None:
        self.items: list[str] = []
        page.on("console", lambda m: self.items.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.items.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.items.append(f"request failed: {r.url} {r.failure}"))
        page.on("response", lambda r: self.items.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)


def open_page(browser: Any, url: str) -> tuple[Any, PageProblems]:
    page = browser.new_page()
    problems = PageProblems(page)
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    return page, problems


def broken_images(page: Any) -> list[str]:
    return list(page.evaluate(
        "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"))


@pytest.mark.parametrize("name", ["home", "guide", "producer-api", "settings", "charts"])
def test_page_loads_cleanly(browser: Any, site_url: str, name: str) -> None:
    page, problems = open_page(browser, site_url + PAGES[name])
    try:
        assert page.locator("article h1").count() >= 1, f"{name}: no article heading"
        assert broken_images(page) == [], f"{name}: images that did not load"
        assert problems.items == [], f"{name}: {problems.items}"
        if name == "producer-api":
            assert page.get_by_text("send_offsets_to_transaction", exact=False).count() > 0
        if name == "charts":
            assert page.locator("article img").count() >= 3, "the charts page shows no charts"
        SHOTS.mkdir(parents=True, exist_ok=True)
        if name in ("home", "producer-api", "settings"):
            page.screenshot(path=str(SHOTS / f"{name}.png"))
        if name == "charts":
            page.locator("article img").first.screenshot(path=str(SHOTS / "benchmark-chart.png"))
    finally:
        page.close()


def test_search_finds_the_setting(browser: Any, site_url: str) -> None:
    page, problems = open_page(browser, site_url)
    try:
        page.locator("label.md-search__icon, .md-search__input").first.click()
        # typed key by key, as a reader does (the search listens to keyboard input)
        page.locator("input.md-search__input").press_sequentially("linger.ms", delay=30)
        first = page.locator("a.md-search-result__link").first
        first.wait_for(timeout=20_000)
        href = first.get_attribute("href") or ""
        assert "reference/settings/" in href, f"the first page found is {href}"
        entry_link = page.locator("a.md-search-result__link[href$='#linger-ms']").first
        assert "reference/settings/" in (entry_link.get_attribute("href") or "")
        entry_link.click()
        page.wait_for_url("**/reference/settings/**#linger-ms")
        entry = page.locator("#linger-ms")
        assert entry.is_visible()
        details = page.locator("#linger-ms ~ ul").first.inner_text()
        assert "linger_ms" in details and "int" in details and "producer" in details, details
        assert problems.items == [], problems.items
    finally:
        page.close()
