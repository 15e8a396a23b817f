"""``kafkalite produce``, ``consume`` and ``groups`` end to end (the installed command),
cross-checked with Kafka's console consumer and kafka-consumer-groups."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time

import pytest

from kafkalite import AdminClient
from kafkalite.admin.group_types import GroupType
from tests.integration.admin_support import KAFKALITE, kafkalite, tool, wait_until

pytestmark = pytest.mark.broker


def test_produce_keys_headers_then_consume(kafka_broker, topic_factory) -> None:
    b = kafka_broker.bootstrap
    topic = topic_factory(partitions=1)
    done = kafkalite("produce", "--bootstrap-server", b, "--topic", topic,
                     "--property", "parse.key=true", "--property", "key.separator=:",
                     input="k1:v1\nk2:v2:with-colon\n")
    assert done.returncode == 0, done.stderr
    assert "Produced 2 record(s)" in done.stderr
    done = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--parse-key", "--key-separator", "=",
                     "--header", "source=cli", "--compression-type", "zstd", "--sync", input="k3=v3\n")
    assert done.returncode == 0, done.stderr

    # Kafka's own consumer reads what we wrote: keys, values, headers.
    java = tool(kafka_broker, "kafka-console-consumer", "--topic", topic, "--from-beginning", "--max-messages", "3",
                "--formatter-property", "print.key=true", "--formatter-property", "print.headers=true",
                "--formatter-property", "key.separator=|")
    lines = java.strip().splitlines()
    assert lines == ["NO_HEADERS|k1|v1", "NO_HEADERS|k2|v2:with-colon", "source:cli|k3|v3"]

    ours = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages", "3",
                     "--print-key", "--print-offset", "--print-headers")
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.splitlines() == ["Offset:0\tNO_HEADERS\tk1\tv1", "Offset:1\tNO_HEADERS\tk2\tv2:with-colon",
                                        "Offset:2\tsource:cli\tk3\tv3"]
    assert "Processed a total of 3 messages" in ours.stderr

    as_json = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--partition", "0", "--offset", "2",
                        "--max-messages", "1", "--json")
    (record,) = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert (record["offset"], record["key"], record["value"], record["headers"]) == (2, "k3", "v3", [["source", "cli"]])


def test_transactional_produce_and_bad_lines(kafka_broker, topic_factory) -> None:
    b = kafka_broker.bootstrap
    topic = topic_factory()
    done = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--transactional-id", f"{topic}-tx",
                     "--json", input="a\nb\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"topic": topic, "produced": 2, "failed": 0, "transaction": "committed"}
    committed = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning",
                          "--isolation-level", "read_committed", "--max-messages", "2")
    assert committed.stdout.split() == ["a", "b"]

    bad = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--parse-key", "--key-separator", ":",
                    "--transactional-id", f"{topic}-tx", input="k:v\nno-separator\n")
    assert bad.returncode == 2 and "line 2: no key separator" in bad.stderr and "aborted" in bad.stderr
    # The aborted transaction's first record is invisible to read_committed readers.
    again = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning",
                      "--isolation-level", "read_committed", "--timeout-ms", "3000")
    assert again.stdout.split() == ["a", "b"] and "Processed a total of 2 messages" in again.stderr


def test_consume_prints_the_total_after_ctrl_c(kafka_broker, topic_factory) -> None:
    b = kafka_broker.bootstrap
    topic = topic_factory()
    assert kafkalite("produce", "--bootstrap-server", b, "--topic", topic, input="x\ny\n").returncode == 0
    proc = subprocess.Popen([KAFKALITE, "consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        seen = [proc.stdout.readline().strip(), proc.stdout.readline().strip()]
        assert seen == ["x", "y"]  # flushed inside the loop that handles Ctrl-C
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert "Processed a total of 2 messages" in err and "Traceback" not in err


def test_groups_describe_lag_reset_and_delete(kafka_broker, topic_factory) -> None:
    b = kafka_broker.bootstrap
    topic = topic_factory(partitions=2)
    group = f"{topic}-group"
    assert kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--partition", "0",
                     input="1\n2\n3\n4\n").returncode == 0
    read = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--group", group, "--from-beginning",
                     "--max-messages", "4")
    assert read.returncode == 0 and len(read.stdout.split()) == 4

    def committed() -> dict | None:
        shown = json.loads(kafkalite("groups", "--bootstrap-server", b, "--describe", "--group", group,
                                     "--json").stdout)
        parts = {p["partition"]: p for p in shown[0]["partitions"]}
        return parts if parts.get(0, {}).get("current_offset") == 4 else None

    parts = wait_until(committed, what="the group's commit")
    assert (parts[0]["log_end_offset"], parts[0]["lag"]) == (4, 0)

    plan = kafkalite("groups", "--bootstrap-server", b, "--reset-offsets", "--group", group, "--topic", f"{topic}:0",
                     "--to-offset", "1")
    assert plan.returncode == 0 and "Dry run" in plan.stderr
    assert [line.split()[-1] for line in plan.stdout.splitlines()[1:]] == ["1"]
    java = tool(kafka_broker, "kafka-consumer-groups", "--describe", "--group", group)
    assert any(line.split()[1:6] == [topic, "0", "4", "4", "0"] for line in java.splitlines() if line.strip())

    done = kafkalite("groups", "--bootstrap-server", b, "--reset-offsets", "--group", group, "--topic", topic,
                     "--to-earliest", "--execute")
    assert done.returncode == 0, done.stderr
    java = tool(kafka_broker, "kafka-consumer-groups", "--describe", "--group", group)
    assert any(line.split()[1:6] == [topic, "0", "0", "4", "4"] for line in java.splitlines() if line.strip())
    text = kafkalite("groups", "--bootstrap-server", b, "--describe", "--group", group).stdout
    assert "LAG" in text and f"{group}  {topic}" in text

    shifted = kafkalite("groups", "--bootstrap-server", b, "--reset-offsets", "--group", group, "--topic",
                        f"{topic}:0", "--shift-by", "10", "--execute", "--json")
    assert json.loads(shifted.stdout)[0]["new_offset"] == 4  # clamped to the log end

    listed = kafkalite("groups", "--bootstrap-server", b, "--list", "--state", "Empty")
    assert group in listed.stdout
    deleted = kafkalite("groups", "--bootstrap-server", b, "--delete", "--group", group, "--group", f"{group}-none")
    assert deleted.returncode == 1 and "GROUP_ID_NOT_FOUND" in deleted.stderr
    assert f"'{group}'" in deleted.stdout
    assert group not in tool(kafka_broker, "kafka-consumer-groups", "--list").split()


def test_produce_to_a_missing_topic_fails_fast_naming_it(kafka_broker, topic_factory, unique_topic) -> None:
    b = kafka_broker.bootstrap
    started = time.monotonic()
    done = kafkalite("produce", "--bootstrap-server", b, "--topic", unique_topic, input="a\nb\n")
    assert done.returncode == 1 and time.monotonic() - started < 20  # not max.block.ms (60 s)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"topic '{unique_topic}'" in done.stderr and "does not exist" in done.stderr
    assert unique_topic not in tool(kafka_broker, "kafka-topics", "--list").split()  # nothing was created

    topic = topic_factory(partitions=2)
    beyond = kafkalite("produce", "--bootstrap-server", b, "--topic", topic, "--partition", "2", input="a\n")
    assert beyond.returncode == 1 and beyond.stderr.count("\n") == 1
    assert "--partition 2 does not exist (the topic has 2)" in beyond.stderr and f"topic '{topic}'" in beyond.stderr


def _console_groups(admin: AdminClient) -> set[str]:
    return {g.group_id for g in admin.list_groups() if re.fullmatch(r"console-consumer-\d{1,5}", g.group_id)}


@pytest.mark.timeout(180)
def test_consume_without_group_uses_a_throwaway_group_like_kafka_console_consumer(kafka_broker, topic_factory) -> None:
    """Both tools join a generated 'console-consumer-NNNNN' group and commit nothing
    (Java's ConsoleConsumerOptions turns enable.auto.commit off for that group)."""
    b = kafka_broker.bootstrap
    topic = topic_factory(partitions=2)
    assert kafkalite("produce", "--bootstrap-server", b, "--topic", topic, input="1\n2\n3\n4\n").returncode == 0
    with AdminClient({"bootstrap.servers": b}) as admin:
        before = _console_groups(admin)
        java = tool(kafka_broker, "kafka-console-consumer", "--topic", topic, "--from-beginning",
                    "--max-messages", "4")
        (java_group,) = _console_groups(admin) - before
        ours = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages",
                         "4")
        assert ours.returncode == 0, ours.stderr
        assert sorted(ours.stdout.split()) == sorted(java.split()) == ["1", "2", "3", "4"]
        (our_group,) = _console_groups(admin) - before - {java_group}
        described = admin.describe_consumer_groups([java_group, our_group]).all()
        assert described[our_group].type == described[java_group].type == GroupType.CLASSIC
        offsets = admin.list_consumer_group_offsets([java_group, our_group]).all()
        assert offsets == {java_group: {}, our_group: {}}  # neither committed

        # Asked for, the throwaway group commits like any other.
        again = kafkalite("consume", "--bootstrap-server", b, "--topic", topic, "--from-beginning", "--max-messages",
                          "4", "--consumer-property", "enable.auto.commit=true")
        assert again.returncode == 0, again.stderr
        (committing,) = _console_groups(admin) - before - {java_group, our_group}
        committed = admin.list_consumer_group_offsets([committing])[committing].result()
        assert sum(om.offset for om in committed.values()) == 4
