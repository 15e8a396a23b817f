"""A broker and a Schema Registry for the serialization examples.

Given ``--bootstrap`` and ``--registry`` the examples use those; otherwise they start a
local Kafka and an Apicurio Registry with ``kafkalite.testing`` (no Docker; the first
run downloads them) and stop them at the end.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bootstrap", help="Kafka bootstrap servers (default: start a local broker)")
    parser.add_argument("--registry", help="schema.registry.url (default: start a local Apicurio Registry)")
    return parser.parse_args()


@contextlib.contextmanager
def services(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """Yield ``(bootstrap, registry_url)``, starting what was not given."""
    with contextlib.ExitStack() as stack:
        bootstrap, registry = args.bootstrap, args.registry
        if bootstrap is None:
            from kafkalite.testing import LocalBroker

            print("starting a local Kafka broker ...")
            bootstrap = stack.enter_context(LocalBroker()).bootstrap
        if registry is None:
            from kafkalite.testing import ApicurioRegistry

            print("starting a local Schema Registry (Apicurio) ...")
            registry = stack.enter_context(ApicurioRegistry()).url
        yield bootstrap, registry


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    from kafkalite import AdminClient, NewTopic
    from kafkalite.errors import TopicExistsError

    with AdminClient({"bootstrap.servers": bootstrap}) as admin, contextlib.suppress(TopicExistsError):
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)]).raise_on_error()
