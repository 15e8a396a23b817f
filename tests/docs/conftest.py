"""The broker the documentation's examples run against (the guides' and the docstrings'),
started once per session as the guides start theirs, and the clean-up between pages."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafkalite import AdminClient
from kafkalite.testing import LocalBroker


@pytest.fixture(scope="session")
def guide_local_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """A broker like the guides' (`up` keeps Kafka's auto.create.topics.enable=true)."""
    broker = LocalBroker(run_dir=tmp_path_factory.mktemp("guide-broker"), auto_create_topics=True)
    broker.start(timeout=180)
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="session")
def guide_broker(guide_local_broker: LocalBroker) -> str:
    """The guides' broker's address."""
    return guide_local_broker.bootstrap


def delete_topics(admin: AdminClient, topics: list[str]) -> None:
    """Delete ``topics`` and wait until the broker no longer knows them (deletion completes
    in the background: a following create_topics must not meet the old topic)."""
    if not topics:
        return
    admin.delete_topics(topics).all()
    deadline = time.monotonic() + 60
    while set(topics) & set(admin.list_topics()) or not _all_unknown(admin, topics):
        assert time.monotonic() < deadline, f"topics still there 60 s after deletion: {topics}"
        time.sleep(0.1)


def user_topics(admin: AdminClient) -> list[str]:
    """Every topic but the broker's internal ones."""
    return [t for t in admin.list_topics() if not t.startswith("__")]


def _all_unknown(admin: AdminClient, topics: list[str]) -> bool:
    """The broker's metadata no longer describes any of ``topics``."""
    result = admin.describe_topics(topics)
    return all(item.error is not None for item in result.values())
