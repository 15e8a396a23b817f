"""``kafkalite acls``: add, list and remove ACLs.

Options follow ``kafka-acls``: ``--add`` / ``--remove`` / ``--list``,
``--allow-principal`` / ``--deny-principal`` (``User:alice``), ``--allow-host`` /
``--deny-host`` (default ``*``), ``--operation`` (repeatable; read, write, create,
delete, alter, describe, cluster-action, describe-configs, alter-configs,
idempotent-write, all), resources ``--topic``, ``--group``, ``--cluster``,
``--transactional-id``, ``--resource-pattern-type`` (literal, prefixed; any/match for
--list and --remove), ``--principal`` to filter --list.
"""

from __future__ import annotations

import argparse
from typing import Any

from kafkalite.cli.common import UsageError, admin_client, emit_json, report_failures, table


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("acls", parents=[common], help="add, list and remove ACLs", description=__doc__)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true")
    action.add_argument("--remove", action="store_true")
    action.add_argument("--list", action="store_true")
    p.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
    p.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST")
    p.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    p.add_argument("--principal", action="append", default=[], metavar="TYPE:NAME", help="--list: only these")
    p.add_argument("--operation", action="append", default=[], metavar="OPERATION")
    p.add_argument("--topic", action="append", default=[])
    p.add_argument("--group", action="append", default=[])
    p.add_argument("--transactional-id", action="append", default=[])
    p.add_argument("--cluster", action="store_true")
    p.add_argument("--resource-pattern-type", default=None, metavar="TYPE",
                   help="literal (default), prefixed; any or match with --list/--remove")
    p.add_argument("--force", action="store_true", help="accepted for kafka-acls compatibility (never prompts)")
    p.set_defaults(handler=run)


def _resources(args: argparse.Namespace, pattern: str) -> list[tuple[str, str | None, str]]:
    out: list[tuple[str, str | None, str]] = [("topic", t, pattern) for t in args.topic] + [("group", g, pattern) for g in args.group]
    out += [("transactional_id", t, pattern) for t in args.transactional_id]
    if args.cluster:
        out.append(("cluster", "kafka-cluster", "literal"))
    return out


def run(args: argparse.Namespace) -> None:
    from kafkalite.admin import (
        AccessControlEntry,
        AclBinding,
        AclBindingFilter,
        ResourcePattern,
    )
    from kafkalite.errors import ConfigError

    try:
        with admin_client(args) as admin:
            if args.list:
                return _list(admin, args, AclBindingFilter)
            if args.add:
                pattern = args.resource_pattern_type or "literal"
                if pattern.lower() in ("any", "match"):
                    raise UsageError("--add needs --resource-pattern-type literal or prefixed")
                resources = _resources(args, pattern)
                if not resources:
                    raise UsageError("--add needs a resource: --topic, --group, --transactional-id or --cluster")
                if not (args.allow_principal or args.deny_principal):
                    raise UsageError("--add needs --allow-principal or --deny-principal")
                if not args.operation:
                    raise UsageError("--add needs --operation")
                entries = [AccessControlEntry(pr, h, op, "allow")
                           for pr in args.allow_principal for h in (args.allow_host or ["*"]) for op in args.operation]
                entries += [AccessControlEntry(pr, h, op, "deny")
                            for pr in args.deny_principal for h in (args.deny_host or ["*"]) for op in args.operation]
                bindings = [AclBinding(ResourcePattern(r[0], r[1] or "", r[2]), e) for r in resources for e in entries]
                result = admin.create_acls(bindings, timeout=args.timeout)
                added = [b for b, item in result.items() if item.ok]
                if args.json:
                    emit_json({"added": [_binding_json(b) for b in added],
                               "errors": {str(b): str(e) for b, e in result.errors.items()}})
                else:
                    for b in added:
                        print(f"Added {b}")
                report_failures(result.errors)
                return None
            pattern = args.resource_pattern_type or "literal"
            resources = _resources(args, pattern)
            if not resources:
                raise UsageError("--remove needs a resource: --topic, --group, --transactional-id or --cluster")
            principals = (args.allow_principal + args.deny_principal) or [None]
            perms = (["allow"] * bool(args.allow_principal) + ["deny"] * bool(args.deny_principal)) or ["any"]
            filters = [AclBindingFilter(r[0], r[1], r[2], pr, None, op, perm)
                       for r in resources for pr in principals for op in (args.operation or ["any"]) for perm in perms]
            result2 = admin.delete_acls(filters, timeout=args.timeout)
            removed = [b for item in result2.values() if item.ok for b in item.value]
            if args.json:
                emit_json({"removed": [_binding_json(b) for b in removed],
                           "errors": {str(f): str(e) for f, e in result2.errors.items()}})
            else:
                for b in removed:
                    print(f"Removed {b}")
            report_failures(result2.errors)
            return None
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _binding_json(b: Any) -> dict[str, str]:
    return {"resource_type": b.pattern.resource_type.name, "name": b.pattern.name,
            "pattern_type": b.pattern.pattern_type.name, "principal": b.entry.principal, "host": b.entry.host,
            "operation": b.entry.operation.name, "permission_type": b.entry.permission_type.name}


def _list(admin: Any, args: argparse.Namespace, filter_cls: Any) -> None:
    pattern = args.resource_pattern_type or ("any" if not _resources(args, "any") else "literal")
    resources = _resources(args, pattern) or [("any", None, "any")]
    principals = args.principal or [None]
    found: list[Any] = []
    for r in resources:
        for pr in principals:
            for b in admin.describe_acls(filter_cls(r[0], r[1], r[2], pr), timeout=args.timeout):
                if b not in found:
                    found.append(b)
    if args.json:
        emit_json([_binding_json(b) for b in found])
        return
    table(["RESOURCE", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"],
          [(f"{b.pattern.resource_type.name}:{b.pattern.name}", b.pattern.pattern_type.name, b.entry.principal,
            b.entry.host, b.entry.operation.name, b.entry.permission_type.name) for b in found])
