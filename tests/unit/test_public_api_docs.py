"""Every public name is shown by the API reference, and documented.

The site's build fails the same way (tools/docs/hooks.py); this runs the check without
building the site. tools/docs/public_api.py lists the pages and the public modules.
"""

from __future__ import annotations

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
