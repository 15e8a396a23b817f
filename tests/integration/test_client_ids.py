"""Default client ids as Java's, seen by Kafka's own tool: ``kafka-consumer-groups
--describe --members`` shows each member's CLIENT-ID (``consumer-<group>-N``) and
member ids that the broker builds from it (``<client.id>-<uuid>``), never starting
with "-" as they did when the client id was empty."""

from __future__ import annotations

import re

import pytest

from kafkalite import Consumer
from tests.integration.consumer_support import wait_until

pytestmark = pytest.mark.broker


def _members(kafka_broker, group: str) -> list[dict[str, str]]:
    out = kafka_broker.run_tool("kafka-consumer-groups", [
        "--bootstrap-server", kafka_broker.bootstrap, "--describe", "--members", "--group", group],
        check=True).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    header = next(i for i, cols in enumerate(lines) if cols[:2] == ["GROUP", "CONSUMER-ID"])
    names = lines[header]
    return [dict(zip(names, cols)) for cols in lines[header + 1:] if cols[0] == group]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_kafka_consumer_groups_shows_java_style_client_and_member_ids(kafka_broker, topic_factory,
                                                                       protocol) -> None:
    topic = topic_factory(partitions=2)
    group = f"ids-{protocol}-{topic}"
    conf = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": group, "group.protocol": protocol}
    consumers = [Consumer(conf), Consumer(conf)]
    try:
        for c in consumers:
            c.subscribe([topic])

        def both_assigned() -> bool:
            for c in consumers:
                c.poll(0.1)
            return all(c.assignment() for c in consumers)

        wait_until(both_assigned, 60, what="both members assigned")
        ours = sorted(c.config["client.id"] for c in consumers)
        assert all(re.fullmatch(rf"consumer-{re.escape(group)}-\d+", cid) for cid in ours), ours

        def described() -> list[dict[str, str]] | None:
            rows = _members(kafka_broker, group)
            return rows if len(rows) == 2 else None

        rows = wait_until(described, 60, interval=0.5, what="two members in kafka-consumer-groups")
        assert sorted(r["CLIENT-ID"] for r in rows) == ours
        for row in rows:
            assert not row["CONSUMER-ID"].startswith("-"), row
            if protocol == "classic":  # the broker names classic members <client.id>-<uuid>
                assert row["CONSUMER-ID"].startswith(row["CLIENT-ID"] + "-"), row
    finally:
        for c in consumers:
            c.close()
