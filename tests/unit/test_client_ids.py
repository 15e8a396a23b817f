"""Default ``client.id`` values follow the Java clients (ProducerConfig, ConsumerConfig,
KafkaAdminClient): a kind prefix and a process-wide counter per kind."""

from __future__ import annotations

import re
import threading

from tests.helpers.settings import resolve

BOOT = {"bootstrap.servers": "127.0.0.1:9"}


def _number(client_id: str) -> int:
    return int(client_id.rsplit("-", 1)[1])


def test_producer_ids_count_up_and_a_transactional_one_uses_its_id() -> None:
    first = resolve("producer", BOOT)["client.id"]
    second = resolve("producer", BOOT)["client.id"]
    assert re.fullmatch(r"producer-\d+", first) and _number(second) == _number(first) + 1
    assert resolve("producer", {**BOOT, "transactional.id": "copier-7"})["client.id"] == "producer-copier-7"


def test_consumer_ids_carry_the_group_and_the_static_instance_id() -> None:
    grouped = resolve("consumer", {**BOOT, "group.id": "billing"})["client.id"]
    assert re.fullmatch(r"consumer-billing-\d+", grouped)
    assert re.fullmatch(r"consumer-\d+", resolve("consumer", BOOT)["client.id"])
    static = resolve("consumer", {**BOOT, "group.id": "billing", "group.instance.id": "pod-3"})
    assert static["client.id"] == "consumer-billing-pod-3"
    # The share consumer is configured as a consumer in Java: same prefix, same counter.
    share = resolve("share_consumer", {**BOOT, "group.id": "queue"})["client.id"]
    assert re.fullmatch(r"consumer-queue-\d+", share)
    assert _number(share) > _number(grouped)


def test_admin_ids_and_an_explicit_id_wins() -> None:
    assert re.fullmatch(r"adminclient-\d+", resolve("admin", BOOT)["client.id"])
    assert resolve("admin", {**BOOT, "client.id": "ops"})["client.id"] == "ops"
    # Java treats an empty client.id as none given.
    assert re.fullmatch(r"producer-\d+", resolve("producer", {**BOOT, "client.id": ""})["client.id"])


def test_counters_are_process_wide_and_never_repeat_across_threads() -> None:
    ids: list[str] = []
    lock = threading.Lock()

    def make() -> None:
        for _ in range(200):
            value = resolve("admin", BOOT)["client.id"]
            with lock:
                ids.append(value)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 800 and len(set(ids)) == 800
