"""``kafkalite topics``: list, describe, create, alter (partitions, configs), delete.

Options follow ``kafka-topics``: ``--list``, ``--describe``, ``--create``, ``--alter``,
``--delete``, ``--topic`` (a regular expression except with --create), ``--partitions``,
``--replication-factor``, ``--config``, ``--replica-assignment``,
``--under-replicated-partitions``, ``--unavailable-partitions``, ``--if-exists``,
``--if-not-exists``, ``--exclude-internal``.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from kafkalite.cli.common import (
    EXIT_KAFKA,
    UsageError,
    admin_client,
    emit_json,
    error_line,
    parse_key_values,
    report_failures,
)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("topics", parents=[common], help="list, describe, create, alter and delete topics",
                       description=__doc__)
    action = p.add_mutually_exclusive_group(required=True)
    for name in ("list", "describe", "create", "alter", "delete"):
        action.add_argument(f"--{name}", action="store_true", help=f"{name} topics")
    p.add_argument("--topic", action="append", metavar="TOPIC",
                   help="topic name (a regular expression for list/describe/alter/delete); repeatable")
    p.add_argument("--partitions", type=int, help="partition count (create; alter: the new, larger count)")
    p.add_argument("--replication-factor", type=int, help="replication factor (create)")
    p.add_argument("--replica-assignment", metavar="B:B,B:B",
                   help="explicit replicas per partition: '1:2,2:3' = partition 0 on 1,2; partition 1 on 2,3")
    p.add_argument("--config", action="append", metavar="KEY=VALUE", help="topic config (create); repeatable")
    p.add_argument("--validate-only", action="store_true", help="check a create/alter without doing it")
    p.add_argument("--if-exists", action="store_true", help="alter/delete: no error if the topic is missing")
    p.add_argument("--if-not-exists", action="store_true", help="create: no error if the topic exists")
    p.add_argument("--exclude-internal", action="store_true", help="list/describe: leave out internal topics")
    p.add_argument("--under-replicated-partitions", action="store_true",
                   help="describe: only partitions whose ISR is smaller than the replica list")
    p.add_argument("--unavailable-partitions", action="store_true",
                   help="describe: only partitions without a live leader")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int | None:
    with admin_client(args) as admin:
        if args.list:
            return _list(admin, args)
        if args.describe:
            return _describe(admin, args)
        if not args.topic:
            raise UsageError("--topic is required")
        if args.create:
            return _create(admin, args)
        if args.alter:
            return _alter(admin, args)
        return _delete(admin, args)


def _matching(admin: Any, args: argparse.Namespace, *, internal: bool = True) -> list[str]:
    names = list(admin.list_topics(list_internal=internal and not args.exclude_internal, timeout=args.timeout))
    if not args.topic:
        return names
    out: list[str] = []
    for pattern in args.topic:
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"--topic {pattern!r} is not a valid regular expression: {exc}") from None
        out += [n for n in names if (n == pattern or rx.fullmatch(n)) and n not in out]
    return out


def _missing(args: argparse.Namespace, found: list[str]) -> int | None:
    if not found and args.topic and not args.if_exists:
        error_line(f"Topic {', '.join(repr(t) for t in args.topic)} does not exist")
        return EXIT_KAFKA
    return None


def _list(admin: Any, args: argparse.Namespace) -> int | None:
    names = _matching(admin, args)
    if args.json:
        emit_json(names)
    else:
        for n in names:
            print(n)
    return None


def _describe(admin: Any, args: argparse.Namespace) -> int | None:
    from kafkalite.admin.types import ConfigResource

    names = _matching(admin, args)
    missing = _missing(args, names)
    if missing is not None:
        return missing
    described = admin.describe_topics(names, timeout=args.timeout)
    resources = {n: ConfigResource("topic", n) for n in names}
    configs = admin.describe_configs(list(resources.values()), timeout=args.timeout)
    filtering = args.under_replicated_partitions or args.unavailable_partitions
    out = []
    for name in names:
        item = described[name]
        if not item.ok:
            continue
        d = item.value
        parts = [p for p in d.partitions
                 if not filtering
                 or (args.under_replicated_partitions and p.under_replicated)
                 or (args.unavailable_partitions and p.leader is None)]
        cfg = configs[resources[name]]
        dynamic = {k: e.value for k, e in (cfg.value or {}).items()
                   if cfg.ok and not e.is_default and e.source.name == "DYNAMIC_TOPIC_CONFIG"}
        out.append((d, parts, dynamic))
    if args.json:
        emit_json([{
            "topic": d.name, "topic_id": str(d.topic_id), "internal": d.is_internal,
            "partition_count": len(d.partitions),
            "replication_factor": len(d.partitions[0].replicas) if d.partitions else 0,
            "configs": dynamic,
            "partitions": [{"partition": p.partition, "leader": p.leader, "replicas": p.replicas, "isr": p.isr,
                            "offline_replicas": p.offline_replicas} for p in parts],
        } for d, parts, dynamic in out])
    else:
        for d, parts, dynamic in out:
            if filtering and not parts:
                continue
            if not filtering:
                rf = len(d.partitions[0].replicas) if d.partitions else 0
                conf = ",".join(f"{k}={v}" for k, v in sorted(dynamic.items()))
                print(f"Topic: {d.name}\tTopicId: {d.topic_id}\tPartitionCount: {len(d.partitions)}\t"
                      f"ReplicationFactor: {rf}\tConfigs: {conf}")
            for p in parts:
                leader = "none" if p.leader is None else p.leader
                line = (f"\tTopic: {d.name}\tPartition: {p.partition}\tLeader: {leader}\t"
                        f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}")
                if p.offline_replicas:
                    line += f"\tOffline: {','.join(map(str, p.offline_replicas))}"
                print(line)
    report_failures(described.errors)
    return None


def _assignment(text: str) -> dict[int, list[int]]:
    try:
        return {i: [int(b) for b in part.split(":")] for i, part in enumerate(text.split(","))}
    except ValueError:
        raise UsageError(f"--replica-assignment must look like '1:2,2:3', got {text!r}") from None


def _create(admin: Any, args: argparse.Namespace) -> int | None:
    from kafkalite.admin.types import NewTopic
    from kafkalite.errors import TopicExistsError

    configs = parse_key_values(args.config, "--config")
    if args.replica_assignment and (args.partitions or args.replication_factor):
        raise UsageError("--replica-assignment cannot be combined with --partitions/--replication-factor")
    for what, value in (("--partitions", args.partitions), ("--replication-factor", args.replication_factor)):
        if value is not None and value < 1:
            raise UsageError(f"{what} must be at least 1, got {value}")
    new = [NewTopic(t, -1 if args.replica_assignment else (args.partitions or -1),
                    -1 if args.replica_assignment else (args.replication_factor or -1),
                    _assignment(args.replica_assignment) if args.replica_assignment else None, configs)
           for t in args.topic]
    result = admin.create_topics(new, validate_only=args.validate_only, timeout=args.timeout)
    errors = {k: e for k, e in result.errors.items()
              if not (args.if_not_exists and isinstance(e, TopicExistsError))}
    created = [k for k, item in result.items() if item.ok]
    if args.json:
        emit_json({"created": created, "validate_only": args.validate_only,
                   "errors": {k: str(e) for k, e in errors.items()}})
    else:
        for name in created:
            print(f"{'Validated' if args.validate_only else 'Created'} topic {name}.")
    report_failures(errors)
    return None


def _alter(admin: Any, args: argparse.Namespace) -> int | None:
    from kafkalite.admin.types import AlterConfigOp, ConfigResource, NewPartitions

    if args.partitions is None and not args.config:
        raise UsageError("--alter needs --partitions (and/or --config)")
    names = _matching(admin, args)
    missing = _missing(args, names)
    if missing is not None:
        return missing
    errors: dict[Any, Any] = {}
    if args.partitions is not None:
        assignment = list(_assignment(args.replica_assignment).values()) if args.replica_assignment else None
        result = admin.create_partitions({n: NewPartitions(args.partitions, assignment) for n in names},
                                         validate_only=args.validate_only, timeout=args.timeout)
        errors.update(result.errors)
        for n, item in result.items():
            if item.ok and not args.json:
                print(f"Topic {n} now has {args.partitions} partitions.")
    if args.config:
        changes = parse_key_values(args.config, "--config")
        result2 = admin.incremental_alter_configs(
            {ConfigResource("topic", n): [AlterConfigOp.set(k, v) for k, v in changes.items()] for n in names},
            validate_only=args.validate_only, timeout=args.timeout)
        errors.update(result2.errors)
    if args.json:
        emit_json({"altered": [n for n in names if n not in errors and ConfigResource("topic", n) not in errors],
                   "errors": {str(k): str(e) for k, e in errors.items()}})
    report_failures(errors)
    return None


def _delete(admin: Any, args: argparse.Namespace) -> int | None:
    names = _matching(admin, args, internal=False)
    missing = _missing(args, names)
    if missing is not None:
        return missing
    result = admin.delete_topics(names, timeout=args.timeout)
    deleted = [n for n, item in result.items() if item.ok]
    if args.json:
        emit_json({"deleted": deleted, "errors": {str(k): str(e) for k, e in result.errors.items()}})
    else:
        for n in deleted:
            print(f"Deleted topic {n}.")
    report_failures(result.errors)
    return None
