"""``kafkalite topics``: list, describe, create, alter (partitions, configs), delete.

Options follow ``kafka-topics``: ``--list``, ``--describe``, ``--create``, ``--alter``,
``--delete``, ``--topic`` (a regular expression except with --create), ``--partitions``,
``--replication-factor``, ``--config``, ``--replica-assignment``,
``--under-replicated-partitions``, ``--unavailable-partitions``,
``--under-min-isr-partitions``, ``--at-min-isr-partitions``, ``--topics-with-overrides``,
``--partition-size-limit-per-response``, ``--if-exists``, ``--if-not-exists``,
``--exclude-internal``.

``--describe`` prints what ``kafka-topics --describe`` prints on Kafka 4: the topic id
in Kafka's base64 form, the configs that are not defaults, and per partition the
leader, replicas, ISR, a reassignment's adding/removing replicas and the eligible
leader replicas (``Elr`` / ``LastKnownElr``, KIP-966; ``N/A`` from brokers before
DescribeTopicPartitions).
"""

from __future__ import annotations

import argparse
import re
import uuid
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
    p.add_argument("--under-min-isr-partitions", action="store_true",
                   help="describe: only partitions whose ISR is smaller than min.insync.replicas")
    p.add_argument("--at-min-isr-partitions", action="store_true",
                   help="describe: only partitions whose ISR size equals min.insync.replicas")
    p.add_argument("--topics-with-overrides", action="store_true",
                   help="describe: only topics with overridden configs (topic lines only)")
    p.add_argument("--partition-size-limit-per-response", type=int, metavar="N",
                   help="describe: partitions per DescribeTopicPartitions response (default 2000)")
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


# Kafka's Uuid.ZERO_UUID: the broker reported no topic id (before KRaft topic ids).
NO_TOPIC_ID = uuid.UUID(int=0)


def kafka_uuid(value: Any) -> str:
    """A topic id as Kafka's tools print it: URL-safe base64 without padding (Uuid.toString)."""
    import base64

    raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _ids(nodes: Any) -> str:
    return ",".join(str(n) for n in nodes)


class _Partition:
    """One partition line of ``--describe``, with kafka-topics' filters (TopicCommand.PartitionDescription)."""

    def __init__(self, topic: str, info: Any, min_isr: int, reassignment: Any) -> None:
        self.topic, self.info, self.min_isr, self.reassignment = topic, info, min_isr, reassignment

    @property
    def replication_factor(self) -> int:
        # A reassignment's adding replicas are not part of the topic's replication factor yet.
        adding = self.reassignment.adding_replicas if self.reassignment is not None else []
        return len(self.info.replicas) - len(adding)

    def under_replicated(self) -> bool:
        return self.replication_factor - len(self.info.isr) > 0

    def under_min_isr(self) -> bool:
        return self.info.leader is None or len(self.info.isr) < self.min_isr

    def at_min_isr(self) -> bool:
        return len(self.info.isr) == self.min_isr

    def unavailable(self, live: set[int]) -> bool:
        return self.info.leader is None or self.info.leader not in live

    def text(self) -> str:
        p = self.info
        line = (f"\tTopic: {self.topic}\tPartition: {p.partition}\tLeader: {'none' if p.leader is None else p.leader}"
                f"\tReplicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}")
        if self.reassignment is not None:
            line += (f"\tAdding Replicas: {_ids(self.reassignment.adding_replicas)}"
                     f"\tRemoving Replicas: {_ids(self.reassignment.removing_replicas)}")
        # KIP-966: eligible leader replicas; N/A when the broker did not report them
        # (no DescribeTopicPartitions), as kafka-topics prints it.
        line += f"\tElr: {'N/A' if p.elr is None else _ids(p.elr)}"
        line += f"\tLastKnownElr: {'N/A' if p.last_known_elr is None else _ids(p.last_known_elr)}"
        return line


