"""Every public name is shown by the API reference, and documented with an example.

The site's build fails the same way (tools/docs/hooks.py); this runs the check without
building the site. tools/docs/public_api.py lists the pages and the public modules.
"""

from __future__ import annotations

import inspect

import pytest

from tools.docs.docstring_examples import example_problems, parse
from tools.docs.public_api import PAGES, documented_objects, uncovered, undocumented


def test_every_public_name_is_on_an_api_page() -> None:
    assert uncovered() == []


def test_every_public_class_function_and_method_has_a_docstring() -> None:
    missing = undocumented()
    assert missing == [], f"{len(missing)} public names without a docstring:\n" + "\n".join(missing)


def test_the_walk_reaches_both_fronts_and_their_methods() -> None:
    # the check is only as good as the walk: it must see the clients' methods
    names = {name for name, _ in documented_objects()}
    for expected in ("kafkalite.Producer.send", "kafkalite.aio.Producer.send", "kafkalite.Consumer.poll",
                     "kafkalite.aio.AdminClient.describe_configs", "kafkalite.testing.LocalCluster",
                     "kafkalite.testing.pytest_plugin.network_faults", "pyspark_kafkalite.DefaultSource.reader"):
        assert expected in names, expected
    assert len(PAGES) >= 10


def test_every_public_name_has_an_example() -> None:
    problems = example_problems()
    assert problems == [], "\n".join(problems)


def test_the_example_convention_is_parsed() -> None:
    doc = """Do it.

    Example::

        x = 1
        assert x == 1

    Example (needs schema_registry)::

        print(registry_url)

    Example (not run: needs a Spark session)::

        spark.read.format("kafkalite")
    """
    (plain, _, no_skip), (reg, needs, _), (_, _, skip) = parse(inspect.cleandoc(doc))
    assert plain == "x = 1\nassert x == 1\n" and no_skip is None
    assert reg == "print(registry_url)\n" and needs == ("schema_registry",)
    assert skip == "needs a Spark session"
    with pytest.raises(ValueError, match="must say why"):
        parse("Example (not run)::\n\n    x = 1\n")
    with pytest.raises(ValueError, match="unknown service"):
        parse("Example (needs spark)::\n\n    x = 1\n")
