"""``kafkalite groups``: list, describe (with lag), reset offsets, delete groups and offsets.

Options follow ``kafka-consumer-groups``: ``--list`` (``--state``, ``--type``),
``--describe --group G`` (``--members``, ``--state``; offsets and lag by default;
``--all-groups``), ``--delete --group G``, ``--delete-offsets --group G --topic T``,
``--reset-offsets --group G (--topic T[:P,P] | --all-topics)`` with one of
``--to-earliest``, ``--to-latest``, ``--to-current``, ``--to-offset N``,
``--shift-by N``, ``--to-datetime 2024-01-31T12:00:00.000`` and ``--dry-run`` (the
default: shows the plan) or ``--execute``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from kafkalite.cli.common import (
    ItemsFailed,
    UsageError,
    admin_client,
    emit_json,
    error_line,
    report_failures,
    table,
)
from kafkalite.types import OffsetAndMetadata, TopicPartition


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("groups", parents=[common], help="list, describe, reset offsets of and delete groups",
                       description=__doc__)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list groups")
    action.add_argument("--describe", action="store_true", help="describe groups (offsets and lag by default)")
    action.add_argument("--delete", action="store_true", help="delete groups (they must be empty)")
    action.add_argument("--reset-offsets", action="store_true", help="reset a group's committed offsets")
    action.add_argument("--delete-offsets", action="store_true", help="delete a group's offsets for topics")
    p.add_argument("--group", action="append", metavar="GROUP", help="group id (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="describe/delete/reset every group")
    p.add_argument("--topic", action="append", metavar="TOPIC[:P,P]", help="topic, optionally with partitions")
    p.add_argument("--all-topics", action="store_true", help="reset: every topic the group has offsets for")
    p.add_argument("--state", nargs="?", const="", default=None, metavar="STATE[,STATE]",
                   help="list: only groups in these states; describe: show the group state")
    p.add_argument("--type", metavar="TYPE[,TYPE]", help="list: only groups of these types (classic, consumer, share)")
    p.add_argument("--members", action="store_true", help="describe: show members and their assignments")
    p.add_argument("--offsets", action="store_true", help="describe: show offsets and lag (the default)")
    to = p.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-current", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    to.add_argument("--shift-by", type=int, metavar="N")
    to.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="reset: show the new offsets only (the default)")
    mode.add_argument("--execute", action="store_true", help="reset: commit the new offsets")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> None:
    with admin_client(args) as admin:
        if args.list:
            return _list(admin, args)
        groups = _groups(admin, args)
        if args.describe:
            _describe(admin, args, groups)
        elif args.delete:
            _delete(admin, args, groups)
        elif args.delete_offsets:
            _delete_offsets(admin, args, groups)
        else:
            _reset(admin, args, groups)
        if getattr(args, "incomplete_listing", False):
            raise ItemsFailed()  # --all-groups missed the groups of a broker (reported above)
        return None


def _report_unanswered(listed: Any) -> bool:
    """One line per broker that did not answer a listing; True if there was any."""
    for broker, err in listed.errors.items():
        error_line(f"broker {broker} did not answer, its groups are missing: {err}")
    return not listed.ok


def _groups(admin: Any, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        listed = admin.list_groups(timeout=args.timeout)
        args.incomplete_listing = _report_unanswered(listed)
        return [g.group_id for g in listed]
    if not args.group:
        raise UsageError("--group (or --all-groups) is required")
    return list(dict.fromkeys(args.group))


def _list(admin: Any, args: argparse.Namespace) -> None:
    states = [s for s in (args.state or "").split(",") if s]
    types = [t for t in (args.type or "").split(",") if t]
    listed = admin.list_groups(states=states or None, types=types or None, timeout=args.timeout)
    if args.json:
        emit_json([{"group": g.group_id, "type": g.type.value, "state": g.state.value,
                    "protocol_type": g.protocol_type} for g in listed])
    elif args.state is not None or args.type:
        table(["GROUP", "TYPE", "STATE"], [(g.group_id, g.type.value.capitalize(), g.state.value) for g in listed])
    else:
        for g in listed:
            print(g.group_id)
    if _report_unanswered(listed):
        raise ItemsFailed()


def _parse_topics(args: argparse.Namespace) -> dict[str, list[int] | None]:
    out: dict[str, list[int] | None] = {}
    for text in args.topic or ():
        name, _, parts = text.partition(":")
        try:
            out[name] = [int(p) for p in parts.split(",")] if parts else None
        except ValueError:
            raise UsageError(f"--topic must be TOPIC or TOPIC:P,P, got {text!r}") from None
    return out


def _end_offsets(admin: Any, partitions: set[TopicPartition], timeout: float | None) -> dict[TopicPartition, int]:
    if not partitions:
        return {}
    result = admin.list_offsets({tp: "latest" for tp in partitions}, timeout=timeout)
    return {tp: item.value.offset for tp, item in result.items() if item.ok}


def _describe(admin: Any, args: argparse.Namespace, groups: list[str]) -> None:
    described = admin.describe_consumer_groups(groups, timeout=args.timeout)
    offsets = admin.list_consumer_group_offsets(groups, timeout=args.timeout)
    report: list[dict[str, Any]] = []
    for g in groups:
        item = described[g]
        if not item.ok:
            continue
        d = item.value
        committed = offsets[g].value or {}
        owner = {tp: m for m in d.members for tp in m.assignment}
        partitions = set(committed) | set(owner)
        ends = _end_offsets(admin, partitions, args.timeout)
        rows = []
        for tp in sorted(partitions):
            current = committed.get(tp)
            end = ends.get(tp)
            lag = None if current is None or end is None else max(0, end - current.offset)
            m = owner.get(tp)
            rows.append({"topic": tp.topic, "partition": tp.partition,
                         "current_offset": None if current is None else current.offset, "log_end_offset": end,
                         "lag": lag, "consumer_id": m.member_id if m else None, "host": m.host if m else None,
                         "client_id": m.client_id if m else None})
        report.append({"group": g, "state": d.state.value, "type": d.type.value,
                       "coordinator": None if d.coordinator is None else d.coordinator.id,
                       "assignor": d.partition_assignor, "partitions": rows,
                       "members": [{"consumer_id": m.member_id, "group_instance_id": m.group_instance_id,
                                    "host": m.host, "client_id": m.client_id,
                                    "assignment": [str(tp) for tp in sorted(m.assignment)]} for m in d.members]})
    if args.json:
        emit_json(report)
    else:
        for r in report:
            print()
            if args.state is not None:
                table(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
                      [(r["group"], r["coordinator"], r["assignor"], r["state"], len(r["members"]))])
            elif args.members:
                table(["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"],
                      [(r["group"], m["consumer_id"], m["group_instance_id"], m["host"], m["client_id"],
                        len(m["assignment"]), ",".join(m["assignment"])) for m in r["members"]])
            else:
                if not r["members"]:
                    print(f"Consumer group '{r['group']}' has no active members.\n")
                table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                       "HOST", "CLIENT-ID"],
                      [(r["group"], p["topic"], p["partition"], p["current_offset"], p["log_end_offset"], p["lag"],
                        p["consumer_id"], p["host"], p["client_id"]) for p in r["partitions"]])
    report_failures(described.errors)


def _delete(admin: Any, args: argparse.Namespace, groups: list[str]) -> None:
    result = admin.delete_groups(groups, timeout=args.timeout)
    deleted = [g for g, item in result.items() if item.ok]
    if args.json:
        emit_json({"deleted": deleted, "errors": {g: str(e) for g, e in result.errors.items()}})
    else:
        for g in deleted:
            print(f"Deletion of requested consumer groups ('{g}') was successful.")
    report_failures(result.errors)


def _delete_offsets(admin: Any, args: argparse.Namespace, groups: list[str]) -> None:
    if len(groups) != 1 or not args.topic:
        raise UsageError("--delete-offsets needs one --group and --topic")
    group = groups[0]
    wanted = _parse_topics(args)
    committed = admin.list_consumer_group_offsets([group], timeout=args.timeout)[group].result()
    partitions = [tp for tp in committed if tp.topic in wanted and (wanted[tp.topic] is None
                                                                    or tp.partition in (wanted[tp.topic] or ()))]
    partitions += [TopicPartition(t, p) for t, ps in wanted.items() for p in ps or ()
                   if TopicPartition(t, p) not in partitions]
    result = admin.delete_consumer_group_offsets(group, partitions, timeout=args.timeout)
    if args.json:
        emit_json({"group": group, "deleted": [str(tp) for tp, i in result.items() if i.ok],
                   "errors": {str(tp): str(e) for tp, e in result.errors.items()}})
    else:
        table(["TOPIC", "PARTITION", "STATUS"],
              [(tp.topic, tp.partition, "Successful" if i.ok else f"Error: {i.error}") for tp, i in result.items()])
    report_failures(result.errors)


def _parse_datetime(text: str) -> int:
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--to-datetime must look like 2024-01-31T12:00:00.000 (optionally with a zone), "
                         f"got {text!r}") from None
    if when.tzinfo is None:
        when = when.astimezone()  # local time, as kafka-consumer-groups reads it
    return int(when.timestamp() * 1000)


def _reset(admin: Any, args: argparse.Namespace, groups: list[str]) -> None:
    from kafkalite.admin import GroupState

    targets = ("to_earliest", "to_latest", "to_current", "to_offset", "shift_by", "to_datetime")
    if not any(getattr(args, t) not in (None, False) for t in targets):
        raise UsageError("--reset-offsets needs one of --to-earliest, --to-latest, --to-current, --to-offset, "
                         "--shift-by, --to-datetime")
    if not args.topic and not args.all_topics:
        raise UsageError("--reset-offsets needs --topic or --all-topics")
    wanted = _parse_topics(args)
    described = admin.describe_consumer_groups(groups, timeout=args.timeout)
    plan: dict[str, dict[TopicPartition, int]] = {}
    errors: dict[Any, Any] = {}
    refused = False
    for group in groups:
        item = described[group]
        if item.error is not None and type(item.error).__name__ != "GroupIdNotFoundError":
            errors[group] = item.error
            continue
        if item.ok and item.value.state not in (GroupState.EMPTY, GroupState.DEAD):
            error_line(f"Assignments can only be reset if the group '{group}' is inactive, "
                       f"but the current state is {item.value.state.value}.")
            refused = True
            continue
        committed = admin.list_consumer_group_offsets([group], timeout=args.timeout)[group].result()
        partitions = _reset_partitions(admin, args, wanted, committed)
        plan[group] = _new_offsets(admin, args, partitions, committed)
    if args.json:
        emit_json([{"group": g, "topic": tp.topic, "partition": tp.partition, "new_offset": o,
                    "executed": bool(args.execute)} for g, p in plan.items() for tp, o in sorted(p.items())])
    else:
        table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
              [(g, tp.topic, tp.partition, o) for g, p in plan.items() for tp, o in sorted(p.items())])
    if args.execute:
        for group, offsets in plan.items():
            result = admin.alter_consumer_group_offsets(group, {tp: OffsetAndMetadata(o) for tp, o in offsets.items()},
                                                        timeout=args.timeout)
            errors.update(result.errors)
    elif not args.json:
        sys.stderr.write("Dry run: nothing was changed; add --execute to commit these offsets.\n")
    for err in errors.values():
        error_line(str(err))
    if errors or refused:
        raise ItemsFailed()


def _reset_partitions(admin: Any, args: argparse.Namespace, wanted: dict[str, list[int] | None],
                      committed: dict[TopicPartition, OffsetAndMetadata]) -> list[TopicPartition]:
    if args.all_topics:
        return sorted(committed)
    need_counts = [t for t, ps in wanted.items() if ps is None]
    counts: dict[str, int] = {}
    if need_counts:
        described = admin.describe_topics(need_counts, timeout=args.timeout)
        report_failures(described.errors)
        counts = {t: len(described[t].value.partitions) for t in need_counts}
    out: list[TopicPartition] = []
    for topic, parts in wanted.items():
        out += [TopicPartition(topic, p) for p in (parts if parts is not None else range(counts[topic]))]
    return out


def _new_offsets(admin: Any, args: argparse.Namespace, partitions: list[TopicPartition],
                 committed: dict[TopicPartition, OffsetAndMetadata]) -> dict[TopicPartition, int]:
    if not partitions:
        return {}
    earliest = admin.list_offsets({tp: "earliest" for tp in partitions}, timeout=args.timeout)
    latest = admin.list_offsets({tp: "latest" for tp in partitions}, timeout=args.timeout)
    report_failures({**earliest.errors, **latest.errors})
    low = {tp: earliest[tp].value.offset for tp in partitions}
    high = {tp: latest[tp].value.offset for tp in partitions}
    if args.to_earliest:
        return low
    if args.to_latest:
        return high
    if args.to_datetime:
        stamp = _parse_datetime(args.to_datetime)
        found = admin.list_offsets({tp: stamp for tp in partitions}, timeout=args.timeout)
        report_failures(found.errors)
        # No record at or after the time: the end of the log (as Kafka's tool does).
        return {tp: (found[tp].value.offset if found[tp].value.offset >= 0 else high[tp]) for tp in partitions}
    out = {}
    for tp in partitions:
        current = committed[tp].offset if tp in committed else low[tp]
        if args.to_current:
            target = current
        elif args.to_offset is not None:
            target = args.to_offset
        else:
            target = current + args.shift_by
        # Out-of-range targets are clamped to the log, as kafka-consumer-groups does.
        out[tp] = min(max(target, low[tp]), high[tp])
    return out
