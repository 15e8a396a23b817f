"""Kafka in a Docker container via testcontainers, for machines that prefer Docker.

Opt-in only (``KAFKALITE_BROKER=docker``): the local jars need neither Docker nor
root, and start faster. The container is the official ``apache/kafka`` image,
configured through its ``KAFKA_*`` environment variables with the same
``server.properties`` the local broker uses. The client port is published on the
same port number on the host, so the advertised address is known before start
(no post-start rewriting of listeners). Java tools run locally from the jar cache.

``testcontainers`` is imported only when a container is started.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkalite.testing.backends import ToolsMixin
from kafkalite.testing.broker import random_cluster_id
from kafkalite.testing.distribution import DEFAULT_KAFKA_VERSION
from kafkalite.testing.ports import free_port
from kafkalite.testing.properties import NodeConfig, server_properties

_CONTAINER_CONTROLLER_PORT = 9093
_CONTAINER_DATA_DIR = "/var/lib/kafka/data"


class DockerUnavailableError(RuntimeError):
    """testcontainers is missing or no Docker engine answers.

    Example::

        try:
            DockerKafka().start(timeout=120).close()    # with a Docker engine: a container starts and stops
        except DockerUnavailableError as exc:           # without: testcontainers missing or no engine answers
            print(exc)
    """


def container_env(props: Mapping[str, str]) -> dict[str, str]:
    """``server.properties`` as the ``apache/kafka`` image's environment variables.

    The image maps ``KAFKA_FOO_BAR`` to ``foo.bar``, ``__`` to ``_`` and ``___`` to
    ``-``.

    >>> container_env({"log.dirs": "/d", "group.initial.rebalance.delay.ms": "0"})
    {'KAFKA_LOG_DIRS': '/d', 'KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS': '0'}
    """
    env = {}
    for key, value in props.items():
        name = "".join({".": "_", "_": "__", "-": "___"}.get(c, c) for c in key).upper()
        env[f"KAFKA_{name}"] = value
    return env


def container_properties(
    version: str, host: str, port: int, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The broker config inside the container: listens on all interfaces, advertises
    ``host:port`` (the published port), controller on the container's loopback."""
    cfg = NodeConfig(
        node_id=1,
        version=version,
        data_dir=Path(_CONTAINER_DATA_DIR),
        listeners={"PLAINTEXT": port},
        controller_port=_CONTAINER_CONTROLLER_PORT,
        voters={1: _CONTAINER_CONTROLLER_PORT},
        host="localhost",
        extra=dict(extra or {}),
    )
    props = server_properties(cfg)
    props["listeners"] = f"PLAINTEXT://0.0.0.0:{port},CONTROLLER://0.0.0.0:{_CONTAINER_CONTROLLER_PORT}"
    props["advertised.listeners"] = f"PLAINTEXT://{host}:{port}"
    return props


class DockerKafka(ToolsMixin):
    """One ``apache/kafka:<version>`` container.

    >>> with DockerKafka() as kafka:          # doctest: +SKIP
    ...     kafka.bootstrap
    'localhost:41234'

    Example (not run: needs a Docker engine, which the harness cannot start)::

        with DockerKafka("4.0.0") as kafka:
            print(kafka.bootstrap)
    """

    def __init__(
        self,
        version: str = DEFAULT_KAFKA_VERSION,
        *,
        image: str | None = None,
        extra_properties: Mapping[str, str] | None = None,
    ) -> None:
        self.version = version
        self.image = image or f"apache/kafka:{version}"
        self.extra = dict(extra_properties or {})
        self.port = free_port()
        self.host = "localhost"
        self._container: Any = None

    def __repr__(self) -> str:
        return f"<DockerKafka {self.image} {self.bootstrap}>"

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the PLAINTEXT listener.

        Example (not run: needs a Docker engine, which the harness cannot start)::

            kafka = DockerKafka().start()
            Producer({"bootstrap.servers": kafka.bootstrap}).close()
            kafka.close()
        """

        return f"{self.host}:{self.port}"

    def bootstrap_for(self, listener: str) -> str:
        """The bootstrap address of a listener (the Docker backend has only ``PLAINTEXT``).

        Example (not run: needs a Docker engine, which the harness cannot start)::

            kafka = DockerKafka().start()
            assert kafka.bootstrap_for("PLAINTEXT") == kafka.bootstrap
            kafka.close()
        """
        if listener != "PLAINTEXT":
            raise KeyError(f"the Docker backend has only a PLAINTEXT listener, not {listener}")
        return self.bootstrap

    def start(self, timeout: float = 120.0) -> DockerKafka:
        """Start the container and wait until Kafka is ready (DockerUnavailableError without Docker).

        Example (not run: needs a Docker engine, which the harness cannot start)::

            kafka = DockerKafka("4.0.0", extra_properties={"num.partitions": "3"}).start(timeout=120)
            kafka.close()
        """
        try:
            from testcontainers.core.container import DockerContainer
            from testcontainers.core.waiting_utils import wait_for_logs
        except ImportError as exc:
            raise DockerUnavailableError(
                "KAFKALITE_BROKER=docker needs the testcontainers package "
                "(pip install 'kafkalite[testing]') and a running Docker engine"
            ) from exc
        try:
            # DockerContainer() already asks the engine for its version (docker.from_env):
            # without an engine that raises DockerException, which must not escape untyped.
            container = DockerContainer(self.image).with_bind_ports(self.port, self.port)
            self.host = container.get_container_host_ip()
        except Exception as exc:
            raise DockerUnavailableError(f"no Docker engine answers: {exc}") from exc
        for key, value in container_env(
            container_properties(self.version, self.host, self.port, self.extra)
        ).items():
            container.with_env(key, value)
        container.with_env("CLUSTER_ID", random_cluster_id())
        self._container = container.start()
        wait_for_logs(container, "Kafka Server started", timeout=timeout)
        return self

    def log_tail(self, lines: int = 40) -> str:
        """The container's last ``lines`` of output.

        Example (not run: needs a Docker engine, which the harness cannot start)::

            kafka = DockerKafka().start()
            print(kafka.log_tail(10))
            kafka.close()
        """
        if self._container is None:
            return ""
        out, err = self._container.get_logs()
        text = (out or b"").decode(errors="replace") + (err or b"").decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        """Stop the container.

        Example (not run: needs a Docker engine, which the harness cannot start)::

            DockerKafka().start().close()                   # stops the container
        """
        if self._container is not None:
            self._container.stop()
            self._container = None

    def __enter__(self) -> DockerKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
