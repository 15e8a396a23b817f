"""The documentation: the site in a real browser, the guides' examples against a real broker (scripts/ci/docs.sh)."""
