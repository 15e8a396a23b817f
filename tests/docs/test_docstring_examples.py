"""Every example of the public API's docstrings runs, against the session's broker.

The examples are found by ``tools/docs/docstring_examples.py`` (the ``Example::``
convention, CONTRIBUTING.md "Docstring examples") and run in this one process, one
after the other, each in a fresh namespace holding the preamble the convention
documents:

* every public name of ``kafkalite``, ``kafkalite.admin`` (its type modules),
  ``kafkalite.errors``, ``kafkalite.types`` and ``kafkalite.serialization`` (for an asyncio example, the
  clients of ``kafkalite.aio`` under the same names), plus ``asyncio``;
* ``bootstrap``: the broker's address (``127.0.0.1:9092`` in an example is replaced by it);
* ``topic``: ``"orders"``, 3 partitions, holding the records ``k0:v0``, ``k1:v1``,
  ``k2:v2`` (one per partition, by explicit partition);
* ``producer``, ``consumer`` (group ``docs-<n>``, ``auto.offset.reset=earliest``,
  nothing subscribed) and ``admin``: clients made for the example when its code names
  them, and closed after it;
* ``share_group``: a new share group's id, set to start from the earliest offset
  (group config ``share.auto.offset.reset=earliest``; a share group starts from the
  latest by default), and ``share_consumer``, a ShareConsumer in it (implicit
  acknowledgement, nothing subscribed), when the example names them;
* ``kafka_broker``: that broker's :class:`~kafkalite.testing.LocalBroker` (examples
  of the testing harness; every public name of ``kafkalite.testing`` is in the
  namespace too), and ``network_faults``: a
  :class:`~kafkalite.testing.NetworkFaults` over one proxy in front of it;
* with ``needs schema_registry``: ``registry_url``, ``schema_registry`` (the session's
  registry service) and ``registry``, a ``SchemaRegistryClient`` of it;
* with ``needs secured_broker``: ``secured_broker``, the harness's secured broker
  (``kafka_broker_sasl``: SASL and TLS listeners, ACLs on), and ``admin`` is a client of
  it signed in as its super user ``admin``.

An asyncio example runs with top-level ``await`` on the session's one event loop. What
an example shows as its outcome it states with ``assert``, which is checked. Topics an
example creates are deleted after it, and the preamble's topic is made again if the
example deleted it or changed its partitions or offsets (records sent to it, records
deleted), so examples do not depend on each other's order.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import itertools
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import kafkalite
import kafkalite.aio
import kafkalite.errors
import kafkalite.serialization
import kafkalite.testing
import kafkalite.types
from kafkalite import AdminClient, NewTopic, OffsetSpec, Producer, TopicPartition
from kafkalite.admin import AlterConfigOp, ConfigResource
from kafkalite.testing import FaultyProxy, LocalBroker, NetworkFaults
from tests.docs.conftest import delete_topics, user_topics
from tools.docs.docstring_examples import DocExample, collect
from tools.docs.public_api import PUBLIC_MODULES

ADDRESS = "127.0.0.1:9092"
TOPIC = "orders"
EXAMPLES = collect()
RUNNABLE = [e for e in EXAMPLES if e.skip is None]
_groups = itertools.count()


#: the modules whose names ``kafkalite.admin`` exports (lazily, so without ``__all__``)
_ADMIN_TYPES = tuple(importlib.import_module(m) for m in PUBLIC_MODULES if m.startswith("kafkalite.admin."))


def _public(module: Any) -> dict[str, Any]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    return {n: getattr(module, n) for n in names if not n.startswith("_")}


def _base_namespace(front: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "__main__", "asyncio": asyncio, "kafkalite": kafkalite}
    for module in (kafkalite.testing, *_ADMIN_TYPES, kafkalite.serialization, kafkalite.types, kafkalite.errors,
                   kafkalite):
        ns.update(_public(module))
    if front == "asyncio":
        ns.update(_public(kafkalite.aio))
    return ns


@dataclass
class Session:
    broker: LocalBroker
    loop: asyncio.AbstractEventLoop

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap


def fill_topic(bootstrap: str) -> None:
    """The preamble's topic: ``orders``, 3 partitions, one record ``kN:vN`` in partition N."""
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        if TOPIC in admin.list_topics():
            delete_topics(admin, [TOPIC])
        admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)]).all()
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for n in range(3):
            producer.send(TOPIC, f"v{n}".encode(), key=f"k{n}".encode(), partition=n)
        producer.flush()


