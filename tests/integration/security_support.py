"""Helpers for the security tests: round trips through kafkalite clients, ACLs, and
the connection counters of a client's NetworkClient."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite import AdminClient, Consumer, Producer
from kafkalite.admin.security_types import AccessControlEntry, AclBinding, ResourcePattern
from kafkalite.net.transport import ConnectionStats

SCRAM_ADMIN = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin", "sasl.password": "admin-secret"}


def stats(client: Any) -> ConnectionStats:
    """The connection counters of a Producer, Consumer or AdminClient."""
    return client._core.client.stats  # type: ignore[no-any-return]


def round_trip(cfg: Mapping[str, Any], topic: str, n: int = 5, *, group: str | None = None,
               timeout: float = 60.0) -> list[bytes]:
    """Produce ``n`` records with ``cfg`` and read them back (subscribed with ``group``)."""
    values = [f"{topic}-{i}".encode() for i in range(n)]
    with Producer(dict(cfg), linger_ms=0) as producer:
        futures = [producer.send(topic, v, key=str(i).encode()) for i, v in enumerate(values)]
        for future in futures:
            future.result(30)
    got = consume(cfg, topic, n, group=group or f"{topic}-g", timeout=timeout)
    assert sorted(got) == sorted(values)
    return got


def consume(cfg: Mapping[str, Any], topic: str, n: int, *, group: str, timeout: float = 60.0) -> list[bytes]:
    got: list[bytes] = []
    with Consumer(dict(cfg), group_id=group, auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(1.0)]
        consumer.commit()
    return got


def grant(broker: Any, principal: str, resource_type: str, name: str, *operations: str) -> list[AclBinding]:
    """Allow ``principal`` the operations on a literal resource (over PLAINTEXT, a super user)."""
    bindings = [AclBinding(ResourcePattern(resource_type, name), AccessControlEntry(principal, "*", op, "allow"))
                for op in operations]
    with AdminClient(broker.client_config()) as admin:
        admin.create_acls(bindings).all()
    return bindings


def wait_until(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
