"""What the version matrix's tests share: which release the session's broker runs, and
the release a feature needs (from kafkalite.net.features, the table the client uses)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from kafkalite.net.features import BrokerFeature
from kafkalite.testing.releases import release_of

T = TypeVar("T")


def has(broker: Any, feature: BrokerFeature) -> bool:
    """Whether the broker's release has ``feature`` by the table (its first release)."""
    return release_of(broker.version) >= release_of(feature.since)


def wait_until(condition: Callable[[], T], timeout: float = 60.0, what: str = "condition") -> T:
    """Poll ``condition()`` until it is truthy; a generous deadline for a busy machine."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def settings(broker: Any, **more: Any) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap, **more}
