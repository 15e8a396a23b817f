"""The deprecation helper: the warning users see, where it points, and the policy it
enforces (docs/versioning.md)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from kafkalite._deprecation import deprecation_message, warn_deprecated
from kafkalite.errors import InvalidArgumentError


def old_call() -> int:
    warn_deprecated("old_call()", since="0.2.0", removal="0.3.0", instead="new_call()")
    return 1


def test_the_warning_names_what_since_when_removed_and_the_replacement_at_the_callers_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert old_call() == 1  # the line the warning must point at
    [warning] = caught
    assert warning.category is DeprecationWarning
    assert str(warning.message) == ("old_call() is deprecated since kafkalite 0.2.0 and will be "
                                    "removed in 0.3.0; use new_call() instead")
    assert warning.filename == __file__
    assert "assert old_call() == 1" in Path(__file__).read_text().splitlines()[warning.lineno - 1]


def test_without_a_replacement_the_message_says_only_when_it_goes():
    assert deprecation_message("x", since="1.2", removal="2.0", instead=None) == (
        "x is deprecated since kafkalite 1.2 and will be removed in 2.0")


@pytest.mark.parametrize(("since", "removal", "words"), [
    ("0.2.0", "0.2.5", "at least one minor release after"),
    ("0.3.0", "0.2.0", "at least one minor release after"),
    ("1.2.0", "1.3.0", "only in a major release"),
    ("0.2", "soon", "not a release version"),
])
def test_a_removal_the_policy_does_not_allow_is_refused(since, removal, words):
    with pytest.raises(InvalidArgumentError, match=words):
        deprecation_message("x", since=since, removal=removal, instead="y")
