#!/usr/bin/env bash
# The documentation site (MkDocs + Material + mkdocstrings; mkdocs.yml, hooks in tools/docs/).
#
#   bash scripts/docs.sh            # build into site/ with --strict (a warning fails the build)
#   bash scripts/docs.sh serve      # serve on http://127.0.0.1:8000, rebuilding on change
#                                   # (DOCS_ADDR=host:port to change)
#
# Sets up what it needs, as scripts/setup.sh does: .venv with kafkalite[dev,docs] (the
# API reference imports every public module to check its docstrings, pyspark_kafkalite
# included), and as root on Debian/Ubuntu Debian's chromium for the browser test
# (tests/docs/test_site_browser.py; Playwright drives it, no browser is downloaded).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! .venv/bin/python -c 'import kafkalite, pyspark, mkdocs, material, mkdocstrings_handlers.python, matplotlib, yaml, playwright' >/dev/null 2>&1; then
  echo "==> installing kafkalite[${KAFKALITE_EXTRAS:-dev},docs] into .venv"
  KAFKALITE_EXTRAS="${KAFKALITE_EXTRAS:-dev},docs" bash scripts/setup.sh
fi
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "==> installing chromium (the docs browser test) with apt-get"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

export NO_MKDOCS_2_WARNING=1  # Material's banner about MkDocs 2; see CONTRIBUTING.md "Documentation site"
case "${1:-build}" in
  build) exec .venv/bin/python -m mkdocs build --strict --clean --site-dir site ;;
  serve) exec .venv/bin/python -m mkdocs serve --strict --dev-addr "${DOCS_ADDR:-127.0.0.1:8000}" ;;
  *) echo "usage: bash scripts/docs.sh [build|serve]" >&2; exit 2 ;;
esac