@pytest.fixture(scope="module")
def session(guide_local_broker: LocalBroker) -> Iterator[Session]:
    with AdminClient({"bootstrap.servers": guide_local_broker.bootstrap}) as admin:
        delete_topics(admin, user_topics(admin))
    fill_topic(guide_local_broker.bootstrap)
    loop = asyncio.new_event_loop()
    try:
        yield Session(guide_local_broker, loop)
    finally:
        loop.close()


def _topic_state(admin: AdminClient) -> object:
    """The preamble topic's partitions and their offsets (what an example may change)."""
    if TOPIC not in admin.list_topics():
        return None
    partitions = admin.describe_topics([TOPIC])[TOPIC].result().partitions
    specs = {TopicPartition(TOPIC, p.partition): OffsetSpec.latest() for p in partitions}
    latest = admin.list_offsets(specs).all()
    earliest = admin.list_offsets({tp: OffsetSpec.earliest() for tp in specs}).all()
    return sorted((tp.partition, latest[tp].offset, earliest[tp].offset) for tp in specs)


def _clients(example: DocExample, bootstrap: str, secured: dict[str, Any] | None) -> dict[str, Any]:
    """The preamble's clients the example names, made for it (``admin`` of the secured
    broker with ``secured``, its settings)."""
    aio = example.front == "asyncio"
    kinds = {"producer": kafkalite.aio.Producer if aio else kafkalite.Producer,
             "consumer": kafkalite.aio.Consumer if aio else kafkalite.Consumer,
             "admin": kafkalite.aio.AdminClient if aio else kafkalite.AdminClient}
    out: dict[str, Any] = {}
    if re.search(r"\bshare_(group|consumer)\b", example.code):
        out["share_group"] = _new_share_group(bootstrap)
        if re.search(r"\bshare_consumer\b", example.code):
            kind = kafkalite.aio.ShareConsumer if aio else kafkalite.ShareConsumer
            out["share_consumer"] = kind({"bootstrap.servers": bootstrap, "group.id": out["share_group"]})
    for name, kind in kinds.items():
        if re.search(rf"\b{name}\b", example.code):
            config: dict[str, Any] = {"bootstrap.servers": bootstrap}
            if name == "admin" and secured is not None:
                config = dict(secured)
            if name == "consumer":
                config |= {"group.id": f"docs-{next(_groups)}", "auto.offset.reset": "earliest"}
            out[name] = kind(config)
    return out


#: the clients' class names, on both fronts (kafkalite.aio.Producer is AsyncProducer)
_CLIENTS = ("Producer", "Consumer", "ShareConsumer", "AdminClient",
            "AsyncProducer", "AsyncConsumer", "AsyncShareConsumer", "AsyncAdminClient")


def _left_open(ns: dict[str, Any], clients: dict[str, Any]) -> list[Any]:
    """The preamble's clients and those the example made (closed again, as a script's end
    would close them: close() is idempotent)."""
    made = [v for v in ns.values() if type(v).__name__ in _CLIENTS and type(v).__module__.startswith("kafkalite.")]
    mine = [c for c in clients.values() if type(c).__name__ in _CLIENTS]
    return list({id(c): c for c in [*mine, *made]}.values())