def _describe(admin: Any, args: argparse.Namespace) -> int | None:
    from kafkalite import ConfigResource
    from kafkalite.admin import ConfigSource
    from kafkalite.errors import ClusterAuthorizationError, UnsupportedVersionError
    from kafkalite.types import TopicPartition

    if args.partition_size_limit_per_response is not None and args.partition_size_limit_per_response < 1:
        raise UsageError(f"--partition-size-limit-per-response must be at least 1, "
                         f"got {args.partition_size_limit_per_response}")
    names = sorted(_matching(admin, args))
    missing = _missing(args, names)
    if missing is not None:
        return missing
    # DescribeTopicPartitions (KIP-966) like kafka-topics on Kafka 3.8+: it adds the
    # eligible leader replicas; brokers without it are asked with Metadata.
    described = admin.describe_topics(names, use_describe_topic_partitions=True,
                                      partition_size_limit_per_response=args.partition_size_limit_per_response,
                                      timeout=args.timeout)
    resources = {n: ConfigResource("topic", n) for n in names}
    configs = admin.describe_configs(list(resources.values()), timeout=args.timeout)
    found = [described[n].value for n in names if described[n].ok]
    reassignments: dict[Any, Any] = {}
    if found:
        try:
            reassignments = admin.list_partition_reassignments(
                [TopicPartition(d.name, p.partition) for d in found for p in d.partitions], timeout=args.timeout)
        except (UnsupportedVersionError, ClusterAuthorizationError):
            reassignments = {}  # like kafka-topics: without the right (or the API) none are shown
    live: set[int] = set()
    if args.unavailable_partitions:
        live = {n.id for n in admin.describe_cluster(timeout=args.timeout).nodes}
    partition_filter = (args.under_replicated_partitions or args.under_min_isr_partitions
                        or args.at_min_isr_partitions or args.unavailable_partitions)
    out = []
    for d in found:
        cfg = configs[resources[d.name]]
        entries = cfg.value if cfg.ok and cfg.value else {}
        # kafka-topics shows every config that is not the built-in default (topic
        # overrides and broker-level settings), in the broker's order.
        shown = {k: e.value for k, e in entries.items() if not e.is_default}
        min_isr_entry = entries.get("min.insync.replicas")
        min_isr = int(min_isr_entry.value) if min_isr_entry is not None and min_isr_entry.value else 1
        parts = [_Partition(d.name, p, min_isr, reassignments.get(TopicPartition(d.name, p.partition)))
                 for p in d.partitions]
        if partition_filter:
            parts = [p for p in parts
                     if (args.under_replicated_partitions and p.under_replicated())
                     or (args.under_min_isr_partitions and p.under_min_isr())
                     or (args.at_min_isr_partitions and p.at_min_isr())
                     or (args.unavailable_partitions and p.unavailable(live))]
        overrides = {k: e.value for k, e in entries.items() if e.source is ConfigSource.DYNAMIC_TOPIC_CONFIG}
        if args.topics_with_overrides and not overrides:
            continue
        out.append((d, parts, shown, overrides))
    if args.json:
        emit_json([{
            "topic": d.name, "topic_id": str(d.topic_id), "internal": d.is_internal,
            "partition_count": len(d.partitions),
            "replication_factor": parts_rf(d, reassignments),
            "configs": overrides,
            "partitions": [{"partition": p.info.partition, "leader": p.info.leader, "replicas": p.info.replicas,
                            "isr": p.info.isr, "elr": p.info.elr, "last_known_elr": p.info.last_known_elr,
                            "offline_replicas": p.info.offline_replicas,
                            "adding_replicas": None if p.reassignment is None else p.reassignment.adding_replicas,
                            "removing_replicas": None if p.reassignment is None else p.reassignment.removing_replicas}
                           for p in parts],
        } for d, parts, _shown, overrides in out])
    else:
        for d, parts, shown, _overrides in out:
            if not partition_filter:
                head = f"Topic: {d.name}"
                if d.topic_id != NO_TOPIC_ID:
                    head += f"\tTopicId: {kafka_uuid(d.topic_id)}"
                conf = ",".join(f"{k}={v}" for k, v in shown.items())
                print(f"{head}\tPartitionCount: {len(d.partitions)}\tReplicationFactor: "
                      f"{parts_rf(d, reassignments)}\tConfigs: {conf}")
            if args.topics_with_overrides:
                continue  # kafka-topics: only the topic lines
            for p in parts:
                print(p.text())
    report_failures(described.errors)
    return None


def parts_rf(d: Any, reassignments: dict[Any, Any]) -> int:
    """The topic's replication factor: its first partition's replicas less those being added."""
    from kafkalite.types import TopicPartition

    if not d.partitions:
        return 0
    first = d.partitions[0]
    r = reassignments.get(TopicPartition(d.name, first.partition))
    return len(first.replicas) - (len(r.adding_replicas) if r is not None else 0)


def _assignment(text: str) -> dict[int, list[int]]:
    try:
        return {i: [int(b) for b in part.split(":")] for i, part in enumerate(text.split(","))}
    except ValueError:
        raise UsageError(f"--replica-assignment must look like '1:2,2:3', got {text!r}") from None


def _create(admin: Any, args: argparse.Namespace) -> int | None:
    from kafkalite import NewTopic
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
    from kafkalite import ConfigResource, NewPartitions
    from kafkalite.admin import AlterConfigOp

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
