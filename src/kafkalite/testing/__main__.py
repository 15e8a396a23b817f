"""``python -m kafkalite.testing up|down|status``: a Kafka for demos and manual tests.

``up`` starts a broker (or a cluster) that keeps running after the command returns,
records it under ``<state>/cli/`` and prints its bootstrap address; running it again
while that broker is up just prints the address. ``status`` shows what runs;
``down`` stops it, plus any other detached kafkalite broker in the same state
directory and any broker a crashed test run left behind. ``fetch`` only
downloads the jars (Kafka's, the sign-in services', the OpenTelemetry Java agent; CI does it
before the tests, so the first test does not wait).

Example::

    $ python -m kafkalite.testing up
    127.0.0.1:9092
    $ python -m kafkalite.testing status
    Kafka 4.4.0 (KRaft mode), 1 node(s), bootstrap 127.0.0.1:9092
      node 1: pid 12345, ready, logs in ~/.local/state/kafkalite/cli/run-.../logs
    $ python -m kafkalite.testing down
    stopped Kafka 4.4.0 at 127.0.0.1:9092

``up`` runs Kafka with its own default ``auto.create.topics.enable=true`` (a producer or
consumer of any client creates a topic by using it), as a broker for people should;
``up --no-auto-create-topics`` turns that off (the test suite's fixtures always do, so
a test that forgets to create its topic fails loudly).

``up --sasl`` adds a SASL_PLAINTEXT listener (PLAIN, SCRAM users, ACLs); ``up --ssl``
adds the TLS listeners of :data:`SECURE_PRESET` with a test CA, and ``status`` prints
their addresses and the CA / client certificate files.

``up --kerberos`` starts Kafka's MiniKdc first and adds GSSAPI listeners (``KERBEROS``,
``KERBEROS_REAUTH``); ``up --oauth`` starts an OIDC provider (mock-oauth2-server) and adds
an ``OAUTH`` listener that validates its tokens; ``status`` prints the ``KRB5_CONFIG``,
the keytabs and the token endpoint (see :mod:`kafkalite.testing.signin`).

``doctor`` prints what this installation has: Python and platform, kafkalite's version,
the active kernels (C or pure Python), the installed extras and the Java found
(:mod:`kafkalite.testing.doctor`).

``registry up|down|status`` does the same for a Schema Registry (Apicurio Registry,
Confluent-compatible API); ``up`` prints the ``schema.registry.url``::

    $ python -m kafkalite.testing registry up
    http://127.0.0.1:8081/apis/ccompat/v7
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafkalite.testing import processes
from kafkalite.testing.broker import LocalBroker
from kafkalite.testing.cluster import LocalCluster
from kafkalite.testing.distribution import (
    COMPAT_KAFKA_VERSION,
    DEFAULT_KAFKA_VERSION,
    KafkaDistribution,
    available_versions,
)
from kafkalite.testing.jarsets import JarSet, JarSetLock
from kafkalite.testing.java import find_java
from kafkalite.testing.kdc import DEFAULT_MINIKDC_VERSION
from kafkalite.testing.oidc import DEFAULT_OIDC_VERSION
from kafkalite.testing.otel_agent import DEFAULT_AGENT_VERSION, ensure_java_agent, java_agent_cached
from kafkalite.testing.paths import state_dir
from kafkalite.testing.ports import port_is_free
from kafkalite.testing.properties import SASL_PRESET, SECURE_PRESET
from kafkalite.testing.registry import (
    DEFAULT_REGISTRY_VERSION,
    RegistryDistribution,
    registry_command,
    registry_versions,
)
from kafkalite.testing.releases import KEPT, KRAFT, ZOOKEEPER, modes_of
from kafkalite.testing.signin import SignInServices, describe_state, detached_state
from kafkalite.testing.wire import KafkaSocket, WireError


def cli_dir() -> Path:
    return state_dir() / "cli"


def state_file() -> Path:
    return cli_dir() / "up.json"


def read_state() -> dict[str, Any] | None:
    try:
        return dict(json.loads(state_file().read_text()))
    except (OSError, ValueError):
        return None


def _node_ready(address: str) -> bool:
    try:
        with KafkaSocket.to(address, timeout=2.0) as conn:
            conn.api_versions()
            return bool(conn.metadata([]).brokers)
    except (OSError, WireError):
        return False


def _nodes_alive(state: dict[str, Any]) -> list[bool]:
    return [processes.is_alive(n["pid"], n.get("start_time")) for n in state["nodes"]]


def cmd_up(args: argparse.Namespace) -> int:
    state = read_state()
    if state is not None:
        if all(_nodes_alive(state)) and all(_node_ready(n["bootstrap"]) for n in state["nodes"]):
            print(state["bootstrap"])
            return 0
        print("kafkalite: the recorded broker is not healthy; restarting it", file=sys.stderr)
        _stop(state)
    port = args.port
    if not port_is_free(port):
        print(f"kafkalite: port {port} is taken; using a free port", file=sys.stderr)
        port = None
    run_dir = cli_dir() / f"run-{time.strftime('%Y%m%d-%H%M%S')}"
    brokers: list[LocalBroker]
    target: LocalBroker | LocalCluster
    signin: dict[str, Any] = {}
    if args.kerberos or args.oauth:
        if args.ssl or args.sasl or args.nodes != 1:
            print("kafkalite: --kerberos / --oauth start one node with their own listeners; "
                  "leave out --ssl, --sasl and --nodes", file=sys.stderr)
            return 2
        services = SignInServices(run_dir, kerberos=args.kerberos, oauth=args.oauth, version=args.version,
                                  port=port, token_lifetime_s=args.token_lifetime, tied=False,
                                  auto_create_topics=args.auto_create_topics)
        services.start(timeout=args.timeout)
        assert services.broker is not None
        target, brokers = services.broker, [services.broker]
        signin = detached_state(services)
    else:
        target = build_target(args, run_dir, port)
        brokers = target.brokers if isinstance(target, LocalCluster) else [target]
    try:
        if not signin:
            target.start(timeout=args.timeout)
    except BaseException:
        for broker in brokers:
            broker.kill()
        raise
    listeners = {name: target.bootstrap_for(name) for name in brokers[0].listeners}
    zookeeper = target.zookeeper if brokers[0].mode == ZOOKEEPER else None
    state = {
        "version": args.version,
        "mode": brokers[0].mode,
        "zookeeper": None if zookeeper is None or zookeeper.process is None else {
            "pid": zookeeper.process.pid, "start_time": processes.process_start_time(zookeeper.process.pid),
            "connect": zookeeper.connect},
        "bootstrap": target.bootstrap,
        "auto_create_topics": args.auto_create_topics,
        "listeners": listeners,
        "run_dir": str(run_dir),
        "tls_dir": str(brokers[0].tls_dir) if brokers[0].tls is not None else None,
        "signin": signin,
        "sasl_users": sasl_users(brokers[0]),
        "nodes": [
            {
                "node_id": b.node_id,
                "pid": b.pid,
                "start_time": processes.process_start_time(b.pid or 0),
                "bootstrap": b.bootstrap,
                "log_dir": str(b.log_dir),
            }
            for b in brokers
        ],
    }
    state_file().parent.mkdir(parents=True, exist_ok=True)
    state_file().write_text(json.dumps(state, indent=1))
    # stdout stays the bootstrap address alone (scripts read it); the sign-in details
    # for people go to stderr, and `status` prints them again.
    for line in describe_users(state):
        print(line.strip(), file=sys.stderr)
    print(target.bootstrap)
    return 0


def sasl_users(broker: LocalBroker) -> dict[str, Any]:
    """The SASL users of a broker with a security preset, for ``status`` (test passwords)."""
    preset = broker.security
    if preset is None or not preset.users:
        return {}
    return {"listener": preset.listener, "mechanisms": list(preset.mechanisms),
            "super_users": list(preset.super_users), "users": dict(preset.users)}


def describe_users(state: dict[str, Any]) -> list[str]:
    """Lines naming the SASL users and their passwords, and a client properties file."""
    info = state.get("sasl_users") or {}
    if not info:
        return []
    listener = info["listener"]
    lines = [f"  SASL users ({', '.join(info['mechanisms'])}) on {listener} "
             f"{state.get('listeners', {}).get(listener, '')}:"]
    for user, password in info["users"].items():
        role = " (super user: may do anything, e.g. manage ACLs)" if user in info["super_users"] else ""
        lines.append(f"    {user} / {password}{role}")
    admin = next(iter(info["super_users"]), next(iter(info["users"])))
    lines += ["  a properties file for the console tools (--command-config admin.properties):",
              f"    bootstrap.servers={state.get('listeners', {}).get(listener, '')}",
              f"    security.protocol={listener}", "    sasl.mechanism=SCRAM-SHA-256",
              f"    sasl.username={admin}", f"    sasl.password={info['users'][admin]}"]
    return lines


def build_target(args: argparse.Namespace, run_dir: Path, port: int | None) -> LocalBroker | LocalCluster:
    """The broker (or cluster) ``up`` starts, detached (``tied=False``), from its options."""
    security = SECURE_PRESET if args.ssl else SASL_PRESET if args.sasl else None
    if args.nodes == 1:
        return LocalBroker(args.version, run_dir=run_dir, port=port, security=security, tied=False,
                           auto_create_topics=args.auto_create_topics, mode=args.mode)
    return LocalCluster(args.nodes, args.version, run_dir=run_dir, first_port=port, security=security,
                        tied=False, auto_create_topics=args.auto_create_topics, mode=args.mode)


def _stop(state: dict[str, Any], timeout: float = 30.0) -> None:
    """SIGTERM every node at once (a lone survivor would wait for its quorum), then
    wait, then SIGKILL what is left; delete the run directory and the record."""
    nodes = [n for n in state["nodes"] if processes.is_alive(n["pid"], n.get("start_time"))]
    for node in nodes:
        try:
            os.kill(node["pid"], signal.SIGCONT)
            os.kill(node["pid"], signal.SIGTERM)
        except ProcessLookupError:
            pass
    for node in nodes:
        processes.terminate(node["pid"], node.get("start_time"), timeout=timeout)
    for service in (state.get("signin") or {}).values():  # the KDC / OIDC provider of --kerberos / --oauth
        processes.terminate(service["pid"], service.get("start_time"), timeout=5.0)
    zookeeper = state.get("zookeeper")
    if zookeeper:  # after the brokers, which deregister from it as they stop
        processes.terminate(zookeeper["pid"], zookeeper.get("start_time"), timeout=5.0)
        processes.unregister(zookeeper["pid"])
    for node in state["nodes"]:
        processes.unregister(node["pid"])
    if state.get("run_dir"):
        shutil.rmtree(state["run_dir"], ignore_errors=True)
    state_file().unlink(missing_ok=True)


def cmd_down(args: argparse.Namespace) -> int:
    state = read_state()
    if state is not None:
        _stop(state)
        print(f"stopped Kafka {state['version']} at {state['bootstrap']}")
    # Detached brokers whose record was lost, and tied ones whose owner died.
    stray = [r for r in processes.records() if r.alive() and not r.tied]
    for record in stray:
        processes.terminate(record.pid, record.start_time)
        print(f"stopped stray process {record.pid} ({record.description})")
    for record in processes.reap_orphans():
        print(f"killed orphan {record.pid} ({record.description})")
    if state is None and not stray:
        print("nothing was running")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = read_state()
    running = 0
    if state is not None:
        mode = "ZooKeeper" if state.get("mode") == ZOOKEEPER else "KRaft"
        print(f"Kafka {state['version']} ({mode} mode), {len(state['nodes'])} node(s), "
              f"bootstrap {state['bootstrap']}")
        if state.get("zookeeper"):
            print(f"  ZooKeeper: {state['zookeeper']['connect']} (pid {state['zookeeper']['pid']})")
        if "auto_create_topics" in state:
            print(f"  auto.create.topics.enable={str(state['auto_create_topics']).lower()}")
        for name, address in state.get("listeners", {}).items():
            if name != "PLAINTEXT":
                print(f"  {name}: {address}")
        if state.get("tls_dir"):
            print(f"  TLS: CA {state['tls_dir']}/ca.pem, client certificate {state['tls_dir']}/client.pem "
                  f"(key {state['tls_dir']}/client.key)")
        for line in describe_state(state.get("signin") or {}):
            print(line)
        for line in describe_users(state):
            print(line)
        for node, alive in zip(state["nodes"], _nodes_alive(state)):
            health = ("ready" if _node_ready(node["bootstrap"]) else "not ready") if alive else "dead"
            running += alive
            print(f"  node {node['node_id']}: pid {node['pid']}, {health}, logs in {node['log_dir']}")
    others = [r for r in processes.records() if r.alive() and r.pid not in _pids(state)]
    for record in others:
        kind = "test run" if record.tied else "detached"
        print(f"  other ({kind}) pid {record.pid}: {record.description}")
    if state is None and not others:
        print("not running")
    return 0 if running or others else 1


def cmd_fetch(args: argparse.Namespace) -> int:
    """Download (or verify the cache of) the jars of the given releases."""
    defaults = dict.fromkeys([DEFAULT_KAFKA_VERSION, COMPAT_KAFKA_VERSION, *(r.version for r in KEPT if r.in_ci)])
    for version in args.versions or ([r.version for r in KEPT] if args.all else defaults):
        dist = KafkaDistribution(version)
        started = time.monotonic()
        cached = dist.is_complete()
        dist.ensure()
        how = "cached" if cached else f"downloaded in {time.monotonic() - started:.1f} s"
        print(f"Kafka {version}: {len(dist.lock.artifacts)} jars {how} in {dist.libs}")
    if not args.versions:
        registry = RegistryDistribution()
        started = time.monotonic()
        how = "cached" if registry.is_complete() else "downloaded"
        registry.ensure()
        how = how if how == "cached" else f"downloaded in {time.monotonic() - started:.1f} s"
        print(f"Apicurio Registry {registry.version}: {how} in {registry.app}")
        for name, version in (("minikdc", DEFAULT_MINIKDC_VERSION), ("mock-oauth2-server", DEFAULT_OIDC_VERSION)):
            jars = JarSet(JarSetLock.load(name, version))
            started = time.monotonic()
            how = "cached" if jars.is_complete() else "downloaded"
            jars.ensure()
            how = how if how == "cached" else f"downloaded in {time.monotonic() - started:.1f} s"
            print(f"{name} {version} (sign-in tests): {len(jars.lock.artifacts)} jars {how} in {jars.libs}")
        started = time.monotonic()
        how = "cached" if java_agent_cached() else "downloaded"
        agent = ensure_java_agent(verify=True)
        how = how if how == "cached" else f"downloaded in {time.monotonic() - started:.1f} s"
        print(f"OpenTelemetry Java agent {DEFAULT_AGENT_VERSION} (tracing interop tests): {how}, verified, {agent}")
    java = find_java()
    print(f"Java {java.version} from {java.source}: {java.executable}")
    return 0


def cmd_registry(args: argparse.Namespace) -> int:
    """``registry up|down|status``: see :mod:`kafkalite.testing.registry`."""
    return registry_command(
        args.action, version=args.version, port=args.port, compatibility=args.compatibility, timeout=args.timeout
    )


def _pids(state: dict[str, Any] | None) -> set[int]:
    if not state:
        return set()
    zookeeper = [state["zookeeper"]["pid"]] if state.get("zookeeper") else []
    return ({n["pid"] for n in state["nodes"]} | {s["pid"] for s in (state.get("signin") or {}).values()}
            | set(zookeeper))


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m kafkalite.testing``."""
    parser = argparse.ArgumentParser(
        prog="python -m kafkalite.testing",
        description="Start, inspect and stop a local Apache Kafka (no Docker, no install).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a broker (or cluster) in the background")
    up.add_argument("--version", default=DEFAULT_KAFKA_VERSION, choices=available_versions(), metavar="VERSION",
                    help=f"the Kafka release (default {DEFAULT_KAFKA_VERSION}): " + "; ".join(
                        f"{r.version} ({'ZooKeeper' if r.mode == ZOOKEEPER else 'KRaft'}"
                        f"{' or KRaft' if r.mode == ZOOKEEPER and len(modes_of(r.version)) > 1 else ''}"
                        f"{' or ZooKeeper' if r.mode == KRAFT and len(modes_of(r.version)) > 1 else ''})"
                        for r in KEPT))
    mode = up.add_mutually_exclusive_group()
    mode.add_argument("--zookeeper", dest="mode", action="store_const", const=ZOOKEEPER,
                      help="ZooKeeper mode (releases before 4.0; the default before 3.3 and for 3.6.2)")
    mode.add_argument("--kraft", dest="mode", action="store_const", const=KRAFT,
                      help="KRaft mode (3.3 and later; the default from 3.9 on)")
    up.add_argument("--port", type=int, default=9092, help="client port of node 1 (default 9092 if free)")
    up.add_argument("--nodes", type=int, default=1, choices=(1, 3))
    up.add_argument("--sasl", action="store_true", help="add the SASL_PLAINTEXT listener preset")
    up.add_argument("--ssl", action="store_true",
                    help="add SSL, MTLS, SASL_SSL, SASL_PLAINTEXT and REAUTH listeners (test CA; implies --sasl)")
    up.add_argument("--kerberos", action="store_true",
                    help="start Kafka's MiniKdc and add GSSAPI listeners (KERBEROS, KERBEROS_REAUTH)")
    up.add_argument("--oauth", action="store_true",
                    help="start an OIDC provider (mock-oauth2-server) and add an OAUTHBEARER listener (OAUTH)")
    up.add_argument("--token-lifetime", type=int, default=3600, metavar="SECONDS",
                    help="lifetime of the OIDC provider's tokens (with --oauth)")
    up.add_argument("--auto-create-topics", action=argparse.BooleanOptionalAction, default=True,
                    help="auto.create.topics.enable (Kafka's default: on); --no-auto-create-topics "
                         "makes producing to or subscribing to a missing topic an error")
    up.add_argument("--timeout", type=float, default=120.0)
    up.set_defaults(func=cmd_up)
    sub.add_parser("down", help="stop what `up` started").set_defaults(func=cmd_down)
    sub.add_parser("status", help="show what runs").set_defaults(func=cmd_status)
    fetch = sub.add_parser("fetch", help="download Kafka's jars into the cache (no broker)")
    fetch.add_argument("versions", nargs="*", metavar="VERSION", help="default: the releases the test suite runs (--all: every kept release)")
    fetch.add_argument("--all", action="store_true", help="every kept release (the full version matrix)")
    fetch.set_defaults(func=cmd_fetch)
    registry = sub.add_parser("registry", help="a Schema Registry (Apicurio) in the background")
    registry.add_argument("action", choices=("up", "down", "status"))
    registry.add_argument("--version", default=DEFAULT_REGISTRY_VERSION, choices=registry_versions())
    registry.add_argument("--port", type=int, default=8081, help="HTTP port (default 8081 if free)")
    registry.add_argument("--compatibility", default="BACKWARD", help="global compatibility rule")
    registry.add_argument("--timeout", type=float, default=120.0)
    registry.set_defaults(func=cmd_registry)
    sub.add_parser("doctor", help="print versions, active kernels, installed extras and Java "
                                  "(for bug reports)").set_defaults(func=cmd_doctor)
    return parser


def cmd_doctor(args: argparse.Namespace) -> int:
    """``doctor``: see :mod:`kafkalite.testing.doctor`."""
    from kafkalite.testing.doctor import report

    print("\n".join(report()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
