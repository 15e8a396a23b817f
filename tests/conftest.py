"""Shared test setup.

The real-broker fixtures (``kafka_broker``, ``kafka_cluster``, ``topic_factory`` ...)
come from the ``kafkalite.testing.pytest_plugin`` pytest plugin, which the package
registers as an entry point. A checkout whose editable install predates that entry
point still gets it here.
"""

from __future__ import annotations

import signal

import pytest

# Fixtures shared by the Schema Registry / serde tests (sr_conf, sr_client, confluent_sr).
pytest_plugins = ["tests.helpers.serdes"]


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("kafkalite"):
        config.pluginmanager.import_plugin("kafkalite.testing.pytest_plugin")
    # A suite started in the background by a non-interactive shell (`bash .ci/run &`,
    # nohup) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt:
    # the Ctrl-C tests (which signal this process and the CLI subprocesses) would
    # fail for how the suite was launched. Restore Python's handler; subprocesses then
    # start with SIGINT at its default again (exec resets handled signals).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# Property tests run on busy 2-core CI machines next to Kafka brokers: a per-example
# deadline measures the machine's load, not the code, so it is off. Tests bound their
# own work (max_examples) and pytest-timeout catches real hangs.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "kafkalite", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("kafkalite")
