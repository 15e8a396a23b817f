"""Create test topics: the one place fixtures and harness objects go through.

Topics are created with kafkalite's own :class:`~kafkalite.AdminClient` (one way to
create topics in the project; far faster than starting ``kafka-topics`` in a JVM).
Waiting for the topic to reach every broker still reads Metadata with the harness's
small wire client (:mod:`kafkalite.testing.wire`), per broker.

>>> create_topic("127.0.0.1:9092", "orders", partitions=3)     # doctest: +SKIP
'orders'
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping

from kafkalite.errors import TopicExistsError
from kafkalite.testing.wire import KafkaSocket, TopicInfo, WireError

_MAX_TOPIC_NAME = 249


def unique_topic_name(hint: str = "topic") -> str:
    """A legal, unique topic name derived from ``hint`` (e.g. a test's name).

    >>> unique_topic_name("test_x[param-1]").startswith("test_x_param-1_-")
    True

    Example::

        name = unique_topic_name("test_orders[asyncio]")
        assert name != unique_topic_name("test_orders[asyncio]") and "[" not in name
    """
    clean = re.sub(r"[^a-zA-Z0-9._-]", "_", hint).strip(".") or "topic"
    suffix = "-" + secrets.token_hex(4)
    return clean[: _MAX_TOPIC_NAME - len(suffix)] + suffix


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    replication_factor: int = -1,
    configs: Mapping[str, str] | None = None,
    *,
    exist_ok: bool = False,
    timeout: float = 30.0,
) -> str:
    """Create ``name`` and wait until every partition has a leader on every broker.

    Args:
        bootstrap: ``"host:port[,host:port...]"``; the first address is used.
        partitions: -1 takes the broker's default (``num.partitions``).
        replication_factor: -1 takes the broker's default
            (``default.replication.factor``).
        configs: topic configs, e.g. ``{"cleanup.policy": "compact"}``.
        exist_ok: do not fail if the topic already exists.

    Raises:
        kafkalite.errors.ApiError: the broker refused (e.g. TopicAlreadyExistsError,
            InvalidReplicationFactorError), naming the topic.

    Example::

        create_topic(bootstrap, "ready-to-use", partitions=3, configs={"cleanup.policy": "compact"})
        with Producer({"bootstrap.servers": bootstrap}) as p:   # leaders are known: no retry needed
            p.send("ready-to-use", b"v", key=b"k").result(timeout=10)
    """
    from kafkalite.admin.admin import AdminClient  # the harness imports fast without it
    from kafkalite.admin.types import NewTopic

    configs = {k: str(v) for k, v in (configs or {}).items()}
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        result = admin.create_topics(
            [NewTopic(name, partitions, replication_factor, config=configs)], timeout=timeout
        )
    error = result[name].error
    if error is not None and not (exist_ok and isinstance(error, TopicExistsError)):
        raise error
    wait_for_topic(bootstrap, name, timeout=timeout)
    return name


def wait_for_topic(bootstrap: str, name: str, timeout: float = 30.0) -> None:
    """Block until every live broker's metadata shows ``name`` with all leaders.

    CreateTopics returns once the controller committed the topic; brokers learn it
    a little later. Producing before that would see UNKNOWN_TOPIC_OR_PARTITION.

    Example::

        admin.create_topics([NewTopic("waited", num_partitions=2, replication_factor=1)]).all()
        wait_for_topic(bootstrap, "waited", timeout=30)   # every broker knows its leaders now
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if _ready_everywhere(bootstrap, name):
                return
        except (OSError, WireError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name!r} has no leaders on {bootstrap} after {timeout:.0f} s")
        time.sleep(0.05)


def _has_leaders(info: TopicInfo | None) -> bool:
    return (
        info is not None
        and info.error_code == 0
        and bool(info.partitions)
        and all(p.leader >= 0 for p in info.partitions)
    )


def _ready_everywhere(bootstrap: str, name: str) -> bool:
    with KafkaSocket.to(bootstrap, timeout=5.0) as conn:
        meta = conn.metadata([name])
    if not _has_leaders(meta.topics.get(name)):
        return False
    for host, port in meta.brokers.values():
        with KafkaSocket(host, port, timeout=5.0) as conn:
            if not _has_leaders(conn.metadata([name]).topics.get(name)):
                return False
    return True