def _new_share_group(bootstrap: str) -> str:
    """A share group id no example used, reading from the earliest offset."""
    group = f"docs-share-{next(_groups)}"
    resource = ConfigResource("group", group)
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.incremental_alter_configs({resource: [AlterConfigOp.set("share.auto.offset.reset", "earliest")]}).all()
    return group


async def _close_async(clients: list[Any]) -> list[asyncio.Task[Any]]:
    """Close the clients, then let the tasks they cancelled end (the loop runs only
    while an example does); the tasks still running after 30 s, a leak."""
    for client in clients:
        await client.close()
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    if others:
        await asyncio.wait(others, timeout=30)
    return [t for t in others if not t.done()]


def run_docstring_example(example: DocExample, session: Session, services: dict[str, Any]) -> None:
    """Run one example in its preamble (``services``: the needed services' values); clean
    up what it left."""
    ns = _base_namespace(example.front)
    ns |= {"bootstrap": session.bootstrap, "topic": TOPIC, "kafka_broker": session.broker}
    secured = None
    if "schema_registry" in services:
        registry = services["schema_registry"]
        ns |= {"schema_registry": registry, "registry_url": registry.url,
               "registry": kafkalite.serialization.SchemaRegistryClient(registry.url)}
    if "secured_broker" in services:
        ns["secured_broker"] = broker = services["secured_broker"]
        secured = broker.client_config("SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256", sasl_username="admin",
                                       sasl_password="admin-secret")
    proxy = None
    if re.search(r"\bnetwork_faults\b", example.code):
        proxy = FaultyProxy(session.broker.host, session.broker.port).start()
        ns["network_faults"] = NetworkFaults({1: proxy})
    code = compile(example.code.replace(ADDRESS, session.bootstrap), example.id, "exec",
                   flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    with AdminClient({"bootstrap.servers": session.bootstrap}) as admin:
        before_topics = set(user_topics(admin))
        before_state = _topic_state(admin)
    before_threads = set(threading.enumerate())
    clients: dict[str, Any] = {}
    try:
        if example.front == "asyncio":
            async def run() -> None:
                clients.update(_clients(example, session.bootstrap, secured))
                ns.update(clients)
                result = eval(code, ns)  # a coroutine when the example awaits
                if asyncio.iscoroutine(result):
                    await result
            session.loop.run_until_complete(run())
        else:
            clients.update(_clients(example, session.bootstrap, secured))
            ns.update(clients)
            exec(code, ns)
    finally:
        if example.front == "asyncio":
            left_tasks = session.loop.run_until_complete(_close_async(_left_open(ns, clients)))
            assert not left_tasks, f"{example.id} left tasks running: {left_tasks}"
        else:
            for client in _left_open(ns, clients):
                client.close()
        with AdminClient({"bootstrap.servers": session.bootstrap}) as admin:
            delete_topics(admin, sorted(set(user_topics(admin)) - before_topics))
            if TOPIC not in before_topics or _topic_state(admin) != before_state:
                fill_topic(session.bootstrap)
        if proxy is not None:
            proxy.close()
    leaked = [t for t in set(threading.enumerate()) - before_threads if t.is_alive() and not t.daemon]
    assert not leaked, f"{example.id} left threads running: {leaked}"


def test_examples_are_found() -> None:
    # the convention is seen (a changed header would hide every example), on both fronts
    assert len(RUNNABLE) > 50
    fronts = {e.front for e in RUNNABLE}
    assert fronts == {"blocking", "asyncio"}, fronts


@pytest.mark.broker
@pytest.mark.timeout(120)
@pytest.mark.parametrize("example", RUNNABLE, ids=[e.id for e in RUNNABLE])
def test_docstring_example_runs(example: DocExample, session: Session, request: pytest.FixtureRequest) -> None:
    fixtures = {"schema_registry": "schema_registry", "secured_broker": "kafka_broker_sasl"}
    services = {need: request.getfixturevalue(fixtures[need]) for need in example.needs}
    run_docstring_example(example, session, services)
