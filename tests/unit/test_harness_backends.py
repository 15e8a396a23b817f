"""Backend selection and the Docker backend's logic (no Docker engine needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kafkalite.testing import pytest_plugin
from kafkalite.testing.backends import Backend, ExternalKafka, KafkaService, select_backend
from kafkalite.testing.containers import (
    DockerKafka,
    DockerUnavailableError,
    container_env,
    container_properties,
)


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, Backend.LOCAL),
        ({"KAFKALITE_BROKER": "auto"}, Backend.LOCAL),
        ({"KAFKALITE_BOOTSTRAP": "k:9092"}, Backend.EXTERNAL),
        ({"KAFKALITE_BOOTSTRAP": "  "}, Backend.LOCAL),
        ({"KAFKALITE_BROKER": "local", "KAFKALITE_BOOTSTRAP": "k:9092"}, Backend.LOCAL),
        ({"KAFKALITE_BROKER": "Docker"}, Backend.DOCKER),
        ({"KAFKALITE_BROKER": "external", "KAFKALITE_BOOTSTRAP": "k:9092"}, Backend.EXTERNAL),
    ],
)
def test_select_backend(env: dict[str, str], expected: Backend) -> None:
    assert select_backend(env) is expected


def test_docker_is_never_chosen_unasked() -> None:
    assert select_backend({"DOCKER_HOST": "unix:///var/run/docker.sock"}) is Backend.LOCAL


@pytest.mark.parametrize(
    "env, message",
    [
        ({"KAFKALITE_BROKER": "podman"}, "not one of"),
        ({"KAFKALITE_BROKER": "external"}, "needs KAFKALITE_BOOTSTRAP"),
    ],
)
def test_select_backend_errors(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        select_backend(env)


def test_external_kafka_from_env() -> None:
    kafka = ExternalKafka.from_env(
        {
            "KAFKALITE_BOOTSTRAP": "a:9092,b:9092",
            "KAFKALITE_BROKER_VERSION": "3.9.1",
            "KAFKALITE_BOOTSTRAP_SASL_PLAINTEXT": "a:9094",
        }
    )
    assert kafka.bootstrap == "a:9092,b:9092"
    assert kafka.version == "3.9.1"
    assert kafka.bootstrap_for("PLAINTEXT") == "a:9092,b:9092"
    assert kafka.bootstrap_for("SASL_PLAINTEXT") == "a:9094"
    with pytest.raises(KeyError, match="KAFKALITE_BOOTSTRAP_SSL"):
        kafka.bootstrap_for("SSL")
    assert isinstance(kafka, KafkaService)


def test_external_kafka_that_does_not_answer() -> None:
    from kafkalite.testing.ports import free_port

    with pytest.raises(ConnectionError, match="does not answer"):
        ExternalKafka(f"127.0.0.1:{free_port()}").wait_ready(timeout=2)


def test_plugin_uses_the_external_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ExternalKafka, "wait_ready", lambda self, timeout=30.0: None)
    service = pytest_plugin.start_default_broker(tmp_path, {"KAFKALITE_BOOTSTRAP": "k:1"})
    assert isinstance(service, ExternalKafka) and service.bootstrap == "k:1"
    assert not tmp_path.joinpath("broker").exists()  # nothing started locally


def test_plugin_docker_backend_without_testcontainers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Simulate a machine without the package (an import of a None module fails).
    monkeypatch.setitem(sys.modules, "testcontainers", None)
    monkeypatch.setitem(sys.modules, "testcontainers.core", None)
    monkeypatch.setitem(sys.modules, "testcontainers.core.container", None)
    with pytest.raises(DockerUnavailableError, match="testcontainers"):
        pytest_plugin.start_default_broker(tmp_path, {"KAFKALITE_BROKER": "docker"})


def test_container_env_follows_the_apache_kafka_image_convention() -> None:
    env = container_env({"a.b_c-d": "v", "process.roles": "broker,controller"})
    assert env == {"KAFKA_A_B__C___D": "v", "KAFKA_PROCESS_ROLES": "broker,controller"}


def test_container_properties_advertise_the_published_port() -> None:
    props = container_properties("4.3.1", "docker-host", 40000, {"num.partitions": "4"})
    assert props["listeners"] == "PLAINTEXT://0.0.0.0:40000,CONTROLLER://0.0.0.0:9093"
    assert props["advertised.listeners"] == "PLAINTEXT://docker-host:40000"
    assert props["controller.quorum.voters"] == "1@localhost:9093"
    assert props["num.partitions"] == "4"
    assert props["offsets.topic.replication.factor"] == "1"


def test_docker_kafka_defaults() -> None:
    kafka = DockerKafka("3.9.1")
    assert kafka.image == "apache/kafka:3.9.1"
    assert kafka.bootstrap == f"localhost:{kafka.port}"
    assert kafka.log_tail() == ""
    kafka.close()  # never started: nothing to do
    with pytest.raises(KeyError):
        kafka.bootstrap_for("SASL_PLAINTEXT")
