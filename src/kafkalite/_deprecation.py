"""The one way kafkalite deprecates part of its public API (docs/versioning.md).

A deprecated function, argument, setting or name calls :func:`warn_deprecated` where it
is used: a :class:`DeprecationWarning` naming what is deprecated, the release that
deprecated it, the release that removes it and what to use instead. The removal must be
at least one minor release later (from 1.0 on: the next major release), so a caller
sees the warning for a whole release before the name goes; the helper refuses anything
else, which a test of the deprecating code catches at once. Each deprecation also gets
an entry under "Deprecated" in CHANGELOG.md.

Example::

    def poll_one(self, timeout: float) -> ConsumerRecord | None:
        warn_deprecated("Consumer.poll_one()", since="0.2.0", removal="0.3.0",
                        instead="Consumer.poll(max_records=1)")
        ...
"""

from __future__ import annotations

import re
import warnings

from kafkalite.errors import InvalidArgumentError

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def _major_minor(version: str) -> tuple[int, int]:
    match = _VERSION.fullmatch(version)
    if match is None:
        raise InvalidArgumentError(f"not a release version (X.Y or X.Y.Z): {version!r}")
    return int(match.group(1)), int(match.group(2))


def deprecation_message(what: str, *, since: str, removal: str, instead: str | None) -> str:
    """The warning's text; raises :class:`~kafkalite.errors.InvalidArgumentError` (a
    ``ValueError``) if ``removal`` breaks the policy."""
    since_mm, removal_mm = _major_minor(since), _major_minor(removal)
    if removal_mm <= since_mm:
        raise InvalidArgumentError(f"{what}: removal in {removal} must come at least one minor release "
                         f"after the deprecation in {since}")
    if since_mm[0] >= 1 and removal_mm[0] == since_mm[0]:
        raise InvalidArgumentError(f"{what}: from 1.0 on, public API is removed only in a major "
                         f"release (deprecated in {since}, removal {removal})")
    text = f"{what} is deprecated since kafkalite {since} and will be removed in {removal}"
    return f"{text}; use {instead} instead" if instead else text


def warn_deprecated(what: str, *, since: str, removal: str, instead: str | None,
                    stacklevel: int = 2) -> None:
    """Warn that ``what`` is deprecated, pointing at the caller of the deprecated code.

    ``stacklevel`` counts as :func:`warnings.warn`'s does, from the deprecated code: 2
    (the default) is the code that called it.
    """
    warnings.warn(deprecation_message(what, since=since, removal=removal, instead=instead),
                  DeprecationWarning, stacklevel=stacklevel + 1)
