#!/usr/bin/env bash
# The documentation's CI, self-contained (the lead wires it into scripts/test.sh):
#   1. build the site with --strict (broken links, missing references, a public name
#      without a docstring, without an example, or not shown: the build fails);
#   2. run every python example of the README and docs/*.md, the marked console examples
#      (tests/docs/test_cli_examples.py) and every docstring example of the API reference
#      (tests/docs/test_docstring_examples.py) against real brokers and the Schema
#      Registry started by the test session, checking the output the guides show;
#   3. open the built site in Debian's headless chromium (home, a guide, the Producer
#      API, the settings reference, the charts; search for linger.ms) and save the
#      screenshots to docs/screenshots/.
# The unit checks of the public API (docstrings, argument shapes) are in tests/unit and
# run with the rest of the unit tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$(date +%s)
bash scripts/docs.sh build
.venv/bin/python -m kafkalite.testing fetch >/dev/null
.venv/bin/python -m pytest -p no:cacheprovider -q tests/docs "$@"
echo "==> docs CI took $(( $(date +%s) - started )) s"
