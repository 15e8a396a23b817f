"""What the documentation site is built from: the public API, and pages generated at build time.

``mkdocs.yml`` loads :mod:`tools.docs.hooks`; each generated page has its own module
(settings, errors, benchmark charts, compatibility), and :mod:`tools.docs.public_api`
is the one list of what is public, read by the API reference, the docstring check and
the argument-shape test.
"""
