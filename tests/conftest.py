"""Shared test setup.

The real-broker fixtures (``kafka_broker``, ``kafka_cluster``, ``topic_factory`` ...)
come from the ``kafkalite.testing.pytest_plugin`` pytest plugin, which the package
registers as an entry point. A checkout whose editable install predates that entry
point still gets it here.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("kafkalite"):
        config.pluginmanager.import_plugin("kafkalite.testing.pytest_plugin")
